"""The bad-input harness: run one ``tsdp`` argv and classify its outcome.

:func:`run_case` runs ``tsdp.cli.main.main`` in this process under a wall-clock limit (SIGALRM:
a hang fails the case instead of blocking the suite) and returns an :class:`Outcome`;
:func:`run_capped` does the same in a subprocess whose address space is capped (the OOM
rows). :func:`verdict` names what is wrong with an outcome: a traceback, a hang, running out
of memory, a non-finite number printed at exit 0, or more or less than one error line.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from dataclasses import dataclass

from cli_run import run_cli

NON_FINITE = re.compile(r"(?<![A-Za-z])(nan|-?inf(inity)?)(?![A-Za-z])", re.IGNORECASE)
"""A NaN or infinite number in human output (JSON writes them as null)."""


CONSTANT_MODEL = '''
import torch


class Model:
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, context, forecast):
        return torch.full((context.shape[0],), self.value)
'''
"""Source of a user module's returned model: ``Model(value)`` forecasts ``value`` for every window (the sweeps'
user functions build on it)."""


class Hang(BaseException):
    """The case ran past its time limit (a BaseException: user code's ``except Exception`` cannot swallow it)."""


@dataclass
class Outcome:
    code: object
    out: str
    err: str
    seconds: float
    hang: bool = False


@contextmanager
def time_limit(seconds: float):
    """Raise :class:`Hang` in this (main) thread after ``seconds``."""
    def alarm(*_):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(argv, limit: float) -> Outcome:
    """``tsdp argv`` in this process, stopped as a hang after ``limit`` seconds."""
    started = time.perf_counter()
    try:
        with time_limit(limit):
            code, out, err = run_cli(argv)
    except Hang:
        return Outcome(None, "", "", time.perf_counter() - started, hang=True)
    return Outcome(code, out, err, time.perf_counter() - started)


RUNNER = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    from tsdp.cli.main import main
    sys.exit(main({argv!r}))
""")


def run_capped(argv, limit: float, memory: int) -> Outcome:
    """``tsdp argv`` in a subprocess with ``memory`` bytes of address space, killed after ``limit`` seconds."""
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER.format(limit=memory, argv=[str(a) for a in argv])],
                              capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return Outcome(None, "", "", time.perf_counter() - started, hang=True)
    return Outcome(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started)


def _refuse(token):
    raise ValueError(f"non-finite JSON token {token}")


def verdict(outcome: Outcome, expect_code=None) -> str:
    """What is wrong with ``outcome`` ('' when nothing): the classes the bad-input sweep counts.

    ``expect_code`` None accepts a finite answer (exit 0) or a refusal (exit 2); otherwise the
    exit code must be that one.
    """
    if outcome.hang:
        return "hang"
    if "Traceback" in outcome.err:
        return "traceback"
    if "MemoryError" in outcome.err or outcome.code in (-9, 137):
        return "oom"
    if outcome.code == 0:
        if expect_code not in (None, 0):
            return "silent accept"
        if outcome.out.lstrip().startswith("{"):
            try:  # RFC 8259 JSON: the tool writes null for a non-finite number, never a NaN / Infinity token
                json.loads(outcome.out, parse_constant=_refuse)
            except ValueError:
                return "non-finite at exit 0"
        elif NON_FINITE.search(outcome.out):
            return "non-finite at exit 0"
        return ""
    if expect_code is not None and outcome.code != expect_code:
        return f"exit {outcome.code}, expected {expect_code}"
    if outcome.code not in (1, 2):
        return f"exit {outcome.code}"
    lines = [ln for ln in outcome.err.splitlines() if ": error: " in ln]
    if outcome.code == 2 and len(lines) != 1:
        return f"{len(lines)} error lines"
    return ""
