"""The privacy-utility grid: cells (model, ε, seed, level, top level) with the paper's per-dataset defaults.

Rows are the paper's four models, columns ε ∈ {0.5, 1, 2, ∞} at δ = 1e-7 (∞: trained without
clipping or noise), each cell one training run per seed. Levels (paper Appendix "Application to
Probabilistic Forecasting"): ``1-event`` (the main table), ``w-event`` and ``w-user`` (privacy of
w elements or w windows' worth of one series, THEOREMS.md "Generalisations") and
``label-noise`` ((1, v)-user-level privacy with forecast augmentation σ_F, the paper's
amplification by label perturbation). Top level: ``shuffle`` or ``wor``, as the authors' configs
sweep them. Seeds: one ``numpy.random.SeedSequence(seed)``, spawned once per seed index; a cell's
seed depends on its seed index only, so a cell is the same run on 1 or N workers and after a resume.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Optional, Tuple

import numpy as np

from tsdp.theorems.config import ConfigError, TrainingConfig, check_int

MODELS = ("simple-ff", "deepar", "itransformer", "dlinear")
"""The table's rows, in the paper's order."""
EPSILONS = (0.5, 1.0, 2.0, math.inf)
DELTA = 1e-7
LEVELS = ("1-event", "w-event", "w-user", "label-noise")
TOPS = ("shuffle", "wor")
SEEDS = 5
QUICK_EPOCHS = 10
"""Epochs cap of ``--quick`` grids (and of the report's privacy-utility section)."""


@dataclass(frozen=True)
class GridSettings:
    """What every cell of one grid shares: the dataset (None: the shipped real one), δ, the level's w, v, σ_F,
    the epochs cap (None: the dataset's), the sample paths per forecast, the device and the accountant's grid."""

    dataset: Optional[str] = None
    data_dir: Optional[str] = None
    delta: float = DELTA
    w: int = 1
    v: float = 1.0
    sigma_forecast: float = 0.0
    epochs: Optional[int] = None
    n_samples: int = 100
    device: str = "auto"
    discretization: float = 1e-3
    seed: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Cell:
    """One training run: ``model`` at budget ``epsilon`` (inf: no DP), seed index, privacy level and top level."""

    model: str
    epsilon: float
    seed_index: int
    level: str
    top: str

    @property
    def key(self) -> str:
        eps = "inf" if math.isinf(self.epsilon) else repr(float(self.epsilon))
        return f"{self.level}_{self.top}_{self.model}_eps{eps}_seed{self.seed_index}"

    trials = 1
    """One cell is one unit of progress (the sharded engine's ``trials``)."""


def cell_seed(settings: GridSettings, seed_index: int) -> int:
    """The torch seed of seed index ``seed_index``: child ``seed_index`` of ``SeedSequence(settings.seed)``."""
    child = np.random.SeedSequence(settings.seed).spawn(seed_index + 1)[seed_index]
    return int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))


def level_config(config: TrainingConfig, level: str, settings: GridSettings) -> TrainingConfig:
    """``config`` under privacy level ``level`` (module docstring): relation, w, v and σ_F."""
    if level == "1-event":
        return config.with_(relation="event", w=1)
    if level == "w-event":
        return config.with_(relation="event", w=settings.w)
    if level == "w-user":
        return config.with_(relation="user", w=settings.w)
    if level == "label-noise":
        return config.with_(relation="user", w=1, v=settings.v, sigma_forecast=settings.sigma_forecast)
    raise ConfigError("level", f"must be one of {', '.join(LEVELS)}", level)


def plan(models=MODELS, epsilons=EPSILONS, seeds: int = SEEDS, levels=("1-event",), tops=TOPS) -> Tuple[Cell, ...]:
    """Every cell of the grid, in table order (level, top level, model, ε, seed)."""
    seeds = check_int("seeds", seeds, 1, 1000)
    for m in models:
        if m not in MODELS:
            raise ConfigError("models", f"must be among {', '.join(MODELS)}", m)
    for e in epsilons:
        if not (isinstance(e, (int, float)) and (math.isinf(e) or (math.isfinite(e) and e > 0))) or e < 0:
            raise ConfigError("epsilons", "each must be > 0 (inf: no DP)", e)
    for level in levels:
        if level not in LEVELS:
            raise ConfigError("levels", f"must be among {', '.join(LEVELS)}", level)
    for top in tops:
        if top not in TOPS:
            raise ConfigError("tops", f"must be among {', '.join(TOPS)}", top)
    return tuple(Cell(m, float(e), s, level, top) for level in levels for top in tops for m in models
                 for e in epsilons for s in range(seeds))
