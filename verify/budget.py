"""The budget search: the most training steps whose **sound** ε stays within a budget (upper-bound accounting
only; a lower-bound theorem is refused)."""
from __future__ import annotations

import functools
from typing import Callable, Optional

from dp_accounting import dp_event

from tsdp.theorems.config import ConfigError, TrainingConfig, check_delta, check_epsilon

from .pld_accountant import PldAccountant
from .estimate import Estimate
from .events import training_event
from .pld import PldSettings

MAX_SEARCHED_STEPS = 2 ** 40
"""Without a cap, a budget still met after this many steps is refused (it is never reached)."""


def max_steps(config: TrainingConfig, budget: float, delta: float, *, theorem: Optional[str] = None,
              cap: Optional[int] = None, before: Optional[dp_event.DpEvent] = None,
              settings: PldSettings = PldSettings()) -> int:
    """The most training steps S ≤ ``cap`` of ``config`` whose **sound** ε(δ), after ``before``, is ≤ ``budget``.

    Upper-bound accounting only (a lower-bound theorem is refused). The sound ε is
    non-decreasing in S, so doubling then bisection finds S in O(log S) accountant reads;
    for deterministic iteration the answer is a whole number of epochs (ε only grows when an
    epoch starts); shuffled iteration may end inside an epoch (its ε grows with the probability
    ρ = s N'/N that the steps run hold the changed sequence).

    Args:
        config: The training configuration.
        budget: The privacy budget ε.
        delta: The target δ.
        theorem: The bound's T-id (None: the tightest sound upper bound for the scheme).
        cap: The most steps wanted (None: no cap).
        before: An event already spent (a warm-up), composed before the steps.
        settings: The accountant's grid and truncations.

    Returns:
        S, 0 when even one step exceeds the budget.

    Raises:
        UnsupportedBoundError: The theorem is a lower bound, or no bound applies.
        ConfigError: A bad argument, or (without a cap) 2^40 steps still fit.
    """
    budget = check_epsilon(budget)
    delta = check_delta(delta)

    @functools.lru_cache(maxsize=None)
    def eps(steps: int) -> float:
        acc = PldAccountant.with_settings(Estimate.SOUND, settings)
        if before is not None:
            acc.compose(before)
        return acc.compose(training_event(config, steps=steps, theorem=theorem)).get_epsilon(delta)

    eps(1)  # refusals (lower bounds, schemes without a bound) surface even when no step is affordable
    return largest_within(budget, eps, cap)


def largest_within(budget: float, eps_of: Callable[[int], float], cap: Optional[int] = None) -> int:
    """The largest s ≤ ``cap`` with ``eps_of(s)`` ≤ ``budget``, by doubling then bisection (O(log s) calls).

    Args:
        budget: The privacy budget ε.
        eps_of: ε after s steps; must be non-decreasing in s (true of any composition accountant).
        cap: The largest s wanted (None: no cap).

    Returns:
        s, 0 if even s = 1 exceeds the budget.

    Raises:
        ConfigError: Without a cap, 2^40 still fits.
    """
    if cap == 0 or eps_of(1) > budget:
        return 0
    lo, s = 1, 2
    while True:
        if cap is not None and s > cap:
            hi = cap + 1
            break
        if eps_of(s) > budget:
            hi = s
            break
        if s >= MAX_SEARCHED_STEPS:
            raise ConfigError("epsilon", f"the budget ε = {budget} is never reached; bound the training with epochs",
                              budget)
        lo, s = s, 2 * s
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if eps_of(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo
