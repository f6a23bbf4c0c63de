"""Units of work in this process or in a warm pool of spawned local processes.

The pool (:func:`worker_pool`) is spawned (CUDA-safe), made on first use and kept for the next run of the
process: spawning and importing torch costs seconds per process, and a pool that outlives one run pays it once
(the report runs many audits). A pool whose worker died is dropped, its units re-run on a new one.
"""
from __future__ import annotations

import atexit
import importlib
import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Dict, Optional, Sequence

from tsdp.verify.cpus import available_cpus

from .processes import end, starting_processes
from .tracker import Aborted, Tracker


def run_here(tracker: Tracker, fn: Callable) -> None:
    """Run the tracker's pending units one after the other in this process, until done or stopped.

    Args:
        tracker: The run's book.
        fn: The unit of work.
    """
    while not tracker.stopped and tracker.pending():
        spec = tracker.pending()[0]
        try:
            result = fn(spec)
        except Exception as exc:  # noqa: BLE001 - any failure of a unit means: run it again
            tracker.failed(spec.key, exc)
        else:  # outside the try: an error of the stop rule is the caller's, raised, not a failure of the unit
            tracker.done(result)


def threads_per_worker(workers: int, cluster: Optional[str] = None) -> Optional[int]:
    """torch intra-op threads in each worker: the usable cores shared out. The one rule of every executor's caller.

    Args:
        workers: Local worker processes (1 without a cluster: this process).
        cluster: A Dask cluster's address, or ``"auto"`` (None: none).

    Returns:
        The threads per worker, or None for torch's own setting (in this process) or a remote cluster's.
    """
    if cluster not in (None, "auto") or (workers == 1 and cluster is None):
        return None
    return max(1, available_cpus() // workers)


_POOLS: Dict[int, ProcessPoolExecutor] = {}


def _imported(modules: Sequence[str]) -> int:
    """Run in a fresh worker: import ``modules``, so the first unit starts at once; the worker's pid."""
    for module in modules:
        importlib.import_module(module)
    return os.getpid()


def worker_pool(workers: int, *, warm: Sequence[str] = ()) -> ProcessPoolExecutor:
    """The warm pool of ``workers`` spawned processes of this process, made on first use and kept for later runs.

    Args:
        workers: The processes.
        warm: Modules every process imports now, without waiting (the caller prepares its run meanwhile; e.g. the
            loop a shard runs). Empty: a new pool's processes start with its first units.

    Returns:
        The pool.
    """
    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS[workers] = ProcessPoolExecutor(max_workers=workers,
                                                     mp_context=multiprocessing.get_context("spawn"))
        if warm:
            with starting_processes():  # a submit starts a process: a SIGTERM waits until it has started
                for _ in range(workers):
                    pool.submit(_imported, tuple(warm))
    return pool


def _discard_pool(workers: int, *, kill: bool = False) -> None:
    """Drop the pool of ``workers`` processes; ``kill``: end its processes now, with every process they started
    (work in flight is abandoned; :func:`executor.processes.end`)."""
    pool = _POOLS.pop(workers, None)
    if pool is None:
        return
    processes = {p.pid: p for p in (getattr(pool, "_processes", None) or {}).values()} if kill else {}
    pool.shutdown(wait=False, cancel_futures=True)
    end(processes)


@atexit.register
def _close_pools() -> None:
    for workers in list(_POOLS):
        _discard_pool(workers)


def run_processes(tracker: Tracker, fn: Callable, workers: int) -> None:
    """Run the tracker's pending units on the warm pool of ``workers`` processes (:func:`worker_pool`), until done or
    stopped; a broken pool (a worker died) is replaced and its units re-run. Units not started when the run stops are
    not run; when it is aborted or interrupted (Ctrl-C, or the CLI's SIGTERM: :mod:`tsdp.cli.termination`), the units in
    flight are ended with their processes.

    Args:
        tracker: The run's book.
        fn: The unit of work (picklable).
        workers: The processes.
    """
    while not tracker.stopped and tracker.pending():
        pool = worker_pool(workers)
        futures = {}
        broken = aborted = False
        try:
            with starting_processes():  # submits start the pool's processes: a SIGTERM waits until they have started
                futures.update({pool.submit(fn, s): s.key for s in tracker.pending()})
            while futures and not tracker.stopped and not broken:
                finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                for fut in finished:
                    key = futures.pop(fut)
                    try:
                        result = fut.result()
                    except BrokenProcessPool as exc:  # a worker died: every unit in flight is lost, re-run them
                        broken = True
                        tracker.failed(key, exc)
                    except Exception as exc:  # noqa: BLE001 - any failure of a unit means: run it again
                        tracker.failed(key, exc)
                    else:  # an error of the stop rule is the caller's: raised
                        tracker.done(result)
                    if tracker.stopped:
                        break
        except (Aborted, KeyboardInterrupt):  # Ctrl-C or SIGTERM too: no unit keeps running in an orphaned worker
            aborted = True
            raise
        finally:
            for fut in futures:  # stopped early (or failed): what has not started is not run
                fut.cancel()
            if broken or aborted:  # aborted: the units in flight are ended with their processes
                _discard_pool(workers, kill=aborted)


__all__ = ["run_here", "run_processes", "threads_per_worker", "worker_pool"]
