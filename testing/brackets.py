"""tsdp's own numbers for one cell (configuration, steps, δ, relation): the sound and the attained ε.

The **attained** ε (a lower bound, rounded down: the bound's construction pair composed, what a
concrete pair of neighbouring datasets reaches through the real loop) and the **sound** ε (an
upper bound, rounded up: the tightest sound bound of the catalogue for the scheme) come from
:func:`tsdp.verify.accounting.epsilon`. Where the catalogue has no sound bound (pooled windows
with k > 1) the attained ε is T14's; where it has neither (Poisson top level) both are None.
Cached in-process: a grid, a property test and several accountants share them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

from tsdp.verify.json_data import Record
from tsdp.theorems.config import Top, TrainingConfig
from tsdp.theorems.errors import TheoremError
from tsdp.verify import accounting
from tsdp.verify.pld import PldSettings

from .relations import Substitution

DISCRETIZATION = 1e-3
"""The PLD grid of the check's reference numbers: coarser than the accountant's default (1e-4) for speed;
directions are kept (sound rounds up, attained down), so a coarse grid never makes a false 'unsound'."""

REFERENCE_SETTINGS = PldSettings(DISCRETIZATION)
"""The accountant's settings of the check's reference numbers: :data:`DISCRETIZATION`, the library's truncations."""


@dataclass(frozen=True)
class Reference(Record):
    """tsdp's bracket for one cell: ``epsilon_attained`` (lower) ≤ true ε ≤ ``epsilon_sound`` (upper).

    ``theorem``: the sound bound (None without one); ``construction``: the bound whose pair is
    attained (None without one); ``refused``: why a number is missing.

    Attributes:
        theorem: The sound bound's T-id (None without one).
        construction: The T-id whose pair is attained (None without one).
        epsilon_sound: The sound ε, an upper bound (None: refused).
        epsilon_attained: The attained ε, a lower bound (None: refused).
        refused: Why a number is missing (None: both present).
    """

    theorem: Optional[str]
    construction: Optional[str]
    epsilon_sound: Optional[float]
    epsilon_attained: Optional[float]
    refused: Optional[str] = None


@functools.lru_cache(maxsize=4096)
def _reference(config: TrainingConfig, steps: int, delta: float, settings: PldSettings, attained: bool) -> Reference:
    estimates = ("sound", "attained") if attained else ("sound",)
    try:
        r = accounting.epsilon_with(config, delta, settings, steps=steps, estimates=estimates)
    except TheoremError as exc:
        if config.top != Top.POOLED or not attained:
            return Reference(None, None, None, None, refused=str(exc))
        r = accounting.epsilon_with(config, delta, settings, steps=steps, theorem="T14")
        return Reference(None, r.construction, None, r.epsilon_attained,
                         refused=f"no sound bound: {exc}")
    return Reference(r.theorem, r.construction, r.epsilon, r.epsilon_attained,
                     refused=r.sound_refused or r.attained_refused)


def reference(config: TrainingConfig, steps: int, delta: float, relation: Substitution,
              settings: PldSettings = REFERENCE_SETTINGS, *, attained: bool = True) -> Reference:
    """tsdp's sound and attained ε after ``steps`` training steps at ``delta``, for ``relation`` on ``config``'s batching
    (paper Appendix B.3 accounting; sound: upper bound, attained: lower bound).

    Args:
        config: The configuration whose batching is accounted.
        steps: The number of training steps.
        delta: The δ.
        relation: The neighbouring relation accounted for.
        settings: The accountant's grid and truncations (sound rounds up, attained down).
        attained: False: the sound ε only, half the work.

    Returns:
        The bracket: ``epsilon_attained`` (lower) ≤ true ε ≤ ``epsilon_sound`` (upper), the theorem and
            construction behind them, and why a number is missing.
    """
    return _reference(relation.config(config), int(steps), float(delta), settings, bool(attained))
