"""Run units of work (:func:`run_shards`) on the executor asked for, and the record of how they ran.

``workers=1`` without a cluster runs in this process; ``workers=N`` in N warm local processes
(:mod:`executor.local`); ``cluster=ADDRESS`` (or ``"auto"``) on Dask (:mod:`executor.cluster`). The results are
the same on each: a unit's result depends on the unit alone, and the results are keyed by unit, whatever order
the workers finished in.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, Optional, Sequence, Tuple, Type, TypeVar

from tsdp.verify.json_data import Record, extend

from .cluster import run_dask
from .local import run_here, run_processes
from .seams import UNIT_WRAPPER
from .tracker import MAX_ATTEMPTS, Shard, StopRule, Tracker


_Run = TypeVar("_Run", bound="ExecutorRun")


@dataclass(frozen=True)
class ExecutorRun(Record):
    """How :func:`run_shards` ran (its second return value; :meth:`as_dict` is its JSON form).

    A caller that records more about its run (an audit's plan, the runs' own seconds) subclasses this record and
    builds its record from this one with :meth:`extended`, so that the executor's fields keep their names and their
    order in its JSON form.

    Attributes:
        executor: ``in-process``, ``processes`` or ``dask``.
        workers: the local worker processes asked for.
        cluster: the Dask scheduler's address (None: none).
        shards_planned: the shards planned.
        shards_run: the shards that finished.
        retries: shards re-run after a failure.
        stopped_early: the stop rule ended the run before every shard.
        seconds: the engine's wall-clock seconds.
    """

    executor: str
    workers: int
    cluster: Optional[str]
    shards_planned: int
    shards_run: int
    retries: int
    stopped_early: bool
    seconds: float

    def extended(self, cls: Type[_Run], **more: Any) -> _Run:
        """This run as a record of ``cls``, a subclass that adds fields of its caller's.

        Args:
            cls: A frozen dataclass deriving from :class:`ExecutorRun`.
            **more: The values of the fields ``cls`` adds.

        Returns:
            ``cls(**this run's fields, **more)``: the executor's fields first, in their order, then ``cls``'s own.
        """
        return extend(self, ExecutorRun, cls, **more)


def run_shards(specs: Sequence[Shard], shard_fn: Callable[[Any], Any], *, workers: int = 1,
               cluster: Optional[str] = None, progress: bool = False, stop: Optional[StopRule] = None,
               max_attempts: int = MAX_ATTEMPTS, desc: str = "shards",
               fatal: Tuple[Type[BaseException], ...] = ()) -> Tuple[Dict[Hashable, Any], ExecutorRun]:
    """Run ``shard_fn`` on every unit of ``specs``, each until it succeeds, and return the results by key.

    A failed unit is re-run, never dropped. ``stop(results)`` is called after each unit and ends the run early when it
    returns True (the Monte Carlo audit's sequential test); the results then hold the units finished so far.

    Args:
        specs: The units of work, each with a hashable ``key`` and a ``trials`` count (:class:`executor.tracker.Shard`).
        shard_fn: The unit of work: ``shard_fn(spec)`` returns a result with ``spec``'s ``key`` and ``trials``;
            picklable for ``workers > 1`` or a cluster.
        workers: Local processes (1: in this process); with ``cluster="auto"``, the local Dask cluster's processes.
        cluster: A Dask scheduler's address, or ``"auto"`` (None: local).
        progress: A progress bar on stderr counting trials.
        stop: The stop rule (None: run every unit).
        max_attempts: Failures of one unit before :class:`executor.tracker.ShardError`.
        desc: The progress bar's label.
        fatal: Exception classes that re-running cannot help (a time limit): the first unit to fail with one ends the
            run at once, its processes with it.

    Returns:
        ({spec.key: shard_fn(spec)}, the :class:`ExecutorRun` of this run).

    Raises:
        ValueError: ``workers`` not a positive integer, or two units share a key.
        ShardError: A unit failed ``max_attempts`` times.
        Aborted: A unit failed with one of ``fatal``.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    wrap = UNIT_WRAPPER.get()
    if wrap is not None:
        shard_fn = wrap(shard_fn)
    tracker = Tracker(specs, stop, progress, max_attempts, desc, fatal)
    started = time.perf_counter()
    try:
        if cluster is not None:
            run_dask(tracker, shard_fn, cluster, workers)
            executor = "dask"
        elif workers == 1:
            run_here(tracker, shard_fn)
            executor = "in-process"
        else:
            run_processes(tracker, shard_fn, workers)
            executor = "processes"
    finally:
        tracker.bar.close()
    return tracker.results, ExecutorRun(executor, workers, cluster, len(specs), len(tracker.results), tracker.retries,
                                        tracker.stopped, time.perf_counter() - started)


__all__ = ["ExecutorRun", "run_shards"]
