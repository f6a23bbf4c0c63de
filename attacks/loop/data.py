"""Time-series datasets: seeded synthetic generator, CSV / GluonTS JSON-lines loaders, train/test split.

A dataset is a :class:`SeriesData`: a list of 1-D float arrays of possibly different
lengths (the paper's x = {x_1, ..., x_N}). The split holds out the last L_F steps of
every series as its test target.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import TrainingConfig


@dataclass(frozen=True)
class SeriesData:
    """N univariate series (float64 arrays, lengths may differ)."""

    series: Tuple[np.ndarray, ...]

    def __post_init__(self):
        if len(self.series) == 0:
            raise ValueError("a dataset needs at least one series")
        for i, s in enumerate(self.series):
            if s.ndim != 1 or len(s) == 0:
                raise ValueError(f"series {i} must be a non-empty 1-D array")
            if not np.all(np.isfinite(s)):
                raise ValueError(f"series {i} holds NaN or inf inside its observed range")

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


def _trim(column: np.ndarray, name: str) -> np.ndarray:
    """A column without its NaN tail; NaN before the last observation is an error."""
    observed = np.flatnonzero(~np.isnan(column))
    if observed.size == 0:
        raise ValueError(f"series {name} is empty")
    values = column[: observed[-1] + 1]
    if np.isnan(values).any():
        raise ValueError(f"series {name} has a missing value before its end (only a NaN/empty tail is allowed)")
    return values


def load_csv(path) -> SeriesData:
    """A CSV with one column per series (optional header row); empty or NaN cells allowed only at a column's tail."""
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh) if r]
    if not rows:
        raise ValueError(f"{path}: no rows")

    def number(cell: str) -> float:
        cell = cell.strip()
        return float("nan") if cell == "" or cell.lower() == "nan" else float(cell)

    try:
        [number(c) for c in rows[0]]
        names = [str(i) for i in range(len(rows[0]))]
    except ValueError:
        names, rows = [c.strip() for c in rows[0]], rows[1:]
    table = np.full((len(rows), len(names)), np.nan)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row[: len(names)]):
            table[i, j] = number(cell)
    return SeriesData(tuple(_trim(table[:, j], names[j]) for j in range(len(names))))


def load_jsonl(path) -> SeriesData:
    """A GluonTS-style JSON-lines file: one object with a "target" list per line (null entries only at the tail)."""
    series: List[np.ndarray] = []
    with open(path) as fh:
        for i, line in enumerate(fh):
            if line.strip():
                target = [np.nan if x is None else float(x) for x in json.loads(line)["target"]]
                series.append(_trim(np.asarray(target, dtype=np.float64), f"line {i + 1}"))
    return SeriesData(tuple(series))


def load(path) -> SeriesData:
    """Load a dataset by extension: .csv → :func:`load_csv`; .json / .jsonl → :func:`load_jsonl`."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return load_csv(path)
    if suffix in (".json", ".jsonl"):
        return load_jsonl(path)
    raise ValueError(f"{path}: unknown data format {suffix!r} (use .csv, .json or .jsonl)")


def fit_config(config: TrainingConfig, data: SeriesData) -> TrainingConfig:
    """``config`` with N and the training lengths (full lengths minus L_F) taken from ``data``.

    Use it to build the accountant for a loaded dataset: the accountant must see the
    shortest training length (THEOREMS.md, "variable lengths").
    """
    train_lengths = tuple(n - config.forecast_length for n in data.lengths)
    if len(set(train_lengths)) == 1:
        return config.with_(N=data.N, L=train_lengths[0], lengths=None)
    return config.with_(N=data.N, lengths=train_lengths)
