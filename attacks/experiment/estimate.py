"""The time estimate printed before a grid starts: for each cell, a fixed cost (model set-up, the test forecasts
at the grid's sample paths) plus its planned steps (the sound accountant's answer to its budget, or the epochs cap)
times the seconds per step, both measured by two short probe runs of each model."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Dict, Sequence

from .grid import Cell, GridSettings

PROBE_STEPS = (2, 10)
"""The probe trains each model twice, for these many private steps, after an untimed one-step warm-up: the
difference is the per-step time without the run's fixed costs (model set-up, evaluation)."""


@dataclass(frozen=True)
class PlanEstimate:
    """Cells, their planned training steps in total, the probe's seconds per step and fixed seconds per cell of each
    model, the estimate."""

    cells: int
    steps: int
    seconds_per_step: Dict[str, float]
    seconds_per_cell: Dict[str, float]
    seconds: float

    def line(self) -> str:
        return (f"planned: {self.cells} cells, {self.steps} training steps, about {self.seconds / 60:.1f} min in "
                "one process (from a probe of each model; N workers take about 1/N of it)")

    def as_dict(self) -> dict:
        return asdict(self)


def planned_steps(cell: Cell, settings: GridSettings) -> int:
    """The steps ``cell`` will run: the most its budget buys under the sound accountant, capped by its epochs."""
    from tsdp.verify.accountant import max_steps

    from .cells import cell_config, epochs_cap

    config = cell_config(cell, settings)
    cap = epochs_cap(settings) * config.steps_per_epoch
    if math.isinf(cell.epsilon):
        return cap
    return max_steps(config, cell.epsilon, settings.delta, cap=cap, discretization=settings.discretization)


def estimate(cells: Sequence[Cell], settings: GridSettings) -> PlanEstimate:
    """Planned steps of every cell (one accountant search per distinct (level, top, ε, w, σ_F), DeepAR's apart: its
    context is L_C + max lag) and a probe of each model
    (:data:`PROBE_STEPS`)."""
    from tsdp.attacks.data.benchmarks import CLIP
    from tsdp.attacks.loop.train import train

    from .cells import cell_config, diverged_names_the_cell, split_of

    by_config = {}
    total = 0
    for c in cells:
        k = (c.model == "deepar", c.level, c.top, c.epsilon, c.w, c.sigma_forecast)  # DeepAR's context is longer
        if k not in by_config:
            by_config[k] = planned_steps(c, settings)
        total += by_config[k]
    per_step, fixed, seconds = {}, {}, 0.0
    split = split_of(settings)
    for c in cells:
        if c.model not in per_step:
            took = []
            for steps in (1, *PROBE_STEPS):
                started = time.perf_counter()
                with diverged_names_the_cell(c, settings):
                    train(cell_config(c, settings), c.model, None, split=split, steps=steps, delta=settings.delta,
                          clip=CLIP, device=settings.device, progress=False, n_samples=settings.n_samples,
                          lags=split.spec.lags, season=split.spec.season, validate_every=10 ** 9,
                          discretization=settings.discretization)
                took.append(time.perf_counter() - started)
            per_step[c.model] = max(0.0, took[2] - took[1]) / (PROBE_STEPS[1] - PROBE_STEPS[0])
            fixed[c.model] = max(0.0, took[1] - PROBE_STEPS[0] * per_step[c.model])
        seconds += fixed[c.model] + by_config[(c.model == "deepar", c.level, c.top, c.epsilon, c.w, c.sigma_forecast)] * per_step[c.model]
    return PlanEstimate(len(cells), total, per_step, fixed, seconds)
