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

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accountant import account
from tsdp.verify.events import training_event
from tsdp.verify.pld import DEFAULT_DISCRETIZATION


def attained_bracket(config: TrainingConfig, steps: int, delta: float, theorem: str, *, epsilon_sound: float,
                     discretization: float = DEFAULT_DISCRETIZATION) -> dict:
    """[lower, upper] of the ε at ``delta`` of ``theorem``'s construction pair after ``steps`` training steps,
    the rounding (upper - lower) and the composition gap ``epsilon_sound`` - upper (JSON-ready).

    ``lower``: optimistic discretisation, a lower bound on the attained ε; ``upper``: pessimistic, an upper
    bound on the pair's composed ε; ``epsilon_sound``: the sound bound's composed ε (an upper bound).
    """
    both = account(training_event(config, steps=steps, theorem=theorem), delta=delta, bracket=True,
                   discretization=discretization)
    lower, upper = both.epsilon_attained, both.epsilon_attained_upper
    return {"lower": lower, "upper": upper, "rounding": upper - lower, "composition_gap": epsilon_sound - upper,
            "discretization": discretization, "delta": delta, "steps": steps, "pair": theorem}


__all__ = ["attained_bracket"]
