"""pandas frames as series: the long layout (one row per item, timestamp and value) and the wide one (one column per
series), with the module rules of :mod:`tsdp.datasets.formats` (missing values, calendar, one error per problem)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

import numpy as np

if TYPE_CHECKING:  # the annotations only: pandas is the data extra's, imported where it is used
    import pandas

from .extras import require
from .series import DataError, SeriesData, SeriesStart, first_observed, observed as _observed
from .steps import calendar_step, check_regular, given_step, infer_step, stamp_text


def _numeric(column, source: str, label: str, row_of) -> np.ndarray:
    """A pandas column as float64; a non-numeric cell is refused naming its row."""
    pd = require("pandas", "data")
    values = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy() & column.notna().to_numpy())
    if bad.size:
        raise DataError(f"{source}, column {label!r}",
                        f"must be numeric; row {row_of(bad[0])} holds {column.iloc[bad[0]]!r}")
    return values.to_numpy(dtype=np.float64)


def _row_label(first_line: Optional[int]):
    """0-based data rows; for a file with lines (CSV) also the 1-based line, data row 0 being ``first_line``."""
    if first_line is not None:
        return lambda i: f"{int(i)} (line {int(i) + first_line})"
    return int


def from_long(frame: "pandas.DataFrame", *, item_id: str = "item_id", timestamp: str = "timestamp", target: str = "target",
              freq: Union[str, float, None] = None, source: str = "DataFrame",
              first_line: Optional[int] = None) -> SeriesData:
    """Long format: one row per (item, timestamp, target value); series in order of the items' first rows.

    Rows of an item are ordered by timestamp. Timestamps must be unique per item and, at the
    step ``freq`` (a pandas offset alias or a number; inferred when None), complete inside the
    item's observed range: a missing row is a missing value and is refused (module docstring).
    Datetime timestamps at an offset alias give every series its start (``starts``: the time of its
    first observed value, the alias); numbers give none.

    Args:
        frame: The pandas ``DataFrame``.
        item_id: The column naming each series.
        timestamp: The time column (datetimes, text that parses as dates, or numbers).
        target: The value column.
        freq: The step (a pandas offset alias, or a number for numeric timestamps); None: inferred.
        source: The frame's name in errors (the file it was read from).
        first_line: The file line of data row 0 (CSV), so that errors name lines too; None: rows only.

    Returns:
        The series, with their starts where the timestamps are datetimes at an offset alias.

    Raises:
        DataError: A missing column, a non-numeric value, a duplicate or missing timestamp, a missing value inside a
            series, or a step the timestamps are not at (naming the column, row and line, or ``freq``).
    """
    pd = require("pandas", "data")
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
    step = infer_step(stamps, source, timestamp) if freq is None else given_step(freq, stamps)
    if frame[item_id].isna().any():
        raise DataError(f"{source}, column {item_id!r}",
                        f"row {row(np.flatnonzero(frame[item_id].isna().to_numpy())[0])} has no item id")
    groups = frame.groupby(item_id, sort=False).indices
    calendar = calendar_step(stamps, step)
    out, starts = [], []
    for name in pd.unique(frame[item_id]):
        rows = groups[name]
        order = rows[np.argsort(stamps.to_numpy()[rows], kind="stable")]
        check_regular(stamps.to_numpy()[order], f"{source}, series {name!r}", step, given=freq is not None)
        out.append(_observed(values[order], source, name, [row(i) for i in order]))
        if calendar is not None:
            starts.append(SeriesStart(stamp_text(stamps.iloc[order[first_observed(values[order])]]), calendar))
    return SeriesData(tuple(out), tuple(starts) if calendar is not None else None)


def from_wide(frame: "pandas.DataFrame", *, freq: Union[str, float, None] = None, source: str = "DataFrame",
              first_line: Optional[int] = None) -> SeriesData:
    """Wide format: one column per series; rows in time order, or in any order when the index holds the timestamps
    (they are then read in timestamp order, as the long layout reads each item's rows).

    Leading / trailing missing cells of a column shorten that series; an inner one is refused.
    Duplicate index timestamps are refused; a timestamp index (datetime or numeric) must be
    complete at the step ``freq`` (inferred when None), a missing row being a missing value.
    A ``DatetimeIndex`` at an offset alias (``freq``, inferred, or the index's own) gives every
    series its start (``starts``: the time of the column's first observed value, the alias); a
    numeric or plain row index gives none.

    Args:
        frame: The pandas ``DataFrame``, one column per series.
        freq: The step of its index (a pandas offset alias, or a number for a numeric index); None: inferred.
        source: The frame's name in errors (the file it was read from).
        first_line: The file line of data row 0 (CSV), so that errors name lines too; None: rows only.

    Returns:
        The series in column order, with their starts where the index holds datetimes at an offset alias.

    Raises:
        DataError: No column or row, a non-numeric value, a duplicate or missing index timestamp, a missing value
            inside a column, or a ``freq`` given without timestamps or one they are not at.
    """
    pd = require("pandas", "data")
    if frame.shape[1] == 0 or frame.shape[0] == 0:
        raise DataError(source, "has no series (no columns or no rows)")
    timed = isinstance(frame.index, pd.DatetimeIndex) or (
        pd.api.types.is_numeric_dtype(frame.index) and not isinstance(frame.index, pd.RangeIndex))
    given = freq is not None
    if given:
        if not timed:
            raise DataError("freq", f"applies to timestamps, and {source} has none (a plain row index): drop it, or "
                                    "give the time column")
        freq = given_step(freq, frame.index)
    if freq is None and timed and not frame.index.has_duplicates:
        freq = infer_step(frame.index, source, "index")
    check_regular(frame.index, f"{source}, index", freq, given=given)
    row = _row_label(first_line)
    order = np.argsort(frame.index.to_numpy(), kind="stable") if timed else np.arange(len(frame))
    frame = frame.iloc[order]  # rows in time order, as the long layout orders each item's; errors name the file's rows
    rows = [row(i) for i in order]
    out, columns = [], []
    for c in frame.columns:
        columns.append(_numeric(frame[c], source, str(c), lambda i: rows[int(i)]))
        out.append(_observed(columns[-1], source, c, rows))
    step = freq if freq is not None or not isinstance(frame.index, pd.DatetimeIndex) else frame.index.freq
    calendar = calendar_step(frame.index, step) if isinstance(frame.index, pd.DatetimeIndex) else None
    if calendar is None:
        return SeriesData(tuple(out))
    return SeriesData(tuple(out), tuple(SeriesStart(stamp_text(frame.index[first_observed(v)]), calendar)
                                        for v in columns))


