"""The attained bracket of a construction's pair and the true composition gap.

The construction's pair composed with the optimistic discretisation gives a **lower** bound
on the ε a perfect attack attains (the accountant's ``"attained"``), with the pessimistic one an
**upper** estimate of the same composition (``"attained_upper"``): [lower, upper] brackets the
pair's composed ε, and upper - lower is rounding alone (it shrinks with the discretisation).
The composition gap, what the sound accounting gives away under composition, is
sound ε - upper: the part of sound - attained that is not rounding. Every PLD is composed by
:class:`tsdp.verify.accountant.PldAccountant` over :func:`tsdp.verify.events.training_event`.
"""
from __future__ import annotations

from dataclasses import dataclass

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accountant import account
from tsdp.verify.events import training_event
from tsdp.verify.json_data import Record
from tsdp.verify.pld import DEFAULT_DISCRETIZATION


@dataclass(frozen=True)
class AttainedBracket(Record):
    """The attained ε of a construction's pair bracketed by the two discretisations, and the composition gap.

    Attributes:
        lower: the ε with the optimistic discretisation (a **lower** bound on the attained ε).
        upper: the ε with the pessimistic one (an **upper** bound on the pair's composed ε).
        rounding: upper - lower (the discretisation alone).
        composition_gap: the sound ε - upper (what the sound accounting gives away under composition).
        discretization: the PLD grid's gap.
        delta: the δ of the ε values.
        steps: the training steps composed.
        pair: the theorem whose construction pair was composed.
    """

    lower: float
    upper: float
    rounding: float
    composition_gap: float
    discretization: float
    delta: float
    steps: int
    pair: str


def attained_bracket(config: TrainingConfig, steps: int, delta: float, theorem: str, *, epsilon_sound: float,
                     discretization: float = DEFAULT_DISCRETIZATION) -> AttainedBracket:
    """[lower, upper] of the ε at ``delta`` of ``theorem``'s construction pair after ``steps`` training steps,
    the rounding (upper - lower) and the composition gap ``epsilon_sound`` - upper.

    Args:
        config: The training configuration.
        steps: Training steps.
        delta: The δ of the ε values.
        theorem: The theorem whose construction pair is composed.
        epsilon_sound: The sound bound's composed ε (an upper bound).
        discretization: The PLD grid's gap.

    Returns:
        ``lower`` (optimistic discretisation, a lower bound on the attained ε), ``upper`` (pessimistic, an upper
        bound on the pair's composed ε), their difference and the composition gap.
    """
    both = account(training_event(config, steps=steps, theorem=theorem), delta=delta, bracket=True,
                   discretization=discretization)
    lower, upper = both.epsilon_attained, both.epsilon_attained_upper
    return AttainedBracket(lower, upper, upper - lower, epsilon_sound - upper, discretization, delta, steps, theorem)


__all__ = ["AttainedBracket", "attained_bracket"]
