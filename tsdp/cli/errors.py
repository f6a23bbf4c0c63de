"""Bad command-line input: the CLI's one exception class and the flag checks every command shares.

A leaf of the CLI (it imports only the light :mod:`tsdp.theorems.config`, whose checks are the
one home of each rule: the CLI and the Python API refuse the same values with the same words),
so every ``cmd_*.py`` names the same class at import time, and ``python -m tsdp.cli.main``
catches the class its sub-commands raise.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Callable

from tsdp.theorems import config as api


class UsageError(ValueError):
    """Bad command-line input that argparse cannot catch (exit code 2)."""


def check_delta(delta) -> float:
    """The ``--delta`` value: :class:`UsageError` when it is missing, else the API's check
    (:func:`tsdp.theorems.config.check_delta`; its ConfigError names --delta on the command line).

    Args:
        delta (float | None): ``--delta``'s value.

    Returns:
        δ.

    Raises:
        UsageError: ``--delta`` is missing.
        ConfigError: δ out of range.
    """
    if delta is None:
        raise UsageError("give --delta D")
    return api.check_delta(delta)


def check_confidence(confidence) -> float:
    """The ``--confidence`` of `tsdp audit`, `audit-fn` and `audit-model`: the API's check
    (:func:`tsdp.theorems.validate.check_confidence`, in (0.5, 1); its ConfigError names --confidence on the command
    line), called by each command before any work.

    Args:
        confidence (float): ``--confidence``'s value.

    Returns:
        The confidence.

    Raises:
        ConfigError: Not in (0.5, 1).
    """
    return api.check_confidence(confidence)


def load_entry_point(spec: str, flag: str) -> Callable:
    """The callable ``module:function`` names (UsageError naming ``flag`` when it cannot be loaded).

    Args:
        spec: ``module:function``.
        flag: The flag that named it (in the error).

    Returns:
        The callable.

    Raises:
        UsageError: ``spec`` is malformed or cannot be loaded.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"invalid {flag}: must be module:function (got {spec!r})")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"invalid {flag}: cannot load {spec!r} ({exc})") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the user's module failed while importing (SystemExit too)
        raise UsageError(f"invalid {flag}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from exc
    if not callable(target):
        raise UsageError(f"invalid {flag}: {spec!r} is not callable")
    return target
