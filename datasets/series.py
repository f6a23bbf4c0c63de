"""Time-series datasets: the :class:`SeriesData` container, the seeded synthetic generator, the train/test split.

A dataset is a :class:`SeriesData`: a list of 1-D float arrays of possibly different
lengths (the paper's x = {x_1, ..., x_N}) and, where the source has calendar timestamps, each
series' :class:`SeriesStart` (the time of its first value and the step between values: GluonTS's
``start`` field, from which DeepAR's time features are computed). The split holds out the last L_F
steps of every series as its test target. Files, 'grunfeld' and 'synthetic' are read by the one
loader of every command, :func:`tsdp.datasets.formats.load_series`.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import ConfigError, TrainingConfig


class DataError(ConfigError):
    """Malformed input data (the CLI exits 2): ``parameter`` names the source (file, column, series) or the
    loader option at fault (layout, item_id, timestamp, target, freq), the message the row or the fix.

    Args:
        parameter: The source or option at fault.
        constraint: What is wrong, and the row or the fix, in words.
        value (object): The value given (shown, shortened; None: not shown).
    """


RENAMED_ALIASES = {
    "H": "h", "BH": "bh", "CBH": "cbh", "T": "min", "MIN": "min", "S": "s", "L": "ms", "U": "us", "N": "ns",
    "M": "ME", "m": "ME", "BM": "BME", "SM": "SME", "CBM": "CBME", "Q": "QE", "q": "QE", "BQ": "BQE",
    "A": "YE", "Y": "YE", "y": "YE", "BA": "BYE", "BY": "BYE", "AS": "YS", "BAS": "BYS", "w": "W",
}
"""The offset aliases pandas 2.2 deprecated and pandas 3 refuses, and their current names (pandas 2.2's release
notes; "A-DEC" is "YE-DEC", "2H" is "2h"): GluonTS datasets and older code write the old ones (electricity's and
traffic's ``metadata.json`` say "H" and "1H")."""

_ALIAS_NAME = re.compile(r"(?<![A-Za-z-])[A-Za-z]+")
"""The name of each offset in an alias: the letters after its count, not an anchor ("DEC" of "A-DEC")."""


def current_alias(freq: str) -> str:
    """``freq`` with every deprecated offset name (:data:`RENAMED_ALIASES`) written as pandas >= 2.2 names it. Pure
    text: the same on every pandas release.

    Args:
        freq: A pandas offset alias, old or current.

    Returns:
        The alias with each old offset name renamed ("1H" is "1h", "A-DEC" "YE-DEC", "10T" "10min"); other text is
        unchanged.
    """
    return _ALIAS_NAME.sub(lambda m: RENAMED_ALIASES.get(m.group(0), m.group(0)), freq.strip())


def normalize_freq(freq: object) -> str:
    """A pandas frequency as the offset alias the installed pandas writes (``to_offset(freq).freqstr``), old aliases
    read on every pandas release: the names pandas 2.2 deprecated and pandas 3 refuses ("H", "T", "S", "M", "Y",
    "A", "Q", "BH", ...; :data:`RENAMED_ALIASES`) are renamed by tsdp first (:func:`current_alias`), so "H", "1H"
    and "h" are all "h", "A" is "YE-DEC"; current ones are unchanged.

    Args:
        freq: a pandas offset alias (text) or a ``pandas.DateOffset``.
    Returns:
        The alias that ``pandas.tseries.frequencies.to_offset`` reads back to the same offset without a warning.
    Raises:
        DataError: ``freq`` is not a pandas frequency (parameter "freq").
    """
    try:
        from pandas.tseries.frequencies import to_offset
    except ImportError:
        from tsdp.theorems.errors import MissingExtraError

        raise MissingExtraError("pandas is needed to read a data step (freq)", "data") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return to_offset(current_alias(freq) if isinstance(freq, str) else freq).freqstr
    except (ValueError, TypeError):
        raise DataError("freq", f"{freq!r} is not a pandas frequency (an offset alias such as 'h', '10min', 'D', "
                                "'MS')") from None


_PERIOD_OF_BEGIN = {"YearBegin": "Y", "QuarterBegin": "Q", "MonthBegin": "M"}
"""The period of a begin-anchored step: pandas has no begin periods, GluonTS (``norm_freq_str``) takes the end ones."""


@dataclass(frozen=True)
class SeriesStart:
    """The calendar of a series: the timestamp of its first (observed) value and the step between values.

    It is GluonTS's ``start`` field (with the dataset's ``freq``): the value at position i of the
    series falls in the period ``period() + i``, from which DeepAR's time features (hour of day,
    day of week, ...) and GluonTS's windows are computed. Loaders fill it where the data has
    calendar timestamps (:mod:`datasets.formats`, :mod:`datasets.tsf`); text only, so building one
    needs no pandas (its methods do).

    Args:
        timestamp: the time of the first value, as text pandas parses (e.g. "2014-01-01 00:00:00").
        freq: the step, a pandas offset alias (e.g. "h", "10min", "D", "MS", "YE-DEC"; as
            ``pandas.tseries.frequencies.to_offset`` accepts; :func:`normalize_freq` writes the current one).
    """

    timestamp: str
    freq: str

    def __post_init__(self):
        for name in ("timestamp", "freq"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise DataError("start", f"a series start needs a {name} as non-empty text (got {value!r})")

    def period(self):
        """The ``pandas.Period`` of the first value at the step ``freq``, as GluonTS makes its ``start``
        (a begin-anchored step, "MS", "QS", "YS", takes the month, quarter or year period, as GluonTS does).

        Raises:
            DataError: pandas cannot read the timestamp at this step (parameter "start").
        """
        import pandas as pd
        from pandas.tseries.frequencies import to_offset

        with warnings.catch_warnings():  # old aliases; pandas deprecates business-day periods, GluonTS builds them
            warnings.simplefilter("ignore", FutureWarning)
            try:
                offset = to_offset(self.freq)
                begin = _PERIOD_OF_BEGIN.get(type(offset).__name__)
                return pd.Period(self.timestamp, freq=offset if begin is None else f"{offset.n}{begin}")
            except (ValueError, TypeError, OverflowError):
                raise DataError("start", f"{self.timestamp!r} is not a time pandas reads at the step "
                                         f"{self.freq!r}") from None

    def shifted(self, steps: int) -> "SeriesStart":
        """The start ``steps`` values later (the series with its first ``steps`` values cut off).

        Args:
            steps: How many values later; 0 gives this start unchanged (no pandas needed).

        Returns:
            The period ``period() + steps``, its first instant written as text ("2014-01-01 05:00:00"), the same
            ``freq``.

        Raises:
            DataError: A start beyond pandas' calendar (parameter "start").
        """
        if int(steps) == 0:
            return self
        first = self.period()
        with warnings.catch_warnings():  # a business-day period warns at every step
            warnings.simplefilter("ignore", FutureWarning)
            try:
                later = first + int(steps)
            except (ValueError, OverflowError):
                raise DataError("start", f"{self.timestamp!r} shifted by {int(steps)} steps of {self.freq!r} is "
                                         "beyond pandas' calendar") from None
        return SeriesStart(period_text(later), self.freq)

    def as_dict(self) -> dict:
        """{"timestamp": ..., "freq": ...} (JSON)."""
        return {"timestamp": self.timestamp, "freq": self.freq}


def period_text(period: object) -> str:
    """The first instant of a ``pandas.Period`` as the text of a :class:`SeriesStart`.

    Args:
        period: A ``pandas.Period``.

    Returns:
        "2014-01-01 05:00:00" (to the second beyond pandas' nanosecond timestamps, 1677-2262).
    """
    try:
        return str(period.start_time)
    except (ValueError, OverflowError):
        return period.asfreq("s", how="start").strftime("%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True)
class SeriesData:
    """N univariate series (float64 arrays, lengths may differ) and, when the source says when they were observed,
    each one's :class:`SeriesStart`.

    Args:
        series: the N series.
        starts: None (no calendar: numbers as timestamps, synthetic data), or one :class:`SeriesStart` per series,
            all at the same step: series n's first value is at ``starts[n]``.
    """

    series: Tuple[np.ndarray, ...]
    starts: Optional[Tuple[SeriesStart, ...]] = None

    def __post_init__(self):
        if len(self.series) == 0:
            raise DataError("data", "a dataset needs at least one series")
        for i, s in enumerate(self.series):
            if s.ndim != 1 or len(s) == 0:
                raise DataError(f"series {i}", "must be a non-empty 1-D array")
            if not np.all(np.isfinite(s)):
                raise DataError(f"series {i}", "holds NaN or inf inside its observed range")
        if self.starts is not None:
            object.__setattr__(self, "starts", check_starts(self.starts, len(self.series), "series"))

    @property
    def N(self) -> int:
        """The number of series."""
        return len(self.series)

    @property
    def lengths(self) -> Tuple[int, ...]:
        """The length of every series."""
        return tuple(len(s) for s in self.series)

    @property
    def freq(self) -> Optional[str]:
        """The step between values (the starts' common ``freq``), or None without a calendar."""
        return None if self.starts is None else self.starts[0].freq

    def split(self, forecast_length: int) -> Tuple["SeriesData", np.ndarray]:
        """Hold out the last L_F values of every series as its test target.

        Args:
            forecast_length: L_F.

        Returns:
            (train, test targets): train drops the last L_F steps of every series (it starts where the series starts:
            same ``starts``); targets are those steps (N, L_F).

        Raises:
            ValueError: A series not longer than L_F.
        """
        if min(self.lengths) <= forecast_length:
            raise ValueError(f"every series must be longer than L_F = {forecast_length} to hold out a test window")
        train = SeriesData(tuple(s[:-forecast_length] for s in self.series), self.starts)
        return train, np.stack([s[-forecast_length:] for s in self.series])

    def select(self, keep: Sequence[int]) -> "SeriesData":
        """Some of the series.

        Args:
            keep: Indices of the series to keep, in the order wanted.

        Returns:
            The series at ``keep``, each with its start.
        """
        keep = [int(i) for i in keep]
        return SeriesData(tuple(self.series[i] for i in keep),
                          None if self.starts is None else tuple(self.starts[i] for i in keep))


def check_starts(starts: Sequence[SeriesStart], count: int, what: str) -> Tuple[SeriesStart, ...]:
    """Check the starts of ``count`` series or windows.

    Args:
        starts: The starts.
        count: How many there must be.
        what: What each belongs to, for the error ("series", "history").

    Returns:
        ``starts`` as a tuple.

    Raises:
        DataError: Not exactly ``count`` :class:`SeriesStart`, or not all at the same step (parameter "starts").
    """
    starts = tuple(starts)
    if len(starts) != count:
        raise DataError("starts", f"needs one start per {what}: got {len(starts)} for {count}")
    for i, start in enumerate(starts):
        if not isinstance(start, SeriesStart):
            raise DataError("starts", f"start {i} is a {type(start).__name__}, not a SeriesStart")
    steps = sorted({start.freq for start in starts})
    if len(steps) > 1:
        raise DataError("starts", f"every series needs the same step; got {', '.join(map(repr, steps))}")
    return starts


def last_values(histories: Sequence[np.ndarray], context_length: int, fill: float = 0.0) -> np.ndarray:
    """The last L_C values of every history, front-padded like Algorithm 4.

    Args:
        histories: The M histories.
        context_length: L_C.
        fill: The padding in front of a history shorter than L_C (Algorithm 4's zeros, or a model's unobserved
            value).

    Returns:
        (M, L_C) float64.
    """
    out = np.full((len(histories), context_length), fill, dtype=np.float64)
    for i, h in enumerate(histories):
        tail = np.asarray(h)[len(h) - min(len(h), context_length):]
        out[i, context_length - len(tail):] = tail
    return out


def first_observed(values: np.ndarray) -> int:
    """The index of the first value that is not NaN (the start of the series :func:`observed` keeps).

    Args:
        values: A series with at least one observed value.

    Returns:
        Its index.
    """
    return int(np.flatnonzero(~np.isnan(values))[0])


def observed(values: np.ndarray, source: str, name: object, rows: Sequence) -> np.ndarray:
    """The series without leading / trailing missing values (the loaders' rule, :mod:`tsdp.datasets.formats`).

    Args:
        values: The series as read, NaN for a missing value.
        source: Its file, for errors.
        name: Its name (item id, column), for errors.
        rows: The label of each value in errors (its row and line).

    Returns:
        The values from the first observed one to the last.

    Raises:
        DataError: No observed value, an infinite one, or a missing value inside the observed range (naming its
            row).
    """
    present = np.flatnonzero(~np.isnan(values))
    if present.size == 0:
        raise DataError(f"{source}, series {name!r}", "is empty (no observed value)")
    inner = values[present[0] : present[-1] + 1]
    infinite = np.flatnonzero(np.isinf(inner))
    if infinite.size:
        raise DataError(f"{source}, series {name!r}", f"holds an infinite value at row {rows[present[0] + infinite[0]]}")
    gaps = np.flatnonzero(np.isnan(inner))
    if gaps.size:
        raise DataError(f"{source}, series {name!r}",
                        f"has a missing value inside its observed range at row {rows[present[0] + gaps[0]]} "
                        "(the paper's algorithms take fully observed series; only leading / trailing gaps are trimmed)")
    return inner


def synthetic(N: int, L: int, *, seed: int, season: int = 24, noise: float = 0.2,
              lengths: Optional[Sequence[int]] = None) -> SeriesData:
    """Seeded synthetic series: level + trend + seasonal sine (period ``season``) + Gaussian noise.

    Per series: level ~ U(5, 15), slope ~ U(-0.02, 0.02) per step, amplitude ~ U(1, 4), phase
    ~ U(0, 2π), noise std ``noise`` × amplitude.

    Args:
        N: The number of series.
        L: Their common length.
        seed: The seed of every draw.
        season: The sine's period.
        noise: The noise std in units of each series' amplitude.
        lengths: N lengths, one per series, instead of L.

    Returns:
        The N series (no calendar).

    Raises:
        ConfigError: ``lengths`` not of N values (names ``lengths``).
    """
    rng = np.random.default_rng(seed)
    lengths = [L] * N if lengths is None else list(lengths)
    if len(lengths) != N:
        raise ConfigError("lengths", f"makes one series per length: {len(lengths)} lengths for N = {N} series",
                          tuple(lengths))
    out = []
    for n in lengths:
        level, slope = rng.uniform(5, 15), rng.uniform(-0.02, 0.02)
        amp, phase = rng.uniform(1, 4), rng.uniform(0, 2 * np.pi)
        t = np.arange(n)
        out.append(level + slope * t + amp * np.sin(2 * np.pi * t / season + phase) + noise * amp * rng.standard_normal(n))
    return SeriesData(tuple(out))


def synthetic_for(config: TrainingConfig, *, seed: int, season: int = 24) -> SeriesData:
    """Synthetic data matching ``config`` (:func:`synthetic`).

    Args:
        config: The configuration: N, L (or lengths) and L_F.
        seed: The seed.
        season: The sine's period.

    Returns:
        N series whose training parts have the config's lengths (L or lengths), each L_F longer (its test target).
    """
    train_lengths = config.lengths if config.lengths is not None else [config.L] * config.N
    return synthetic(config.N, config.L, seed=seed, season=season,
                     lengths=[n + config.forecast_length for n in train_lengths])
