"""A time limit on a user's code (``audit-fn --timeout``, the API's ``timeout=``): stop it, end what it started.

:func:`time_limit` runs a block under a wall-clock limit. It arms ``SIGALRM`` (POSIX, the main
thread of a process: where a local audit runs a ``train``, in this process or in a worker of
:mod:`attacks.montecarlo.shards`): on expiry the handler raises :class:`Expired`, a
``BaseException`` (as ``KeyboardInterrupt`` is), so an ``except Exception`` in the user's code
does not swallow it, and the alarm re-fires every second until the block has ended. Code that
swallows even that (``except BaseException`` in a loop) for :data:`HARD_EXIT_S` more seconds
cannot be stopped from inside the process: the process then ends its children, writes one line
to stderr and exits with status 2 (in a worker process of a multi-run audit, the worker dies and
its run fails). A blocking call of Python's
(``time.sleep``, a lock, a queue, a socket) is interrupted; a single long C routine that holds the
interpreter (``sum(range(10**12))``) lets no handler run until it returns: only another process can
stop it. :func:`supervised` runs a command in a child process watched by its parent, which is what
the caller waits on; the child tells the parent when a limited block starts and ends, and a block
still open :data:`STUCK_S` after the hard exit would have struck is ended from outside, with
every process of the child. The child also tells the parent when it exits by tsdp's own hand: a child gone
without saying so was ended by the code it ran (``os._exit``, a signal), which the parent reports instead of
passing the child's status on (an ``os._exit(0)`` in a user's train would otherwise read as a passed audit).
When the limit strikes, the processes the block started that are
still alive (a DataLoader's workers, a ``multiprocessing`` pool, ``subprocess`` children), and what they started in
turn, are terminated, then killed after :data:`tsdp.executor.processes.GRACE_S`
(:func:`tsdp.executor.processes.end`): nothing of the stopped code keeps running.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager, suppress
from typing import Callable, Optional

from tsdp.executor.processes import children, end
from tsdp.theorems.config import ConfigError, check_real

REFIRE_S = 1.0
"""The alarm re-fires this often after the limit, should the stopped code catch the first one."""

HARD_EXIT_S = 3.0
"""Seconds past the limit after which code that keeps swallowing :class:`Expired` ends the process."""

TIMEOUT_MIN = 1e-3
"""The smallest time limit in seconds: setitimer counts microseconds, and a limit that rounds to 0 would disarm it."""

TIMEOUT_MAX = 1e7
"""The largest time limit in seconds (115 days; setitimer's range is far above)."""


STUCK_S = 2.0
"""Seconds past ``limit + HARD_EXIT_S`` after which :func:`supervised`'s parent ends a child whose limited block is
still open: its alarm could not run (one long C routine holding the interpreter)."""

_heartbeat: Optional[int] = None
"""In a :func:`supervised` child: the pipe to the parent, told ``S<seconds>`` when a limited block starts, ``E``
when it ends and ``X`` when tsdp itself is about to exit the process; None elsewhere."""


def _tell(message: str) -> None:
    if _heartbeat is not None:
        with suppress(OSError):  # the parent is gone: nothing to tell
            os.write(_heartbeat, message.encode())


def _real_stdio() -> bool:
    """Whether this process writes to real file descriptors (a command run from a shell or a subprocess), not to
    streams a caller swapped in (a test's ``redirect_stdout``): a forked child's writes reach only real ones."""
    try:
        return (sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__
                and sys.stdout.fileno() >= 0 and sys.stderr.fileno() >= 0)
    except (AttributeError, OSError, ValueError):
        return False


def supervised(work: Callable[[], int], on_stuck: Callable[[float], int], on_ended: Callable[[int], int]) -> int:
    """``work()``'s exit code, with ``work`` stoppable even inside one long C routine, and a process ended by the code
    it runs (``os._exit``, a signal) reported rather than taken for the command's result.

    With POSIX ``fork`` and real standard streams, ``work`` runs in a forked child that ends with its exit code
    (``os._exit``: it never returns into the caller) after telling the parent so; the parent watches the limited
    blocks the child enters (:func:`time_limit`). A block still open ``HARD_EXIT_S + STUCK_S`` seconds past its
    limit (its alarm never ran) ends the child with every process below it, and the parent returns
    ``on_stuck(limit)``; a child that exits without telling the parent was ended by the code it ran, and the parent
    returns ``on_ended(status)`` (each says so in one line). Otherwise (no fork, or streams a caller swapped in: a
    forked child's writes reach only real ones) ``work()`` runs in this process as it is.

    Args:
        work: The work, returning its exit code.
        on_stuck: Called with the seconds when a block is stuck; returns the exit code.
        on_ended: Called with the child's exit status (as :func:`os.waitstatus_to_exitcode`: negative for a signal)
            when the child exited without tsdp's word; returns the exit code.

    Returns:
        The exit code.
    """
    if not hasattr(os, "fork") or not _real_stdio():
        return work()
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # held until the parent passes it on (_watch)
    pid = os.fork()
    if pid == 0:  # the child: the work, then out, whatever happens
        global _heartbeat
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(read)
        _heartbeat, code = write, 1
        try:
            code = work()
        except BaseException:  # noqa: BLE001 - a bug of tsdp's: its traceback, as a command run in-process shows it
            import traceback

            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                with suppress(OSError, ValueError):
                    stream.flush()
            _exit(code if isinstance(code, int) else 1)
    os.close(write)
    return _watch(pid, read, on_stuck, on_ended, mask)


def _exit(code: int) -> None:
    """Exit this process now (``os._exit``), having told a :func:`supervised` parent that tsdp exits it."""
    _tell("X\n")
    os._exit(code)


def _watch(pid: int, read: int, on_stuck: Callable[[float], int], on_ended: Callable[[int], int],
           mask=frozenset()) -> int:
    """The parent of :func:`supervised`: the child's exit code; ``on_stuck`` once a limited block overstays;
    ``on_ended`` when the child exited without telling (the code it ran ended it).

    The child's exit is found by polling ``waitpid``, not by the pipe's end: a process the user's code forked
    holds the pipe open after the child is gone. Ctrl-C reaches the child itself (the terminal signals the whole
    process group); a SIGTERM sent to this process alone (``kill``, ``timeout``, a container's stop) is passed on to the
    child, which stops as on Ctrl-C, and what the child had started that is still alive once it has exited is ended
    (:func:`tsdp.executor.processes.end`): nothing is left running. ``mask``: the signal mask to restore once the
    SIGTERM handler is set (:func:`supervised` blocks SIGTERM across the fork)."""
    import select

    from tsdp.executor.processes import descendants

    below: list = []  # the child's processes when a SIGTERM came: ended after the child, should they outlive it
    reaped = []  # the child has been waited for: its pid may be another process's now

    def pass_on(signum, frame) -> None:
        if reaped:
            return
        below.extend(p for p in descendants([pid]) if p not in below)
        with suppress(ProcessLookupError):
            os.kill(pid, signum)

    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the child, which ends the command
    terminate = signal.signal(signal.SIGTERM, pass_on)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    blocks, buffer, told_exit, pipe_open = [], b"", False, True  # blocks: (started, seconds), outermost first

    def take(wait: float) -> None:
        """Read what the child has told within ``wait`` seconds, if anything (``pipe_open`` False at its end)."""
        nonlocal buffer, told_exit, pipe_open
        if not (pipe_open and select.select([read], [], [], wait)[0]):
            return
        chunk = os.read(read, 4096)
        pipe_open = bool(chunk)  # closed by every holder: the child and whatever it forked have exited
        *messages, buffer = (buffer + chunk).split(b"\n")
        for message in messages:
            if message.startswith(b"S"):
                blocks.append((time.monotonic(), float(message[1:])))
            elif message == b"E" and blocks:
                blocks.pop()
            elif message == b"X":
                told_exit = True

    try:
        while True:
            if pipe_open:
                take(0.1)
            else:
                time.sleep(0.1)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                reaped.append(pid)
                while pipe_open and not told_exit and select.select([read], [], [], 0)[0]:
                    take(0)  # what it wrote last
                code = os.waitstatus_to_exitcode(status)
                if not told_exit:
                    return on_ended(code)
                return code if code >= 0 else 128 - code
            overdue = [limit for started, limit in blocks
                       if time.monotonic() - started > limit + HARD_EXIT_S + STUCK_S]
            if overdue:
                end({pid: None})
                return on_stuck(overdue[-1])
    finally:
        os.close(read)
        if below:
            end({p: None for p in below})
        signal.signal(signal.SIGINT, interrupt)
        if terminate is not None:  # None: a handler set outside Python, which cannot be put back
            signal.signal(signal.SIGTERM, terminate)


class Expired(BaseException):
    """Raised into the limited block when its time is up (not an ``Exception``: user code that catches every error
    must not swallow it)."""


def check_timeout(timeout) -> Optional[float]:
    """``timeout`` in seconds, None (no limit) or a real in [:data:`TIMEOUT_MIN`, :data:`TIMEOUT_MAX`] (ConfigError
    naming ``timeout`` otherwise, before any work).

    Args:
        timeout: The limit in seconds, or None.

    Returns:
        The limit as a float, or None.

    Raises:
        ConfigError: Naming ``timeout`` when out of range.
    """
    if timeout is None:
        return None
    return check_real("timeout", timeout, low=TIMEOUT_MIN, high=TIMEOUT_MAX)


def check_can_limit(timeout: Optional[float]) -> None:
    """ConfigError naming ``timeout`` when a limit is asked for where it cannot be enforced: off the main thread (a
    signal reaches the main thread only; a Dask worker runs tasks in threads) or without ``setitimer``.

    Args:
        timeout: The limit asked for (None: none).

    Raises:
        ConfigError: Naming ``timeout`` when it cannot be enforced here.
    """
    if timeout is None:
        return
    if not hasattr(signal, "setitimer"):
        raise ConfigError("timeout", "needs POSIX interval timers (signal.setitimer), absent on this platform")
    if threading.current_thread() is not threading.main_thread():
        raise ConfigError("timeout", "is enforced with a signal, so the audit must run in the main thread of its "
                                     "process (not in a thread, nor on a Dask cluster)")


@contextmanager
def time_limit(seconds: Optional[float]):
    """Run the ``with`` block under a wall-clock limit of ``seconds`` (None: no limit): :class:`Expired` is raised into
    it when the time is up, and once the block has ended (by that exception, or by another the code made of it) the
    processes it started are ended (module docstring). Main thread only (:func:`check_can_limit`); a limit already
    armed around it (an outer ``time_limit``) keeps its remaining time.

    Args:
        seconds: The limit (None: no limit).

    Yields:
        Nothing: the block runs under the limit.
    """
    if seconds is None:
        yield
        return
    check_can_limit(seconds)
    before = children()
    outer = signal.getitimer(signal.ITIMER_REAL)
    started = time.monotonic()
    fired = []

    def expire(signum, frame):
        fired.append(time.monotonic() - started)
        if fired[-1] > seconds + HARD_EXIT_S:  # the code swallowed every alarm: nothing short of exiting stops it
            end({pid: p for pid, p in children().items() if pid not in before})
            os.write(2, f"tsdp: error: the time limit of {seconds:g} s (timeout) struck and the code kept running "
                        f"(it catches BaseException): exiting\n".encode())
            _exit(2)
        raise Expired(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_S)
    _tell(f"S{seconds!r}\n")
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _tell("E\n")
        if fired:
            end({pid: p for pid, p in children().items() if pid not in before})
        if outer[0] > 0:  # an outer limit keeps its remaining time
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, outer[0] - (time.monotonic() - started)), outer[1])


__all__ = ["Expired", "check_can_limit", "check_timeout", "supervised", "time_limit"]
