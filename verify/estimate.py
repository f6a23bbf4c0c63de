"""What an accountant composes (:class:`Estimate`) and how it refuses (:class:`UnsupportedBoundError`,
:class:`DeltaTooSmallError`): the vocabulary the one-step PLD, the accountant and :func:`~tsdp.verify.accountant.account`
share (:mod:`tsdp.verify.accountant` describes the three estimates)."""
from __future__ import annotations

from typing import Tuple

from dp_accounting import privacy_accountant

from tsdp.theorems.bounds.base import Kind
from tsdp.theorems.config import Choice, ConfigError
from tsdp.theorems.errors import TheoremError
from .rounded import rounded_up


class Estimate(Choice):
    """What an accountant composes (:mod:`tsdp.verify.accountant`): the sound profile (upper), the construction's law
    optimistic (attained, lower) or pessimistic (attained_upper)."""

    SOUND = "sound"
    ATTAINED = "attained"
    ATTAINED_UPPER = "attained_upper"


ESTIMATES = Estimate.values()
SOUND_KINDS = (Kind.TIGHT, Kind.UPPER)
"""The kinds of bound the sound estimate composes (a lower bound never stands in for a budget)."""


class UnsupportedBoundError(privacy_accountant.UnsupportedEventError, TheoremError):
    """The accountant cannot account an event with the requested estimate (one line, names why)."""


class DeltaTooSmallError(ConfigError):
    """δ below the composed PLD's resolution (its infinity mass, truncated tails included): no finite ε exists there.

    Args:
        delta: The δ asked for.
        smallest: The smallest δ the accountant answers for the same composition.

    Attributes:
        smallest: The smallest δ the accountant answers for the same composition.
    """

    def __init__(self, delta: float, smallest: float):
        self.smallest = smallest
        shown = rounded_up(smallest, 2)  # a printed floor that is itself answered
        super().__init__("delta", f"{delta:g} is below the smallest δ the accountant resolves here, {shown} "
                                  f"(the PLD's truncated mass); give δ >= {shown} or truncate less tail mass")



def check_estimates(estimates) -> Tuple[str, ...]:
    """The estimates asked for, validated and put in the order of :data:`ESTIMATES`.

    Args:
        estimates: One name of :data:`ESTIMATES`, or a selection of them.

    Returns:
        A non-empty tuple of distinct names, in the order of :data:`ESTIMATES`.

    Raises:
        ConfigError: An empty selection or an unknown name, naming ``estimates``.
    """
    chosen = (estimates,) if isinstance(estimates, str) else tuple(estimates)
    if not chosen or any(e not in ESTIMATES for e in chosen):
        raise ConfigError("estimates", f"must be a non-empty selection of {', '.join(ESTIMATES)}", estimates)
    return tuple(e for e in ESTIMATES if e in chosen)
