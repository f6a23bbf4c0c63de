"""The time estimate printed before a grid starts, from a probe of the grid's own runs on this machine.

Each cell costs a fixed part (model set-up, the sound accountant's check of its run, the test forecasts
at the grid's sample paths before and after training and of the selected checkpoint), its planned steps
(the sound accountant's answer to its budget, or the epochs cap) times the seconds per step (the step,
its accounting and the validations at the cells' once-per-epoch cadence), and for a private cell the
accountant's search for its steps, which it runs twice (the cell and the training loop each check the
budget), timed on a second search (the first builds the one-step PLD that the cells find cached). The
probe trains each (model, private or not) pair of the grid once (after an untimed one-step run of
each model), at the cells' torch threads (:attr:`tsdp.experiments.cells.CellTask.threads`): the seconds
per step are the training loop's own clock over the probe's steps (no set-up in it), the fixed part is the
rest of the probe's wall time; the accountant's search is timed where the estimate runs it.

The threads matter: a probe at torch's default (one thread per CPU) on a shared 2-core machine took
19.6x the time of the one-thread cells it estimated (6 cells of the shipped data, ``OMP_NUM_THREADS``
unset; 1.21x at the cells' threads).
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Dict, Sequence

from .grid import Cell, GridSettings

PROBE_STEPS = 20
"""The probe's steps: at least this many and at least one epoch (so its validations run as the cells' do)."""


@dataclass(frozen=True)
class PlanEstimate:
    """Cells, their planned training steps in total, the probe's seconds per step and fixed seconds per cell of each
    probed pair (``<model>/dp``, ``<model>/no-dp``), the accountant's seconds per private cell, the estimate."""

    cells: int
    steps: int
    seconds_per_step: Dict[str, float]
    seconds_per_cell: Dict[str, float]
    accounting_seconds: float
    seconds: float

    def line(self) -> str:
        return (f"planned: {self.cells} cells, {self.steps} training steps, about {duration_text(self.seconds)} in "
                "one process (from a probe of each model; N workers take about 1/N of it)")

    def as_dict(self) -> dict:
        return asdict(self)


def duration_text(seconds: float) -> str:
    """``seconds`` as a reader takes an estimate: seconds under two minutes (``45 s``, ``0.3 s``), minutes under two
    hours (``12.5 min``), hours beyond (``3.2 h``)."""
    if seconds < 120:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def planned_steps(cell: Cell, settings: GridSettings) -> int:
    """The steps ``cell`` will run: the most its budget buys under the sound accountant, capped by its epochs."""
    from tsdp.verify.accountant import max_steps

    from .cells import cell_config, epochs_cap

    config = cell_config(cell, settings)
    cap = epochs_cap(settings) * config.steps_per_epoch
    if math.isinf(cell.epsilon):
        return cap
    return max_steps(config, cell.epsilon, settings.delta, cap=cap, discretization=settings.discretization)


def probe(cell: Cell, settings: GridSettings, private: bool, warm_up: bool = True) -> tuple:
    """(seconds per step, fixed seconds) of ``cell``'s model trained as the cells are (module docstring), after a
    one-step run when ``warm_up`` (the model's first run in this process)."""
    import torch

    from tsdp.datasets.benchmarks import CLIP, LR, WEIGHT_DECAY
    from tsdp.training.options import Budget, Evaluation, Loop
    from tsdp.training.train import train

    from .cells import CellTask, cell_config, diverged_names_the_cell, split_of

    split = split_of(settings)
    config = cell_config(cell, settings)
    steps = max(PROBE_STEPS, config.steps_per_epoch)
    threads = torch.get_num_threads()
    torch.set_num_threads(CellTask.threads)
    try:
        for n in ((1, steps) if warm_up else (steps,)):
            started = time.perf_counter()
            with diverged_names_the_cell(cell, settings):
                r = train(config, cell.model, split,
                          budget=Budget(steps=n, private=private, delta=settings.delta if private else None,
                                        discretization=settings.discretization),
                          loop=Loop(clip=CLIP, lr=LR, weight_decay=WEIGHT_DECAY, lags=split.spec.lags),
                          evaluation=Evaluation(season=split.spec.season, n_samples=settings.n_samples),
                          device=settings.device, progress=False)
            wall = time.perf_counter() - started
    finally:
        torch.set_num_threads(threads)
    return r.seconds / steps, max(0.0, wall - r.seconds)


def _timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def estimate(cells: Sequence[Cell], settings: GridSettings) -> PlanEstimate:
    """Planned steps of every cell (one accountant search per distinct (level, top, ε, w, σ_F), DeepAR's apart: its
    context is L_C + max lag - 1; timed on a second search) and a probe of each (model, private or not) pair
    (:func:`probe`): the seconds the cells take in one process."""
    def key(c: Cell) -> tuple:
        return c.model == "deepar", c.level, c.top, c.epsilon, c.w, c.sigma_forecast

    planned, accounting = {}, {}
    for c in cells:
        k = key(c)
        if k not in planned:
            planned[k] = planned_steps(c, settings)  # builds (or reads) the one-step PLD the cells then reuse
            accounting[k] = 0.0 if math.isinf(c.epsilon) else _timed(planned_steps, c, settings)
    per_step, fixed, seconds, total = {}, {}, 0.0, 0
    for c in cells:
        k = key(c)
        private = not math.isinf(c.epsilon)
        pair = f"{c.model}/{'dp' if private else 'no-dp'}"
        total += planned[k]
        if planned[k] and pair not in per_step:
            warm_up = not any(p.startswith(f"{c.model}/") for p in per_step)
            per_step[pair], fixed[pair] = probe(c, settings, private, warm_up)
        seconds += 2 * accounting[k] + (fixed[pair] + planned[k] * per_step[pair] if planned[k] else 0.0)
    spent = [v for v in accounting.values() if v]
    return PlanEstimate(len(cells), total, per_step, fixed, sum(spent) / len(spent) if spent else 0.0, seconds)
