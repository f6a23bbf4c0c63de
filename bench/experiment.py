"""`tsdp bench baselines` and `tsdp bench estimate`: the grid's baselines at scale, and the pre-run estimate's accuracy.

``baselines`` times both baselines (:func:`tsdp.experiments.stored_baselines.cached_baselines`: the
data's fingerprint, seasonal naive and AutoETS on their fitted history, statsforecast with ``workers``
processes) on a synthetic set of electricity's shape (321 series of 26,304 hourly values, 7 rolling test
windows of 24 steps, season 24; ``full=True``) or a scaled-down one (32 series of 2,000 values, the
default: about a minute), then reads the result back from the cache. Goal: the full shape in
≤ :data:`GOAL_SECONDS` on 2 cores. ``estimate`` runs a small grid on the shipped data in one process
and reports the pre-run estimate (:func:`tsdp.experiments.estimate.estimate`) over the measured
wall time of its cells; goal: within :data:`ESTIMATE_GOAL` either way.
"""
from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from tsdp.bench.rounds import Conditions
from tsdp.verify.json_data import Record

if TYPE_CHECKING:
    from tsdp.datasets.benchmarks import ForecastSplit
    from tsdp.experiments.estimate import PlanEstimate

GOAL_SECONDS = 600.0
ESTIMATE_GOAL = 1.5


@dataclass(frozen=True)
class SeriesShape(Record):
    """A synthetic data set's shape: series, values per series, rolling test windows, season, forecast length.

    Attributes:
        series: Series.
        length: Values per series.
        windows: Rolling test windows.
        season: Season length.
        forecast_length: L_F.
    """

    series: int
    length: int
    windows: int
    season: int = 24
    forecast_length: int = 24


ELECTRICITY = SeriesShape(321, 26_304, 7)
"""electricity's shape (GluonTS's 321 series, 3 years hourly, 7 rolling test days)."""
SMALL = SeriesShape(32, 2_000, 7)


def synthetic_split(shape: SeriesShape, seed: int = 0) -> "ForecastSplit":
    """Positive hourly-like series (a level, daily and weekly cycles, noise) split as the GluonTS benchmarks are: the
    last ``windows``·L_F steps are ``windows`` rolling test windows, every history the series before its window.

    Args:
        shape: The shape.
        seed: The generator's seed.

    Returns:
        The :class:`~tsdp.datasets.benchmarks.ForecastSplit`.
    """
    from tsdp.datasets.benchmarks import PAPER, Windows, hold_out
    from tsdp.datasets.series import SeriesData

    rng = np.random.default_rng(seed)
    t = np.arange(shape.length)
    level = rng.lognormal(4.0, 1.0, (shape.series, 1))
    daily = 1 + 0.4 * np.sin(2 * np.pi * (t / shape.season + rng.random((shape.series, 1))))
    weekly = 1 + 0.1 * np.sin(2 * np.pi * t / (7 * shape.season))
    values = level * daily * weekly * rng.lognormal(0.0, 0.1, (shape.series, shape.length))
    f = shape.forecast_length
    ends = [shape.length - (shape.windows - 1 - j) * f for j in range(shape.windows)]
    test = Windows(tuple(s[:end - f] for s in values for end in ends),
                   np.stack([s[end - f:end] for s in values for end in ends]))
    spec = replace(PAPER["electricity"], name="synthetic", season=shape.season, forecast_length=f,
                   validation_windows=1, source=f"synthetic (seed {seed})")  # baselines use no validation
    return hold_out(spec, SeriesData(tuple(s[:shape.length - shape.windows * f] for s in values)), test)


