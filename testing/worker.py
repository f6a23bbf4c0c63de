"""Where a user's accountant runs during a check: a forked worker process that can be stopped.

A user's accountant is arbitrary code: it may hang in one long C call that holds the GIL (no
thread and no signal handler of this process can interrupt it), call ``sys.exit`` or
``os._exit``, raise ``KeyboardInterrupt``, or print. :class:`AccountantWorker` runs it in one
long-lived child process per check (forked, so a lambda or a closure needs no pickling), asks it
for one cell at a time over a pipe, and gets back a :class:`Reply`: what the function returned
(classified in the child, so an object that cannot be pickled still arrives as its ``repr``), or
the exception it raised (type and message, ``SystemExit`` and ``KeyboardInterrupt`` included),
and what it printed (its file descriptors 1 and 2 write to a file of the child's; it reads stdin from
``/dev/null``). Each request is numbered and its reply carries the number: a reply that is not a :class:`Reply`
of the request asked (a process the accountant forked and left running answered too, a stale answer, bytes that
do not unpickle) is ``corrupt``, never read as the cell's ε, and the worker is ended. A worker that
does not answer within the time limit is ended with every process it started
(:func:`tsdp.executor.processes.end`); one that dies is reported with its exit status.
The next request starts a fresh worker. The worker leads a process group of its own: whatever the accountant started
and left running (a forked child, a subprocess) is ended with the worker, after a passing check too.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import numbers
import os
import re
import sys
from dataclasses import dataclass, replace
from typing import Callable, Optional

from tsdp.attacks.canary.time_limit import check_timeout
from tsdp.executor.processes import GRACE_S, end
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.errors import TheoremError

DEFAULT_TIMEOUT = 60.0
"""Seconds one call of the accountant may take before it counts as hung: the default of ``check_accountant``, the
pytest plugin and ``tsdp check-accountant --timeout``."""

OUTPUT_MAX = 2000
"""Characters of an accountant's printed output kept per cell (the rest is cut, and the cut is said)."""

DECLINES = (NotImplementedError, TheoremError)
"""Exceptions by which an accountant declines a cell it does not cover (tsdp's own raises TheoremError where its
catalogue has no bound); returning None declines too."""

VALUE, DECLINED, NOT_REAL, TOO_LARGE, RAISED, EXITED, DIED, HUNG, CORRUPT = (
    "value", "declined", "not_real", "too_large", "raised", "exited", "died", "hung", "corrupt")


@dataclass(frozen=True)
class Reply:
    """One answer of the accountant. ``kind``: ``value`` (``value`` a float, possibly NaN, negative or inf),
    ``declined`` (returned None or raised one of :data:`DECLINES`; ``message`` why), ``not_real`` (returned
    ``shown`` of type ``type_name``), ``too_large`` (returned a number beyond the float range: ``shown`` an
    integer's digit count, or the number), ``raised`` (``type_name``, ``message``), ``exited`` (``SystemExit``; ``shown`` its code),
    ``died`` (the process ended: ``exit_status``), ``hung`` (no answer within the limit), ``corrupt`` (what came
    back is not the reply to the request asked: ``message`` says what it was). ``output``: what it printed on stdout
    and stderr (at most :data:`OUTPUT_MAX` characters).

    Attributes:
        kind: value | declined | not_real | too_large | raised | exited | died | hung | corrupt.
        value: The ε returned (kind value).
        shown: The value shown in words (not_real, too_large, exited).
        type_name: The type returned or raised (not_real, raised).
        message: Why it declined, or the exception's message.
        exit_status: The process's exit status (died).
        output: What the accountant printed on stdout and stderr.
        request: The number of the request it answers (set by the worker).
    """

    kind: str
    value: Optional[float] = None
    shown: Optional[str] = None
    type_name: Optional[str] = None
    message: str = ""
    exit_status: Optional[int] = None
    output: str = ""
    request: Optional[int] = None


def _text(obj, convert=str) -> str:
    """``convert(obj)`` (str or repr), or a stand-in where the user's ``__str__`` / ``__repr__`` raises."""
    try:
        return convert(obj)
    except Exception:  # noqa: BLE001 - the user's method: its failure must not end the worker
        return f"<{type(obj).__name__} object whose {convert.__name__}() raised>"


def _one_line(obj, limit: int = 200) -> str:
    return " ".join(_text(obj).split())[:limit]


def _classify(value) -> Reply:
    """The child's reading of a returned object (no pickling of the user's types)."""
    if value is None:
        return Reply(DECLINED, message="returned None")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return Reply(NOT_REAL, shown=_text(value, repr)[:60], type_name=type(value).__name__)
    try:
        number = float(value)
    except OverflowError:
        if isinstance(value, numbers.Integral):
            return Reply(TOO_LARGE, shown=f"{len(str(abs(int(value))))} digits", type_name=type(value).__name__)
        return Reply(TOO_LARGE, shown=_text(value, repr)[:60], type_name=type(value).__name__)
    return Reply(VALUE, value=number)


def _ask(fn, request) -> Reply:
    """Call ``fn`` on one request in the child; every way it can end becomes a reply."""
    try:
        return _classify(fn(*request))
    except DECLINES as exc:
        return Reply(DECLINED, type_name=type(exc).__name__, message=_one_line(exc))
    except SystemExit as exc:
        return Reply(EXITED, shown=_text(exc.code, repr)[:60], type_name="SystemExit")
    except BaseException as exc:  # noqa: BLE001 - the user's code: KeyboardInterrupt and every error are reported
        return Reply(RAISED, type_name=type(exc).__name__, message=_one_line(exc))


