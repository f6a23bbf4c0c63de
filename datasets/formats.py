"""Series the way users hold them: pandas long / wide frames, GluonTS datasets and JSON lines, CSV, parquet.

:func:`load_series` is the one loader of every command: 'synthetic', 'grunfeld' or a file, by
its suffix, with the table layout (long / wide) detected where the columns make it unambiguous.
Every loader returns a :class:`datasets.series.SeriesData` (the paper's x = {x_1, ..., x_N})
with the series in order of first appearance (long format, GluonTS) or of the columns (wide
format). pandas, pyarrow and gluonts are optional extras, imported only by the functions that
need them; the JSON-lines reader (without a ``freq``) and :func:`grunfeld` (a copy shipped with tsdp)
need none of them.

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

import gzip
import json
import warnings
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.errors import MissingExtraError

from .series import (DataError, SeriesData, SeriesStart, normalize_freq, observed as _observed, period_text,
                     synthetic_for)


def _require(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"{module} is needed for this data format", extra) from None


def _numeric(column, source: str, label: str, row_of) -> np.ndarray:
    """A pandas column as float64; a non-numeric cell is refused naming its row."""
    pd = _require("pandas", "data")
    values = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy() & column.notna().to_numpy())
    if bad.size:
        raise DataError(f"{source}, column {label!r}",
                        f"must be numeric; row {row_of(bad[0])} holds {column.iloc[bad[0]]!r}")
    return values.to_numpy(dtype=np.float64)


def _check_regular(stamps, where: str, freq, given: bool = False) -> None:
    """Refuse duplicate timestamps and, with a step, a missing timestamp inside the series (a missing value). A
    ``given`` step (``freq``, not inferred) that the timestamps are not at (they have a regular step of their own,
    or a fixed step far finer than theirs) is refused naming ``freq`` and the data's step, before any date range of
    it is allocated."""
    pd = _require("pandas", "data")
    stamps = pd.Index(stamps)
    dup = stamps[stamps.duplicated()]
    if len(dup):
        raise DataError(where, f"has the timestamp {dup[0]} more than once")
    if freq is None or len(stamps) < 2:
        return
    stamps = stamps.sort_values()
    if isinstance(freq, (int, float)):
        gaps = np.flatnonzero(~np.isclose(np.diff(np.asarray(stamps, dtype=np.float64)), freq, rtol=1e-9))
        shown = None if not gaps.size else stamps[gaps[0]] + freq
    elif _steps_between(stamps, freq) > STEPS_PER_STAMP_MAX * len(stamps):
        shown = "(at a far finer step)"  # a date range of it would not fit in memory
    else:
        expected = pd.date_range(stamps.min(), stamps.max(), freq=freq)
        missing = expected.difference(stamps)
        shown = missing[0] if len(missing) else (None if len(expected) == len(stamps) else "(off the step)")
    if shown is None:
        return
    own = _own_step(stamps) if given else None
    if own is not None:
        def text(step):
            return f"{step:g}" if isinstance(step, float) else repr(step)

        raise DataError("freq", f"{where}: its timestamps are at the step {text(own)}, not {text(freq)} (give --freq "
                                f"{text(own).strip(chr(39))}, or leave --freq out: a table's step is inferred)")
    raise DataError(where, f"misses the timestamp {shown} at step {freq}: a missing value inside the series")


STEPS_PER_STAMP_MAX = 1000
"""The most steps of a given ``freq`` between a series' first and last timestamps per timestamp: more, and the
timestamps are not at that step (checked without building its date range: ``--freq ms`` on daily data would be
gigabytes)."""


def _steps_between(stamps, freq) -> float:
    """How many steps of ``freq`` lie between the first and last of the sorted ``stamps`` (0 for a step of no fixed
    length: months, weeks, business days, whose ranges stay small)."""
    from pandas.tseries.frequencies import to_offset

    try:
        nanos = to_offset(freq).nanos
    except ValueError:  # not a fixed step
        return 0.0
    return (stamps[-1] - stamps[0]).value / nanos


def _own_step(stamps):
    """The regular step of the sorted ``stamps`` (a number, or the pandas alias pandas infers), or None."""
    pd = _require("pandas", "data")
    if pd.api.types.is_numeric_dtype(stamps):
        diffs = np.diff(np.asarray(stamps, dtype=np.float64))
        return diffs[0].item() if diffs.size and np.allclose(diffs, diffs[0], rtol=1e-9) else None
    if len(stamps) < 3:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        inferred = pd.infer_freq(pd.DatetimeIndex(stamps))
    return None if inferred is None else normalize_freq(getattr(inferred, "freqstr", inferred))


def _given_step(freq, stamps):
    """A given ``freq`` as the step of ``stamps``: a positive finite number for numeric timestamps, a pandas offset
    alias (in the current spelling, :func:`normalize_freq`) for datetimes; one :class:`DataError` naming ``freq``
    otherwise."""
    pd = _require("pandas", "data")
    numeric = isinstance(freq, (int, float, np.number)) and not isinstance(freq, (bool, np.bool_))
    if pd.api.types.is_numeric_dtype(stamps):
        if not (numeric and np.isfinite(freq) and freq > 0):
            raise DataError("freq", f"numeric timestamps need a positive number as their step (got {freq!r})")
        return freq
    if numeric:
        raise DataError("freq", f"datetime timestamps need a pandas offset alias such as 'h' or 'D' as their step "
                                f"(got {freq!r})")
    return normalize_freq(freq)


def _infer_step(stamps, source: str, timestamp: str):
    """The sampling step of long-format timestamps: numeric → the smallest positive difference; datetime →
    pandas.infer_freq over all timestamps (refused when it cannot be inferred: pass freq)."""
    pd = _require("pandas", "data")
    unique = pd.Index(stamps).unique().sort_values()
    if len(unique) < 3:
        return None
    if pd.api.types.is_numeric_dtype(unique):
        return np.diff(np.asarray(unique)).min().item()
    with warnings.catch_warnings():  # pandas 3 announces an offset instead of the text: either is read as text
        warnings.simplefilter("ignore", DeprecationWarning)
        freq = pd.infer_freq(pd.DatetimeIndex(unique))
    freq = getattr(freq, "freqstr", freq)
    if freq is None:
        raise DataError(f"{source}, column {timestamp!r}",
                        "has no regular step pandas can infer; pass freq (a pandas offset alias such as 'D' or 'MS')")
    return freq


def _calendar_step(stamps, step) -> Optional[str]:
    """The step of the series' starts: ``step`` as the current offset alias when the timestamps are datetimes and
    the step is a pandas frequency that has periods (GluonTS's ``start``); None otherwise (numbers, no step)."""
    pd = _require("pandas", "data")
    if step is None or isinstance(step, (int, float, np.number)) or not pd.api.types.is_datetime64_any_dtype(stamps):
        return None
    try:
        freq = normalize_freq(step)
        SeriesStart("2000-01-01 00:00:00", freq).period()
    except DataError:
        return None
    return freq


def _stamp_text(value) -> str:
    """A datetime as the text of a :class:`SeriesStart` ("2014-01-01 00:00:00"; a time zone is dropped, the local
    time kept, as pandas' periods do)."""
    pd = _require("pandas", "data")
    stamp = pd.Timestamp(value)
    return str(stamp.tz_localize(None) if stamp.tz is not None else stamp)


def _first_observed(values: np.ndarray) -> int:
    """The index of the first value that is not NaN (the start of the series :func:`observed` keeps)."""
    return int(np.flatnonzero(~np.isnan(values))[0])


def from_long(frame, *, item_id: str = "item_id", timestamp: str = "timestamp", target: str = "target",
              freq=None, source: str = "DataFrame", first_line: Optional[int] = None) -> SeriesData:
    """Long format: one row per (item, timestamp, target value); series in order of the items' first rows.

    Rows of an item are ordered by timestamp. Timestamps must be unique per item and, at the
    step ``freq`` (a pandas offset alias or a number; inferred when None), complete inside the
    item's observed range: a missing row is a missing value and is refused (module docstring).
    Datetime timestamps at an offset alias give every series its start (``starts``: the time of its
    first observed value, the alias); numbers give none. ``first_line``: the file line of data row 0
    (CSV), so that errors name lines too.
    """
    pd = _require("pandas", "data")
    for option, column in (("item_id", item_id), ("timestamp", timestamp), ("target", target)):
        if column not in frame.columns:
            raise DataError(option, f"{source} has no {option} column {column!r} (columns: "
                                    f"{', '.join(map(str, frame.columns))})")
    if len(frame) == 0:
        raise DataError(source, "has no rows")
    frame = frame.reset_index(drop=True)
    row = _row_label(first_line)
    values = _numeric(frame[target], source, target, row)
    stamps = frame[timestamp]
    if not pd.api.types.is_numeric_dtype(stamps):
        try:
            stamps = pd.to_datetime(stamps)
        except (ValueError, TypeError) as exc:
            raise DataError(f"{source}, column {timestamp!r}", f"must hold timestamps or numbers ({exc})") from None
    step = _infer_step(stamps, source, timestamp) if freq is None else _given_step(freq, stamps)
    if frame[item_id].isna().any():
        raise DataError(f"{source}, column {item_id!r}",
                        f"row {row(np.flatnonzero(frame[item_id].isna().to_numpy())[0])} has no item id")
    groups = frame.groupby(item_id, sort=False).indices
    calendar = _calendar_step(stamps, step)
    out, starts = [], []
    for name in pd.unique(frame[item_id]):
        rows = groups[name]
        order = rows[np.argsort(stamps.to_numpy()[rows], kind="stable")]
        _check_regular(stamps.to_numpy()[order], f"{source}, series {name!r}", step, given=freq is not None)
        out.append(_observed(values[order], source, name, [row(i) for i in order]))
        if calendar is not None:
            starts.append(SeriesStart(_stamp_text(stamps.iloc[order[_first_observed(values[order])]]), calendar))
    return SeriesData(tuple(out), tuple(starts) if calendar is not None else None)


def from_wide(frame, *, freq=None, source: str = "DataFrame", first_line: Optional[int] = None) -> SeriesData:
    """Wide format: one column per series, rows in time order (the index may hold the timestamps).

    Leading / trailing missing cells of a column shorten that series; an inner one is refused.
    Duplicate index timestamps are refused; a timestamp index (datetime or numeric) must be
    complete at the step ``freq`` (inferred when None), a missing row being a missing value.
    A ``DatetimeIndex`` at an offset alias (``freq``, inferred, or the index's own) gives every
    series its start (``starts``: the time of the column's first observed value, the alias); a
    numeric or plain row index gives none. ``first_line``: the file line of data row 0 (CSV), so
    that errors name lines too.
    """
    pd = _require("pandas", "data")
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise DataError(source, "has no series (no columns or no rows)")
    timed = isinstance(frame.index, pd.DatetimeIndex) or (
        pd.api.types.is_numeric_dtype(frame.index) and not isinstance(frame.index, pd.RangeIndex))
    given = freq is not None
    if given:
        if not timed:
            raise DataError("freq", f"applies to timestamps, and {source} has none (a plain row index): drop it, or "
                                    "give the time column")
        freq = _given_step(freq, frame.index)
    if freq is None and timed and not frame.index.has_duplicates:
        freq = _infer_step(frame.index, source, "index")
    _check_regular(frame.index, f"{source}, index", freq, given=given)
    row = _row_label(first_line)
    rows = [row(i) for i in range(len(frame))]
    out, columns = [], []
    for c in frame.columns:
        columns.append(_numeric(frame[c], source, str(c), row))
        out.append(_observed(columns[-1], source, c, rows))
    step = freq if freq is not None or not isinstance(frame.index, pd.DatetimeIndex) else frame.index.freq
    calendar = _calendar_step(frame.index, step) if isinstance(frame.index, pd.DatetimeIndex) else None
    if calendar is None:
        return SeriesData(tuple(out))
    return SeriesData(tuple(out), tuple(SeriesStart(_stamp_text(frame.index[_first_observed(v)]), calendar)
                                        for v in columns))


def _datetime_text(index):
    """A time index read from a file as text (a CSV's dates): as datetimes when every cell parses as one (so that
    the step is checked and the series keep their starts, as in the long layout), unchanged otherwise."""
    pd = _require("pandas", "data")
    if not (pd.api.types.is_object_dtype(index) or pd.api.types.is_string_dtype(index)):
        return index
    try:
        with warnings.catch_warnings():  # "could not infer format": every cell is still parsed, or the call fails
            warnings.simplefilter("ignore", UserWarning)
            return pd.DatetimeIndex(pd.to_datetime(index), name=index.name)
    except (ValueError, TypeError, OverflowError):
        return index


def _row_label(first_line: Optional[int]):
    """0-based data rows; for a file with lines (CSV) also the 1-based line, data row 0 being ``first_line``."""
    if first_line is not None:
        return lambda i: f"{int(i)} (line {int(i) + first_line})"
    return int


def _number(x) -> float:
    """A target value as a float; TypeError for a boolean (JSON's true/false, numpy's bool_), which float() would
    take as 1 and 0: a flag is not a measurement."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{x!r} is a boolean")
    return float(x)


def from_gluonts(dataset: Iterable[dict], *, source: str = "GluonTS dataset", freq=None) -> SeriesData:
    """A GluonTS dataset (``ListDataset``, ``FileDataset`` or any iterable of entries with a ``"target"``).

    Univariate targets only; NaN (GluonTS's missing value, "NaN" / "Nan" in its JSON) follows
    the module's rule: trimmed at the ends, refused inside.

    Starts: with ``freq`` (a pandas offset alias, e.g. the dataset's ``metadata.json`` "freq"), or where the
    entries' ``"start"`` are ``pandas.Period`` (a ``ListDataset``'s, which carry their step), every series
    starts at its entry's ``"start"`` moved past the leading missing values trimmed (written as the first instant of
    its period at the step, as GluonTS reads it: "2012-01-02/2012-01-08" weekly is "2012-01-02 00:00:00").
    Without a ``freq`` and with text starts (JSON lines: the file does not say its step), or when an entry has no
    ``"start"``, ``starts`` is None. A numeric ``freq`` is refused. Checking the starts at a ``freq`` needs pandas.

    Raises:
        DataError: a malformed entry, or a ``"start"`` that pandas cannot read at the step (naming ``source``
            and the entry), or a ``freq`` that is no pandas frequency (parameter "freq").
    """
    out, raw_starts, leads = [], [], []
    for i, entry in enumerate(dataset):
        name = entry.get("item_id", i) if isinstance(entry, dict) else i
        if not isinstance(entry, dict) or "target" not in entry:
            raise DataError(f"{source}, entry {i}", "has no 'target' field")
        target = np.asarray(entry["target"], dtype=object)
        if target.ndim != 1:
            raise DataError(f"{source}, entry {i}", "target must be univariate (1-D)")
        try:
            values = np.asarray([np.nan if x is None or (isinstance(x, str) and x.lower() == "nan") else _number(x)
                                 for x in target], dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{source}, entry {i}", f"target must be numeric ({str(list(target))[:40]!r})") from None
        out.append(_observed(values, source, name, list(range(len(values)))))
        raw_starts.append(entry.get("start"))
        leads.append(_first_observed(values))
    if not out:
        raise DataError(source, "holds no series")
    return SeriesData(tuple(out), _gluonts_starts(raw_starts, leads, freq, source))


def _gluonts_starts(raw, leads: Sequence[int], freq, source: str) -> Optional[Tuple[SeriesStart, ...]]:
    """The starts of GluonTS entries (:func:`from_gluonts`): ``raw[i]`` entry i's "start" (None: absent),
    ``leads[i]`` the leading missing values trimmed from it. pandas is imported only when there is a step."""
    import sys

    if isinstance(freq, (bool, int, float, np.number)):
        raise DataError("freq", f"GluonTS entries start at times: their step is a pandas offset alias such as 'h' "
                                f"or 'D' (got {freq!r})")
    if any(r is None for r in raw):
        return None
    pd = sys.modules.get("pandas")  # a pd.Period exists only where pandas was imported
    is_period = (lambda r: isinstance(r, pd.Period)) if pd is not None else (lambda r: False)
    if freq is None:
        given = next((r for r in raw if is_period(r)), None)
        if given is None:
            return None  # text starts, no step: the calendar is unknown
        freq = given.freq
    step = normalize_freq(freq)
    try:  # a step of no pandas period (business hours) cannot hold a GluonTS start: the step is at fault, not the data
        SeriesStart("2000-01-03 09:00:00", step).period()
    except DataError:
        raise DataError("freq", f"{freq!r} has no pandas periods, and a GluonTS entry's start is a period at its step "
                                "(give the step as one that has, such as 'h' or 'D')") from None
    starts = []
    for i, (r, lead) in enumerate(zip(raw, leads)):
        where = f"{source}, entry {i}"
        if is_period(r):
            text = period_text(r)
        elif isinstance(r, str) or (pd is not None and isinstance(r, pd.Timestamp)) or hasattr(r, "isoformat"):
            text = str(r)
        else:
            raise DataError(where, f"has a start {r!r} that is no time (text such as '2014-01-01 00:00:00')")
        try:  # written as the first instant of its period at the step, as GluonTS reads it
            start = SeriesStart(text, step)
            starts.append(SeriesStart(period_text(start.period()), step).shifted(lead))
        except DataError:
            raise DataError(where, f"has a start {r!r} that pandas cannot read at the step {step!r}") from None
    return tuple(starts)


def load_gluonts_jsonl(path, *, freq=None) -> SeriesData:
    """GluonTS JSON lines as GluonTS writes them (``JsonLinesWriter``; gzip when the name ends in .gz): one entry
    per line with "start", "target" (missing values as "NaN"), optional "item_id". No gluonts needed.

    ``freq``: the step of the entries (a pandas offset alias; GluonTS keeps it in the dataset's ``metadata.json``,
    not in the file): with it every series keeps its start (:func:`from_gluonts`; pandas checks them), without
    it ``starts`` is None and no pandas is needed."""
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
                        raise DataError(f"{path}, line {line_no}", f"is not JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise DataError(str(path), f"cannot be read as JSON lines ({type(exc).__name__})") from None
    return from_gluonts(entries, source=str(path), freq=freq)


LAYOUTS = ("auto", "long", "wide")
"""Table layouts: long (one row per item, timestamp, value), wide (one column per series), auto (detected)."""

TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")
JSONL_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")


def _read_table(path: Path):
    """(frame, line of data row 0 or None) of a CSV (header row detected: a first row of numbers is data) or
    parquet file. Parquet is read by pyarrow from the file's bytes in memory on the calling thread
    (``use_threads=False``): ``pandas.read_parquet`` starts Arrow's thread pools (and Arrow's file system its I/O
    thread), whose threads, still alive when the interpreter exits after torch was loaded, made about 1 exit in 10
    abort ("terminate called without an active exception", SIGABRT) after the command had finished; this read
    starts no thread."""
    pd = _require("pandas", "data")
    csv = path.name.lower().endswith((".csv", ".csv.gz"))
    if not csv:
        parquet = _require("pyarrow.parquet", "data")
    try:
        if not csv:  # on this thread only: Arrow's pool threads, once started, could abort the process at its exit
            with open(path, "rb") as f:
                source = parquet.ParquetFile(_require("pyarrow", "data").BufferReader(f.read()))
            return source.read(use_threads=False, use_pandas_metadata=True).to_pandas(use_threads=False), None
        first = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0]
        headerless = all(_is_number(cell) for cell in first)
        return pd.read_csv(path, header=None if headerless else 0), 1 if headerless else 2
    except (OSError, ValueError, UnicodeDecodeError, IndexError) as exc:  # pandas' ParserError, pyarrow's errors
        kind = "csv" if csv else "parquet"
        raise DataError(str(path), f"cannot be read as {kind} ({type(exc).__name__}: {_first_line(exc)})") from None


def _is_number(cell: str) -> bool:
    """A CSV cell that holds a number or nothing (a header row holds names instead)."""
    try:
        float(cell or "nan")
    except ValueError:
        return False
    return True


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:120]


def detect_layout(frame, *, item_id: Optional[str] = None, timestamp: Optional[str] = None,
                  target: Optional[str] = None, source: str = "DataFrame") -> str:
    """"long" or "wide" for a table whose layout was not given, where the columns make it unambiguous.

    Long: an item id column is named (``item_id`` / ``target`` given) or present under the default
    name, or the timestamp column repeats (then the item id column must be named). Wide: every
    column is numeric (the timestamp column aside) and no timestamp repeats. Anything else (a
    non-numeric column that is no named column) is ambiguous: :class:`DataError` naming the
    options (``--layout``, ``--item-id``, ``--timestamp``, ``--target``) that settle it.
    """
    pd = _require("pandas", "data")
    names = {"item_id": item_id or "item_id", "timestamp": timestamp or "timestamp", "target": target or "target"}
    columns = ", ".join(map(str, frame.columns))
    if item_id is not None or target is not None or names["item_id"] in frame.columns:
        return "long"
    time = names["timestamp"]
    if time in frame.columns and frame[time].duplicated().any():
        raise DataError("item_id", f"{source} looks long (its {time!r} column repeats timestamps) but has no item "
                                   f"id column {names['item_id']!r}: name it with --item-id COLUMN (columns: {columns})")
    text = [str(c) for c in frame.columns if c != time and not pd.api.types.is_numeric_dtype(frame[c])]
    if text:
        raise DataError("layout", f"{source}: cannot tell the layout, its column {text[0]!r} is not numeric (columns: "
                                  f"{columns}); if it names the series, the table is long: --item-id {text[0]} "
                                  f"--timestamp COLUMN --target COLUMN; if it holds the times of a wide table (one "
                                  f"numeric column per series): --timestamp {text[0]}")
    return "wide"


def load_table(path, *, layout: str = "auto", item_id: Optional[str] = None, timestamp: Optional[str] = None,
               target: Optional[str] = None, freq=None) -> SeriesData:
    """A CSV (optionally .gz; a header row is optional) or parquet file in ``layout``: "long" (columns item_id,
    timestamp, target, or the names given), "wide" (one column per series; the ``timestamp`` column, when
    present, is the time index: text that parses as dates is read as datetimes, as in the long layout) or "auto"
    (:func:`detect_layout`). ``freq``: the step (:func:`from_long`, :func:`from_wide`; inferred when None);
    datetime timestamps give the series their starts. Needs pandas (and pyarrow for parquet)."""
    if layout not in LAYOUTS:
        raise DataError("layout", f"must be one of {', '.join(LAYOUTS)} (got {layout!r})")
    path = Path(path)
    frame, first_line = _read_table(path)
    source = str(path)
    if layout == "auto":
        layout = detect_layout(frame, item_id=item_id, timestamp=timestamp, target=target, source=source)
    elif layout == "wide" and (item_id is not None or target is not None):
        raise DataError("layout", "wide tables have no item id or target column: drop --item-id / --target or use "
                                  "--layout long")
    if layout == "long":
        return from_long(frame, item_id=item_id or "item_id", timestamp=timestamp or "timestamp",
                         target=target or "target", freq=freq, source=source, first_line=first_line)
    time = timestamp or "timestamp"
    if time in frame.columns:
        frame = frame.set_index(time)
        frame.index = _datetime_text(frame.index)
    elif timestamp is not None:
        raise DataError("timestamp", f"{source} has no timestamp column {timestamp!r} (columns: "
                                     f"{', '.join(map(str, frame.columns))})")
    return from_wide(frame, freq=freq, source=source, first_line=first_line)


GRUNFELD_CSV = Path(__file__).with_name("grunfeld.csv")
"""Grunfeld's panel shipped with tsdp (package data): its header names the source, statsmodels' copy."""
GRUNFELD_TARGETS = ("invest", "value", "capital")


def grunfeld(target: str = "invest") -> Tuple[SeriesData, Tuple[str, ...]]:
    """Grunfeld's investment data, 11 US firms, 1935-1954, from the copy shipped with tsdp (no extra needed).

    Returns (data, firm names): 11 yearly series of length 20 of ``target`` (invest, value or
    capital), in the file's firm order, each starting in its first year ("1935-01-01 00:00:00",
    step :data:`tsdp.datasets.tsf.YEARLY`). The file (:data:`GRUNFELD_CSV`) holds statsmodels'
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
    from .tsf import YEARLY

    series = tuple(np.array([v for _, v in sorted(rows)]) for rows in by_firm.values())
    starts = tuple(SeriesStart(f"{min(rows)[0]:04d}-01-01 00:00:00", YEARLY) for rows in by_firm.values())
    return SeriesData(series, starts), tuple(by_firm)



