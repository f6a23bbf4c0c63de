"""Series the way users hold them: pandas long / wide frames, GluonTS datasets and JSON lines, CSV, parquet.

Every loader returns a :class:`attacks.data.series.SeriesData` (the paper's x = {x_1, ..., x_N})
with the series in order of first appearance (long format, GluonTS) or of the columns (wide
format). pandas, pyarrow and gluonts are optional extras, imported only by the functions that
need them; the JSON-lines reader and :func:`grunfeld` (a copy shipped with tsdp) need none of them.

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

import gzip
import json
from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import ConfigError

from .series import SeriesData


class DataError(ConfigError):
    """Malformed input data; ``parameter`` names the source (file / frame, column, series), the message the row."""


def _require(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{module} is needed for this data format: pip install 'tsdp[{extra}]'") from None


def _observed(values: np.ndarray, source: str, name, rows: Sequence) -> np.ndarray:
    """The series without leading / trailing missing values; a missing value inside it is refused (module docstring)."""
    present = np.flatnonzero(~np.isnan(values))
    if present.size == 0:
        raise DataError(f"{source}, series {name!r}", "is empty (no observed value)")
    inner = values[present[0] : present[-1] + 1]
    gaps = np.flatnonzero(np.isnan(inner))
    if gaps.size:
        raise DataError(f"{source}, series {name!r}",
                        f"has a missing value inside its observed range at row {rows[present[0] + gaps[0]]} "
                        "(the paper's algorithms take fully observed series; only leading / trailing gaps are trimmed)")
    return inner


def _numeric(column, source: str, label: str, row_of) -> np.ndarray:
    """A pandas column as float64; a non-numeric cell is refused naming its row."""
    pd = _require("pandas", "data")
    values = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy() & column.notna().to_numpy())
    if bad.size:
        raise DataError(f"{source}, column {label!r}",
                        f"must be numeric; row {row_of(bad[0])} holds {column.iloc[bad[0]]!r}")
    return values.to_numpy(dtype=np.float64)


def _check_regular(stamps, where: str, freq) -> None:
    """Refuse duplicate timestamps and, with a step, a missing timestamp inside the series (a missing value)."""
    pd = _require("pandas", "data")
    stamps = pd.Index(stamps)
    dup = stamps[stamps.duplicated()]
    if len(dup):
        raise DataError(where, f"has the timestamp {dup[0]} more than once")
    if freq is None or len(stamps) < 2:
        return
    if isinstance(freq, (int, float)):
        stamps = stamps.sort_values()
        gaps = np.flatnonzero(~np.isclose(np.diff(np.asarray(stamps, dtype=np.float64)), freq, rtol=1e-9))
        shown = None if not gaps.size else stamps[gaps[0]] + freq
    else:
        expected = pd.date_range(stamps.min(), stamps.max(), freq=freq)
        missing = expected.difference(stamps)
        shown = missing[0] if len(missing) else (None if len(expected) == len(stamps) else "(off the step)")
    if shown is not None:
        raise DataError(where, f"misses the timestamp {shown} at step {freq}: a missing value inside the series")


def _infer_step(stamps, source: str, timestamp: str):
    """The sampling step of long-format timestamps: numeric → the smallest positive difference; datetime →
    pandas.infer_freq over all timestamps (refused when it cannot be inferred: pass freq)."""
    pd = _require("pandas", "data")
    unique = pd.Index(stamps).unique().sort_values()
    if len(unique) < 3:
        return None
    if pd.api.types.is_numeric_dtype(unique):
        return np.diff(np.asarray(unique)).min().item()
    freq = pd.infer_freq(pd.DatetimeIndex(unique))
    if freq is None:
        raise DataError(f"{source}, column {timestamp!r}",
                        "has no regular step pandas can infer; pass freq (a pandas offset alias such as 'D' or 'MS')")
    return freq


def from_long(frame, *, item_id: str = "item_id", timestamp: str = "timestamp", target: str = "target",
              freq=None, source: str = "DataFrame") -> SeriesData:
    """Long format: one row per (item, timestamp, target value); series in order of the items' first rows.

    Rows of an item are ordered by timestamp. Timestamps must be unique per item and, at the
    step ``freq`` (a pandas offset alias or a number; inferred when None), complete inside the
    item's observed range: a missing row is a missing value and is refused (module docstring).
    """
    pd = _require("pandas", "data")
    for column in (item_id, timestamp, target):
        if column not in frame.columns:
            raise DataError(source, f"has no column {column!r} (columns: {', '.join(map(str, frame.columns))})")
    if len(frame) == 0:
        raise DataError(source, "has no rows")
    frame = frame.reset_index(drop=True)
    values = _numeric(frame[target], source, target, _row_label(source))
    stamps = frame[timestamp]
    if not pd.api.types.is_numeric_dtype(stamps):
        try:
            stamps = pd.to_datetime(stamps)
        except (ValueError, TypeError) as exc:
            raise DataError(f"{source}, column {timestamp!r}", f"must hold timestamps or numbers ({exc})") from None
    step = _infer_step(stamps, source, timestamp) if freq is None else freq
    if frame[item_id].isna().any():
        raise DataError(f"{source}, column {item_id!r}",
                        f"row {_row_label(source)(np.flatnonzero(frame[item_id].isna().to_numpy())[0])} has no item id")
    groups = frame.groupby(item_id, sort=False).indices
    out = []
    for name in pd.unique(frame[item_id]):
        rows = groups[name]
        order = rows[np.argsort(stamps.to_numpy()[rows], kind="stable")]
        _check_regular(stamps.to_numpy()[order], f"{source}, series {name!r}", step)
        out.append(_observed(values[order], source, name, [_row_label(source)(i) for i in order]))
    return SeriesData(tuple(out))


def from_wide(frame, *, freq=None, source: str = "DataFrame") -> SeriesData:
    """Wide format: one column per series, rows in time order (the index may hold the timestamps).

    Leading / trailing missing cells of a column shorten that series; an inner one is refused.
    Duplicate index timestamps are refused; a timestamp index (datetime or numeric) must be
    complete at the step ``freq`` (inferred when None), a missing row being a missing value.
    """
    pd = _require("pandas", "data")
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise DataError(source, "has no series (no columns or no rows)")
    timed = isinstance(frame.index, pd.DatetimeIndex) or (
        pd.api.types.is_numeric_dtype(frame.index) and not isinstance(frame.index, pd.RangeIndex))
    if freq is None and timed and not frame.index.has_duplicates:
        freq = _infer_step(frame.index, source, "index")
    _check_regular(frame.index, f"{source}, index", freq)
    row = _row_label(source)
    rows = [row(i) for i in range(len(frame))]
    return SeriesData(tuple(_observed(_numeric(frame[c], source, str(c), row), source, c, rows)
                            for c in frame.columns))


def _row_label(source: str):
    """0-based data rows; for a CSV file also its 1-based line (after the header line)."""
    if source.lower().endswith(".csv"):
        return lambda i: f"{int(i)} (line {int(i) + 2})"
    return int


def from_gluonts(dataset: Iterable[dict], *, source: str = "GluonTS dataset") -> SeriesData:
    """A GluonTS dataset (``ListDataset``, ``FileDataset`` or any iterable of entries with a ``"target"``).

    Univariate targets only; NaN (GluonTS's missing value, "NaN" / "Nan" in its JSON) follows
    the module's rule: trimmed at the ends, refused inside.
    """
    out = []
    for i, entry in enumerate(dataset):
        name = entry.get("item_id", i) if isinstance(entry, dict) else i
        if not isinstance(entry, dict) or "target" not in entry:
            raise DataError(f"{source}, entry {i}", "has no 'target' field")
        target = np.asarray(entry["target"], dtype=object)
        if target.ndim != 1:
            raise DataError(f"{source}, entry {i}", "target must be univariate (1-D)")
        try:
            values = np.asarray([np.nan if x is None or (isinstance(x, str) and x.lower() == "nan") else float(x)
                                 for x in target], dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{source}, entry {i}", f"target must be numeric ({str(list(target))[:40]!r})") from None
        out.append(_observed(values, source, name, list(range(len(values)))))
    if not out:
        raise DataError(source, "holds no series")
    return SeriesData(tuple(out))


def load_gluonts_jsonl(path) -> SeriesData:
    """GluonTS JSON lines as GluonTS writes them (``JsonLinesWriter``; gzip when the name ends in .gz): one entry
    per line with "start", "target" (missing values as "NaN"), optional "item_id". No gluonts needed."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    entries: List[dict] = []
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        entries.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise DataError(f"{path.name}, line {line_no}", f"is not JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise DataError(str(path), f"cannot be read as JSON lines ({type(exc).__name__})") from None
    return from_gluonts(entries, source=path.name)


def load_table(path, *, layout: str = "long", item_id: str = "item_id", timestamp: str = "timestamp",
               target: str = "target", freq=None) -> SeriesData:
    """A CSV or parquet file in ``layout`` "long" (columns item_id, timestamp, target) or "wide" (one column per
    series; a ``timestamp`` column, when present, is the time index). Needs pandas (and pyarrow for parquet)."""
    pd = _require("pandas", "data")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise DataError(str(path), f"unknown table format {suffix!r} (use .csv or .parquet)")
    if suffix != ".csv":
        _require("pyarrow", "data")
    try:
        frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError and pyarrow's errors among them
        raise DataError(str(path), f"cannot be read as {suffix[1:]} ({type(exc).__name__})") from None
    source = str(path.name)
    if layout == "long":
        return from_long(frame, item_id=item_id, timestamp=timestamp, target=target, freq=freq, source=source)
    if layout == "wide":
        if timestamp in frame.columns:
            frame = frame.set_index(timestamp)
        return from_wide(frame, freq=freq, source=source)
    raise DataError("layout", f"must be 'long' or 'wide' (got {layout!r})")


GRUNFELD_CSV = Path(__file__).with_name("grunfeld.csv")
"""Grunfeld's panel shipped with tsdp (package data): its header names the source, statsmodels' copy."""
GRUNFELD_TARGETS = ("invest", "value", "capital")


def grunfeld(target: str = "invest") -> Tuple[SeriesData, Tuple[str, ...]]:
    """Grunfeld's investment data, 11 US firms, 1935-1954, from the copy shipped with tsdp (no extra needed).

    Returns (data, firm names): 11 yearly series of length 20 of ``target`` (invest, value or
    capital), in the file's firm order. The file (:data:`GRUNFELD_CSV`) holds statsmodels'
    ``grunfeld`` dataset (Grunfeld 1958, recreated by Kleiber & Zeileis 2010) value for value;
    a test compares the two. Read with the csv module: neither pandas nor statsmodels is imported.
    """
    import csv

    if target not in GRUNFELD_TARGETS:
        raise DataError("grunfeld", f"target must be one of {', '.join(GRUNFELD_TARGETS)} (got {target!r})")
    by_firm = {}
    with GRUNFELD_CSV.open(newline="") as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            by_firm.setdefault(row["firm"], []).append((int(row["year"]), float(row[target])))
    series = tuple(np.array([v for _, v in sorted(rows)]) for rows in by_firm.values())
    return SeriesData(series), tuple(by_firm)


def load_any(source, *, layout: str = "wide", item_id: str = "item_id", timestamp: str = "timestamp",
             target: str = "target", freq=None) -> SeriesData:
    """``source`` by name: "grunfeld" (:func:`grunfeld`), GluonTS JSON lines (.json, .jsonl, optionally .gz), or a
    .csv / .parquet table in ``layout`` (:func:`load_table`)."""
    if str(source) == "grunfeld":
        return grunfeld()[0]
    path = Path(source)
    if not path.exists():
        raise DataError("data", f"no such file {str(path)!r} (give a .csv, .parquet, .json / .jsonl[.gz] file or "
                                "'grunfeld')")
    if path.name.lower().endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")):
        return load_gluonts_jsonl(path)
    return load_table(path, layout=layout, item_id=item_id, timestamp=timestamp, target=target, freq=freq)
