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
processes (``concurrent.futures``, spawn context, CUDA-safe; the pool stays warm for the next audit of
the process, :func:`worker_pool`); ``cluster=ADDRESS``
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

import atexit
import contextlib
import contextvars
import functools
import math
import multiprocessing
import os
import socket
import sys
import time
import uuid
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig, check_int
from tsdp.theorems.errors import MissingExtraError
from tsdp.verify.cpus import available_cpus

from .constructions import build, pair_numeric
from .counts import ExecutorRun, ShardStats
from .planted import planted_loop
from .processes import end
from .shuffled import reading_of, reads_epoch_maxima
from .statistics import bin_counts, log_likelihood_ratio
from .trials import released_update_chunks, resolve_device

DEFAULT_SHARD_SIZE = 1 << 16  # trials of one world per shard
MAX_ATTEMPTS = 4


@dataclass(frozen=True)
class ShardSpec:
    """One shard: ``trials`` trials of ``steps`` steps of ``theorem``'s construction in ``world`` ("p" or "q").

    ``steps``: compositions (one release each), or training steps for a shuffled construction, whose
    trials draw whole epochs and read each epoch's maximum (:mod:`attacks.montecarlo.shuffled`).

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


MAX_SHARDS = 2**20
"""The most shards of one world a plan holds (each a spec with its seed, in memory before the first runs): at the
default shard size, 6.9e10 trials per world, past a day of sampling on any one machine."""


def check_plan(trials: int, shard_size: int) -> int:
    """The number of shards per world of ``trials`` trials in shards of ``shard_size``.

    Args:
        trials: Trials per world.
        shard_size: Trials of one world per shard.

    Returns:
        The shards per world.

    Raises:
        ConfigError: Naming ``shard_size`` or ``trials`` when the plan would hold more than :data:`MAX_SHARDS`.
    """
    shard_size = check_int("shard_size", shard_size, 1)
    n_shards = math.ceil(check_int("trials", trials, 1) / shard_size)
    if n_shards > MAX_SHARDS:
        raise ConfigError("trials", f"must be <= {MAX_SHARDS * shard_size:.3g} ({MAX_SHARDS} shards of {shard_size} "
                                    "trials per world): a larger audit cannot finish", trials)
    return n_shards


def plan_shards(theorem: str, config: TrainingConfig, trials: int, steps: int, seed: int, edges: np.ndarray,
                y_edges: np.ndarray, *, shard_size: int = DEFAULT_SHARD_SIZE, **spec) -> List[ShardSpec]:
    """The shards of ``trials`` trials per world, interleaved P0, Q0, P1, Q1, ... (``spec``: ShardSpec's options).

    Shard i of a world holds trials [i·shard_size, (i+1)·shard_size): the plan of fewer trials is a
    prefix of the plan of more (same seed), whatever the number of workers.

    Args:
        theorem: The audited construction's theorem.
        config: Its configuration.
        trials: Trials per world.
        steps: Compositions per trial.
        seed: The seed every shard's stream is spawned from.
        edges: The statistic histogram's edges.
        y_edges: The one-step update histogram's edges.
        shard_size: Trials of one world per shard.
        **spec: :class:`ShardSpec`'s options (device, loop, sampler, threads).

    Returns:
        The shard specs in run order.
    """
    n_shards = check_plan(trials, shard_size)
    world_seeds = np.random.SeedSequence(seed).spawn(2)
    seeds = {w: s.spawn(n_shards) for w, s in zip("pq", world_seeds)}
    return [ShardSpec(theorem, config, w, i, min(shard_size, trials - i * shard_size), steps, seeds[w][i],
                      edges, y_edges, **spec)
            for i in range(n_shards) for w in "pq"]


def torch_seed(seed: np.random.SeedSequence, stream: int = 0) -> int:
    """A 63-bit torch seed from a SeedSequence: word ``stream`` of its state (independent streams).

    Args:
        seed: The SeedSequence.
        stream: 0 for the loop's generator, 1 for a user's sampler's.

    Returns:
        The seed.
    """
    return int(seed.generate_state(stream + 1, np.uint64)[stream] >> np.uint64(1))


@functools.lru_cache(maxsize=8)
def _loop(theorem: str, config: TrainingConfig, device: str, variant: str):
    """The construction and loop overrides of a worker (built once per process and key)."""
    return planted_loop(build(theorem, config, device=torch.device(device)), variant)


def run_shard(spec: ShardSpec) -> ShardStats:
    """Run one shard through the real loop and count its statistic (the unit of work of every executor).

    Soundness: none of its own; the certified bounds are computed from the merged counts
    (:mod:`attacks.montecarlo.statistics`). The result depends on ``spec`` alone (and the device kind).

    Args:
        spec: The shard.

    Returns:
        Its histograms of the statistic and of the one-step update.
    """
    started = time.perf_counter()
    if spec.threads:
        torch.set_num_threads(spec.threads)
    dev = resolve_device(spec.device)
    construction, overrides = _loop(spec.theorem, spec.config, str(dev), spec.loop)
    if spec.sampler is not None:  # a user's sampler draws on the CPU (torch.randint(..., generator=g) needs no
        # device argument there), the same draws on every device; its windows move to the loop's device
        overrides = {**overrides, "sampler": spec.sampler,
                     "sampler_generator": torch.Generator().manual_seed(torch_seed(spec.seed, stream=1))}
    generator = torch.Generator(device=dev).manual_seed(torch_seed(spec.seed))
    if reads_epoch_maxima(construction):  # shuffled: every step of the epochs, read through each epoch's max
        reading = reading_of(construction, spec.steps)
        steps, statistic, first = reading.simulated_steps, reading.statistic, reading.first
    else:
        num = pair_numeric(construction.pair)
        steps, statistic, first = spec.steps, (lambda y: log_likelihood_ratio(y, num)), (lambda y: y[:, 0])
    counts = np.zeros(len(spec.edges) + 1, dtype=np.int64)
    y_counts = np.zeros(len(spec.y_edges) + 1, dtype=np.int64)
    for chunk in released_update_chunks(construction, spec.world, spec.trials, steps, generator, **overrides):
        y = chunk.numpy()
        counts += bin_counts(statistic(y), spec.edges)
        y_counts += bin_counts(first(y), spec.y_edges)
    return ShardStats(spec.world, spec.index, spec.trials, counts, y_counts, time.perf_counter() - started)


_UNIT_WRAPPER = contextvars.ContextVar("tsdp_shard_unit_wrapper", default=None)
"""A function of the unit of work that :func:`run_shards` runs instead of it (None: the unit itself); set only by
:func:`_units_wrapped`."""


@contextlib.contextmanager
def _holding(variable: contextvars.ContextVar, value) -> Iterator[None]:
    """Within the block, ``variable`` holds ``value`` (a test seam; restored after)."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


def _units_wrapped(wrap: Callable[[Callable], Callable]):
    """Within the block (a context manager), :func:`run_shards` runs ``wrap(shard_fn)`` in place of ``shard_fn``
    (fault-injection tests: a unit that fails once, or kills its worker, must change no result)."""
    return _holding(_UNIT_WRAPPER, wrap)


class ShardError(RuntimeError):
    """A shard failed ``MAX_ATTEMPTS`` times; the audit is not completed (no shard is ever dropped)."""


class Aborted(RuntimeError):
    """A shard failed with one of the caller's ``fatal`` exceptions (re-running it cannot help, e.g. a time limit):
    the run stopped at once, shards in flight were ended. ``cause`` is that exception, ``key`` its shard, ``done`` the
    shards that had finished of ``planned``."""

    def __init__(self, cause: BaseException, key, done: int, planned: int):
        super().__init__(f"shard {key} failed: {cause} ({done} of {planned} shards had finished)")
        self.cause, self.key, self.done, self.planned = cause, key, done, planned


class _Tracker:
    """Collects results (one per shard key), counts attempts, drives the progress bar and the stop rule."""

    def __init__(self, specs, stop, progress, max_attempts, desc, fatal=()):
        from tqdm.auto import tqdm

        self.fatal = tuple(fatal)
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
        if isinstance(exc, self.fatal):
            raise Aborted(exc, key, len(self.results), len(self.specs)) from exc
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


def threads_per_worker(workers: int, cluster: Optional[str] = None) -> Optional[int]:
    """torch intra-op threads in each worker: the usable cores shared out (``workers`` = 1 in this process:
    None, torch's own setting; a remote cluster: None, its own setting). The one rule of every executor's caller.

    Args:
        workers: Local worker processes.
        cluster: A Dask cluster's address (None: none).

    Returns:
        The threads per worker, or None for torch's (or the cluster's) own setting.
    """
    if cluster not in (None, "auto") or (workers == 1 and cluster is None):
        return None
    return max(1, available_cpus() // workers)


_POOLS: Dict[int, ProcessPoolExecutor] = {}


def _warm() -> int:
    """Run in a fresh worker: import what a shard needs (torch, the loop), so the first shard starts at once."""
    from tsdp.attacks.montecarlo import trials  # noqa: F401

    return os.getpid()


def worker_pool(workers: int, *, warm: bool = False) -> ProcessPoolExecutor:
    """The warm pool of ``workers`` spawned processes of this process, made on first use and kept for later audits.

    Spawning and importing torch costs seconds per process; a pool that outlives one audit pays
    it once (the report runs many audits). ``warm``: start every process now and import the
    loop in it, without waiting (the caller designs its test meanwhile). A broken pool (a worker
    died) is dropped and the next call makes a new one.

    Args:
        workers: The processes.
        warm: Start them now.

    Returns:
        The pool.
    """
    pool = _POOLS.get(workers)
    if pool is None:
        pool = _POOLS[workers] = ProcessPoolExecutor(max_workers=workers,
                                                     mp_context=multiprocessing.get_context("spawn"))
        if warm:
            for _ in range(workers):
                pool.submit(_warm)
    return pool


def _discard_pool(workers: int, *, kill: bool = False) -> None:
    """Drop the pool of ``workers`` processes; ``kill``: end its processes now, with every process they started
    (work in flight is abandoned; :func:`attacks.montecarlo.processes.end`)."""
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


def _run_processes(tracker: _Tracker, fn, workers: int) -> None:
    """Local worker processes (spawn, :func:`worker_pool`); a broken pool (a worker died) is replaced and its
    shards re-run."""
    while not tracker.stopped and tracker.pending():
        pool = worker_pool(workers)
        futures = {pool.submit(fn, s): s.key for s in tracker.pending()}
        broken = aborted = False
        try:
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
        except Aborted:
            aborted = True
            raise
        finally:
            for fut in futures:  # stopped early (or failed): what has not started is not run
                fut.cancel()
            if broken or aborted:  # aborted: the shards in flight are ended with their processes
                _discard_pool(workers, kill=aborted)


CLUSTER_SCHEMES = ("tcp", "tls")
CONNECT_TIMEOUT_S = 5.0
"""How long a scheduler address may take to accept a TCP connection, and then to send its handshake, before the
audit is refused."""


def _dask():
    """dask.distributed, or :class:`MissingExtraError` naming the ``cluster`` extra."""
    try:
        import dask.distributed
    except ImportError:
        raise MissingExtraError("--cluster needs Dask distributed", "cluster") from None
    return dask.distributed


def check_cluster(address: Optional[str]) -> None:
    """ConfigError naming ``cluster`` unless ``address`` is None, ``"auto"`` or ``[tcp|tls://]host:port`` with a
    port in 1..65535 that accepts a TCP connection and answers it within :data:`CONNECT_TIMEOUT_S` each (a Dask
    scheduler sends its handshake at once; over tls, the TLS handshake), checked before any audit work (nothing is
    sent over tcp).

    Args:
        address: The cluster's address (None: none).

    Raises:
        ConfigError: Naming ``cluster`` for a bad or unreachable address.
        MissingExtraError: Dask is not installed.
    """
    if address is None:
        return
    _dask()
    if address == "auto":
        return
    scheme, sep, rest = address.strip().rpartition("://")
    if sep and scheme not in CLUSTER_SCHEMES:
        raise ConfigError("cluster", f"scheme must be one of {', '.join(CLUSTER_SCHEMES)} or 'auto'", address)
    host, colon, port = rest.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError("cluster", "must be 'auto' or a scheduler address [tcp://]HOST:PORT with a port in "
                                     "1..65535", address)
    try:
        conn = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        raise ConfigError("cluster", f"no Dask scheduler accepts connections at {host}:{port} "
                                     f"({exc.strerror or exc or 'timed out'})", address) from None
    with conn:
        silent = _silent(conn, scheme if sep else "tcp")
    if silent:
        raise ConfigError("cluster", f"the server at {host}:{port} accepts connections but {silent} within "
                                     f"{CONNECT_TIMEOUT_S:g} s: not a Dask scheduler, or a hung one", address)


def _silent(conn: socket.socket, scheme: str) -> Optional[str]:
    """Why the server on ``conn`` is not answering as a Dask scheduler would, or None: over tcp a scheduler sends its
    handshake as soon as it accepts (distributed's own connect then waits for it without a time limit); over tls it
    answers the TLS handshake (an error from it is an answer)."""
    import ssl

    conn.settimeout(CONNECT_TIMEOUT_S)
    try:
        if scheme == "tls":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            with contextlib.suppress(ssl.SSLError):
                context.wrap_socket(conn).close()
            return None
        return None if conn.recv(1) else "closed the connection without a Dask handshake"
    except socket.timeout:
        return "sends no Dask handshake" if scheme == "tcp" else "does not answer the TLS handshake"
    except OSError as exc:
        return f"dropped the connection ({exc.strerror or exc})"


def _run_dask(tracker: _Tracker, fn, address: str, workers: int) -> None:
    """Dask distributed: ``address`` of a scheduler, or ``"auto"`` for a LocalCluster of ``workers`` processes."""
    dd = _dask()
    Client, LocalCluster, as_completed = dd.Client, dd.LocalCluster, dd.as_completed
    cluster = None
    if address == "auto":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        check_cluster(address)
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT_S)
        except (OSError, MemoryError, ValueError, TypeError) as exc:  # accepted TCP but does not speak Dask
            raise ConfigError("cluster", f"the server at {address} is not a Dask scheduler "
                                         f"({type(exc).__name__}: {exc})", address) from None
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
               max_attempts: int = MAX_ATTEMPTS, desc: str = "audit trials (both worlds)",
               fatal: Tuple[type, ...] = ()) -> Tuple[dict, dict]:
    """Run ``specs`` and return ({spec.key: shard_fn(spec)}, info).

    Any unit of work fits: a spec has a hashable ``key`` and a ``trials`` count (the progress
    bar's unit, ``desc`` its label); ``shard_fn(spec)`` returns a result with the same ``key``
    and ``trials`` (e.g. :class:`ShardStats` of :func:`run_shard`, the default).
    ``workers=1`` without ``cluster``: in this process; ``workers > 1``: that many spawned local
    processes; ``cluster``: Dask (address or ``"auto"``). ``stop(results)`` is called after each
    shard and ends the run early when it returns True (the sequential test); the results then hold
    the shards finished so far. ``fatal``: exception classes that re-running cannot help (a time limit): the first
    shard to fail with one ends the run at once, its processes with it, by :class:`Aborted`.

    Args:
        specs: The units of work, each with a hashable ``key`` and a ``trials`` count.
        workers: Local processes (1: in this process).
        cluster: A Dask cluster's address (or "auto").
        progress: A progress bar on stderr.
        stop: Called after each shard; True ends the run.
        shard_fn: The unit of work.
        max_attempts: Attempts of one shard before :class:`ShardError`.
        desc: The progress bar's label.
        fatal: Exception classes that end the run at once.

    Returns:
        ({spec.key: shard_fn(spec)}, the :class:`ExecutorRun` as a dict).

    Raises:
        ValueError: ``workers`` not a positive integer.
        ShardError: A shard failed ``max_attempts`` times.
        Aborted: A shard failed with one of ``fatal``.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    wrap = _UNIT_WRAPPER.get()
    if wrap is not None:
        shard_fn = wrap(shard_fn)
    tracker = _Tracker(specs, stop, progress, max_attempts, desc, fatal)
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
    info = ExecutorRun(executor, workers, cluster, len(specs), len(tracker.results), sum(tracker.attempts.values()),
                       tracker.stopped, time.perf_counter() - started)
    return tracker.results, info.as_dict()


__all__ = ["Aborted", "DEFAULT_SHARD_SIZE", "ShardError", "ShardSpec", "plan_shards",
           "run_shard", "run_shards", "threads_per_worker", "torch_seed", "worker_pool"]
