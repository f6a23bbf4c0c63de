"""Bad command-line input: the CLI's one exception class and the flag checks every command shares.

A leaf of the CLI (it imports only the light :mod:`tsdp.theorems.config`, whose checks are the
one home of each rule: the CLI and the Python API refuse the same values with the same words),
so every ``cmd_*.py`` names the same class at import time, and ``python -m tsdp.cli.main``
catches the class its sub-commands raise.
"""
from __future__ import annotations

from tsdp.theorems import config as api


class UsageError(ValueError):
    """Bad command-line input that argparse cannot catch (exit code 2)."""


def check_delta(delta) -> float:
    """The ``--delta`` value: :class:`UsageError` when it is missing, else the API's check
    (:func:`tsdp.theorems.config.check_delta`; its ConfigError names --delta on the command line)."""
    if delta is None:
        raise UsageError("give --delta D")
    return api.check_delta(delta)
