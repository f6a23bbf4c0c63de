"""Table files as series: CSV (optionally gzipped, a header row optional) and parquet, in the long or wide layout,
given or detected from the columns where they make it unambiguous."""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from .extras import require
from .frames import from_long, from_wide
from .series import DataError, SeriesData

if TYPE_CHECKING:  # the annotations only: pandas is the data extra's, imported where it is used
    import pandas


LAYOUTS = ("auto", "long", "wide")
"""Table layouts: long (one row per item, timestamp, value), wide (one column per series), auto (detected)."""

TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")
"""The names of table files: CSV (gzip when they end in .gz) and parquet."""


def _read_table(path: Path):
    """(frame, line of data row 0 or None) of a CSV (header row detected: a first row of numbers is data) or
    parquet file. Parquet is read by pyarrow from the file's bytes in memory on the calling thread
    (``use_threads=False``): ``pandas.read_parquet`` starts Arrow's thread pools (and Arrow's file system its I/O
    thread), whose threads, still alive when the interpreter exits after torch was loaded, made about 1 exit in 10
    abort ("terminate called without an active exception", SIGABRT) after the command had finished; this read
    starts no thread."""
    pd = require("pandas", "data")
    csv = path.name.lower().endswith((".csv", ".csv.gz"))
    if not csv:
        parquet = require("pyarrow.parquet", "data")
    try:
        if not csv:  # on this thread only: Arrow's pool threads, once started, could abort the process at its exit
            with open(path, "rb") as f:
                source = parquet.ParquetFile(require("pyarrow", "data").BufferReader(f.read()))
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


def _datetime_text(index):
    """A time index read from a file as text (a CSV's dates): as datetimes when every cell parses as one (so that
    the step is checked and the series keep their starts, as in the long layout), unchanged otherwise."""
    pd = require("pandas", "data")
    if not (pd.api.types.is_object_dtype(index) or pd.api.types.is_string_dtype(index)):
        return index
    try:
        with warnings.catch_warnings():  # "could not infer format": every cell is still parsed, or the call fails
            warnings.simplefilter("ignore", UserWarning)
            return pd.DatetimeIndex(pd.to_datetime(index), name=index.name)
    except (ValueError, TypeError, OverflowError):
        return index


def detect_layout(frame: "pandas.DataFrame", *, item_id: Optional[str] = None, timestamp: Optional[str] = None,
                  target: Optional[str] = None, source: str = "DataFrame") -> str:
    """"long" or "wide" for a table whose layout was not given, where the columns make it unambiguous.

    Long: an item id column is named (``item_id`` / ``target`` given) or present under the default
    name, or the timestamp column repeats (then the item id column must be named). Wide: every
    column is numeric (the timestamp column aside) and no timestamp repeats. Anything else (a
    non-numeric column that is no named column) is ambiguous.

    Args:
        frame: The table as read.
        item_id: The item id column named by the user, or None.
        timestamp: The timestamp column named by the user, or None (default "timestamp").
        target: The value column named by the user, or None.
        source: The table's name in errors (its file).

    Returns:
        "long" or "wide".

    Raises:
        DataError: An ambiguous table, naming the options (``--layout``, ``--item-id``, ``--timestamp``,
            ``--target``) that settle it.
    """
    pd = require("pandas", "data")
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


def load_table(path: Union[str, Path], *, layout: str = "auto", item_id: Optional[str] = None, timestamp: Optional[str] = None,
               target: Optional[str] = None, freq: Union[str, float, None] = None) -> SeriesData:
    """A CSV (optionally .gz; a header row is optional) or parquet file in ``layout``: "long" (columns item_id,
    timestamp, target, or the names given), "wide" (one column per series; the ``timestamp`` column, when
    present, is the time index: text that parses as dates is read as datetimes, as in the long layout) or "auto"
    (:func:`detect_layout`). Datetime timestamps give the series their starts. Needs pandas (and pyarrow for
    parquet).

    Args:
        path: The file (.csv, .csv.gz, .parquet, .pq).
        layout: "auto", "long" or "wide" (:data:`LAYOUTS`).
        item_id: The long layout's item id column (None: "item_id").
        timestamp: The time column (None: "timestamp"; optional in a wide table).
        target: The long layout's value column (None: "target").
        freq: The step (:func:`~tsdp.datasets.frames.from_long`, :func:`~tsdp.datasets.frames.from_wide`); None:
            inferred.

    Returns:
        The series.

    Raises:
        DataError: An unreadable file, an unknown or ambiguous layout, a column that is not there, or bad data
            (naming the file, column, row and line, or the option at fault).
    """
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


