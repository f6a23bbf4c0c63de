"""Many independent one-run canary audits on the executor (:mod:`tsdp.executor`), pooled soundly.

A *task* is a picklable callable ``task(seed: numpy.random.SeedSequence) -> evidence`` (one
training run with fresh canaries and inclusion bits drawn from ``seed``; evidence as in
:mod:`attacks.canary.evidence`). :func:`run_many` gives run r the r-th child of
``SeedSequence(seed).spawn(runs)``, runs the R runs as shards of the engine (in this process,
``workers`` local processes, or a Dask cluster; a lost run is re-run, never dropped) and pools
their evidence in run order (:func:`attacks.canary.evidence.pool`: why pooling is sound). The
result depends on the task, ``runs``, ``seed`` and ``together`` only, never on the number of workers.

A task that can train several runs as one program (a :class:`TogetherTask`: tsdp's own loop,
:class:`attacks.canary.whitebox.LoopTask`) runs ``together`` consecutive runs per shard through its
``together(seeds)``, each run keeping its own seed (its evidence is the evidence it gives alone, to float
rounding); any other task (your training function) runs one call per run.

A run that exceeds its time limit (the task's ``timeout``, :mod:`attacks.canary.time_limit`) ends
the audit at once with :class:`attacks.canary.guarded_calls.TimeLimitError`, naming the run and
how many had finished, and the runs in flight are stopped with their worker processes. The
finished runs are not certified alone: whether a run finishes in time can depend on its
canaries, so keeping only the runs that did could bias the audit. A run whose train or loss fails
(:class:`attacks.canary.guarded_calls.UserFunctionError`: it raised, exited, returned None, ...) ends the
audit at once too, with that error (re-running it would fail again), as a single run's does.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np
import torch

from tsdp.executor.run import run_shards
from tsdp.executor.tracker import Aborted

from .audit_result import EngineRun
from .evidence import Evidence, pool
from .guarded_calls import TimeLimitError, UserFunctionError


@runtime_checkable
class TogetherTask(Protocol):
    """A task that trains several runs as one program: ``together(seeds)`` gives each run's evidence, in order, as
    ``task(seed)`` gives it alone (to float rounding)."""

    def __call__(self, seed: np.random.SeedSequence) -> Evidence: ...

    def together(self, seeds: Sequence[np.random.SeedSequence]) -> Tuple[Evidence, ...]:
        """The runs of ``seeds`` trained together, each run's evidence as alone.

        Args:
            seeds: The runs' seeds, in run order.

        Returns:
            The runs' evidence, in run order.
        """


@dataclass(frozen=True)
class RunSpec:
    """Runs ``index`` .. ``index + len(seeds) - 1`` of a multi-run audit (one shard): their ``seeds`` and the
    ``task`` they run (``threads``: torch threads in the worker); more than one seed: trained together.

    Attributes:
        index: The shard's first run.
        seeds: The runs' seeds, in run order.
        task: The task the runs run.
        threads: Torch threads in the worker (None: unchanged).
    """

    index: int
    seeds: Tuple[np.random.SeedSequence, ...]
    task: Callable = field(repr=False)
    threads: Optional[int] = None

    @property
    def key(self):
        return "run", self.index

    @property
    def trials(self) -> int:
        """The training runs of the shard (the engine's progress unit)."""
        return len(self.seeds)


@dataclass(frozen=True)
class RunEvidence:
    """The evidence of the runs of shard ``key`` (in run order) and their wall time.

    Attributes:
        key: The shard's key, ("run", its first run's index).
        evidence: The runs' evidence, in run order.
        seconds: The shard's wall seconds.
        trials: The runs of the shard.
    """

    key: tuple
    evidence: Tuple[Evidence, ...]
    seconds: float
    trials: int = 1


def run_one(spec: RunSpec) -> RunEvidence:
    """The training runs of one shard of a multi-run audit (the engine's unit of work); depends on ``spec`` alone: the
    task draws from copies of the shard's seeds, so a run re-run after a failure draws what its first attempt drew.

    Args:
        spec: The shard's runs.

    Returns:
        Their evidence and wall time.
    """
    started = time.perf_counter()
    if spec.threads:
        torch.set_num_threads(spec.threads)
    # spawning children of a SeedSequence changes it; a worker process gets a pickled copy, this process the plan's own
    seeds = copy.deepcopy(spec.seeds)
    evidence = (spec.task(seeds[0]),) if len(seeds) == 1 else tuple(spec.task.together(seeds))
    return RunEvidence(spec.key, evidence, time.perf_counter() - started, len(evidence))


@dataclass(frozen=True)
class RunEngine:
    """How a multi-run audit's runs run (:func:`run_many`).

    Attributes:
        workers: Local processes (1: in this process).
        cluster: A Dask cluster's address (or "auto") to run on instead.
        progress: Report progress.
        together: Runs trained together per shard by a :class:`TogetherTask` (1: one at a time).
    """

    workers: int = 1
    cluster: Optional[str] = None
    progress: bool = False
    together: int = 1


@dataclass(frozen=True)
class PooledRuns:
    """R runs of a multi-run audit (:func:`run_many`).

    Attributes:
        evidence: their evidence pooled in run order (:func:`attacks.canary.evidence.pool`).
        runs: each run's evidence, in run order.
        engine: how the engine ran them.
    """

    evidence: Evidence
    runs: Tuple[Evidence, ...]
    engine: EngineRun


def run_many(task: Callable, runs: int, *, seed: int = 0, workers: int = 1, cluster: Optional[str] = None,
             threads: Optional[int] = None, progress: bool = False, together: int = 1) -> PooledRuns:
    """R = ``runs`` independent runs of ``task`` pooled in run order (module docstring).

    Args:
        task: A picklable ``task(seed: numpy.random.SeedSequence) -> Evidence``: one training run.
        runs: R, at least 1.
        seed: The seed whose R children seed the runs.
        workers: Local processes (1: in this process).
        cluster: A Dask cluster's address (or "auto") to run on instead.
        threads: Torch threads in each worker.
        progress: Report progress.
        together: Consecutive runs per shard trained together when ``task`` is a :class:`TogetherTask` (module
            docstring; the shards depend on it, never on ``workers``); other tasks run one call per run.

    Returns:
        The pooled evidence, each run's evidence in run order, and how the engine ran them.

    Raises:
        ValueError: ``runs`` or ``together`` not a positive integer.
        TimeLimitError: A run exceeded its time limit (naming the run and how many had finished).
        UserFunctionError: The user's function failed in a run.
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    if isinstance(together, bool) or not isinstance(together, int) or together < 1:
        raise ValueError(f"together must be a positive integer, got {together!r}")
    seeds = np.random.SeedSequence(seed).spawn(runs)
    group = together if isinstance(task, TogetherTask) else 1
    specs = [RunSpec(i, tuple(seeds[i:i + group]), task, threads) for i in range(0, runs, group)]
    try:
        results, info = run_shards(specs, workers=workers, cluster=cluster, progress=progress, shard_fn=run_one,
                                   desc="canary audit runs", fatal=(UserFunctionError,))
    except Aborted as stop:  # nothing is certified from the other runs (module docstring)
        if not isinstance(stop.cause, TimeLimitError):
            raise stop.cause from None  # the user's function failed: the same in every run and retry
        first, last = stop.key[1], min(stop.key[1] + group, runs) - 1  # the failed shard's runs
        where = f"run {first}" if first == last else f"runs {first}-{last}"
        raise stop.cause.with_note(f" in {where}; {stop.done_trials} of {runs} runs had finished, none is "
                                   "certified (dropping a run that ran out of time could bias the audit)") from None
    each = tuple(e for s in specs for e in results[s.key].evidence)
    return PooledRuns(pool(each), each, info.extended(EngineRun, run_seconds=sum(r.seconds for r in results.values())))


__all__ = ["PooledRuns", "RunEngine", "RunEvidence", "RunSpec", "TogetherTask", "run_many", "run_one"]
