"""Whole-number flags: a count may be written as the field writes counts, ``1000000``, ``1_000_000`` or ``1e6``.

Every flag declared ``type=int`` reads through :func:`count` (:func:`integral_counts` swaps the type in the
finished parser, so a new sub-command's count flags need no edit): an integral value in any of those spellings
is taken exactly (``1e18`` is 10^18, not the float nearest it) up to 2^63 - 1, anything else (``1.5e0``, ``inf``, ``ten``) is one
usage error naming the flag.
"""
from __future__ import annotations

import argparse
from decimal import Decimal, InvalidOperation


COUNT_MAX = 2 ** 63 - 1
"""The largest count a flag takes (torch's and numpy's int64): a count beyond no run reaches, and past the float
range it would overflow the accounting's arithmetic."""


def count(text: str) -> int:
    """The integer ``text`` spells: an int literal, or an integral decimal in scientific notation (``1e6``, ``2.5e3``).

    Raises:
        argparse.ArgumentTypeError: ``text`` is not a whole number, or one beyond :data:`COUNT_MAX` (argparse prefixes
            the flag).

    Args:
        text: The flag's text.

    Returns:
        The integer.
    """
    try:
        number = int(text)
    except ValueError:
        try:
            value = Decimal(text.strip())
        except InvalidOperation:
            value = None
        if value is None or not value.is_finite() or value != value.to_integral_value():
            raise argparse.ArgumentTypeError(f"must be a whole number, e.g. 1000000 or 1e6 (got {text!r})") from None
        if value.adjusted() > 19:  # far beyond COUNT_MAX: not expanded into a huge integer
            value = Decimal(COUNT_MAX + 1)
        number = int(value)
    if abs(number) > COUNT_MAX:
        raise argparse.ArgumentTypeError(f"must be within ±(2^63 - 1), a count a run can reach (got {text!r})")
    return number


def integral_counts(parser: argparse.ArgumentParser) -> None:
    """Read every ``type=int`` flag of ``parser`` and of its sub-parsers through :func:`count`.

    Args:
        parser: The parser.
    """
    for action in parser._actions:  # noqa: SLF001 - argparse has no public accessor
        if action.type is int:
            action.type = count
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
                integral_counts(sub)
