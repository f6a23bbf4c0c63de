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
from typing import Callable, Dict, Optional

from tsdp.bench import rounds as bench_rounds

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


def bench_startup(rounds: int = bench_rounds.MIN_ROUNDS, progress: Optional[Callable[[str], None]] = None) -> Dict:
    """Time the start of each of :data:`COMMANDS` in fresh processes, interleaved over ``rounds`` rounds.

    Returns ``{"rounds", "python", "threads", "environment", "commands": [{command, seconds
    ({median, min, max}), ratio ({median, min, max} of the per-round ratios to the baseline),
    extra_s (median of the per-round differences to the baseline)}]}``; the first command is the
    baseline itself (ratio 1).

    Args:
        rounds: Interleaved rounds (at least :data:`~tsdp.bench.rounds.MIN_ROUNDS`).
        progress: Called with what starts (None: nothing).

    Returns:
        The result, as above (JSON data).
    """
    with tempfile.TemporaryDirectory(prefix="tsdp-bench-startup-") as cache:
        env = {**os.environ, **THREADS, "TSDP_CACHE_DIR": cache}
        runs = {label: _starter(args, env) for label, args in COMMANDS.items()}
        timed = bench_rounds.interleave(runs, rounds, progress=progress, label="startup")
    base = timed["seconds"][BASELINE]
    commands = [{"command": label, "seconds": bench_rounds.spread(timed["seconds"][label]),
                 "ratio": bench_rounds.ratio(timed, label, BASELINE),
                 "extra_s": bench_rounds.spread([t - b for t, b in zip(timed["seconds"][label], base)])["median"]}
                for label in COMMANDS]
    return {"rounds": rounds, "python": platform.python_version(), "threads": THREADS,
            "environment": timed["environment"], "commands": commands}


def format_bench(result: Dict) -> str:
    """Human-readable table of :func:`bench_startup`'s result (medians over rounds, ranges in brackets).

    Args:
        result: What :func:`bench_startup` returned.

    Returns:
        The table.
    """
    threads = ", ".join(f"{k}={v}" for k, v in result["threads"].items())
    lines = [f"process start-up, Python {result['python']}, {threads}; {result['rounds']} interleaved rounds; "
             f"seconds and ratio to `{BASELINE}`: median (min-max)",
             bench_rounds.format_environment(result["environment"]),
             f"{'command':<40} {'seconds':>21} {'ratio':>21} {'extra (s)':>9}"]
    for c in result["commands"]:
        lines.append(f"{c['command']:<40} {bench_rounds.format_spread(c['seconds'], unit='', digits=3):>21} "
                     f"{bench_rounds.format_spread(c['ratio']):>21} {c['extra_s']:>9.3f}")
    return "\n".join(lines)