@dataclass(frozen=True)
class BaselinesBench(Record):
    """What :func:`bench_baselines` measured.

    Attributes:
        shape: The synthetic set's shape.
        workers: statsforecast's processes.
        full: Whether the shape is electricity's.
        histories: The test histories.
        fitted_history: Per baseline, the values of a history it is fitted on.
        crps: Per baseline, its test CRPS.
        seconds: Both baselines' wall seconds, computed.
        cpu_seconds: Their CPU seconds (this process and its workers).
        cached_seconds: The seconds to read them back from the cache.
        cache_hit: Read back from the cache, with the same CRPS.
        goal_seconds: The goal (None: the small shape has none).
        environment: The machine and its load before and after.
    """

    shape: SeriesShape
    workers: int
    full: bool
    histories: int
    fitted_history: Dict[str, int]
    crps: Dict[str, float]
    seconds: float
    cpu_seconds: float
    cached_seconds: float
    cache_hit: bool
    goal_seconds: Optional[float]
    environment: Conditions


def bench_baselines(full: bool = False, workers: int = 2,
                    progress: Optional[Callable[[str], None]] = None) -> BaselinesBench:
    """Seconds of both baselines on :data:`ELECTRICITY` (``full``) or :data:`SMALL`'s synthetic set with ``workers``
    processes, computed and then read back from the cache; the CPU seconds of the computation (on a shared machine
    the wall time also holds other processes' turns).

    Args:
        full: electricity's shape instead of the small one.
        workers: statsforecast's processes.
        progress: Called with a line before the computation.

    Returns:
        The :class:`BaselinesBench`.
    """
    from tsdp.bench import rounds as bench_rounds

    from tsdp.experiments.stored_baselines import cached_baselines
    from tsdp.experiments.baselines import BASELINES, fitted_history, statsforecast_version

    statsforecast_version()  # the experiments extra, before the synthetic set is made
    shape = ELECTRICITY if full else SMALL
    split = synthetic_split(shape)
    before = bench_rounds.environment()
    with tempfile.TemporaryDirectory() as folder:
        if progress:
            progress(f"baselines on {shape.series} x {shape.windows} windows of ~{shape.length} values, "
                     f"{workers} worker(s)")
        cpu = _cpu_seconds()
        cold = cached_baselines(split, folder, n_jobs=workers, progress=progress is not None)
        cpu = _cpu_seconds() - cpu
        warm = cached_baselines(split, folder, n_jobs=workers)
    return BaselinesBench(shape, workers, full, split.test.count,
                          {b: fitted_history(b, shape.season) for b in BASELINES}, cold.crps, cold.seconds, cpu,
                          warm.seconds, warm.cached and warm.crps == cold.crps, GOAL_SECONDS if full else None, bench_rounds.conditions_since(before))


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished child processes (statsforecast's workers)."""
    import resource

    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def format_baselines(result: Union[BaselinesBench, dict]) -> str:
    """The bench's text: shape, seconds computed and read back, CRPS, goal.

    Args:
        result: :func:`bench_baselines`'s figures, or their ``as_dict()`` (``--json``, the benchmark page).

    Returns:
        The text.
    """
    from tsdp.bench.rounds import format_environment

    if isinstance(result, BaselinesBench):
        result = result.as_dict()
    s = result["shape"]
    goal = result["goal_seconds"]
    verdict = "" if goal is None else f" (goal <= {goal:.0f} s: {'met' if result['seconds'] <= goal else 'missed'})"
    lines = [f"{s['series']} series x {s['windows']} test windows ({result['histories']} histories) of "
             f"~{s['length']} values, season {s['season']}, L_F {s['forecast_length']}; {result['workers']} worker(s)",
             "fitted history: " + ", ".join(f"{b} last {k}" for b, k in result["fitted_history"].items()),
             f"both baselines: {result['seconds']:.1f} s{verdict}; {result['cpu_seconds']:.0f} CPU s (this process "
             f"and its workers: about {result['cpu_seconds'] / result['workers']:.0f} s on {result['workers']} idle cores)",
             f"read back from the cache: {result['cached_seconds']:.2f} s "
             f"({'hit, same CRPS' if result['cache_hit'] else 'MISS'})",
             "CRPS: " + ", ".join(f"{b} {v:.4f}" for b, v in result["crps"].items()),
             format_environment(result["environment"])]
    return "\n".join(lines)


ESTIMATE_GRID = {"models": ("simple-ff", "dlinear", "deepar"), "epsilons": (1.0, math.inf), "seeds": 1,
                 "tops": ("wor",)}
"""The estimate bench's grid on the shipped data: 6 cells, private and not, the cheapest and the slowest model."""


@dataclass(frozen=True)
class EstimateBench(Record):
    """What :func:`bench_estimate` measured.

    Attributes:
        cells: The grid's cells.
        models: Its models.
        epochs: The epochs cap.
        n_samples: Sample paths per forecast.
        estimate: The pre-run estimate.
        probe_seconds: The estimate's own seconds (its probes).
        measured_seconds: The cells' wall seconds in one process.
        ratio: The estimate over the measured seconds.
        goal: The ratio's goal, within it either way (:data:`ESTIMATE_GOAL`).
        steps: Per cell key, its training steps.
        cell_seconds: Per cell key, its seconds.
        environment: The machine and its load before and after.
    """

    cells: int
    models: Tuple[str, ...]
    epochs: int
    n_samples: int
    estimate: "PlanEstimate"
    probe_seconds: float
    measured_seconds: float
    ratio: float
    goal: float
    steps: Dict[str, int]
    cell_seconds: Dict[str, float]
    environment: Conditions


def bench_estimate(models: Sequence[str] = ESTIMATE_GRID["models"], epochs: int = 20, n_samples: int = 20,
                   progress: Optional[Callable[[str], None]] = None) -> EstimateBench:
    """The pre-run estimate of a small grid (:data:`ESTIMATE_GRID`, ``epochs`` epochs, ``n_samples`` sample paths) over
    the wall time its cells then take in one process (:func:`tsdp.experiments.table.run_grid`).

    Args:
        models: The grid's models.
        epochs: The epochs cap.
        n_samples: Sample paths per forecast.
        progress: Called with the estimate's line.

    Returns:
        The :class:`EstimateBench`.
    """
    from tsdp.bench import rounds as bench_rounds

    from tsdp.experiments.estimate import estimate
    from tsdp.experiments.grid import GridSettings, plan
    from tsdp.experiments.table import run_grid

    cells = plan(models=models, epsilons=ESTIMATE_GRID["epsilons"], seeds=ESTIMATE_GRID["seeds"],
                 tops=ESTIMATE_GRID["tops"])
    settings = GridSettings(epochs=epochs, n_samples=n_samples, seed=0)  # reproducible: a benchmark, not a release
    before = bench_rounds.environment()
    started = time.perf_counter()
    planned = estimate(cells, settings)
    probe_seconds = time.perf_counter() - started
    if progress:
        progress(planned.line())
    with tempfile.TemporaryDirectory() as folder:
        results, info = run_grid(cells, settings, folder=folder, workers=1)
    return EstimateBench(len(cells), tuple(models), epochs, n_samples, planned, probe_seconds, info.seconds,
                         planned.seconds / info.seconds, ESTIMATE_GOAL, {r.key: r.steps for r in results},
                         {r.key: r.seconds for r in results}, bench_rounds.conditions_since(before))


def format_estimate(result: Union[EstimateBench, dict]) -> str:
    """The bench's text: the grid, the estimate, the measured time, their ratio against the goal.

    Args:
        result: :func:`bench_estimate`'s figures, or their ``as_dict()`` (``--json``, the benchmark page).

    Returns:
        The text.
    """
    from tsdp.bench.rounds import format_environment

    if isinstance(result, EstimateBench):
        result = result.as_dict()
    ratio, goal = result["ratio"], result["goal"]
    met = 1 / goal <= ratio <= goal
    return "\n".join([
        f"{result['cells']} cells ({', '.join(result['models'])}; ε 1 and ∞; {result['epochs']} epochs, "
        f"{result['n_samples']} sample paths) on the shipped data, one process",
        f"estimate {result['estimate']['seconds']:.1f} s (probe {result['probe_seconds']:.1f} s), measured "
        f"{result['measured_seconds']:.1f} s: ratio {ratio:.2f} (goal within {goal:g}x either way: "
        f"{'met' if met else 'missed'})",
        format_environment(result["environment"])])


GRID_GOAL_SECONDS = 60.0
"""The goal for the default 1-event table of the shipped M1 data trained together on 2 cores."""


@dataclass(frozen=True)
class GridSide(Record):
    """One side of :func:`bench_grid`: the grid trained together or cell by cell.

    Attributes:
        seconds: Its wall seconds.
        cpu_seconds: Its CPU seconds in one process (None with workers: the engine's pool outlives the run).
        steps: The training steps of its cells.
        estimate: Its pre-run estimate's seconds (None: not made).
    """

    seconds: float
    cpu_seconds: Optional[float]
    steps: int
    estimate: Optional[float]


@dataclass(frozen=True)
class TableDifference(Record):
    """How two grid tables differ (:func:`table_difference`).

    Attributes:
        rows: The rows compared.
        max_relative: The largest relative difference of a mean or std CRPS.
        same_printed: Every one prints the same at the CLI's 3 decimals.
    """

    rows: int
    max_relative: float
    same_printed: bool


@dataclass(frozen=True)
class GridBench(Record):
    """What :func:`bench_grid` measured.

    Attributes:
        cells: The grid's cells.
        levels: Its privacy levels.
        models: Its models.
        seeds: Seeds per cell.
        epochs: The epochs cap (None: the dataset's).
        n_samples: Sample paths per forecast.
        workers: Local worker processes of each side.
        cell_threads: Torch threads per cell.
        torch_threads: This process's torch threads.
        together: The side trained together.
        cell_by_cell: The side trained cell by cell.
        speedup: Cell by cell's wall seconds over together's.
        cpu_speedup: The same in CPU seconds (None with workers).
        tables: How the two CRPS tables differ.
        goal_seconds: The default grid's goal, trained together.
        environment: The machine and its load before and after.
    """

    cells: int
    levels: Tuple[str, ...]
    models: Tuple[str, ...]
    seeds: int
    epochs: Optional[int]
    n_samples: int
    workers: int
    cell_threads: int
    torch_threads: int
    together: GridSide
    cell_by_cell: GridSide
    speedup: float
    cpu_speedup: Optional[float]
    tables: TableDifference
    goal_seconds: float
    environment: Conditions


POOL_MODULES = ("tsdp.experiments.groups", "tsdp.training.together", "tsdp.training.train", "scipy.stats",
                "torch._dynamo")
"""What a worker of the grid imports before either side is timed (both sides' units come from these; torch imports
``torch._dynamo`` at a process's first optimizer, about 2 s, which the side timed first would pay alone)."""


def _ready(modules: Sequence[str]) -> int:
    """Run in a worker: import ``modules``; the worker's pid."""
    import importlib
    import os

    for module in modules:
        importlib.import_module(module)
    return os.getpid()


def warm_pool(workers: int, attempts: int = 5) -> int:
    """Start the engine's pool of ``workers`` processes (:func:`tsdp.executor.local.worker_pool`, the one both sides
    of :func:`bench_grid` then run on) and import :data:`POOL_MODULES` in each, before either side is timed: each
    side then starts on the same warm pool (without it the first side paid every worker's start-up and imports).

    Args:
        workers: The pool's processes.
        attempts: Rounds of one import per process, until every process has answered one.

    Returns:
        The processes that answered (``workers`` unless a round kept finding the same ones).
    """
    from concurrent.futures import wait

    from tsdp.executor.local import worker_pool

    pool = worker_pool(workers)
    seen: set = set()
    for _ in range(attempts):
        futures = [pool.submit(_ready, POOL_MODULES) for _ in range(workers)]
        wait(futures)
        seen |= {f.result() for f in futures}
        if len(seen) >= workers:
            break
    return len(seen)


def _grid_side(cells, settings, workers: int, together: bool, planned: Optional[float]) -> Tuple[GridSide, List[list]]:
    """One side of :func:`bench_grid`: the grid run in a fresh folder (its :class:`GridSide`, ``planned`` its
    estimate) and the rows of its table."""
    from tsdp.experiments.cells import epochs_cap
    from tsdp.experiments.table import rows_of, run_grid

    with tempfile.TemporaryDirectory() as folder:
        cpu = _cpu_seconds()
        results, info = run_grid(cells, settings, folder=folder, workers=workers, together=together)
        cpu = _cpu_seconds() - cpu
    rows = rows_of(results, epochs_cap(settings))
    return (GridSide(info.seconds, cpu if workers == 1 else None,  # the pool outlives the run
                     sum(r.steps for r in results), planned),
            [[r.level, r.top, r.model, None if math.isinf(r.epsilon) else r.epsilon, r.checkpoint, r.crps_mean,
              r.crps_std] for r in rows])


def table_difference(a: list, b: list) -> TableDifference:
    """How two grid tables (:func:`_grid_side`'s ``table`` rows, in one order) differ: the largest relative
    difference of a mean or std CRPS, and whether every one prints the same at the CLI's 3 decimals (no step: NaN on
    both sides is the same).

    Args:
        a: One side's rows.
        b: The other's, the same cells in the same order.

    Returns:
        The :class:`TableDifference`.

    Raises:
        ValueError: The two tables are not of the same cells.
    """
    if [r[:5] for r in a] != [r[:5] for r in b]:
        raise ValueError("the tables are not of the same cells")
    worst, printed = 0.0, True
    for x, y in zip(a, b):
        for u, v in zip(x[5:], y[5:]):
            if math.isnan(u) and math.isnan(v):
                continue
            worst = max(worst, abs(u - v) / max(abs(u), abs(v), 1e-300))
            printed = printed and f"{u:.3f}" == f"{v:.3f}"
    return TableDifference(len(a), worst, printed)


def bench_grid(levels: Sequence[str] = ("1-event",), models: Optional[Sequence[str]] = None, seeds: Optional[int] = None, epochs: Optional[int] = None,
               n_samples: int = 100, workers: int = 1, estimates: bool = True,
               progress: Optional[Callable[[str], None]] = None) -> GridBench:
    """The default grid of ``tsdp experiment --levels 1-event`` on the shipped M1 data, trained together and cell by
    cell (``--cell-by-cell``), one after the other in this process (``workers`` processes each), with the pre-run
    estimate of each: seconds and CPU seconds of each side, their ratio, and whether the two CRPS tables are the
    same (:func:`table_difference`). Cells run at one torch thread each (:attr:`~tsdp.experiments.cells.CellTask.threads`).
    With ``workers`` > 1 both sides run on one pool started before either is timed (:func:`warm_pool`).

    Args:
        levels: The privacy levels (the table's).
        models: The rows (default the grid's four).
        seeds: Seeds per cell (default the grid's).
        epochs: The epochs cap (default the dataset's).
        n_samples: Sample paths per forecast.
        workers: Local worker processes of each side.
        estimates: Whether to make each side's pre-run estimate first (its probes run before the side; None in
            the figures without).
        progress: Called with a line per side.

    Returns:
        The :class:`GridBench`: each side's seconds, CPU seconds, steps and estimate, their ratio, how their CRPS
        tables differ (:func:`table_difference`), the goal and the environment.
    """
    import torch

    from tsdp.bench import rounds as bench_rounds
    from tsdp.experiments.cells import CellTask
    from tsdp.experiments.estimate import estimate
    from tsdp.experiments.grid import MODELS, SEEDS, GridSettings, plan

    cells = plan(models=tuple(models or MODELS), seeds=SEEDS if seeds is None else seeds, levels=tuple(levels))
    settings = GridSettings(epochs=epochs, n_samples=n_samples, device="cpu", seed=0)  # reproducible: not a release
    before = bench_rounds.environment()
    if workers > 1:
        warm_pool(workers)
    sides, tables = {}, {}
    for name, together in (("together", True), ("cell_by_cell", False)):
        planned = estimate(cells, settings, together=together) if estimates else None
        if progress and planned is not None:
            progress(f"{name.replace('_', ' ')}: {planned.line()}")
        sides[name], tables[name] = _grid_side(cells, settings, workers, together,
                                               None if planned is None else planned.seconds)
    together, alone = sides["together"], sides["cell_by_cell"]
    return GridBench(len(cells), tuple(levels), tuple(models or MODELS), SEEDS if seeds is None else seeds, epochs,
                     n_samples, workers, CellTask.threads, torch.get_num_threads(), together, alone,
                     alone.seconds / together.seconds,
                     alone.cpu_seconds / together.cpu_seconds if workers == 1 else None,
                     table_difference(tables["together"], tables["cell_by_cell"]), GRID_GOAL_SECONDS,
                     bench_rounds.conditions_since(before))


def format_grid(result: Union[GridBench, dict]) -> str:
    """The bench's text: the grid, each side's seconds, their ratio, the tables' agreement, the goal.

    Args:
        result: :func:`bench_grid`'s figures, or their ``as_dict()`` (``--json``, the benchmark page).

    Returns:
        The text.
    """
    from tsdp.bench.rounds import format_environment

    if isinstance(result, GridBench):
        result = result.as_dict()
    t, c, tables = result["together"], result["cell_by_cell"], result["tables"]
    goal = result["goal_seconds"]
    default = result["epochs"] is None and result["seeds"] == 5 and len(result["models"]) == 4

    def side(name: str, s: dict) -> str:
        planned = "" if s["estimate"] is None else f" (estimate {s['estimate']:.1f} s in one process)"
        cpu = "" if s["cpu_seconds"] is None else f", {s['cpu_seconds']:7.1f} CPU s"
        steps = f", {s['steps']} steps" if "steps" in s else ""  # not recorded by the first version of this bench
        return f"{name:<13} {s['seconds']:7.1f} s wall{cpu}{steps}{planned}"

    return "\n".join([
        f"{result['cells']} cells ({' '.join(result['levels'])}; {', '.join(result['models'])}; {result['seeds']} "
        f"seeds; epochs cap {'the dataset' + chr(39) + 's' if result['epochs'] is None else result['epochs']}; "
        f"{result['n_samples']} sample paths) on the shipped M1 data; {result['workers']} worker(s), "
        f"{result['cell_threads']} torch thread per cell" + (
            "; both sides on one pool of workers started (and imported) before either side is timed"
            if result["workers"] > 1 else ""),
        side("together", t), side("cell by cell", c),
        f"together is {result['speedup']:.2f}x faster (wall" + (
            "); " if result["cpu_speedup"] is None else f"), {result['cpu_speedup']:.2f}x (CPU); ") + (
            f"goal <= {goal:.0f} s together: {'met' if t['seconds'] <= goal else 'missed'} (wall on this machine at its "
            "load)" if default else f"the goal <= {goal:.0f} s is the default grid's (the dataset's epochs cap), not "
            "this one's"),
        f"CRPS tables: {tables['rows']} rows, largest relative difference {tables['max_relative']:.1e}, "
        f"{'the same' if tables['same_printed'] else 'NOT the same'} at the table's 3 decimals",
        format_environment(result["environment"])])
