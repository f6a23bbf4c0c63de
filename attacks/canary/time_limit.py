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
(``time.sleep``, a lock, a queue, a socket) is interrupted; a single long C routine (one big
torch operation) ends first. When the limit strikes, the processes the block started that are
still alive (a DataLoader's workers, a ``multiprocessing`` pool, ``subprocess`` children), and what they started in
turn, are terminated, then killed after :data:`attacks.montecarlo.processes.GRACE_S`
(:func:`attacks.montecarlo.processes.end`): nothing of the stopped code keeps running.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from typing import Optional

from tsdp.attacks.montecarlo.processes import children, end
from tsdp.theorems.config import ConfigError, check_real

REFIRE_S = 1.0
"""The alarm re-fires this often after the limit, should the stopped code catch the first one."""

HARD_EXIT_S = 3.0
"""Seconds past the limit after which code that keeps swallowing :class:`Expired` ends the process."""

TIMEOUT_MIN = 1e-3
"""The smallest time limit in seconds: setitimer counts microseconds, and a limit that rounds to 0 would disarm it."""

TIMEOUT_MAX = 1e7
"""The largest time limit in seconds (115 days; setitimer's range is far above)."""


class Expired(BaseException):
    """Raised into the limited block when its time is up (not an ``Exception``: user code that catches every error
    must not swallow it)."""


def check_timeout(timeout) -> Optional[float]:
    """``timeout`` in seconds, None (no limit) or a real in [:data:`TIMEOUT_MIN`, :data:`TIMEOUT_MAX`] (ConfigError
    naming ``timeout`` otherwise, before any work)."""
    if timeout is None:
        return None
    return check_real("timeout", timeout, low=TIMEOUT_MIN, high=TIMEOUT_MAX)


def check_can_limit(timeout: Optional[float]) -> None:
    """ConfigError naming ``timeout`` when a limit is asked for where it cannot be enforced: off the main thread (a
    signal reaches the main thread only; a Dask worker runs tasks in threads) or without ``setitimer``."""
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
    armed around it (an outer ``time_limit``) keeps its remaining time."""
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
            os._exit(2)
        raise Expired(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if fired:
            end({pid: p for pid, p in children().items() if pid not in before})
        if outer[0] > 0:  # an outer limit keeps its remaining time
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, outer[0] - (time.monotonic() - started)), outer[1])


__all__ = ["Expired", "check_can_limit", "check_timeout", "time_limit"]
