"""`tsdp bench plan`: how long `tsdp audit-fn --plan` takes to answer, over claims, audit sizes and batchings.

Each cell runs the command as a user does, in a fresh process (``python -m tsdp.cli``, one thread:
:data:`tsdp.bench.startup.THREADS`; start-up included, which `tsdp bench startup` times alone), and records
its wall and CPU time and the canaries it says are needed: every claimed ε of :data:`EPSILONS` at every audit size of
:data:`CANARIES` (every canary assumed to take part), and at :data:`STEPS_CANARIES` canaries with ``--steps``
:data:`STEPS` on every top level (the participation simulated with the scheme's sampler). The goal:
every cell within :data:`GOAL_S` seconds.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple, Union

from tsdp.bench.rounds import Conditions, conditions_since, environment
from tsdp.verify.json_data import Record

EPSILONS = (0.1, 1.0, 5.0, 8.0, 10.0, 20.0, 50.0)
"""The claimed ε of every cell."""
CANARIES = (2, 1000, 10 ** 7)
"""The audit sizes (``--canaries``) planned without ``--steps``."""
TOPS = ("deterministic", "shuffle", "wor", "poisson", "pooled")
"""The top levels planned with ``--steps``."""
STEPS, STEPS_CANARIES = 1000, 1000
"""``--steps`` and ``--canaries`` of the cells with a batching."""
GOAL_S = 10.0
"""The most seconds a plan may take: any claim answered within it."""


def _plan_argv(canaries: int, epsilon: float, top: Optional[str], steps: int) -> List[str]:
    argv = ["audit-fn", "--plan", "--canaries", str(canaries), "--delta", "1e-5", "--epsilon", repr(epsilon), "--json"]
    return argv + (["--top", top, "--steps", str(steps)] if top is not None else [])


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's finished children."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


@dataclass(frozen=True)
class PlanCell(Record):
    """One cell: a `tsdp audit-fn --plan` command, its answer and its time.

    Attributes:
        command: The command.
        seconds: Its wall seconds, start-up included.
        cpu_s: Its CPU seconds (what a loaded machine does not inflate).
        canaries_needed: The canaries the plan answered (None: more than the search's ceiling).
        participation: The canaries' participation probability q.
    """

    command: str
    seconds: float
    cpu_s: float
    canaries_needed: Optional[int]
    participation: float


@dataclass(frozen=True)
class PlanBench(Record):
    """What :func:`bench_plan` measured.

    Attributes:
        goal_s: The goal, seconds per cell.
        cells: The cells.
        slowest_s: The slowest cell's wall seconds.
        environment: The machine and its load before and after (:func:`~tsdp.bench.rounds.environment`), with the
            thread variables the timed commands ran under.
    """

    goal_s: float
    cells: Tuple[PlanCell, ...]
    slowest_s: float
    environment: Conditions


def bench_plan(epsilons: Sequence[float] = EPSILONS, canaries: Sequence[int] = CANARIES,
               tops: Sequence[str] = TOPS, steps: int = STEPS,
               progress: Optional[Callable[[str], None]] = None) -> PlanBench:
    """Time `tsdp audit-fn --plan` on every cell (module docstring; ``epsilons``, ``canaries``, ``tops`` and
    ``steps`` choose them).

    Args:
        epsilons: The claimed ε of the cells.
        canaries: The canary counts of the cells.
        tops: The top levels of the cells.
        steps: Training steps of every cell.
        progress: Called with what starts (None: nothing).

    Returns:
        The :class:`PlanBench`: each cell's answer, wall and CPU seconds; the machine and its load before and after.
    """
    from tsdp.bench.startup import THREADS

    env = {**os.environ, **THREADS}
    before = environment(env)  # the thread settings the commands run under, not this process's
    cells = [(m, e, None) for m in canaries for e in epsilons] + [(STEPS_CANARIES, e, top) for top in tops
                                                                    for e in epsilons]
    out = []
    for m, epsilon, top in cells:
        argv = _plan_argv(m, epsilon, top, steps)
        if progress is not None:
            progress("tsdp " + " ".join(argv))
        started, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run([sys.executable, "-m", "tsdp.cli", *argv], env=env, capture_output=True, text=True)
        seconds, cpu = time.perf_counter() - started, _children_cpu() - cpu
        if done.returncode != 0:
            raise RuntimeError(f"`tsdp {' '.join(argv)}` exited {done.returncode}: {done.stderr.strip()[-500:]}")
        planned = json.loads(done.stdout)
        out.append(PlanCell("tsdp " + " ".join(argv), seconds, cpu, planned["canaries_needed"],
                            planned["participation"]))
    return PlanBench(GOAL_S, tuple(out), max(c.seconds for c in out), conditions_since(before, env))


def format_bench(result: Union[PlanBench, dict]) -> str:
    """Human-readable table of :func:`bench_plan`'s result (``--json`` prints its ``as_dict()``).

    Args:
        result: What :func:`bench_plan` returned, or its ``as_dict()`` (the benchmark page's).

    Returns:
        The table.
    """
    from tsdp.bench.rounds import format_environment

    if isinstance(result, PlanBench):
        result = result.as_dict()
    lines = ["`tsdp audit-fn --plan` per cell (a fresh process each, start-up included): wall and CPU seconds",
             format_environment(result["environment"]),
             f"{'wall s':>8} {'CPU s':>7} {'needed':>9} {'q':>6}  command"]
    for c in result["cells"]:
        needed = "> 1e7" if c["canaries_needed"] is None else str(c["canaries_needed"])
        lines.append(f"{c['seconds']:8.2f} {c['cpu_s']:7.2f} {needed:>9} {c['participation']:6.3f}  {c['command']}")
    cells, goal = result["cells"], result["goal_s"]
    lines.append(f"slowest: wall {result['slowest_s']:.2f} s, CPU {max(c['cpu_s'] for c in cells):.2f} s; within the "
                 f"goal of {goal:g} s: {sum(c['seconds'] <= goal for c in cells)} of {len(cells)} cells by wall time, "
                 f"{sum(c['cpu_s'] <= goal for c in cells)} by CPU time (a loaded machine inflates only the wall)")
    return "\n".join(lines)
