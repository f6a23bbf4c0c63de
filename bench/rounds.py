"""Interleaved timing rounds for the `tsdp bench` commands: the one home of how benches measure.

Wall-clock on a shared machine drifts (other jobs start and stop, the CPU clocks change),
so the candidates of a comparison are timed in rounds, interleaved: A, B, A, B, ... each
round runs every candidate once, in the same order, so a slow minute slows both sides of a
ratio alike. A ratio is taken per round (same round, same machine state) and reported as
its median and its range over the rounds, never as a best-of against a single run.

The machine state goes with the figures: :func:`environment` records the thread settings
(the ``*_NUM_THREADS`` variables and the CPUs this process may run on) and the load average
before and after. No torch here (verify/ never imports it): a bench that uses torch adds
``torch.get_num_threads()`` to the record itself.
"""
from __future__ import annotations

import os
import platform
import statistics
import time
from typing import Callable, Dict, List, Mapping, Optional, Sequence

from tsdp.verify.cpus import available_cpus

MIN_ROUNDS = 7  # the fewest rounds whose median and range mean something
MAX_ROUNDS = 1000  # more would run for hours: refused before the first round
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "OMP_WAIT_POLICY")


def _load() -> List[float]:
    """1, 5 and 15 minute load averages (empty where the platform has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return []


def machine() -> str:
    """The processor and platform the figures were measured on, e.g. ``"AMD EPYC 9554 (x86_64, Linux-6.1)"``."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{model or platform.processor() or 'unknown processor'} ({platform.machine()}, {platform.system()}-{platform.release()})"


def environment() -> Dict:
    """Machine, thread settings and load of this process now: ``{"machine", "cpus", "threads": {VAR: value}, "load"}``.

    ``threads`` holds each of :data:`THREAD_VARIABLES` that is set (unset ones are left out:
    the library then picks its own default, usually one thread per CPU).
    """
    return {"machine": machine(), "cpus": available_cpus(), "threads": {v: os.environ[v] for v in THREAD_VARIABLES if v in os.environ},
            "load": _load()}


def spread(values: Sequence[float]) -> Dict[str, float]:
    """``{"median", "min", "max"}`` of the values (the figure and its range over rounds).

    Args:
        values: The values (one per round).

    Returns:
        ``{"median", "min", "max"}``.
    """
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def interleave(runs: Mapping[str, Callable[[], object]], rounds: int = MIN_ROUNDS, *, warmup: bool = True,
               progress: Optional[Callable[[str], None]] = None, label: str = "") -> Dict:
    """Time every callable of ``runs`` once per round, in the same order each round (A, B, A, B, ...).

    With ``warmup`` every callable runs once untimed first, so all sides start warm (imports,
    caches, allocators). Returns ``{"rounds", "seconds": {name: [one time per round]},
    "results": {name: last return value}, "environment": {"before": ..., "after": ...}}``
    (see :func:`environment`). Raises ``ValueError`` for fewer than :data:`MIN_ROUNDS` rounds
    or no callables.

    Args:
        runs: The callables by name.
        rounds: Rounds (at least :data:`MIN_ROUNDS`).
        warmup: Run every callable once untimed first.
        progress: Called with what starts (None: nothing).
        label: Prefix of the progress text.

    Returns:
        The times per round and the last results, as above.

    Raises:
        ValueError: Fewer than :data:`MIN_ROUNDS` rounds, or no callables.
    """
    if not MIN_ROUNDS <= rounds <= MAX_ROUNDS:
        raise ValueError(f"rounds must be in [{MIN_ROUNDS}, {MAX_ROUNDS}] (got {rounds})")
    if not runs:
        raise ValueError("nothing to time")
    before = environment()
    results = {name: run() for name, run in runs.items()} if warmup else {}
    seconds: Dict[str, List[float]] = {name: [] for name in runs}
    for r in range(rounds):
        for name, run in runs.items():
            t0 = time.perf_counter()
            results[name] = run()
            seconds[name].append(time.perf_counter() - t0)
        if progress is not None:
            progress(f"{label + ': ' if label else ''}round {r + 1}/{rounds}")
    return {"rounds": rounds, "seconds": seconds, "results": results,
            "environment": {"before": before, "after": environment()}}


def ratio(timed: Dict, slow: str, fast: str) -> Dict[str, float]:
    """Per-round ``slow / fast`` time ratios of an :func:`interleave` result: their :func:`spread`.

    Args:
        timed: What :func:`interleave` returned.
        slow: The name of the slower side (numerator).
        fast: The name of the faster side (denominator).

    Returns:
        The ratios' :func:`spread`.
    """
    return spread([s / f for s, f in zip(timed["seconds"][slow], timed["seconds"][fast])])


def format_environment(env: Dict) -> str:
    """One line: machine, CPUs, thread variables, load before -> after (the state the figures were taken in).

    Args:
        env: ``{"before", "after"}`` of :func:`environment`.

    Returns:
        The line.
    """
    threads = ", ".join(f"{k}={v}" for k, v in env["before"]["threads"].items()) or "no *_NUM_THREADS set"
    load = lambda e: "/".join(f"{x:.2f}" for x in e["load"]) or "n/a"  # noqa: E731
    where = f"{env['before']['machine']}, " if "machine" in env["before"] else ""
    return f"{where}{env['before']['cpus']} CPUs, {threads}; load average {load(env['before'])} -> {load(env['after'])}"


def format_spread(s: Dict[str, float], unit: str = "x", digits: int = 1) -> str:
    """``median (min-max)`` with ``unit`` after the median, e.g. ``12.3x (11.0-14.1)``.

    Args:
        s: A :func:`spread`.
        unit: Written after the median.
        digits: Decimals.

    Returns:
        The text.
    """
    return f"{s['median']:.{digits}f}{unit} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"
