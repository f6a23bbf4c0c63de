"""A number as a person reads or copies it, rounded in the safe direction: the one home of that rule.

An upper bound (a sound ε or δ, a printed floor, a calibrated σ) is printed rounded **up**: the text, typed back
in, is at least the number, so a reader never sees less privacy cost than was computed. A lower bound (an attained
or audited ε) is printed rounded **down**: the text is at most the number, so a lower bound never claims more than
was computed. A number that bounds nothing (a difference of two bounds, such as the composition gap) is printed to
nearest. All keep Python's own format (``g`` to significant digits, or ``f`` to digits after the point) and its
nearest text whenever that already lies on the safe side; none prints a negative zero.

Every printed bound of tsdp goes through :func:`rounded_up` or :func:`rounded_down`; a layer that prints a missing
value its own way (the report's tables 'n/a', its prose 'none') wraps them and keeps their digits.
"""
from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Optional

__all__ = ["DIGITS", "rounded_down", "rounded_nearest", "rounded_up"]

DIGITS = 4
"""tsdp's printed precision of an ε or δ: 4 significant digits (or, with ``fixed``, 4 digits after the point)."""


def _rounded(x: float, digits: int, fixed: bool, up: Optional[bool]) -> str:
    """``x`` to ``digits`` digits: rounded up (``up``), down (not ``up``) or to nearest (None); never "-0"."""
    spec = f".{digits}{'f' if fixed else 'g'}"
    text = format(x, spec)
    if not math.isfinite(x):
        return text
    if up is not None and not (float(text) >= x if up else float(text) <= x):
        exact = Decimal(x)  # the float's exact value: rounding it outward can never land on the wrong side of x
        unit = Decimal(1).scaleb(-digits if fixed else exact.adjusted() - digits + 1)
        text = format(float(exact.quantize(unit, rounding=ROUND_CEILING if up else ROUND_FLOOR)), spec)
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def rounded_up(x: float, digits: int = DIGITS, *, fixed: bool = False) -> str:
    """``x`` printed rounded up: the text, typed back in, is at least ``x`` (an upper bound's side).

    Args:
        x: The number (non-finite: printed as Python prints it).
        digits: Significant digits (``g`` format), or digits after the point with ``fixed``.
        fixed: ``f`` format (``digits`` after the point) instead of significant digits.

    Returns:
        Python's nearest text when it reads back as at least ``x``, else the exact value of ``x`` rounded up to
        ``digits`` digits, in the same format.
    """
    return _rounded(x, digits, fixed, up=True)


def rounded_down(x: float, digits: int = DIGITS, *, fixed: bool = False) -> str:
    """``x`` printed rounded down: the text, typed back in, is at most ``x`` (a lower bound's side).

    Args:
        x: The number (non-finite: printed as Python prints it).
        digits: Significant digits (``g`` format), or digits after the point with ``fixed``.
        fixed: ``f`` format (``digits`` after the point) instead of significant digits.

    Returns:
        Python's nearest text when it reads back as at most ``x``, else the exact value of ``x`` rounded down to
        ``digits`` digits, in the same format.
    """
    return _rounded(x, digits, fixed, up=False)


def rounded_nearest(x: float, digits: int = DIGITS, *, fixed: bool = False) -> str:
    """``x`` printed to nearest: for a number that bounds nothing (a difference of two bounds, such as the
    composition gap sound ε - attained upper), so no side is safe. A value that rounds to zero is printed ``0``.

    Args:
        x: The number (non-finite: printed as Python prints it).
        digits: Significant digits (``g`` format), or digits after the point with ``fixed``.
        fixed: ``f`` format (``digits`` after the point) instead of significant digits.

    Returns:
        Python's nearest text, or ``0`` when that reads back as zero (never "-0.0000").
    """
    text = _rounded(x, digits, fixed, up=None)
    return "0" if math.isfinite(x) and float(text) == 0 else text
