"""DeepAR's covariates as GluonTS computes them: the frequency's calendar features and the age feature.

GluonTS's ``DeepAREstimator`` (the official code's DeepAR, jan-schuchardt/dp_forecasting, models/deepar.py) adds
to every series, before its ``InstanceSplitter`` crops the windows:

- ``AddTimeFeatures``: the calendar features of the series' frequency (``time_features_from_frequency_str``:
  hourly data hour of day, day of week, day of month, day of year; 10-minute data minute of hour and those four;
  yearly data none), each a value in [-0.5, 0.5], on the ``PeriodIndex`` that starts at the series' start;
- ``AddAgeFeature(log_scale=True)``: log10(2 + i) at the series' i-th value (i = 0, 1, ...);

stacked in that order (``VstackFeatures``: calendar features, then the age), in float32. The splitter pads a
window's positions before the series' start with 0 (its ``dummy_value``, the Student-t output's
``value_in_support``). So a value's covariates depend only on its position i in its series and the series'
:class:`~tsdp.datasets.series.SeriesStart`: :func:`position_covariates` computes them for any run of positions,
0 where i < 0. A series without a calendar (``start`` None: numbers as timestamps, a bare JSON lines file) has the
age feature only. These are public functions of the positions, not of the data's values: they change no privacy
bound. pandas (the ``data`` extra) computes the calendar features; the age feature needs nothing.
"""
from __future__ import annotations

import warnings
from typing import Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.errors import MissingExtraError

from .series import DataError, SeriesStart, normalize_freq


def _normalized(values, count: int) -> np.ndarray:
    """GluonTS's ``_normalize``: an index in 0..count-1 mapped to [-0.5, 0.5]."""
    return np.asarray(values, dtype=np.float64) / (count - 1) - 0.5


CALENDAR_FEATURES = {
    "second_of_minute": lambda index: _normalized(index.second, 60),
    "minute_of_hour": lambda index: _normalized(index.minute, 60),
    "hour_of_day": lambda index: _normalized(index.hour, 24),
    "day_of_week": lambda index: _normalized(index.day_of_week, 7),
    "day_of_month": lambda index: _normalized(index.day - 1, 31),
    "day_of_year": lambda index: _normalized(index.day_of_year - 1, 366),
    "month_of_year": lambda index: _normalized(index.month - 1, 12),
    "week_of_year": lambda index: _normalized(np.asarray(index.week) - 1, 53),
}
"""GluonTS's calendar features (``gluonts.time_feature``) on a ``pandas.PeriodIndex``, by GluonTS's names."""

FEATURES_BY_OFFSET = (
    ("YearBegin", ()), ("YearEnd", ()),
    ("QuarterBegin", ("month_of_year",)), ("QuarterEnd", ("month_of_year",)),
    ("MonthBegin", ("month_of_year",)), ("MonthEnd", ("month_of_year",)),
    ("Week", ("day_of_month", "week_of_year")),
    ("Day", ("day_of_week", "day_of_month", "day_of_year")),
    ("BusinessDay", ("day_of_week", "day_of_month", "day_of_year")),
    ("Hour", ("hour_of_day", "day_of_week", "day_of_month", "day_of_year")),
    ("Minute", ("minute_of_hour", "hour_of_day", "day_of_week", "day_of_month", "day_of_year")),
    ("Second", ("second_of_minute", "minute_of_hour", "hour_of_day", "day_of_week", "day_of_month", "day_of_year")),
)
"""GluonTS's ``time_features_from_frequency_str``: the features of each pandas offset type, in its order."""

YEARLY_ALIASES = ("Y", "YE", "YS", "A", "AS", "BY", "BYE", "BYS", "BA", "BAS")
"""pandas' yearly offset aliases (before an anchor such as "-DEC"): GluonTS gives them no calendar features."""


def _pandas():
    try:
        import pandas
    except ImportError:
        raise MissingExtraError("pandas is needed for DeepAR's calendar features", "data") from None
    return pandas


