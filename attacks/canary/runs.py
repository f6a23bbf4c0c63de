"""Many independent one-run canary audits on the sharded engine (:mod:`attacks.montecarlo.shards`), pooled soundly.

A *task* is a picklable callable ``task(seed: numpy.random.SeedSequence) -> evidence`` (one
training run with fresh canaries and inclusion bits drawn from ``seed``; evidence as in
:mod:`attacks.canary.evidence`). :func:`run_many` gives run r the r-th child of
``SeedSequence(seed).spawn(runs)``, runs the R runs as shards of the engine (in this process,
``workers`` local processes, or a Dask cluster; a lost run is re-run, never dropped) and pools
their evidence in run order (:func:`attacks.canary.evidence.pool`: why pooling is sound). The
result depends on the task, ``runs`` and ``seed`` only, never on the number of workers.

A run that exceeds its time limit (the task's ``timeout``, :mod:`attacks.canary.time_limit`) ends
the audit at once with :class:`attacks.canary.guarded_calls.TimeLimitError`, naming the run and
how many had finished, and the runs in flight are stopped with their worker processes. The
finished runs are not certified alone: whether a run finishes in time can depend on its
canaries, so keeping only the runs that did could bias the audit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

import numpy as np
import torch

from tsdp.executor.run import run_shards
from tsdp.executor.tracker import Aborted

from .audit_result import EngineRun
from .evidence import Evidence, pool
from .guarded_calls import TimeLimitError


@dataclass(frozen=True)
class RunSpec:
    """Run ``index`` of a multi-run audit: its ``seed`` and the ``task`` it runs (``threads``: torch threads in the worker)."""

    index: int
    seed: np.random.SeedSequence
    task: Callable = field(repr=False)
    threads: Optional[int] = None
    trials: int = 1  # one training run (the engine's progress unit)

    @property
    def key(self):
        return "run", self.index


@dataclass(frozen=True)
class RunEvidence:
    """The evidence of run ``key`` and its wall time."""

    key: tuple
    evidence: Evidence
    seconds: float
    trials: int = 1


def run_one(spec: RunSpec) -> RunEvidence:
    """One training run of a multi-run audit (the engine's unit of work); depends on ``spec`` alone.

    Args:
        spec: The run.

    Returns:
        Its evidence and wall time.
    """
    started = time.perf_counter()
    if spec.threads:
        torch.set_num_threads(spec.threads)
    return RunEvidence(spec.key, spec.task(spec.seed), time.perf_counter() - started)


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
             threads: Optional[int] = None, progress: bool = False) -> PooledRuns:
    """R = ``runs`` independent runs of ``task`` pooled in run order (module docstring).

    Args:
        task: A picklable ``task(seed: numpy.random.SeedSequence) -> Evidence``: one training run.
        runs: R, at least 1.
        seed: The seed whose R children seed the runs.
        workers: Local processes (1: in this process).
        cluster: A Dask cluster's address (or "auto") to run on instead.
        threads: Torch threads in each worker.
        progress: Report progress.

    Returns:
        The pooled evidence, each run's evidence in run order, and how the engine ran them.

    Raises:
        ValueError: ``runs`` not a positive integer.
        TimeLimitError: A run exceeded its time limit (naming the run and how many had finished).
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    specs = [RunSpec(i, s, task, threads) for i, s in enumerate(np.random.SeedSequence(seed).spawn(runs))]
    try:
        results, info = run_shards(specs, workers=workers, cluster=cluster, progress=progress, shard_fn=run_one,
                                   desc="canary audit runs", fatal=(TimeLimitError,))
    except Aborted as stop:  # a run out of time: nothing is certified from the others (module docstring)
        raise stop.cause.with_note(f" in run {stop.key[1]}; {stop.done} of {runs} runs had finished, none is "
                                   "certified (dropping a run that ran out of time could bias the audit)") from None
    each = tuple(results[s.key].evidence for s in specs)
    return PooledRuns(pool(each), each, EngineRun(**info, run_seconds=sum(r.seconds for r in results.values())))


__all__ = ["PooledRuns", "RunEvidence", "RunSpec", "run_many", "run_one"]
