"""The privacy-utility grid: cells (model, ε, seed, level, top level, w or σ_F) with the paper's per-dataset defaults.

Rows are the paper's four models, each cell one training run per seed. Levels (paper Appendix
"Application to Probabilistic Forecasting") and their tables' columns:

- ``1-event`` (the main table): columns ε ∈ {0.5, 1, 2, ∞} at δ = 1e-7 (∞: trained without clipping
  or noise).
- ``w-event`` and ``w-user`` (privacy of w elements, or of w windows' worth of one series,
  THEOREMS.md "Generalisations"): columns w ∈ {1, 2, 4, 8} at ε = 4 (the appendix's w-user tables).
- ``label-noise`` ((1, v)-user-level privacy with forecast augmentation σ_F in units of v, the paper's
  amplification by label perturbation): columns σ_F ∈ {0, 1, 2, 5} at ε = 0.5, with the dataset's v
  (:attr:`tsdp.datasets.benchmarks.DatasetSpec.label_noise_v`).

Top level: ``wor`` (the paper's Table 1) unless asked, or ``shuffle`` (its own table; an epoch is
floor(N λ / Λ) steps, as in the official code). Seeds: one
``numpy.random.SeedSequence(seed)``, spawned once per seed index; a cell's seed depends on its seed
index only, so a cell is the same run on 1 or N workers and after a resume, and the columns of one
row (ε, w or σ_F) are paired: seed i of every column starts from the same initial model and draws. The root
``seed`` is secret unless given (:func:`secret_seed`, docs/DESIGN.md): a root others know lets them redraw every
cell's batches and noise, which voids the ε of the released table.
"""
from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

import numpy as np

from tsdp.datasets.benchmarks import UserData
from tsdp.theorems.config import Choice, ConfigError, Relation, Top, TrainingConfig, check_int, check_real
from tsdp.verify.json_data import Record

MODELS = ("simple-ff", "deepar", "itransformer", "dlinear")
"""The table's rows, in the paper's order."""
EPSILONS = (0.5, 1.0, 2.0, math.inf)
DELTA = 1e-7


class Level(Choice):
    """A cell's privacy level (module docstring): what one cell's guarantee protects."""

    ONE_EVENT = "1-event"
    W_EVENT = "w-event"
    W_USER = "w-user"
    LABEL_NOISE = "label-noise"


LEVELS = Level.values()
W_LEVELS = (Level.W_EVENT, Level.W_USER)
TOPS = (Top.SHUFFLE, Top.WOR)
"""The grid's top levels (:class:`tsdp.theorems.config.Top` members, equal to their strings)."""
DEFAULT_TOPS = (Top.WOR,)
"""The grid's top level unless asked: WOR, the top level of the paper's Table 1 (shuffling has its own table)."""
SEEDS = 5
QUICK_EPOCHS = 10
"""Epochs cap of ``--quick`` grids (and of the report's privacy-utility section)."""
LEVEL_EPSILONS = {Level.ONE_EVENT: EPSILONS, Level.W_EVENT: (4.0,), Level.W_USER: (4.0,), Level.LABEL_NOISE: (0.5,)}
"""Each level's ε columns (1-event) or ε (the others) when none are given: the paper's appendix tables."""
W_VALUES = (1, 2, 4, 8)
"""The w columns of the w-event and w-user tables (the paper's w-user tables)."""
SIGMA_FORECASTS = (0.0, 1.0, 2.0, 5.0)
"""The σ_F columns of the label-noise table (the paper's label-perturbation tables)."""
W_MAX = 10_000
SIGMA_FORECAST_MAX = 1e6
"""The largest σ_F: the label noise σ_F·v is drawn in float32 (TVD(N(0, σ_F), N(1, σ_F)) is already 4e-7 there)."""


def secret_seed() -> int:
    """A fresh root seed from the operating system's entropy (``secrets.randbits(63)``, as ``tsdp.train`` and
    ``tsdp forecast release``): the default of every privacy-relevant draw (docs/DESIGN.md), since a seed others
    know lets them redraw the batches and noise, which voids the ε of what is released.

    Returns:
        An integer in [0, 2^63).
    """
    return secrets.randbits(63)


