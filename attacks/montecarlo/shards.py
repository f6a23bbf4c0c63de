"""Audit trials in shards: in this process, in local worker processes, or on a Dask cluster; exact merge.

The trials of an audit are cut into shards of a fixed size (``shard_size`` trials of one
world), so the shards depend on the seed and the number of trials only, never on the number
of workers. Shard seeds come from one ``numpy.random.SeedSequence(seed).spawn`` (one child per
world, one grandchild per shard). A shard runs its trials through the real loop
(:func:`attacks.montecarlo.trials.released_update_chunks`) and returns only sufficient statistics:
the histogram of the audit statistic on fixed edges and the histogram of the first step's
update (for the goodness of fit); integer counts, merged by addition, so the same seed gives
the same counts, hence the same certified bound, on 1, 2 or 8 workers (:mod:`attacks.montecarlo.counts`).

Executors (:func:`run_shards`): ``workers=1`` runs in this process; ``workers=N`` in N local
processes (``concurrent.futures``, spawn context: nothing to start, CUDA-safe); ``cluster=ADDRESS``
(or ``"auto"``: a local Dask ``LocalCluster`` of ``workers`` processes) on Dask distributed,
imported lazily (the ``tsdp[cluster]`` extra). Dask rather than Ray: its scheduler speaks plain
Python futures (the local-process path and the cluster path share the retry and merge code), a
``LocalCluster`` starts in seconds in-process for tests, it installs from pip without a
platform-specific runtime, and it reschedules the tasks of a lost worker by itself. A shard
that fails (raised, or its worker process died) is re-run, never dropped; after
``max_attempts`` failures of the same shard the audit stops with an error. Progress (tqdm,
stderr) counts trials done / planned over both worlds.
"""
from __future__ import annotations

import functools
import math
import multiprocessing
import os
import sys
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig

from .constructions import build, pair_numeric
from .counts import ShardStats
from .planted import planted_loop
from .statistics import bin_counts, log_likelihood_ratio
from .trials import released_update_chunks, resolve_device

DEFAULT_SHARD_SIZE = 1 << 16  # trials of one world per shard
MAX_ATTEMPTS = 4


@dataclass(frozen=True)
class ShardSpec:
    """One shard: ``trials`` trials of ``steps`` steps of ``theorem``'s construction in ``world`` ("p" or "q").

    ``seed`` is the shard's SeedSequence; ``edges`` / ``y_edges`` the histogram edges of the statistic and of the
    first-step update; ``loop`` a variant of :mod:`attacks.montecarlo.planted`; ``sampler`` an injected sampler (in-process
    only: it must be picklable for workers); ``threads`` torch's intra-op threads in the worker (None: leave).
    """

    theorem: str
    config: TrainingConfig
    world: str
    index: int
    trials: int
    steps: int
    seed: np.random.SeedSequence
    edges: np.ndarray = field(repr=False)
    y_edges: np.ndarray = field(repr=False)
    device: str = "cpu"
    loop: str = "correct"
    sampler: object = None
    threads: Optional[int] = None

    @property
    def key(self) -> Tuple[str, int]:
        return self.world, self.index


def plan_shards(theorem: str, config: TrainingConfig, trials: int, steps: int, seed: int, edges: np.ndarray,
                y_edges: np.ndarray, *, shard_size: int = DEFAULT_SHARD_SIZE, **spec) -> List[ShardSpec]:
    """The shards of ``trials`` trials per world, interleaved P0, Q0, P1, Q1, ... (``spec``: ShardSpec's options).

    Shard i of a world holds trials [i·shard_size, (i+1)·shard_size): the plan of fewer trials is a
    prefix of the plan of more (same seed), whatever the number of workers.
    """
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive integer, got {shard_size!r}")
    n_shards = math.ceil(trials / shard_size)
    world_seeds = np.random.SeedSequence(seed).spawn(2)
    seeds = {w: s.spawn(n_shards) for w, s in zip("pq", world_seeds)}
    return [ShardSpec(theorem, config, w, i, min(shard_size, trials - i * shard_size), steps, seeds[w][i],
                      edges, y_edges, **spec)
            for i in range(n_shards) for w in "pq"]


def torch_seed(seed: np.random.SeedSequence) -> int:
    """A 63-bit torch seed from a SeedSequence."""
    return int(seed.generate_state(1, np.uint64)[0] >> np.uint64(1))


