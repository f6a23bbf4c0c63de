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

The threads matter: a probe at torch's default (one thread per CPU) on a shared machine times another loop than
the one-thread cells it estimates, and overstates them many times over; at the cells' threads the estimate holds
(`tsdp bench estimate` measures its ratio to the cells' time: the benchmark page).

Cells trained together (the default, :mod:`tsdp.experiments.groups`) are estimated as they run: a group's
cells share one stacked loop, whose seconds per step grow with the runs still training. The probe times
that loop (:func:`tsdp.training.together.loop_seconds`) at one run and at the largest group of the model (private
groups and groups without DP apart: the latter take no clipping and no noise), and a
group's loop costs, step by step, the seconds at its runs still active (linear between the two probes); each cell
keeps its fixed part, and the accountant's search runs twice per distinct budget of a group rather than per cell.
Without that (probing single cells for a grouped grid), a grid of 15-cell groups was overstated several times over.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Dict, List, Sequence

from tsdp.verify.json_data import Record

from .grid import Cell, GridSettings

PROBE_STEPS = 20
"""The probe's steps: at least this many and at least one epoch (so its validations run as the cells' do)."""


@dataclass(frozen=True)
class PlanEstimate(Record):
    """Cells, their planned training steps in total, the probe's seconds per step and fixed seconds per cell of each
    probed pair (``<model>/dp``, ``<model>/no-dp``), the accountant's seconds per private cell, the estimate; for
    cells trained together (``together``) the stacked loop's seconds per step of each model at 1 and at its largest
    group's runs (``group_seconds_per_step``: ``{model: [[runs, seconds], ...]}`` for private groups, and under
    ``<model>/no-dp`` for groups without DP).

    Attributes:
        cells: The cells estimated.
        steps: Their planned training steps in total.
        seconds_per_step: The probe's seconds per step of each pair.
        seconds_per_cell: The probe's fixed seconds per cell of each pair.
        accounting_seconds: The accountant's seconds per search.
        seconds: The estimate.
        together: Whether the cells were estimated trained together.
        group_seconds_per_step: The stacked loop's probes, per model (``<model>/no-dp``: without DP).
    """

    cells: int
    steps: int
    seconds_per_step: Dict[str, float]
    seconds_per_cell: Dict[str, float]
    accounting_seconds: float
    seconds: float
    together: bool = False
    group_seconds_per_step: Dict[str, List[List[float]]] = field(default_factory=dict)

    def line(self) -> str:
        """The note printed before a grid starts.

        Returns:
            One line: cells, steps, the estimate in one process.
        """
        return (f"planned: {self.cells} cells, {self.steps} training steps, about {duration_text(self.seconds)} in "
                "one process (from a probe of each model; N workers take about 1/N of it)")


def duration_text(seconds: float) -> str:
    """``seconds`` as a reader takes an estimate: seconds under two minutes (``45 s``, ``0.3 s``), minutes under two
    hours (``12.5 min``), hours beyond (``3.2 h``).

    Args:
        seconds: The estimate.

    Returns:
        The text.
    """
    if seconds < 120:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def planned_steps(cell: Cell, settings: GridSettings) -> int:
    """The steps ``cell`` will run: the most its budget buys under the sound accountant, capped by its epochs.

    Args:
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        Its planned steps (0: the budget buys none).
    """
    from tsdp.verify.accountant import max_steps
    from tsdp.verify.pld import PldSettings

    from .cells import cell_config, epochs_cap

    config = cell_config(cell, settings)
    cap = epochs_cap(settings) * config.steps_per_epoch
    if math.isinf(cell.epsilon):
        return cap
    return max_steps(config, cell.epsilon, settings.delta, cap=cap, settings=PldSettings(settings.discretization))


def probe(cell: Cell, settings: GridSettings, private: bool, warm_up: bool = True) -> tuple:
    """(seconds per step, fixed seconds) of ``cell``'s model trained as the cells are (module docstring), after a
    one-step run when ``warm_up`` (the model's first run in this process).

    Args:
        cell: A cell of the pair.
        settings: The grid's settings.
        private: Whether the pair trains with DP.
        warm_up: Whether to run one untimed step first.

    Returns:
        (seconds per step, fixed seconds per cell).
    """
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
                          device=settings.device, progress=False, seed=0)
            wall = time.perf_counter() - started
    finally:
        torch.set_num_threads(threads)
    return r.seconds / steps, max(0.0, wall - r.seconds)


