"""Bad command-line input: the CLI's one exception class and the flag checks every command shares.

A leaf module (no imports), so every ``cmd_*.py`` names the same class at import time, and
``python -m tsdp.cli.main`` catches the class its sub-commands raise.
"""
from __future__ import annotations

import math


class UsageError(ValueError):
    """Bad command-line input that argparse cannot catch (exit code 2)."""


def check_delta(delta) -> float:
    """The ``--delta`` value, in (0, 1): :class:`UsageError` naming --delta when it is missing or outside."""
    if delta is None:
        raise UsageError("give --delta D")
    if not (math.isfinite(delta) and 0 < delta < 1):
        raise UsageError(f"invalid --delta: must be in (0, 1) (got {delta})")
    return delta