@dataclass(frozen=True)
class GridSettings(Record):
    """What every cell of one grid shares: the dataset (None: the shipped real one; ``user``: a user's file and its
    settings, :class:`tsdp.datasets.benchmarks.UserData`), δ, the label-noise level's v (None: the dataset's),
    the epochs cap (None: the dataset's), the sample paths per forecast, the device and the accountant's grid.

    Attributes:
        dataset: The benchmark's name (None: the shipped data).
        data_dir: GluonTS's dataset folder.
        delta: δ of every budget.
        v: The label-noise level's v (None: the dataset's).
        epochs: The epochs cap (None: the dataset's).
        n_samples: Sample paths per forecast.
        device: ``auto``, ``cpu`` or ``cuda``.
        discretization: The accountant's PLD discretisation.
        seed: The root of every cell's seed (default: a fresh secret one, :func:`secret_seed`; give one only to
            reproduce a grid, or to resume one stored under another root: ``tsdp experiment`` reads it back from the
            grid's folder, :func:`tsdp.experiments.store.root_seed`).
        user: A user's file and its settings.
    """

    dataset: Optional[str] = None
    data_dir: Optional[str] = None
    delta: float = DELTA
    v: Optional[float] = None
    epochs: Optional[int] = None
    n_samples: int = 100
    device: str = "auto"
    discretization: float = 1e-3
    seed: int = field(default_factory=secret_seed)
    user: Optional[UserData] = None


@dataclass(frozen=True)
class Cell:
    """One training run: ``model`` at budget ``epsilon`` (inf: no DP), seed index, privacy level and top level, with
    the level's ``w`` (w-event, w-user) or ``sigma_forecast`` (label-noise); 1 and 0 for the other levels.

    Attributes:
        model: The model.
        epsilon: The budget (inf: no DP).
        seed_index: The seed index.
        level: The privacy level (a :class:`Level` or its string; stored as the member).
        top: The top level (a :class:`tsdp.theorems.config.Top` or its string; stored as the member).
        w: The level's w.
        sigma_forecast: The level's σ_F.
    """

    model: str
    epsilon: float
    seed_index: int
    level: Level
    top: Top
    w: int = 1
    sigma_forecast: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "level", Level.of("level", self.level))
        object.__setattr__(self, "top", Top.of("top", self.top))

    @property
    def key(self) -> str:
        """The cell's file name (no suffix): the level's value after the level (``w-user_w4_...``,
        ``label-noise_sf2.0_...``); 1-event keys have none."""
        eps = "inf" if math.isinf(self.epsilon) else repr(float(self.epsilon))
        level = self.level.value
        if self.level in W_LEVELS:
            level += f"_w{self.w}"
        elif self.level == Level.LABEL_NOISE:
            level += f"_sf{float(self.sigma_forecast)!r}"
        return f"{level}_{self.top}_{self.model}_eps{eps}_seed{self.seed_index}"

    @property
    def column(self) -> float:
        """The cell's column in its level's table: w (w-event, w-user), σ_F (label-noise) or ε (1-event)."""
        if self.level in W_LEVELS:
            return self.w
        if self.level == Level.LABEL_NOISE:
            return self.sigma_forecast
        return self.epsilon

    trials = 1
    """One cell is one unit of progress (the sharded engine's ``trials``)."""


def cell_seed(settings: GridSettings, seed_index: int) -> int:
    """The torch seed of seed index ``seed_index``: child ``seed_index`` of ``SeedSequence(settings.seed)``.

    Args:
        settings: The grid's settings.
        seed_index: The seed index.

    Returns:
        The seed.
    """
    child = np.random.SeedSequence(settings.seed).spawn(seed_index + 1)[seed_index]
    return int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))


