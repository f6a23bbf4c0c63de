"""A dataset's forecasting split: its training series, the validation windows held out at their ends and the test
windows, each window with the start of the series its history is a prefix of (DeepAR's time features)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple

import numpy as np

from .series import DataError, SeriesData, SeriesStart, check_starts, last_values


@dataclass(frozen=True)
class Windows:
    """Forecast windows: each a history (every value before it) and its L_F targets (M, L_F).

    Args:
        histories: the M histories; each is a prefix of its series (position i of the history is position i of the
            series; its targets are positions ``len(history)`` to ``len(history) + L_F - 1``).
        targets: (M, L_F) the values that follow each history.
        starts: None (no calendar), or the :class:`~tsdp.datasets.series.SeriesStart` of the series each history
            belongs to, one per history (DeepAR's time features of the window's positions are computed from it).
    """

    histories: Tuple[np.ndarray, ...]
    targets: np.ndarray
    starts: Optional[Tuple[SeriesStart, ...]] = None

    def __post_init__(self):
        if self.starts is not None:
            object.__setattr__(self, "starts", check_starts(self.starts, len(self.histories), "history"))

    @property
    def count(self) -> int:
        """M, the number of windows."""
        return len(self.histories)

    def contexts(self, context_length: int, fill: float = 0.0) -> np.ndarray:
        """The last L_C values of every history, front-padded like Algorithm 4.

        Args:
            context_length: L_C.
            fill: The value of the padding in front of a history shorter than L_C.

        Returns:
            (M, L_C) float64.
        """
        return last_values(self.histories, context_length, fill)


@dataclass(frozen=True)
class ForecastSplit:
    """Training series, validation windows (their ends, held out) and test windows of one dataset.

    Attributes:
        spec: The dataset's settings (:class:`~tsdp.datasets.benchmarks.DatasetSpec`).
        train: The training series, less their validation windows.
        validation: The validation windows: the last ``spec.validation_windows``·L_F values of every training series.
        test: The test windows.
        dropped: The series left out, too short for the split.
        step_source: Where the calendar's step was read when it is not the data's own: a GluonTS folder's
            ``metadata.json`` (None: the timestamps of the data or the step given with them, or no calendar).
    """

    spec: "tsdp.datasets.benchmarks.DatasetSpec"  # named, not imported: benchmarks builds its splits here
    train: SeriesData
    validation: Windows
    test: Windows
    dropped: int = 0
    step_source: Optional[str] = None

    @property
    def freq(self) -> Optional[str]:
        """The step of the split's calendar (None: no calendar)."""
        return None if self.train.starts is None else self.train.starts[0].freq

    def as_dict(self) -> dict:
        """The split's sizes, as ``tsdp experiment --json`` writes them."""
        return {"dataset": self.spec.name, "train_series": self.train.N, "train_min_length": min(self.train.lengths),
                "train_max_length": max(self.train.lengths), "validation_windows": self.validation.count,
                "validation_steps_per_series": self.spec.validation_windows * self.spec.forecast_length,
                "test_windows": self.test.count, "forecast_length": self.spec.forecast_length,
                "context_length": self.spec.context_length, "dropped_series": self.dropped}


def hold_out(spec: "tsdp.datasets.benchmarks.DatasetSpec", train: SeriesData, test: Windows,
             dropped: int = 0) -> ForecastSplit:
    """Hold out the last ``spec.validation_windows``·L_F steps of every training series as validation windows
    (their histories are prefixes of the training series: each window has its series' start, as the training
    series keep theirs).

    Args:
        spec: The dataset's settings (L_F, the validation windows).
        train: The training series, validation windows included.
        test: The test windows.
        dropped: The series left out before, too short for the split.

    Returns:
        The split.

    Raises:
        DataError: A training series too short to hold out its validation windows and keep L_F values.
    """
    f, k = spec.forecast_length, spec.validation_windows
    if min(train.lengths) < (k + 1) * f:
        raise DataError(spec.name, f"a training series of length {min(train.lengths)} cannot hold out {k}·L_F = "
                                   f"{k * f} validation steps and keep L_F = {f} to train on")
    fitted = SeriesData(tuple(s[: len(s) - k * f] for s in train.series), train.starts)
    return ForecastSplit(spec, fitted, last_windows(train.series, k, f, train.starts), test, dropped)


def last_windows(series: Sequence[np.ndarray], k: int, f: int,
                 starts: Optional[Sequence[SeriesStart]] = None) -> Windows:
    """The last k windows of L_F = ``f`` values of every series, oldest first, each with every earlier value as its
    history (GluonTS's rolling test windows).

    Args:
        series: The series, each at least k·f values long.
        k: Windows per series.
        f: L_F, the values of a window.
        starts: One per series, or None: each window gets its series'.

    Returns:
        The k·N windows, series by series.
    """
    histories, targets, window_starts = [], [], []
    for n, s in enumerate(series):
        for j in range(k, 0, -1):
            end = len(s) - (j - 1) * f
            histories.append(s[: end - f])
            targets.append(s[end - f: end])
            if starts is not None:
                window_starts.append(starts[n])
    return Windows(tuple(histories), np.stack(targets), None if starts is None else tuple(window_starts))


def check_time_features(split: ForecastSplit) -> None:
    """Refuse, before any training, a split whose step has no GluonTS time features (a millisecond step, say), which
    DeepAR's covariates need (:func:`tsdp.datasets.time_features.calendar_features`): one :class:`DataError` naming
    where the step was read (:attr:`ForecastSplit.step_source`, a folder's ``metadata.json``; else parameter "freq":
    the step given with the data, or its timestamps').

    Args:
        split: The split DeepAR would train on.

    Raises:
        DataError: The split's step has no time features.
    """
    from .gluonts_folders import blamed_on_metadata
    from .time_features import calendar_features

    if split.step_source is None:
        calendar_features(split.freq)
        return
    with blamed_on_metadata(Path(split.step_source).parent, split.freq):
        calendar_features(split.freq)
