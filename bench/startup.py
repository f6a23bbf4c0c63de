"""`tsdp bench startup`: how long the `tsdp` command takes to start, against a bare interpreter.

Each round starts, in fresh processes and in the same order, ``python -c pass`` (the baseline:
the interpreter alone), ``tsdp --help`` and ``tsdp epsilon --delta 1e-5 --steps 100`` (both as
``python -m tsdp.cli``, the imports the console script makes), interleaved over rounds
(:mod:`tsdp.bench.rounds`); the figures are the median (and range) over rounds of
each command's wall time and of its ratio to the baseline's time in the same round. Every
process runs at one thread (:data:`THREADS`). The `epsilon` command answers from the disk
cache of one-step PLDs, in a folder of the bench's own that the untimed warm-up run fills:
what is timed is start-up, imports and the cached answer, not the PLD construction.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple, Union

from tsdp.bench import rounds as bench_rounds
from tsdp.bench.rounds import Conditions, Spread
from tsdp.verify.json_data import Record

BASELINE = "python -c pass"
COMMANDS = {
    BASELINE: ["-c", "pass"],
    "tsdp --help": ["-m", "tsdp.cli", "--help"],
    "tsdp epsilon --delta 1e-5 --steps 100": ["-m", "tsdp.cli", "epsilon", "--delta", "1e-5", "--steps", "100"],
}
"""What each round starts (label -> the interpreter's arguments)."""

THREADS = {var: "1" for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
"""Thread settings of every started process."""


def _starter(args, env) -> Callable[[], None]:
    def start() -> None:
        done = subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        if done.returncode != 0:
            raise RuntimeError(f"`{' '.join(args)}` exited {done.returncode}: {done.stderr.strip()[-500:]}")

    return start


@dataclass(frozen=True)
class CommandStart(Record):
    """One command's start-up over the rounds.

    Attributes:
        command: The command's label (a key of :data:`COMMANDS`).
        seconds: Its wall seconds over rounds (:func:`~tsdp.bench.rounds.spread`).
        ratio: Its per-round ratio to the baseline's time, over rounds.
        extra_s: The median of its per-round differences to the baseline.
    """

    command: str
    seconds: Spread
    ratio: Spread
    extra_s: float


@dataclass(frozen=True)
class StartupBench(Record):
    """What :func:`bench_startup` measured.

    Attributes:
        rounds: The interleaved rounds.
        python: The interpreter's version.
        threads: The thread settings of every started process (:data:`THREADS`).
        environment: The machine and its load before and after (:func:`~tsdp.bench.rounds.environment`).
        commands: Each command's start-up, the baseline first (its ratio 1).
    """

    rounds: int
    python: str
    threads: Dict[str, str]
    environment: Conditions
    commands: Tuple[CommandStart, ...]


def bench_startup(rounds: int = bench_rounds.MIN_ROUNDS,
                  progress: Optional[Callable[[str], None]] = None) -> StartupBench:
    """Time the start of each of :data:`COMMANDS` in fresh processes, interleaved over ``rounds`` rounds.

    Args:
        rounds: Interleaved rounds (at least :data:`~tsdp.bench.rounds.MIN_ROUNDS`).
        progress: Called with what starts (None: nothing).

    Returns:
        The :class:`StartupBench`; its first command is the baseline itself (ratio 1).
    """
    with tempfile.TemporaryDirectory(prefix="tsdp-bench-startup-") as cache:
        env = {**os.environ, **THREADS, "TSDP_CACHE_DIR": cache}
        runs = {label: _starter(args, env) for label, args in COMMANDS.items()}
        timed = bench_rounds.interleave(runs, rounds, progress=progress, label="startup", variables=env)
    base = timed.seconds[BASELINE]
    commands = tuple(CommandStart(label, bench_rounds.spread(timed.seconds[label]),
                                  bench_rounds.ratio(timed, label, BASELINE),
                                  bench_rounds.spread([t - b for t, b in zip(timed.seconds[label], base)]).median)
                     for label in COMMANDS)
    return StartupBench(rounds, platform.python_version(), dict(THREADS), timed.environment, commands)


def format_bench(result: Union[StartupBench, Dict]) -> str:
    """Human-readable table of :func:`bench_startup`'s result (medians over rounds, ranges in brackets).

    Args:
        result: What :func:`bench_startup` returned, or its ``as_dict()`` (``--json``, the benchmark page).

    Returns:
        The table.
    """
    if isinstance(result, StartupBench):
        result = result.as_dict()
    threads = ", ".join(f"{k}={v}" for k, v in result["threads"].items())
    lines = [f"process start-up, Python {result['python']}, {threads}; {result['rounds']} interleaved rounds; "
             f"seconds and ratio to `{BASELINE}`: median (min-max)",
             bench_rounds.format_environment(result["environment"]),
             f"{'command':<40} {'seconds':>21} {'ratio':>21} {'extra (s)':>9}"]
    for c in result["commands"]:
        lines.append(f"{c['command']:<40} {bench_rounds.format_spread(c['seconds'], unit='', digits=3):>21} "
                     f"{bench_rounds.format_spread(c['ratio']):>21} {c['extra_s']:>9.3f}")
    return "\n".join(lines)