@functools.lru_cache(maxsize=8)
def _loop(theorem: str, config: TrainingConfig, device: str, variant: str):
    """The construction and loop overrides of a worker (built once per process and key)."""
    return planted_loop(build(theorem, config, device=torch.device(device)), variant)


def run_shard(spec: ShardSpec) -> ShardStats:
    """Run one shard through the real loop and count its statistic (the unit of work of every executor).

    Soundness: none of its own; the certified bounds are computed from the merged counts
    (:mod:`attacks.montecarlo.statistics`). The result depends on ``spec`` alone (and the device kind).
    """
    started = time.perf_counter()
    if spec.threads:
        torch.set_num_threads(spec.threads)
    dev = resolve_device(spec.device)
    construction, overrides = _loop(spec.theorem, spec.config, str(dev), spec.loop)
    if spec.sampler is not None:
        overrides = {**overrides, "sampler": spec.sampler}
    generator = torch.Generator(device=dev).manual_seed(torch_seed(spec.seed))
    num = pair_numeric(construction.pair)
    counts = np.zeros(len(spec.edges) + 1, dtype=np.int64)
    y_counts = np.zeros(len(spec.y_edges) + 1, dtype=np.int64)
    for chunk in released_update_chunks(construction, spec.world, spec.trials, spec.steps, generator, **overrides):
        y = chunk.numpy()
        counts += bin_counts(log_likelihood_ratio(y, num), spec.edges)
        y_counts += bin_counts(y[:, 0], spec.y_edges)
    return ShardStats(spec.world, spec.index, spec.trials, counts, y_counts, time.perf_counter() - started)


class FailOnce:
    """Fault injection (tests, drills): shard ``index`` of ``world`` fails on its first attempt, then runs.

    ``mode="raise"`` raises; ``mode="exit"`` kills the worker process (``os._exit``), as a lost
    machine would. The first attempt is recorded by creating ``marker`` (a path every worker sees).
    """

    def __init__(self, marker: str, world: str = "p", index: int = 1, mode: str = "raise", fn=run_shard):
        self.marker, self.world, self.index, self.mode, self.fn = marker, world, index, mode, fn

    def __call__(self, spec: ShardSpec) -> ShardStats:
        if spec.key == (self.world, self.index):
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                return self.fn(spec)
            os.close(fd)
            if self.mode == "exit":
                os._exit(3)
            raise RuntimeError(f"injected failure of shard {spec.key}")
        return self.fn(spec)


class ShardError(RuntimeError):
    """A shard failed ``MAX_ATTEMPTS`` times; the audit is not completed (no shard is ever dropped)."""


class _Tracker:
    """Collects results (one per shard key), counts attempts, drives the progress bar and the stop rule."""

    def __init__(self, specs, stop, progress, max_attempts, desc):
        from tqdm.auto import tqdm

        self.specs = {s.key: s for s in specs}
        self.results: Dict[Tuple[str, int], ShardStats] = {}
        self.attempts: Dict[Tuple[str, int], int] = {}
        self.stop, self.max_attempts = stop, max_attempts
        self.stopped = False
        self.bar = tqdm(total=sum(s.trials for s in specs), disable=not progress, desc=desc,
                        unit="trial", unit_scale=True, file=sys.stderr)

    def done(self, result: ShardStats) -> None:
        if result.key in self.results:  # a re-run that raced its original: identical, keep one
            return
        self.results[result.key] = result
        self.bar.update(result.trials)
        if self.stop is not None and self.stop(self.results):
            self.stopped = True

    def failed(self, key, exc) -> None:
        self.attempts[key] = self.attempts.get(key, 0) + 1
        if self.attempts[key] >= self.max_attempts:
            hint = ""
            if isinstance(exc, BrokenProcessPool):  # the commonest cause: a script whose main module re-runs in workers
                hint = ("; worker processes kept dying: workers are spawned, so a script that calls the audit with "
                        "workers > 1 must guard it with `if __name__ == \"__main__\":`")
            raise ShardError(f"shard {key} failed {self.attempts[key]} times; last error: {exc!r}{hint}") from exc

    def pending(self) -> List[ShardSpec]:
        return [s for k, s in self.specs.items() if k not in self.results]


