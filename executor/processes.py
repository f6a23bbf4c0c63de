"""The processes a piece of work started, however deep, and how they are ended.

A user's ``train`` may start processes of its own (a DataLoader's workers, a ``multiprocessing``
pool, ``subprocess`` children), and when it runs in a worker process of a multi-run audit
(:mod:`executor.local`) those are grandchildren of the command. Ending only the
worker would leave them running, re-parented, holding the command's output pipes open, so a
caller waiting for its end would wait for ever. :func:`end_tree` ends a process with everything
below it. Descendants are found in ``/proc`` (Linux); elsewhere only ``multiprocessing``'s own
children are seen.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from contextlib import contextmanager
from typing import Callable, Dict, Iterable, Iterator, List, Optional

GRACE_S = 1.0
"""How long a process has to end after SIGTERM before it is killed."""

_PROC = "/proc"


def _state_and_parent(pid: int) -> Optional[tuple]:
    """(state letter, parent pid) of ``pid`` from ``/proc/<pid>/stat``, None when it is gone or unreadable."""
    try:
        with open(f"{_PROC}/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
    return (fields[0], int(fields[1])) if len(fields) > 1 else None


def _parents() -> Dict[int, int]:
    """{pid: parent pid} of every live (not zombie) process in ``/proc``; empty where there is no ``/proc``."""
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return {}
    found = {}
    for entry in entries:
        if entry.isdigit():
            state = _state_and_parent(int(entry))
            if state is not None and state[0] != "Z":
                found[int(entry)] = state[1]
    return found


def children(pid: Optional[int] = None) -> Dict[int, Optional[multiprocessing.Process]]:
    """The live child processes of ``pid``: this process's ``multiprocessing`` children, and on Linux every other
    child, from ``/proc``.

    Args:
        pid: The parent (None: this process).

    Returns:
        {pid: its ``multiprocessing.Process``, or None for a child ``multiprocessing`` did not start}.
    """
    me = os.getpid() if pid is None else pid
    found = {p.pid: p for p in multiprocessing.active_children() if p.pid is not None} if me == os.getpid() else {}
    for child, parent in _parents().items():
        if parent == me:
            found.setdefault(child, None)
    return found


def descendants(pids: Iterable[int]) -> List[int]:
    """Every live process below ``pids`` (children, their children, ...), parents before their children.

    Args:
        pids: The processes whose descendants are wanted.

    Returns:
        Their live descendants' pids, parents first (empty where there is no ``/proc``).
    """
    parents = _parents()
    below: Dict[int, List[int]] = {}
    for child, parent in parents.items():
        below.setdefault(parent, []).append(child)
    found, frontier = [], list(pids)
    while frontier:
        nxt = [c for pid in frontier for c in below.get(pid, ()) if c not in found]
        found.extend(nxt)
        frontier = nxt
    return found


def _gone(pid: int, process: Optional[multiprocessing.Process]) -> bool:
    """Whether ``pid`` has ended, and is reaped if it is our child (a ``multiprocessing.Process`` through its own
    join, so its ``is_alive`` stays true to fact)."""
    if process is not None:
        process.join(0.02)
        return not process.is_alive()
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:  # not our child (a grandchild, re-parented) or reaped elsewhere: look it up
        pass
    state = _state_and_parent(pid)
    return state is None or state[0] == "Z"


def end(processes: Dict[int, Optional[multiprocessing.Process]]) -> None:
    """SIGTERM ``processes`` and everything below them, SIGKILL what is alive after :data:`GRACE_S`, and reap what
    is ours. The tree is taken before the first signal: a child whose parent dies is re-parented and could no longer
    be found.

    Args:
        processes: {pid: its ``multiprocessing.Process``, or None}; a pid already gone is skipped.
    """
    todo = dict(processes)
    for pid in descendants(todo):
        todo.setdefault(pid, None)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in todo:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + GRACE_S
        while todo and time.monotonic() < deadline:
            for pid, process in list(todo.items()):
                if _gone(pid, process):
                    del todo[pid]
            if todo:
                time.sleep(0.02)
        if not todo:
            return


_starting = 0
"""Depth of :func:`starting_processes` blocks in the main thread."""
_held: List[Callable[[], None]] = []
"""What :func:`hold_while_starting` put off, in order."""


@contextmanager
def starting_processes() -> Iterator[None]:
    """A block of the main thread that starts processes (a pool's workers): a stop asked for meanwhile
    (:func:`hold_while_starting`, the CLI's SIGTERM handler) is carried out when the block ends, once every process it
    started has its start-up data and the caller holds what ends them. Interrupted halfway, a spawned process whose
    parent had not yet written its start-up data printed multiprocessing's EOFError traceback, and one not yet in its
    pool was ended by nobody. Outside the main thread (where no signal handler runs) it holds nothing.

    Yields:
        None.
    """
    global _starting
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _starting += 1
    try:
        yield
    finally:
        _starting -= 1
    if not _starting and _held:
        actions = list(_held)
        _held.clear()
        for action in actions:
            action()


def hold_while_starting(action: Callable[[], None]) -> bool:
    """Put ``action`` (e.g. raising the CLI's ``Terminated``) off to the end of the :func:`starting_processes` block
    the main thread is in, if it is in one.

    Args:
        action: What to do then (it may raise).

    Returns:
        Whether it was put off (False: do it now).
    """
    if not _starting or threading.current_thread() is not threading.main_thread():
        return False
    _held.append(action)
    return True


__all__ = ["GRACE_S", "children", "descendants", "end", "hold_while_starting", "starting_processes"]
