"""Every series tsdp reads, in one place: ``series`` (the :class:`SeriesData` container, the seeded
synthetic generator, CSV / JSON-lines files, the train/test split) and ``formats`` (pandas long
/ wide frames, parquet, GluonTS datasets, Grunfeld's panel).
"""