def _timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def group_probe(cell: Cell, settings: GridSettings, runs: int) -> float:
    """Seconds per step of the stacked loop of ``runs`` cells of ``cell``'s model, column set and DP or not trained
    together (:func:`tsdp.training.together.loop_seconds`, seeds 0..runs-1, at the cells' torch threads; after a
    one-step run).

    Args:
        cell: A cell of the group (its model, level, top level, w, σ_F; private or not).
        settings: The grid's settings.
        runs: How many runs train together.

    Returns:
        The loop's seconds per step (its validations at the cells' cadence included).
    """
    from dataclasses import replace

    from tsdp.training.together import Run, loop_seconds

    from .cells import CellTask, cell_config, cell_training, diverged_names_the_cell, torch_threads

    config = cell_config(cell, settings)
    steps = max(PROBE_STEPS, config.steps_per_epoch)
    shared = cell_training(cell, settings)
    with torch_threads(CellTask.threads), diverged_names_the_cell(cell, settings):
        loop_seconds(config, [Run(0)], replace(shared, epochs=None, steps=1))
        return loop_seconds(config, [Run(seed) for seed in range(runs)], replace(shared, epochs=None, steps=steps)) / steps


def grouped_loop_seconds(steps: Sequence[int], one: float, full: float, runs: int) -> float:
    """Seconds of the stacked loop of runs of ``steps`` trained together: each step costs the seconds per step at the
    runs still training, linear between ``one`` (1 run) and ``full`` (``runs`` runs).

    Args:
        steps: Each run's planned steps (0: not trained).
        one: Seconds per step of one run.
        full: Seconds per step of ``runs`` runs.
        runs: The runs ``full`` was timed at (at least 1).

    Returns:
        ``one`` times the longest run's steps plus the slope times the other runs' steps (the active runs over all
        steps sum to the steps).
    """
    longest, total = max(steps, default=0), sum(steps)
    slope = (full - one) / (runs - 1) if runs > 1 else 0.0
    return one * longest + slope * (total - longest)


def _probed(cell: Cell) -> str:
    """The name a group's stacked-loop probes go by: its model (private groups), ``<model>/no-dp`` (groups without
    DP: no clipping, no noise)."""
    return f"{cell.model}/no-dp" if math.isinf(cell.epsilon) else cell.model


def estimate(cells: Sequence[Cell], settings: GridSettings, together: bool = True) -> PlanEstimate:
    """The seconds ``cells`` take in one process, trained together (``together``, the grid's default) or each alone.

    Planned steps of every cell (one accountant search per distinct (level, top, ε, w, σ_F), DeepAR's apart: its
    context is L_C + max lag - 1; timed on a second search) and a probe of each (model, private or not) pair
    (:func:`probe`); together, a group's loop from :func:`group_probe` (module docstring).

    Args:
        cells: The cells to run.
        settings: The grid's settings.
        together: Whether the cells of a group train together (:func:`tsdp.experiments.groups.groups_of`).

    Returns:
        The estimate.
    """
    from .groups import groups_of

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
        if not together:
            seconds += 2 * accounting[k] + (fixed[pair] + planned[k] * per_step[pair] if planned[k] else 0.0)
    grouped: Dict[str, List[List[float]]] = {}
    if together:
        groups = groups_of(cells, settings)
        for g in groups:
            steps = [planned[key(c)] for c in g.cells]
            seconds += sum(2 * accounting[key(c)] for c in {c.epsilon: c for c in g.cells}.values())
            trained = [n for n in steps if n]
            if not trained:
                continue
            name = _probed(g.cells[0])
            if name not in grouped:
                largest = max(sum(1 for c in h.cells if planned[key(c)]) for h in groups if _probed(h.cells[0]) == name)
                first = next(c for c in g.cells if planned[key(c)])
                grouped[name] = [[1, group_probe(first, settings, 1)]]
                if largest > 1:
                    grouped[name].append([largest, group_probe(first, settings, largest)])
            (_, one), (runs, full) = grouped[name][0], grouped[name][-1]
            pair = f"{g.cells[0].model}/{'no-dp' if math.isinf(g.cells[0].epsilon) else 'dp'}"
            seconds += len(trained) * fixed[pair] + grouped_loop_seconds(trained, one, full, runs)
    spent = [v for v in accounting.values() if v]
    return PlanEstimate(len(cells), total, per_step, fixed, sum(spent) / len(spent) if spent else 0.0, seconds,
                        together, grouped)
