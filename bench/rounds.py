"""Interleaved timing rounds for the `tsdp bench` commands: the one home of how benches measure.

Wall-clock on a shared machine drifts (other jobs start and stop, the CPU clocks change),
so the candidates of a comparison are timed in rounds, interleaved: A, B, A, B, ... each
round runs every candidate once, in the same order, so a slow minute slows both sides of a
ratio alike. A ratio is taken per round (same round, same machine state) and reported as
its median and its range over the rounds, never as a best-of against a single run.

The machine state goes with the figures: :func:`environment` (an :class:`Environment`) records the thread settings
(the ``*_NUM_THREADS`` variables the measured code ran under: this process's, or those a bench gave the child
processes it times; and the CPUs this process may run on) and the load average before and after. No torch here (verify/ never imports it): a bench that uses torch adds
``torch.get_num_threads()`` to the record itself.
"""
from __future__ import annotations

import os
import platform
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from tsdp.verify.cpus import available_cpus
from tsdp.verify.json_data import Record

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


@dataclass(frozen=True)
class Environment(Record):
    """The machine, its thread settings and its load at one moment (:func:`environment`).

    Attributes:
        machine: The processor and platform (:func:`machine`).
        cpus: The CPUs this process may run on.
        threads: Each of :data:`THREAD_VARIABLES` that is set, with its value (unset ones are left out: the
            library then picks its own default, usually one thread per CPU).
        load: The 1, 5 and 15 minute load averages (empty where the platform has none).
    """

    machine: str
    cpus: int
    threads: Dict[str, str]
    load: Tuple[float, ...]


@dataclass(frozen=True)
class Conditions(Record):
    """The machine's state before and after a measurement: the conditions its figures were taken in.

    Attributes:
        before: The :func:`environment` before the first timed run.
        after: The :func:`environment` after the last.
    """

    before: Environment
    after: Environment


@dataclass(frozen=True)
class Spread(Record):
    """A figure over rounds: its median and its range (:func:`spread`).

    Attributes:
        median: The median over the rounds.
        min: The smallest value.
        max: The largest value.
    """

    median: float
    min: float
    max: float


@dataclass(frozen=True)
class Timed(Record):
    """What :func:`interleave` measured.

    Attributes:
        rounds: The rounds.
        seconds: Per callable's name, its time in each round, in round order.
        results: Per callable's name, what its last call returned.
        environment: The conditions before the warm-up and after the last round.
    """

    rounds: int
    seconds: Dict[str, Tuple[float, ...]]
    results: Dict[str, object]
    environment: Conditions


def environment(variables: Optional[Mapping[str, str]] = None) -> Environment:
    """Machine, thread settings and load now.

    Args:
        variables: The environment variables the measured code runs under (None: this process's ``os.environ``).
            A bench that times child processes started with an environment of their own passes that one, so
            that the record holds the thread settings the timing ran under, not its parent's.

    Returns:
        The :class:`Environment`; ``threads`` holds each of :data:`THREAD_VARIABLES` set in ``variables``.
    """
    variables = os.environ if variables is None else variables
    return Environment(machine(), available_cpus(), {v: variables[v] for v in THREAD_VARIABLES if v in variables},
                       tuple(_load()))


def conditions_since(before: Environment, variables: Optional[Mapping[str, str]] = None) -> Conditions:
    """The conditions of a measurement that started at ``before`` and ends now.

    Args:
        before: The :func:`environment` taken when the measurement started.
        variables: The environment variables the measured code runs under (None: this process's), as for
            :func:`environment`.

    Returns:
        ``before`` and the :func:`environment` now.
    """
    return Conditions(before, environment(variables))


def spread(values: Sequence[float]) -> Spread:
    """The median and range of the values (the figure and its range over rounds).

    Args:
        values: The values (one per round).

    Returns:
        Their :class:`Spread`.
    """
    return Spread(statistics.median(values), min(values), max(values))


def interleave(runs: Mapping[str, Callable[[], object]], rounds: int = MIN_ROUNDS, *, warmup: bool = True,
               progress: Optional[Callable[[str], None]] = None, label: str = "",
               variables: Optional[Mapping[str, str]] = None) -> Timed:
    """Time every callable of ``runs`` once per round, in the same order each round (A, B, A, B, ...).

    With ``warmup`` every callable runs once untimed first, so all sides start warm (imports,
    caches, allocators).

    Args:
        runs: The callables by name.
        rounds: Rounds (at least :data:`MIN_ROUNDS`).
        warmup: Run every callable once untimed first.
        progress: Called with what starts (None: nothing).
        label: Prefix of the progress text.
        variables: The environment variables the callables' work runs under, for the record (None: this
            process's; a callable that starts a process with its own environment: that one), as for
            :func:`environment`.

    Returns:
        The :class:`Timed`: the times per round, the last results and the :class:`Conditions` they were taken in.

    Raises:
        ValueError: Fewer than :data:`MIN_ROUNDS` rounds, or no callables.
    """
    if not MIN_ROUNDS <= rounds <= MAX_ROUNDS:
        raise ValueError(f"rounds must be in [{MIN_ROUNDS}, {MAX_ROUNDS}] (got {rounds})")
    if not runs:
        raise ValueError("nothing to time")
    before = environment(variables)
    results = {name: run() for name, run in runs.items()} if warmup else {}
    seconds: Dict[str, List[float]] = {name: [] for name in runs}
    for r in range(rounds):
        for name, run in runs.items():
            t0 = time.perf_counter()
            results[name] = run()
            seconds[name].append(time.perf_counter() - t0)
        if progress is not None:
            progress(f"{label + ': ' if label else ''}round {r + 1}/{rounds}")
    return Timed(rounds, {name: tuple(times) for name, times in seconds.items()}, results,
                 conditions_since(before, variables))


def ratio(timed: Timed, slow: str, fast: str) -> Spread:
    """Per-round ``slow / fast`` time ratios of an :func:`interleave` result: their :func:`spread`.

    Args:
        timed: What :func:`interleave` returned.
        slow: The name of the slower side (numerator).
        fast: The name of the faster side (denominator).

    Returns:
        The ratios' :func:`spread`.
    """
    return spread([s / f for s, f in zip(timed.seconds[slow], timed.seconds[fast])])


def format_environment(env: Union[Conditions, Mapping]) -> str:
    """One line: machine, CPUs, thread variables, load before -> after (the state the figures were taken in).

    Args:
        env: The :class:`Conditions`, or its JSON form (a published bench's).

    Returns:
        The line.
    """
    if isinstance(env, Conditions):
        env = env.as_dict()
    threads = ", ".join(f"{k}={v}" for k, v in env["before"]["threads"].items()) or "no *_NUM_THREADS set"
    load = lambda e: "/".join(f"{x:.2f}" for x in e["load"]) or "n/a"  # noqa: E731
    where = f"{env['before']['machine']}, " if "machine" in env["before"] else ""
    return f"{where}{env['before']['cpus']} CPUs, {threads}; load average {load(env['before'])} -> {load(env['after'])}"


def format_spread(s: Union[Spread, Mapping[str, float]], unit: str = "x", digits: int = 1) -> str:
    """``median (min-max)`` with ``unit`` after the median, e.g. ``12.3x (11.0-14.1)``.

    Args:
        s: The :class:`Spread`, or its JSON form (a published bench's).
        unit: Written after the median.
        digits: Decimals.

    Returns:
        The text.
    """
    if isinstance(s, Spread):
        s = s.as_dict()
    return f"{s['median']:.{digits}f}{unit} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"
