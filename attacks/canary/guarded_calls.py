"""Calling *your* code from an audit: one clear error that blames your function when it fails, and a time limit.

:func:`_call` runs ``train`` or ``loss`` (or code that runs its result); anything it raises, ``SystemExit`` included,
becomes a :class:`UserFunctionError` naming the function and why; a run under a time limit that strikes becomes a
:class:`TimeLimitError` (:mod:`attacks.canary.time_limit`).
"""
from __future__ import annotations

import inspect
from contextlib import contextmanager
from typing import Callable, Optional

from tsdp.theorems.config import ConfigError

from .time_limit import Expired, time_limit


class UserFunctionError(ConfigError):
    """The user's ``train`` or ``loss`` function failed: it raised (or called ``sys.exit``), has the wrong
    arity, returned None, or gave non-finite losses. Names the function and why; the original
    exception is the ``__cause__`` (``tsdp --debug`` prints its traceback).

    Args:
        role: "train" or "loss".
        fn: The user's function.
        why: What went wrong.
    """

    def __init__(self, role: str, fn: Callable, why: str):
        super().__init__(role, f"your {role} function {_name(fn)} {why}")

    def __reduce__(self):  # picklable whole: a worker process sends it back (unpicklable, it broke the pool)
        extra = {k: v for k, v in self.__dict__.items() if k not in ("parameter", "constraint")}
        return _rebuilt, (type(self), self.parameter, self.constraint, extra)


def _rebuilt(cls: type, parameter: str, constraint: str, extra: dict) -> UserFunctionError:
    """A :class:`UserFunctionError` (or subclass) as pickled: its message and attributes, without calling its own
    ``__init__`` (which wants the user's function)."""
    err = cls.__new__(cls)
    ConfigError.__init__(err, parameter, constraint)
    err.__dict__.update(extra)
    return err


class DivergedError(UserFunctionError):
    """The user's training made non-finite gradients or parameter updates: the canaries cannot be scored.
    ``failed_tests``: the names of the mechanism tests that failed on the steps before it (computed on those steps;
    the evidence a diverged run still gives).

    Args:
        fn: The user's train function.
        why: What went wrong, with the failed tests' findings.
        failed_tests: The failed mechanism tests' names.
    """

    def __init__(self, fn: Callable, why: str, failed_tests=()):
        super().__init__("train", fn, why)
        self.failed_tests = tuple(failed_tests)


class TimeLimitError(UserFunctionError):
    """The user's function was still running when the run's time limit (``timeout``) struck: it was stopped and the
    processes it started were ended (:mod:`attacks.canary.time_limit`). ``note`` adds what the audit had done
    (e.g. how many of its runs had finished). Picklable, so a worker process can send it back.

    Args:
        role: "train" or "loss".
        fn: The user's function.
        seconds: The time limit that struck.
        note: What the audit had done.
    """

    def __init__(self, role: str, fn: Callable, seconds: float, note: str = ""):
        self.role, self.fn_name, self.seconds, self.note = role, fn if isinstance(fn, str) else _name(fn), seconds, note
        ConfigError.__init__(self, role, f"your {role} function {self.fn_name} did not finish within the time limit "
                                         f"of {seconds:g} s (timeout={seconds:g}): stopped{note}")

    def __reduce__(self):
        return type(self), (self.role, self.fn_name, self.seconds, self.note)

    def with_note(self, note: str) -> "TimeLimitError":
        """The same error with ``note`` appended to its message.

        Args:
            note: The text appended.

        Returns:
            The new error.
        """
        return type(self)(self.role, self.fn_name, self.seconds, self.note + note)


def _name(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _check_arity(role: str, fn, *args) -> None:
    """:class:`UserFunctionError` before any work when ``fn`` cannot be called with ``args``."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the call itself will tell
        return
    try:
        signature.bind(*args)
    except TypeError as exc:
        raise UserFunctionError(role, fn, f"must take {len(args)} positional argument(s) ({exc})") from None


def _call(role: str, fn, *args, via=None, subject: str = ""):
    """``fn(*args)`` (or ``via(*args)``, code that runs ``fn``'s result); anything it raises, ``SystemExit``
    included, becomes a :class:`UserFunctionError` blaming ``fn`` (``subject`` says what of it failed)."""
    try:
        return (via or fn)(*args)
    except Expired as exc:  # the run's time limit struck while this function ran
        raise TimeLimitError(role, fn, exc.args[0]) from None
    except (KeyboardInterrupt, ConfigError):  # a ConfigError names a value of the audit (e.g. too many canaries)
        raise
    except SystemExit as exc:
        raise UserFunctionError(role, fn, f"{subject}called sys.exit({exc.code!r})") from exc
    except Exception as exc:  # noqa: BLE001 - any failure of the user's code is reported as such
        raise UserFunctionError(role, fn, f"{subject}raised {type(exc).__name__}: {exc}") from exc


@contextmanager
def _limited(train, timeout: Optional[float]):
    """One run under the time limit ``timeout`` (:func:`attacks.canary.time_limit.time_limit`; None: none): expiry
    inside the user's code is blamed on the function that ran (:func:`_call`), elsewhere in the run on ``train``."""
    try:
        with time_limit(timeout):
            yield
    except Expired as exc:
        raise TimeLimitError("train", train, exc.args[0]) from None


__all__ = ["TimeLimitError", "UserFunctionError"]
