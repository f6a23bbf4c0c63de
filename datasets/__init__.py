"""Every series tsdp reads, in one place: ``series`` (the :class:`SeriesData` container, the seeded
synthetic generator, the train/test split) and ``formats`` (the one loader of every command,
``load_series``: 'synthetic', 'grunfeld', CSV / parquet tables long or wide, GluonTS JSON lines;
and the pandas long / wide frames and GluonTS datasets it builds on).
"""