_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def terminal_view(text: str) -> str:
    """``text`` as a terminal leaves it: escape sequences dropped, each line the last thing written over it after a
    carriage return (a progress bar that cleared itself leaves nothing), blank lines dropped.

    Args:
        text: What a process wrote to a terminal.

    Returns:
        The text a reader sees.
    """
    lines = []
    for line in _ESCAPES.sub("", text).split("\n"):
        shown = [part for part in line.split("\r") if part][-1:] or [""]
        if shown[0].strip():
            lines.append(shown[0].rstrip())
    return "\n".join(lines)


def _read_output() -> str:
    """What descriptors 1 and 2 (one file) received since the last call; the file is emptied."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    size = os.lseek(1, 0, os.SEEK_END)
    os.lseek(1, 0, os.SEEK_SET)
    data = os.read(1, min(size, 4 * OUTPUT_MAX))
    os.ftruncate(1, 0)
    os.lseek(1, 0, os.SEEK_SET)
    text = terminal_view(data.decode("utf-8", errors="replace"))
    return text if size <= OUTPUT_MAX else text[:OUTPUT_MAX] + f" ... ({size} bytes in all)"


def _serve(fn, conn) -> None:
    """The worker's loop: answer each numbered (config, steps, delta) until None arrives; the reply carries the
    request's number."""
    import tempfile

    os.setpgid(0, 0)  # a group of its own: what the accountant starts is ended with it (AccountantWorker.close)
    capture = tempfile.TemporaryFile()
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)  # an accountant that reads stdin reads nothing, not the command's input
    sys.stdin = open(0, "r", closefd=False)
    os.dup2(capture.fileno(), 1)
    os.dup2(capture.fileno(), 2)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
    while True:
        request = conn.recv()
        if request is None:
            return
        number, args = request
        reply = _ask(fn, args)
        conn.send(replace(reply, output=_read_output(), request=number))


def _end_group(pgid: int) -> None:
    """SIGTERM the processes left in the worker's process group, SIGKILL those alive after
    :data:`~tsdp.executor.processes.GRACE_S` (a child an accountant forked and left running)."""
    import signal
    import time

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.02)


class AccountantWorker:
    """A child process that evaluates ``fn(config, steps, delta)`` on request (module docstring); use it as a context
    manager (the child ends on exit). ``timeout``: seconds one answer may take (None: no limit).

    Args:
        fn: The accountant, ``fn(config, steps, delta) -> ε``.
        timeout: Seconds one answer may take (None: no limit).
    """

    def __init__(self, fn: Callable, timeout: Optional[float] = None):
        if "fork" not in multiprocessing.get_all_start_methods():
            raise ConfigError("accountant", "is run in a forked worker process (so that a time limit can stop it), "
                                            "and this platform cannot fork", fn)
        self.fn, self.timeout = fn, check_timeout(timeout)
        self._process = self._conn = None
        self._asked = 0

    def __enter__(self) -> "AccountantWorker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Fork the worker process."""
        context = multiprocessing.get_context("fork")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(self.fn, child), name="tsdp-accountant-under-check")
        self._process.start()
        child.close()

    def ask(self, config: TrainingConfig, steps: int, delta: float) -> Reply:
        """The accountant's reply for one cell; a worker that hangs or dies is ended and the next ask starts anew.

        Args:
            config: The configuration.
            steps: Training steps.
            delta: δ.

        Returns:
            The reply (``hung`` past the time limit, ``died`` when the process ended, ``corrupt`` when what came back
                is not the reply to this request).
        """
        if self._process is None:
            self.start()
        self._asked += 1
        try:
            self._conn.send((self._asked, (config, steps, delta)))
            answered = self._conn.poll(self.timeout)
            reply = self._conn.recv() if answered else Reply(HUNG)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self._process.join(5)
            status = self._process.exitcode
            reply = Reply(DIED, exit_status=status)
        except Exception as exc:  # noqa: BLE001 - bytes on the pipe that do not unpickle: no answer to read
            reply = Reply(CORRUPT, message=f"a reply that does not unpickle ({type(exc).__name__}: {_one_line(exc)})")
        if not isinstance(reply, Reply):
            reply = Reply(CORRUPT, message=f"a {type(reply).__name__} object, not a reply")
        elif reply.kind not in (HUNG, DIED, CORRUPT) and reply.request != self._asked:
            reply = Reply(CORRUPT, message=f"the reply to request {reply.request}, not to request {self._asked} (a "
                                           "second answer: a process it forked and left running answered too?)",
                          output=reply.output)
        if reply.kind in (HUNG, DIED, CORRUPT):
            self._stop()
        return reply

    def _stop(self) -> None:
        if self._process is not None:
            if self._process.is_alive():
                end({self._process.pid: self._process})
            self._process.join()
            self._conn.close()
            _end_group(self._process.pid)  # what the accountant started and left running, orphaned or not
        self._process = self._conn = None

    def close(self) -> None:
        """Ask the worker to finish, end it if it does not within a second."""
        if self._process is None:
            return
        with contextlib.suppress(BrokenPipeError, OSError):
            self._conn.send(None)
        self._process.join(1.0)
        self._stop()

