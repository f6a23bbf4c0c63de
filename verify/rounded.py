"""A number as a person copies it, rounded in the safe direction: a printed floor or a printed σ must itself be
answered or keep the budget when it is typed back in."""
from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

__all__ = ["rounded_up"]


def rounded_up(x: float, digits: int) -> str:
    """``x`` > 0 to ``digits`` significant digits, rounded up: the text, typed back in, is at least ``x``.

    Args:
        x: A positive finite number.
        digits: Significant digits.

    Returns:
        ``x`` in ``g`` format to ``digits`` digits when that text reads back as at least ``x``, else the exact
        value of ``x`` rounded up to ``digits`` digits.
    """
    nearest = f"{x:.{digits}g}"
    if float(nearest) >= x:
        return nearest
    exact = Decimal(x)  # the float's exact value: rounding it up can never land below x
    up = exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=ROUND_CEILING)
    return f"{float(up):.{digits}g}"