def level_config(config: TrainingConfig, cell: Cell, v: Optional[float] = None) -> TrainingConfig:
    """``config`` under ``cell``'s privacy level (module docstring): relation, w, and for label noise ``v`` and σ_F.

    Args:
        config: The configuration.
        cell: The cell.
        v: The label-noise level's v.

    Returns:
        The configuration under the cell's level.
    """
    if cell.level == Level.ONE_EVENT:
        return config.with_(relation=Relation.EVENT, w=1)
    if cell.level == Level.W_EVENT:
        return config.with_(relation=Relation.EVENT, w=cell.w)
    if cell.level == Level.W_USER:
        return config.with_(relation=Relation.USER, w=cell.w)
    if v is None:
        raise ConfigError("v", "the label-noise level needs the largest change of one element, v")
    return config.with_(relation=Relation.USER, w=1, v=v, sigma_forecast=cell.sigma_forecast)


def _distinct(name: str, values: Sequence) -> tuple:
    values = tuple(values)
    if not values:
        raise ConfigError(name, "must hold at least one value", values)
    seen = set()
    for x in values:
        if x in seen:
            raise ConfigError(name, "must not repeat a value (each is one column or row)", x)
        seen.add(x)
    return values


def plan(models: Sequence[str] = MODELS, epsilons: Optional[Sequence[float]] = None, seeds: int = SEEDS,
         levels: Sequence[str] = ("1-event",), tops: Sequence[str] = DEFAULT_TOPS, w: Optional[Sequence[int]] = None,
         sigma_forecast: Optional[Sequence[float]] = None) -> Tuple[Cell, ...]:
    """Every cell of the grid, in table order (level, top level, model, ε, w or σ_F, seed).

    ``epsilons``: every level's budgets (None: each level's, :data:`LEVEL_EPSILONS`). ``w``: the w columns of the
    w-event and w-user levels (None: :data:`W_VALUES`); ``sigma_forecast``: the σ_F columns of the label-noise
    level (None: :data:`SIGMA_FORECASTS`). Values for a level the grid does not run, repeated values, and values
    out of range raise :class:`ConfigError` naming the parameter.


    Args:
        models: The rows' models.
        epsilons: Every level's budgets.
        seeds: Seeds per cell.
        levels: The privacy levels.
        tops: The top levels.
        w: The w columns.
        sigma_forecast: The σ_F columns.

    Returns:
        The cells.

    Raises:
        ConfigError: Naming the parameter.
    """
    seeds = check_int("seeds", seeds, 1, 1000)
    for name, values, allowed in (("models", models, MODELS), ("levels", levels, LEVELS), ("tops", tops, TOPS)):
        for x in _distinct(name, values):
            if x not in allowed:
                raise ConfigError(name, f"must be among {', '.join(allowed)}", x)
    if epsilons is not None:
        for e in _distinct("epsilons", [float(e) if isinstance(e, (int, float)) else e for e in epsilons]):
            if not (isinstance(e, float) and (math.isinf(e) or math.isfinite(e)) and e > 0):
                raise ConfigError("epsilons", "each must be > 0 (inf: no DP)", e)
    if w is not None:
        if not any(level in W_LEVELS for level in levels):
            raise ConfigError("w", "sets the columns of the w-event and w-user levels: add one of them to the levels")
        w = tuple(check_int("w", x, 1, W_MAX) for x in _distinct("w", w))
    if sigma_forecast is not None:
        if Level.LABEL_NOISE not in levels:
            raise ConfigError("sigma_forecast", "sets the columns of the label-noise level: add it to the levels")
        sigma_forecast = tuple(float(check_real("sigma_forecast", x, low=0.0, high=SIGMA_FORECAST_MAX))
                               for x in _distinct("sigma_forecast", [float(x) if isinstance(x, (int, float)) else x
                                                                     for x in sigma_forecast]))
    cells = []
    for level in map(Level, levels):
        values = ((w or W_VALUES) if level in W_LEVELS else
                  (sigma_forecast or SIGMA_FORECASTS) if level == Level.LABEL_NOISE else (None,))
        for top in tops:
            for m in models:
                for e in (LEVEL_EPSILONS[level] if epsilons is None else epsilons):
                    for x in values:
                        extra = ({"w": x} if level in W_LEVELS else
                                 {"sigma_forecast": x} if level == Level.LABEL_NOISE else {})
                        cells += [Cell(m, float(e), s, level, top, **extra) for s in range(seeds)]
    return tuple(cells)
