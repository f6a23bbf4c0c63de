"""tsdp.datasets: every series tsdp reads, in one place: ``series`` (the :class:`SeriesData` container and its
series' calendar starts, the seeded synthetic generator, the train/test split), ``formats`` (the one loader of
every command, ``load_series``: 'synthetic', 'grunfeld', CSV / parquet tables long or wide, GluonTS JSON lines;
and the pandas long / wide frames and GluonTS datasets it builds on), ``tsf`` (Monash ``.tsf`` files and the
shipped M1 yearly copy) and ``benchmarks`` (the paper's datasets, their split and hyperparameters).
"""