def _run_here(tracker: _Tracker, fn) -> None:
    while not tracker.stopped and tracker.pending():
        spec = tracker.pending()[0]
        try:
            tracker.done(fn(spec))
        except Exception as exc:  # noqa: BLE001 - any failure of a shard means: run it again
            tracker.failed(spec.key, exc)


def _run_processes(tracker: _Tracker, fn, workers: int) -> None:
    """Local worker processes (spawn); a broken pool (a worker died) is replaced and its shards re-run."""
    context = multiprocessing.get_context("spawn")
    while not tracker.stopped and tracker.pending():
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
        try:
            futures = {pool.submit(fn, s): s.key for s in tracker.pending()}
            broken = False
            while futures and not tracker.stopped and not broken:
                finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                for fut in finished:
                    key = futures.pop(fut)
                    try:
                        tracker.done(fut.result())
                    except BrokenProcessPool as exc:  # a worker died: every shard in flight is lost, re-run them
                        broken = True
                        tracker.failed(key, exc)
                    except Exception as exc:  # noqa: BLE001 - any failure of a shard means: run it again
                        tracker.failed(key, exc)
                    if tracker.stopped:
                        break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _run_dask(tracker: _Tracker, fn, address: str, workers: int) -> None:
    """Dask distributed: ``address`` of a scheduler, or ``"auto"`` for a LocalCluster of ``workers`` processes."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # the optional extra
        raise ImportError("--cluster needs Dask distributed: pip install 'tsdp[cluster]'") from exc
    cluster = None
    if address == "auto":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    token = uuid.uuid4().hex[:8]
    try:
        def submit(spec, attempt):
            name = "".join(map(str, spec.key))
            return client.submit(fn, spec, key=f"tsdp-shard-{token}-{name}-{attempt}", pure=False)

        futures, initial = {}, []
        for spec in tracker.pending():
            fut = submit(spec, 0)
            futures[fut.key] = spec
            initial.append(fut)
        queue = as_completed(initial)
        for fut in queue:
            spec = futures.pop(fut.key)
            if fut.status == "finished":
                tracker.done(fut.result())
            else:
                try:
                    fut.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, an error in the shard: re-run
                    tracker.failed(spec.key, exc)
                new = submit(spec, tracker.attempts.get(spec.key, 0) + 1)
                futures[new.key] = spec
                queue.add(new)
            if tracker.stopped:
                client.cancel([f for f in queue.futures])
                break
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_shards(specs: List[ShardSpec], *, workers: int = 1, cluster: Optional[str] = None, progress: bool = False,
               stop: Optional[Callable[[dict], bool]] = None, shard_fn=run_shard,
               max_attempts: int = MAX_ATTEMPTS, desc: str = "audit trials (both worlds)") -> Tuple[dict, dict]:
    """Run ``specs`` and return ({spec.key: shard_fn(spec)}, info).

    Any unit of work fits: a spec has a hashable ``key`` and a ``trials`` count (the progress
    bar's unit, ``desc`` its label); ``shard_fn(spec)`` returns a result with the same ``key``
    and ``trials`` (e.g. :class:`ShardStats` of :func:`run_shard`, the default).
    ``workers=1`` without ``cluster``: in this process; ``workers > 1``: that many spawned local
    processes; ``cluster``: Dask (address or ``"auto"``). ``stop(results)`` is called after each
    shard and ends the run early when it returns True (the sequential test); the results then hold
    the shards finished so far. ``info``: executor, workers, shards, retries, wall seconds, stopped.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    tracker = _Tracker(specs, stop, progress, max_attempts, desc)
    started = time.perf_counter()
    try:
        if cluster is not None:
            _run_dask(tracker, shard_fn, cluster, workers)
            executor = "dask"
        elif workers == 1:
            _run_here(tracker, shard_fn)
            executor = "in-process"
        else:
            _run_processes(tracker, shard_fn, workers)
            executor = "processes"
    finally:
        tracker.bar.close()
    info = {"executor": executor, "workers": workers, "cluster": cluster, "shards_planned": len(specs),
            "shards_run": len(tracker.results), "retries": sum(tracker.attempts.values()),
            "stopped_early": tracker.stopped, "seconds": time.perf_counter() - started}
    return tracker.results, info


__all__ = ["DEFAULT_SHARD_SIZE", "FailOnce", "ShardError", "ShardSpec", "plan_shards",
           "run_shard", "run_shards", "torch_seed"]