def _offset(freq: str):
    from pandas.tseries.frequencies import to_offset

    return to_offset(normalize_freq(freq))


def calendar_features(freq: Optional[str]) -> Tuple[str, ...]:
    """The names of the calendar features GluonTS gives data of step ``freq`` (none without a calendar).

    Args:
        freq: a pandas offset alias, or None.
    Returns:
        GluonTS's ``time_features_from_frequency_str(freq)``, by name, in its order.
    Raises:
        DataError: a step GluonTS has no features for (it refuses it too).
    """
    if freq is None or freq.split("-")[0].lstrip("0123456789") in YEARLY_ALIASES:
        return ()  # decided without pandas: the shipped yearly data trains DeepAR on a plain install
    _pandas()
    offset = _offset(freq)
    from pandas.tseries import offsets

    for name, features in FEATURES_BY_OFFSET:
        if isinstance(offset, getattr(offsets, name)):
            return features
    raise DataError("freq", f"the data's step {freq!r} has no GluonTS time features (GluonTS takes yearly to secondly "
                            "steps), so DeepAR cannot read it: resample the data, or use another model")


def same_step(a: str, b: str) -> bool:
    """Whether two pandas offset aliases name the same step ('H' and 'h', 'A' and 'YE-DEC').

    Args:
        a: An offset alias, old or current.
        b: Another.

    Returns:
        True when they name the same offset.

    Raises:
        DataError: An alias that is no pandas frequency.
    """
    _pandas()
    return normalize_freq(a) == normalize_freq(b)


def covariate_count(freq: Optional[str]) -> int:
    """The number of DeepAR's covariates for data of step ``freq``.

    Args:
        freq: The data's step, or None (no calendar).

    Returns:
        Its calendar features (:func:`calendar_features`) and the age feature.

    Raises:
        DataError: A step GluonTS has no time features for.
    """
    return len(calendar_features(freq)) + 1


def position_covariates(start: Optional[SeriesStart], first: int, length: int) -> np.ndarray:
    """DeepAR's covariates of the positions ``first``, ..., ``first + length - 1`` of a series (module docstring).

    Args:
        start: the series' calendar, or None (no calendar features).
        first: the first position (0 is the series' first value; a negative position is front padding).
        length: how many positions.
    Returns:
        (length, F) float32, F = :func:`covariate_count`: the calendar features, then log10(2 + i); 0 at i < 0.
    """
    names = calendar_features(None if start is None else start.freq)
    out = np.zeros((length, len(names) + 1), dtype=np.float32)
    skip = min(length, max(0, -first))
    count = length - skip
    if count == 0:
        return out
    out[skip:, -1] = np.log10(2.0 + np.arange(first + skip, first + length, dtype=np.float32))
    if names:
        pd = _pandas()
        origin = start.period()
        with warnings.catch_warnings():  # pandas deprecates business-day periods; GluonTS still builds them
            warnings.simplefilter("ignore", FutureWarning)
            index = pd.period_range(origin + (first + skip), periods=count)
            for column, name in enumerate(names):
                out[skip:, column] = CALENDAR_FEATURES[name](index)
    return out


def window_covariates(starts: Optional[Sequence[SeriesStart]], ends: Sequence[int], length: int,
                      freq: Optional[str] = None) -> np.ndarray:
    """The covariates of windows of ``length`` positions that end just before position ``ends[m]`` of series m,
    whose calendar is ``starts[m]`` (``starts`` None: no calendar); a test window's history of length h with its
    L_F future values has ``ends[m] = h + L_F``.

    Args:
        starts: The calendar of each window's series, or None (no calendar).
        ends: M positions: window m ends just before ``ends[m]``.
        length: The positions of a window.
        freq: The data's step, which sets F when there is no window.

    Returns:
        (M, length, F) float32 (:func:`position_covariates`).
    """
    if len(ends) == 0:
        return np.zeros((0, length, covariate_count(freq)), dtype=np.float32)
    return np.stack([position_covariates(None if starts is None else starts[m], int(end) - length, length)
                     for m, end in enumerate(ends)])
