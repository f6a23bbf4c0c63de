"""SIGTERM stops a `tsdp` command as Ctrl-C does: its cleanup runs, then it exits 128 + 15 = 143 with one line.

SIGTERM is what SLURM, Kubernetes, ``timeout`` and systemd send to stop a run. Python's default ends the process at
once, with none of the cleanup a command does on ``KeyboardInterrupt`` (a report's staging folder published as
interrupted, a cell file's temporary removed, worker processes ended). :func:`terminate_as_interrupt` makes it raise
:class:`Terminated`, a ``KeyboardInterrupt``, so the same code runs; the CLI then exits 128 + the signal's number
(:func:`stop_status`): 130 for Ctrl-C, 143 for SIGTERM.

Only the CLI installs the handler, and only while a command runs (:func:`tsdp.cli.main.main`): tsdp used as a library
leaves its caller's handler alone, and the previous handler is back when the command returns. A second SIGTERM while
the first one's cleanup runs is ignored (SLURM signals every process of a job step, and a supervised command's parent
passes its SIGTERM on: the child may get two); SIGKILL still ends the process at once. A process forked while the
handler is installed (a ``fork`` pool's worker, a user's process) gets the previous handler back at once: it is not
the command, has none of its cleanup, and is ended by its parent. A SIGTERM while worker processes start
(:func:`tsdp.executor.processes.starting_processes`) is raised once they have started: each then has its start-up data
(none prints multiprocessing's EOFError) and is in the pool the cleanup ends.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_UNSET = object()
_previous = _UNSET
"""The SIGTERM handler before the running command's (:data:`_UNSET` while no command runs here)."""
_raised = False
"""Whether the running command has been told to stop (a repeat is then ignored)."""


class Terminated(KeyboardInterrupt):
    """A SIGTERM, raised where the command is, as Ctrl-C raises ``KeyboardInterrupt``: the same cleanup runs.

    Args:
        signum: The signal (SIGTERM).
    """

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


def _stop(signum, frame) -> None:
    global _raised
    if _raised:  # the cleanup of the first one is running: let it finish
        return
    _raised = True
    from tsdp.executor.processes import hold_while_starting

    if hold_while_starting(lambda: _raise(signum)):  # workers starting: raised once they have started
        return
    _raise(signum)


def _raise(signum) -> None:
    raise Terminated(signum)


def _after_fork_in_child() -> None:
    """In a forked process: the handler before the command's (the fork is not the command)."""
    global _previous
    if _previous is not _UNSET and signal.getsignal(signal.SIGTERM) is _stop:
        try:
            signal.signal(signal.SIGTERM, _previous)
        except ValueError:  # not the main thread of the new process (CPython makes the forking thread its main one)
            return
        _previous = _UNSET


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` in the main thread (once; a repeat is ignored).

    Nothing is installed outside the main thread (only it may set handlers), inside a block that already installed it,
    or over a handler set outside Python (which could not be put back).

    Yields:
        None.
    """
    global _previous, _raised
    current = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or _previous is not _UNSET or current is None:
        yield
        return
    _previous, _raised = current, False
    signal.signal(signal.SIGTERM, _stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, current)
        _previous = _UNSET


def stop_status(exc: KeyboardInterrupt) -> tuple:
    """(exit status, words) of a command stopped by ``exc``: 128 + the signal's number, as shells report a process a
    signal ended (130 for Ctrl-C's SIGINT, 143 for SIGTERM).

    Args:
        exc: The ``KeyboardInterrupt`` (Ctrl-C) or :class:`Terminated` that stopped the command.

    Returns:
        (status, "interrupted" or "terminated by SIGTERM").
    """
    if isinstance(exc, Terminated):
        return 128 + exc.signum, str(exc)
    return 128 + signal.SIGINT, "interrupted"


__all__ = ["Terminated", "stop_status", "terminate_as_interrupt"]