def load_series(source, *, config: Optional[TrainingConfig] = None, seed: int = 0, layout: str = "auto",
                item_id: Optional[str] = None, timestamp: Optional[str] = None, target: Optional[str] = None,
                freq=None) -> SeriesData:
    """The one data loader of every command (train, audit-fn, audit-model, forecast, report) and of the library.

    ``source``: "synthetic" (:func:`tsdp.datasets.series.synthetic_for` of ``config`` and ``seed``),
    "grunfeld" (:func:`grunfeld`, of ``target`` when given), "m1-yearly" (the shipped M1 yearly series,
    :func:`tsdp.datasets.tsf.m1_yearly`), a Monash ``.tsf`` file (:func:`tsdp.datasets.tsf.read_tsf`), GluonTS JSON lines (.json, .jsonl, either
    .gz: :func:`load_gluonts_jsonl`), or a CSV (.csv, .csv.gz) / parquet (.parquet, .pq) table read by
    :func:`load_table` in ``layout`` (auto-detected by default) with the column names given (None: the
    defaults item_id, timestamp, target). ``freq``: the step of the data (a pandas offset alias, or a number for
    numeric table timestamps), checked in tables (inferred there when None) and, for JSON lines, the step of the
    entries' "start" (without it JSON lines have no calendar: ``starts`` None). Every unusable source raises one
    :class:`DataError`.
    """
    name = str(source)
    from .tsf import SHIPPED, m1_yearly, read_tsf

    if freq is not None and (name in ("synthetic", "grunfeld", SHIPPED) or name.lower().endswith(".tsf")):
        raise DataError("freq", f"applies to a table's or JSON lines' timestamps; {name} "
                                + ("has no calendar" if name == "synthetic" else "states its own step"))
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
