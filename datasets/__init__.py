"""tsdp.datasets: every series tsdp reads, in one place: ``series`` (the :class:`SeriesData` container and its
series' calendar starts, the seeded synthetic generator, the train/test split), ``formats`` (the one loader of
every command, ``load_series``: 'synthetic', 'grunfeld', CSV / parquet tables long or wide, GluonTS JSON lines),
a module per format it builds on (``tables``, ``frames``, ``json_lines``, ``steps``, ``grunfeld``), ``tsf``
(Monash ``.tsf`` files and the shipped M1 yearly copy), ``benchmarks`` (the paper's datasets, their
hyperparameters and split), ``splits`` (a split's training series and windows), ``gluonts_folders`` (GluonTS's
on-disk layout and its download) and ``time_features`` (DeepAR's covariates).
"""
