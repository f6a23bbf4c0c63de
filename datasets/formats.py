"""Series the way users hold them: pandas long / wide frames, GluonTS datasets and JSON lines, CSV, parquet.

:func:`load_series` is the one loader of every command: 'synthetic', 'grunfeld' or a file, by
its suffix, with the table layout (long / wide) detected where the columns make it unambiguous.
Every loader returns a :class:`datasets.series.SeriesData` (the paper's x = {x_1, ..., x_N})
with the series in order of first appearance (long format, GluonTS) or of the columns (wide
format). pandas, pyarrow and gluonts are optional extras, imported only by the functions that
need them; the JSON-lines reader (without a ``freq``) and :func:`grunfeld` (a copy shipped with tsdp)
need none of them. Each format has its module: :mod:`~tsdp.datasets.tables` (CSV and parquet files, their layout),
:mod:`~tsdp.datasets.frames` (pandas long and wide frames), :mod:`~tsdp.datasets.json_lines` (GluonTS entries and
JSON lines), :mod:`~tsdp.datasets.steps` (a table's step, given or inferred, and its check),
:mod:`~tsdp.datasets.grunfeld` (the shipped panel); their names are importable from here too.

Calendar. Where the data says when it was observed, every series keeps its
:class:`~datasets.series.SeriesStart` (``SeriesData.starts``: the time of its first observed value and
the step, GluonTS's ``start``, from which DeepAR's time features are computed): tables whose
timestamps are datetimes at a pandas offset alias (given as ``freq`` or inferred), GluonTS entries
whose ``start`` is a ``pandas.Period`` or, with a ``freq``, a text time (a JSON lines file does not say
its step), Grunfeld's years. Numbers as timestamps, a numeric step or a plain row index give no
calendar (``starts`` None). A series whose leading values are missing starts at its first observed value.

Missing values. The paper's algorithms take fully observed series (Algorithm 4 pads with
zeros in front, nothing else), so: a series observed over a sub-range (leading or trailing
missing values, as when items start or end at different times) is that shorter series; a
missing value *inside* a series (NaN, an empty cell, a missing timestamp in a regular long
format) is refused with an error that names the series and the row, since filling it would
be a modelling choice the accountant knows nothing about. Every malformed input (no target
column, non-numeric values, empty series, duplicate timestamps, ...) raises one
:class:`DataError` (a :class:`ConfigError`, so the CLI exits 2) naming the source, column and row.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from tsdp.theorems.config import TrainingConfig

from .frames import from_long, from_wide
from .json_lines import JSONL_SUFFIXES, from_gluonts, load_gluonts_jsonl
from .grunfeld import GRUNFELD_CSV, GRUNFELD_TARGETS, grunfeld
from .series import DataError, SeriesData, synthetic_for
from .steps import STEPS_PER_STAMP_MAX
from .tables import LAYOUTS, TABLE_SUFFIXES, detect_layout, load_table

__all__ = ["DataError", "GRUNFELD_CSV", "GRUNFELD_TARGETS", "JSONL_SUFFIXES", "LAYOUTS", "STEPS_PER_STAMP_MAX",
           "TABLE_SUFFIXES", "detect_layout", "from_gluonts", "from_long", "from_wide", "grunfeld",
           "load_gluonts_jsonl", "load_series", "load_table"]


def load_series(source: Union[str, Path], *, config: Optional[TrainingConfig] = None, seed: int = 0, layout: str = "auto",
                item_id: Optional[str] = None, timestamp: Optional[str] = None, target: Optional[str] = None,
                freq: Union[str, float, None] = None) -> SeriesData:
    """The one data loader of every command (train, audit-fn, audit-model, forecast, report) and of the library.

    Args:
        source: "synthetic" (:func:`tsdp.datasets.series.synthetic_for` of ``config`` and ``seed``), "grunfeld"
            (:func:`grunfeld`, of ``target`` when given), "m1-yearly" (the shipped M1 yearly series,
            :func:`tsdp.datasets.tsf.m1_yearly`), a Monash ``.tsf`` file (:func:`tsdp.datasets.tsf.read_tsf`),
            GluonTS JSON lines (.json, .jsonl, either .gz: :func:`load_gluonts_jsonl`), or a CSV (.csv, .csv.gz) /
            parquet (.parquet, .pq) table (:func:`load_table`).
        config: The configuration that sizes 'synthetic' (N series of length L + L_F).
        seed: The seed of 'synthetic'.
        layout: A table's layout: "auto" (detected), "long" or "wide".
        item_id: A long table's item id column (None: "item_id").
        timestamp: A table's time column (None: "timestamp").
        target: A long table's value column (None: "target"); for 'grunfeld' its variable.
        freq: The step of the data (a pandas offset alias, or a number for numeric table timestamps), checked in
            tables (inferred there when None) and, for JSON lines, the step of the entries' "start" (without it JSON
            lines have no calendar: ``starts`` None); refused for sources that state their own step or have none.

    Returns:
        The series, with their starts where the source has a calendar.

    Raises:
        DataError: Any unusable source or option (one error naming the file, column, row and line, or the option; a
            column option or a layout other than "auto" given for a source that is not a table).
        MissingExtraError: A format whose extra (pandas, pyarrow) is not installed.
    """
    name = str(source)
    from .tsf import SHIPPED, m1_yearly, read_tsf

    if freq is not None and (name in ("synthetic", "grunfeld", SHIPPED) or name.lower().endswith(".tsf")):
        raise DataError("freq", f"applies to a table's or JSON lines' timestamps; {name} "
                                + ("has no calendar" if name == "synthetic" else "states its own step"))
    is_table = name.lower().endswith(TABLE_SUFFIXES)
    if layout != "auto" and not is_table:
        raise DataError("layout", f"is a CSV / parquet table's layout; {name} is not a table (drop it)")
    for option, value in (("item_id", item_id), ("timestamp", timestamp), ("target", target)):
        if value is not None and not is_table and not (option == "target" and name == "grunfeld"):
            raise DataError(option, f"names a column of a CSV / parquet table; {name} has no columns to name"
                                    + (" (for grunfeld: --target invest, value or capital)" if name == "grunfeld"
                                       else ""))
    if name == "synthetic":
        if config is None:
            raise DataError("data", "'synthetic' needs a training configuration; give a file or 'grunfeld'")
        return synthetic_for(config, seed=seed)
    if name == "grunfeld":
        return grunfeld(target or "invest")[0]
    if name == SHIPPED:
        return m1_yearly().data
    path = Path(name)
    formats = f"{', '.join(TABLE_SUFFIXES + JSONL_SUFFIXES)}, .tsf, '{SHIPPED}', 'grunfeld' or 'synthetic'"
    if not path.exists():
        raise DataError(name, f"no such file (give a {formats})")
    if not path.is_file():
        raise DataError(name, "is not a regular file (a directory?)")
    lower = path.name.lower()
    if lower.endswith(JSONL_SUFFIXES):
        return load_gluonts_jsonl(path, freq=freq)
    if lower.endswith(".tsf"):
        return read_tsf(path).data
    if lower.endswith(TABLE_SUFFIXES):
        return load_table(path, layout=layout, item_id=item_id, timestamp=timestamp, target=target, freq=freq)
    raise DataError(name, f"unknown data format (give a {formats})")
