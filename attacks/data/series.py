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


class DataError(ValueError):
    """A data file that cannot be used; the message names the file, and the line where there is one."""


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


def _text_lines(path):
    """(line number, text) of a readable UTF-8 text file; DataError for a missing file, a
    directory, or a binary file."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{path}: no such file")
    if not p.is_file():
        raise DataError(f"{path}: not a regular file (a directory?)")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not a UTF-8 text file (byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if "\x00" in text:
        raise DataError(f"{path}: not a text file (it holds NUL bytes)")
    return text.splitlines()


def _finite_or_nan(value: float, where: str) -> float:
    if np.isinf(value):
        raise DataError(f"{where}: infinite value")
    return value


def load_csv(path) -> SeriesData:
    """A CSV with one column per series (optional header row); empty or NaN cells allowed only at a column's tail.

    Every cell is checked: a bad one raises DataError naming the file, line and column.
    """
    try:
        rows = [(n, r) for n, r in enumerate(csv.reader(_text_lines(path)), start=1) if r]
    except csv.Error as exc:
        raise DataError(f"{path}: malformed CSV ({exc})") from None
    if not rows:
        raise DataError(f"{path}: no rows")

    def number(cell: str, where: str) -> float:
        cell = cell.strip()
        if cell == "" or cell.lower() == "nan":
            return float("nan")
        try:
            return _finite_or_nan(float(cell), where)
        except ValueError:
            raise DataError(f"{where}: {cell[:40]!r} is not a number") from None

    try:
        [float(c) for c in rows[0][1] if c.strip() and c.strip().lower() != "nan"]
        names = [str(i) for i in range(len(rows[0][1]))]
    except ValueError:
        names, rows = [c.strip() for c in rows[0][1]], rows[1:]
    if not rows:
        raise DataError(f"{path}: a header and no data rows")
    table = np.full((len(rows), len(names)), np.nan)
    for i, (line, row) in enumerate(rows):
        if len(row) > len(names):
            raise DataError(f"{path}, line {line}: {len(row)} cells, more than the {len(names)} columns")
        for j, cell in enumerate(row):
            table[i, j] = number(cell, f"{path}, line {line}, column {j + 1}")
    for j in range(len(names)):
        observed = np.flatnonzero(~np.isnan(table[:, j]))
        holes = np.flatnonzero(np.isnan(table[: observed[-1] + 1, j])) if observed.size else observed
        if holes.size:
            raise DataError(f"{path}, line {rows[holes[0]][0]}, column {j + 1}: series {names[j]} has a missing "
                            "value before its end (only a NaN/empty tail is allowed)")
    try:
        return SeriesData(tuple(_trim(table[:, j], names[j]) for j in range(len(names))))
    except DataError:
        raise
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None


def load_jsonl(path) -> SeriesData:
    """A GluonTS-style JSON-lines file: one object with a "target" list per line (null entries only at the tail)."""
    series: List[np.ndarray] = []
    for i, line in enumerate(_text_lines(path), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {i}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise DataError(f"{where}: a JSON object with a \"target\" list expected, got {type(record).__name__}")
        target = record.get("target")
        if not isinstance(target, list):
            raise DataError(f"{where}: \"target\" must be a list of numbers (got {type(target).__name__})")
        bad = next((x for x in target if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float)))), None)
        if bad is not None:
            raise DataError(f"{where}: \"target\" holds {bad!r}; only numbers and null (at the tail) are allowed")
        values = np.asarray([np.nan if x is None else _finite_or_nan(float(x), where) for x in target], dtype=np.float64)
        try:
            series.append(_trim(values, "target"))
        except ValueError as exc:
            raise DataError(f"{where}: {exc}") from None
    if not series:
        raise DataError(f"{path}: no series (every line is empty)")
    return SeriesData(tuple(series))


def load(path) -> SeriesData:
    """Load a dataset by extension: .csv → :func:`load_csv`; .json / .jsonl → :func:`load_jsonl`."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return load_csv(path)
    if suffix in (".json", ".jsonl"):
        return load_jsonl(path)
    raise DataError(f"{path}: unknown data format {suffix!r} (use .csv, .json or .jsonl)")


def fit_config(config: TrainingConfig, data: SeriesData) -> TrainingConfig:
    """``config`` with N and the training lengths (full lengths minus L_F) taken from ``data``.

    Use it to build the accountant for a loaded dataset: the accountant must see the
    shortest training length (THEOREMS.md, "variable lengths").
    """
    train_lengths = tuple(n - config.forecast_length for n in data.lengths)
    if len(set(train_lengths)) == 1:
        return config.with_(N=data.N, L=train_lengths[0], lengths=None)
    return config.with_(N=data.N, lengths=train_lengths)
