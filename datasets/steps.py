"""The step of a table's timestamps: given (``freq``) or inferred, checked, and the calendar it gives the series.

A given step is a pandas offset alias (old aliases read as pandas 3 names them,
:func:`tsdp.datasets.series.normalize_freq`) for datetimes or a positive number for numeric timestamps; a step the
timestamps are not at (they have a regular step of their own, or a step far finer than theirs, whose date range
would not fit in memory) is refused naming ``freq`` and the data's step; a timestamp missing at the step is a missing
value inside the series (refused, :mod:`tsdp.datasets.formats`). pandas is the ``data`` extra.
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence, Union

import numpy as np

from .extras import require
from .series import DataError, SeriesStart, normalize_freq


STEPS_PER_STAMP_MAX = 1000
"""The most steps of a given ``freq`` between a series' first and last timestamps per timestamp: more, and the
timestamps are not at that step (checked without building its date range: ``--freq ms`` on daily data would be
gigabytes)."""


def check_regular(stamps: Sequence, where: str, freq: Union[str, float, None], given: bool = False) -> None:
    """Refuse duplicate timestamps and, with a step, a missing timestamp inside the series (a missing value). A
    ``given`` step (``freq``, not inferred) that the timestamps are not at (they have a regular step of their own,
    or a fixed step far finer than theirs) is refused naming ``freq`` and the data's step, before any date range of
    it is allocated (at most :data:`STEPS_PER_STAMP_MAX` steps per timestamp are ever built).

    Args:
        stamps: One series' timestamps (datetimes or numbers), in any order.
        where: The series, as errors name it ("file.csv, series 'a'").
        freq: The step (a pandas offset alias or a number), or None: duplicates are checked only.
        given: Whether ``freq`` was given (not inferred): a step the timestamps are not at is then its fault.

    Raises:
        DataError: A duplicate or missing timestamp (naming ``where``), or a given step the timestamps are not at
            (parameter "freq", naming their own step).
    """
    pd = require("pandas", "data")
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
    pd = require("pandas", "data")
    if pd.api.types.is_numeric_dtype(stamps):
        diffs = np.diff(np.asarray(stamps, dtype=np.float64))
        return diffs[0].item() if diffs.size and np.allclose(diffs, diffs[0], rtol=1e-9) else None
    if len(stamps) < 3:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        inferred = pd.infer_freq(pd.DatetimeIndex(stamps))
    return None if inferred is None else normalize_freq(getattr(inferred, "freqstr", inferred))


def given_step(freq: Union[str, float], stamps: Sequence) -> Union[str, float]:
    """A given ``freq`` as the step of ``stamps``.

    Args:
        freq: The step given (``--freq``): a number or a pandas offset alias.
        stamps: The timestamps it is the step of.

    Returns:
        A positive finite number for numeric timestamps, a pandas offset alias (in the current spelling,
        :func:`~tsdp.datasets.series.normalize_freq`) for datetimes.

    Raises:
        DataError: A step of the other kind, or no pandas frequency (parameter "freq").
    """
    pd = require("pandas", "data")
    numeric = isinstance(freq, (int, float, np.number)) and not isinstance(freq, (bool, np.bool_))
    if pd.api.types.is_numeric_dtype(stamps):
        if not (numeric and np.isfinite(freq) and freq > 0):
            raise DataError("freq", f"numeric timestamps need a positive number as their step (got {freq!r})")
        return freq
    if numeric:
        raise DataError("freq", f"datetime timestamps need a pandas offset alias such as 'h' or 'D' as their step "
                                f"(got {freq!r})")
    return normalize_freq(freq)


def infer_step(stamps: Sequence, source: str, timestamp: str) -> Union[str, float, None]:
    """The sampling step of a table's timestamps, when none was given.

    Args:
        stamps: Every timestamp of the table (all its series).
        source: The file, as errors name it.
        timestamp: The timestamp column, as errors name it.

    Returns:
        For numbers the smallest positive difference, for datetimes ``pandas.infer_freq`` over all timestamps; None
        with fewer than 3 distinct timestamps.

    Raises:
        DataError: Datetimes of no regular step pandas can infer (give the step).
    """
    pd = require("pandas", "data")
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


def calendar_step(stamps: Sequence, step: Union[str, float, None]) -> Optional[str]:
    """The step of the series' starts (:class:`~tsdp.datasets.series.SeriesStart`, GluonTS's ``start``).

    Args:
        stamps: The table's timestamps.
        step: Their step (given or inferred), or None.

    Returns:
        ``step`` as the current offset alias when the timestamps are datetimes and the step is a pandas frequency
        that has periods; None otherwise (numbers, no step, a step without periods): no calendar.
    """
    pd = require("pandas", "data")
    if step is None or isinstance(step, (int, float, np.number)) or not pd.api.types.is_datetime64_any_dtype(stamps):
        return None
    try:
        freq = normalize_freq(step)
        SeriesStart("2000-01-01 00:00:00", freq).period()
    except DataError:
        return None
    return freq


def stamp_text(value: object) -> str:
    """A datetime as the text of a :class:`~tsdp.datasets.series.SeriesStart`.

    Args:
        value: A datetime (pandas, numpy or Python), with or without a time zone.

    Returns:
        "2014-01-01 00:00:00": a time zone is dropped, the local time kept, as pandas' periods do.
    """
    pd = require("pandas", "data")
    stamp = pd.Timestamp(value)
    return str(stamp.tz_localize(None) if stamp.tz is not None else stamp)

