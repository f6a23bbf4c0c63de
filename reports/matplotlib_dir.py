"""A writable folder for matplotlib where HOME cannot be written (a container, a locked-down cluster node).

matplotlib reads its settings from ``$XDG_CONFIG_HOME/matplotlib`` and keeps its font cache in
``$XDG_CACHE_HOME/matplotlib`` (``~/.config`` and ``~/.cache`` by default on Linux, ``~/.matplotlib`` elsewhere), or
both in ``$MPLCONFIGDIR``. Where one of them cannot be made or written it makes a temporary folder itself and logs a
warning of several lines, which landed in the middle of `tsdp report`'s output. :func:`use_writable_dir`, called
before matplotlib is imported (:mod:`tsdp.reports.figures`, its one importer in tsdp), points ``MPLCONFIGDIR`` at a
temporary folder of tsdp's own (removed at exit) in that case only: a ``MPLCONFIGDIR`` the user set is never changed,
and a writable default is used as it is.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

ENV = "MPLCONFIGDIR"
PREFIX = "tsdp-matplotlib-"


def default_dirs() -> Optional[List[Path]]:
    """The folders matplotlib would make and write without ``MPLCONFIGDIR`` (its ``get_configdir`` and
    ``get_cachedir``), or None where there is no home folder to put them in.

    Returns:
        [config folder, cache folder] on Linux and FreeBSD, [~/.matplotlib] elsewhere; or None.
    """
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no HOME and no password entry
        return None
    if sys.platform.startswith(("linux", "freebsd")):
        return [Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config", "matplotlib"),
                Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache", "matplotlib")]
    return [home / ".matplotlib"]


def _writable(folder: Path) -> bool:
    """Whether ``folder`` is, or can be made, a folder this process writes (made as matplotlib would make it)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return folder.is_dir() and os.access(folder, os.W_OK)


def use_writable_dir() -> Optional[str]:
    """Set ``MPLCONFIGDIR`` to a fresh temporary folder of tsdp's, removed at exit, when matplotlib is not imported
    yet, ``MPLCONFIGDIR`` is unset (or empty, which matplotlib ignores) and a default folder cannot be written.

    Returns:
        The folder set, or None where nothing was changed (including a temporary folder that cannot be made: then
        matplotlib says so itself).
    """
    if "matplotlib" in sys.modules or os.environ.get(ENV):
        return None
    dirs = default_dirs()
    if dirs is not None and all(_writable(d) for d in dirs):
        return None
    try:
        folder = tempfile.mkdtemp(prefix=PREFIX)
    except OSError:
        return None
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ[ENV] = folder
    return folder


__all__ = ["default_dirs", "use_writable_dir"]
