"""Time-series datasets: the :class:`SeriesData` container, the seeded synthetic generator, the train/test split.

A dataset is a :class:`SeriesData`: a list of 1-D float arrays of possibly different
lengths (the paper's x = {x_1, ..., x_N}). The split holds out the last L_F steps of
every series as its test target. Files, 'grunfeld' and 'synthetic' are read by the one
loader of every command, :func:`tsdp.datasets.formats.load_series`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import ConfigError, TrainingConfig


class DataError(ConfigError):
    """Malformed input data (the CLI exits 2): ``parameter`` names the source (file, column, series) or the
    loader option at fault (layout, item_id, timestamp, target), the message the row or the fix."""


@dataclass(frozen=True)
class SeriesData:
    """N univariate series (float64 arrays, lengths may differ)."""

    series: Tuple[np.ndarray, ...]

    def __post_init__(self):
        if len(self.series) == 0:
            raise DataError("data", "a dataset needs at least one series")
        for i, s in enumerate(self.series):
            if s.ndim != 1 or len(s) == 0:
                raise DataError(f"series {i}", "must be a non-empty 1-D array")
            if not np.all(np.isfinite(s)):
                raise DataError(f"series {i}", "holds NaN or inf inside its observed range")

    @property
    def N(self) -> int:
        return len(self.series)

    @property
    def lengths(self) -> Tuple[int, ...]:
        return tuple(len(s) for s in self.series)

    def split(self, forecast_length: int) -> Tuple["SeriesData", np.ndarray]:
        """(train, test targets): train drops the last L_F steps of every series; targets are those steps (N, L_F)."""
        if min(self.lengths) <= forecast_length:
            raise ValueError(f"every series must be longer than L_F = {forecast_length} to hold out a test window")
        train = SeriesData(tuple(s[:-forecast_length] for s in self.series))
        return train, np.stack([s[-forecast_length:] for s in self.series])


def last_values(histories: Sequence[np.ndarray], context_length: int, fill: float = 0.0) -> np.ndarray:
    """The last L_C values of every history, front-padded with ``fill`` like Algorithm 4 (its zeros, or a model's
    unobserved value): (M, L_C) float64."""
    out = np.full((len(histories), context_length), fill, dtype=np.float64)
    for i, h in enumerate(histories):
        tail = np.asarray(h)[len(h) - min(len(h), context_length):]
        out[i, context_length - len(tail):] = tail
    return out


def observed(values: np.ndarray, source: str, name, rows: Sequence) -> np.ndarray:
    """The series without leading / trailing missing values; a missing value inside it is refused (the loaders' rule,
    :mod:`datasets.formats`): ``rows`` label the values in the error."""
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
    ~ U(0, 2π), noise std ``noise`` × amplitude. ``lengths`` (N values) overrides the common length L.
    """
    rng = np.random.default_rng(seed)
    lengths = [L] * N if lengths is None else list(lengths)
    if len(lengths) != N:
        raise ValueError(f"got {len(lengths)} lengths for N = {N} series")
    out = []
    for n in lengths:
        level, slope = rng.uniform(5, 15), rng.uniform(-0.02, 0.02)
        amp, phase = rng.uniform(1, 4), rng.uniform(0, 2 * np.pi)
        t = np.arange(n)
        out.append(level + slope * t + amp * np.sin(2 * np.pi * t / season + phase) + noise * amp * rng.standard_normal(n))
    return SeriesData(tuple(out))


def synthetic_for(config: TrainingConfig, *, seed: int, season: int = 24) -> SeriesData:
    """Synthetic data matching ``config``: N series whose training parts have the config's lengths (L or lengths)."""
    train_lengths = config.lengths if config.lengths is not None else [config.L] * config.N
    return synthetic(config.N, config.L, seed=seed, season=season,
                     lengths=[n + config.forecast_length for n in train_lengths])


def fit_config(config: TrainingConfig, data: SeriesData) -> TrainingConfig:
    """``config`` with N and the training lengths (full lengths minus L_F) taken from ``data``.

    Use it to build the accountant for a loaded dataset: the accountant must see the
    shortest training length (THEOREMS.md, "variable lengths").
    """
    train_lengths = tuple(n - config.forecast_length for n in data.lengths)
    if len(set(train_lengths)) == 1:
        return config.with_(N=data.N, L=train_lengths[0], lengths=None)
    return config.with_(N=data.N, lengths=train_lengths)
