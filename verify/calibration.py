"""Calibrate the noise multiplier σ for a target (ε, δ) under the sound accounting.

The sound composed ε (paper Appendix B.3 accounting of the theorem's one-step profile, the
``PldAccountant("sound")`` of :mod:`tsdp.verify.accountant`) is non-increasing in σ: every pair of the
catalogue at σ' > σ is the pair at σ followed by independent Gaussian noise
(post-processing). A bracketed search in log σ (:func:`narrow_log_sigma`) therefore finds the
smallest admissible σ.

Soundness direction: the returned σ is always one whose re-accounted sound ε is ≤ the
target (an **upper** bound on the smallest admissible σ, the safe side), both at the tail mass truncation asked for
and at :data:`~tsdp.verify.pld.DEFAULT_TAIL_MASS_TRUNCATION`, the one training's ledger accounts with (a σ
calibrated at a smaller truncation would otherwise re-account above the target once trained); ``sigma_rejected``
is a σ ≥ σ·(1 - tolerance) whose ε exceeds the target, so σ is within a relative
``tolerance`` of the smallest admissible value on the accountant's grid. At a δ at or above the probability that the
changed element is used at all (:func:`total_variation_bound`) every σ > 0 meets any target, with ε = 0: the result
says so (``every_sigma``) without a search or an accounting, its σ the search's floor.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Optional

from dp_accounting.dp_event import ComposedDpEvent, DpEvent, SelfComposedDpEvent

from tsdp.verify.json_data import Record
from tsdp.theorems.config import ConfigError, TrainingConfig, check_calibration_target, check_delta

from .estimate import Estimate
from .events import BoundDpEvent, bound_event_of, count_compositions, training_event
from .pld import DEFAULT_DISCRETIZATION, DEFAULT_LOG_MASS_TRUNCATION, DEFAULT_TAIL_MASS_TRUNCATION, PldSettings
from .pld_accountant import PldAccountant
from .resolution import resolve_event

DEFAULT_TOLERANCE = 1e-3
"""Relative tolerance on σ: σ_rejected ≥ σ (1 - tolerance)."""

SIGMA_MIN = 1e-2
SIGMA_MAX = 1e4


COARSE_FACTOR = 10
"""The search first runs on a grid this many times coarser (about that much cheaper per accounting)."""

COARSE_MAX = 1e-2
"""No coarse search when the coarse grid would exceed this (the asked grid is coarse already)."""


@dataclass(frozen=True)
class CalibrationResult(Record):
    """σ (the smallest admissible to a relative ``tolerance``) and its re-accounted ε.

    ``evaluations``: sound accountings at ``discretization`` (every reported number comes from
    one of them); ``coarse_evaluations``: those of the search at ``coarse_discretization`` (None:
    no coarse search) that placed them (a coarse search that found the target unreachable is
    counted too; the asked grid then searched on its own).

    Attributes:
        sigma: The calibrated σ (its re-accounted sound ε meets the target).
        epsilon: Its sound ε (upper bound).
        sigma_rejected: The σ just below it whose ε misses the target (None at the search's floor).
        epsilon_rejected: The sound ε at ``sigma_rejected``.
        target_epsilon: The ε budget.
        delta: The target δ.
        theorem: The bound's T-id.
        reason: Why that bound, in words.
        compositions: The number of composed events.
        steps: The training steps (None if epochs were given).
        epochs: The epochs (None if steps were given).
        tolerance: The relative tolerance on σ.
        evaluations: σ values accounted at ``discretization`` (each at the asked tail truncation and, where it
            differs, at the default training's ledger uses).
        discretization: The grid every returned number is accounted at.
        config: The configuration at the calibrated σ.
        coarse_evaluations: Accountings on the coarse grid that only said where to look.
        coarse_discretization: That coarse grid (None when not used).
        total_variation: :func:`total_variation_bound` of the run (None: the bound has no pair).
        every_sigma: δ ≥ ``total_variation``: every σ > 0 meets the target, with ε = 0 exactly. Nothing is searched
            or accounted then: ``sigma`` is the search's floor :data:`SIGMA_MIN` (the smallest σ calibrate names),
            ``epsilon`` 0, ``evaluations`` and ``coarse_evaluations`` 0, ``coarse_discretization`` None.
    """

    sigma: float
    epsilon: float
    sigma_rejected: Optional[float]
    epsilon_rejected: Optional[float]
    target_epsilon: float
    delta: float
    theorem: str
    reason: str
    compositions: int
    steps: Optional[int]
    epochs: Optional[int]
    tolerance: float
    evaluations: int
    discretization: float
    config: dict = field(default_factory=dict)
    coarse_evaluations: int = 0
    coarse_discretization: Optional[float] = None
    total_variation: Optional[float] = None
    every_sigma: bool = False


def calibrate_sigma(config: TrainingConfig, target_epsilon: float, delta: float, *, steps: Optional[int] = None,
                    epochs: Optional[int] = None, theorem: Optional[str] = None,
                    tolerance: float = DEFAULT_TOLERANCE, discretization: float = DEFAULT_DISCRETIZATION,
                    tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
                    log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION,
                    before: Optional[DpEvent] = None) -> CalibrationResult:
    """Smallest σ (relative ``tolerance``) whose composed **sound** ε(δ) is ≤ ``target_epsilon``.

    Sound accounting of paper Appendix B.3 (connect-the-dots, Doroshenko et al. 2022) for
    the bound ``theorem`` (default: the tightest sound upper bound of the scheme). A bracket
    grown geometrically around ``config.sigma`` within [1e-2, 1e4], narrowed in log σ by
    :func:`narrow_log_sigma`. The search runs first on a grid :data:`COARSE_FACTOR` times coarser
    (when that is ≤ :data:`COARSE_MAX`), which only says where to look: at ``discretization`` a
    walk from its answer, with steps predicted from its slope (:func:`_walk_to_target`), brackets
    the target again and :func:`narrow_log_sigma` closes the bracket, so every number returned is
    an accounting at ``discretization``. One-step PLDs of every σ tried are cached on disk
    (:mod:`tsdp.verify.pld_cache`), so asking again costs the compositions only. Direction:
    the answer never exceeds the target when re-accounted (it is the bracket's admissible
    end); it may be up to ``tolerance`` (relative) larger than needed. ``before`` (a warm-up phase at its own σ) is
    composed ahead of the run in every accounting, so the σ returned makes the whole heterogeneous run spend at most
    the target.

    Args:
        config: The training configuration; its ``sigma`` is where the search starts.
        target_epsilon: The ε budget.
        delta: The target δ.
        steps: The number of training steps (give ``steps`` or ``epochs``).
        epochs: The number of epochs (give ``steps`` or ``epochs``).
        theorem: The bound's T-id (default: the tightest sound upper bound of the scheme).
        tolerance: Relative tolerance on σ.
        discretization: Width of the privacy-loss grid every returned number is accounted at.
        tail_mass_truncation: The library's ``tail_mass_truncation`` of each composition. Every σ is accounted at it
            and at :data:`~tsdp.verify.pld.DEFAULT_TAIL_MASS_TRUNCATION` (training's ledger, ``tsdp train``), and its
            ε is the larger: the σ returned spends at most the target both ways.
        log_mass_truncation_bound: The library's ``log_mass_truncation_bound``.
        before: An event run before the calibrated steps (a warm-up phase, :func:`~tsdp.verify.events.training_event`
            of its own configuration), not calibrated but composed into every accounting; None: none.

    Returns:
        σ, its re-accounted sound ε, the rejected σ just below it and the number of accountings; ``every_sigma``
        when δ is at or above the run's :func:`total_variation_bound` (every σ > 0 meets the target, ε = 0), answered
        before any search: σ = :data:`SIGMA_MIN` with ε = 0 and no accounting.

    Raises:
        ConfigError: The target is unreachable below σ = 1e4, or a bad argument.
    """
    delta = check_delta(delta)
    target_epsilon, tolerance = check_calibration_target(target_epsilon, tolerance)
    settings = PldSettings(discretization, tail_mass_truncation, log_mass_truncation_bound)
    run = training_event(config, steps=steps, epochs=epochs, theorem=theorem)
    bound, _, reason = resolve_event(bound_event_of(run))

    PldAccountant(Estimate.SOUND).compose(run)  # records only: a lower-bound theorem is refused before any search
    tv = total_variation_bound(run if before is None else ComposedDpEvent([before, run]))
    common = dict(target_epsilon=float(target_epsilon), delta=delta, theorem=bound.id, reason=reason,
                  compositions=count_compositions(run), steps=steps, epochs=epochs, tolerance=tolerance,
                  discretization=discretization, total_variation=tv)
    if tv is not None and delta >= tv:  # ε = 0 at every σ > 0: nothing to search, nothing accounted
        return CalibrationResult(sigma=SIGMA_MIN, epsilon=0.0, sigma_rejected=None, epsilon_rejected=None,
                                 evaluations=0, config=config.with_(sigma=SIGMA_MIN).as_dict(), every_sigma=True,
                                 **common)

    counts = {}
    truncations = sorted({tail_mass_truncation, DEFAULT_TAIL_MASS_TRUNCATION})  # asked for, and training's ledger's
    from .progress import progress_bar

    bar = progress_bar(desc="calibrating σ", leave=False, delay=2.0, dynamic_ncols=True,  # no total: a count, not a rate
               bar_format="{desc}: {n_fmt} accountings [{elapsed}{postfix}]")

    def accounting_at(grid: float):
        counts[grid] = 0

        def eps_at(sigma: float) -> float:
            counts[grid] += 1
            bar.set_postfix_str(f"σ = {sigma:.4g}, grid {grid:g}")
            bar.update(1)
            event = training_event(config.with_(sigma=sigma), steps=steps, epochs=epochs, theorem=bound.id)
            return max(_composed(PldAccountant.with_settings(Estimate.SOUND, replace(settings, discretization=grid,
                                                                                     tail_mass_truncation=tail)),
                                 before, event).get_epsilon(delta) for tail in truncations)

        return eps_at

    try:  # the bar is cleared on an unreachable target too, so the error stays one line
        sigma0 = float(min(max(config.sigma, SIGMA_MIN), SIGMA_MAX))
        coarse = discretization * COARSE_FACTOR
        found = None
        if coarse <= COARSE_MAX:
            try:
                found = _search(accounting_at(coarse), target_epsilon, sigma0, tolerance)
            except ConfigError:  # unreachable on the coarse grid: the asked grid decides on its own
                found = None
        eps_at = accounting_at(discretization)
        if found is None:
            good, e_good, bad, e_bad = _search(eps_at, target_epsilon, sigma0, tolerance)
        else:
            c_good, c_e_good, c_bad, c_e_bad = found
            slope = None if c_bad is None else _slope(math.log(c_bad), c_e_bad, math.log(c_good), c_e_good)
            width = _final_width(tolerance)
            good, e_good, bad, e_bad = _walk_to_target(eps_at, target_epsilon, c_good, eps_at(c_good), width, slope)
            if bad is not None:
                good, e_good, bad, e_bad = narrow_log_sigma(eps_at, target_epsilon, good, e_good, bad, e_bad, tolerance)
    finally:
        bar.close()
    return CalibrationResult(
        sigma=float(good), epsilon=float(e_good), sigma_rejected=None if bad is None else float(bad),
        epsilon_rejected=None if e_bad is None else float(e_bad), evaluations=counts[discretization],
        config=config.with_(sigma=float(good)).as_dict(), coarse_evaluations=counts.get(coarse, 0),
        coarse_discretization=coarse if coarse in counts else None, every_sigma=False, **common,
    )


_EXACT_BITS = 1 << 16
"""Size ceiling (bits of the numerators and denominators, summed over the compositions) up to which
:func:`total_variation_bound` multiplies the exact limits; past it (long runs) it sums their logarithms in floats."""


def total_variation_bound(event: DpEvent) -> Optional[float]:
    """An **upper** bound, rounded up, on the total variation between the composed run's neighbouring output laws at
    any σ > 0: 1 - Π_i (1 - TV_i) over its compositions, TV_i the limit of each composition's bound's δ(0) as σ → 0
    (:meth:`tsdp.theorems.bounds.base.Bound.total_variation_limit`: its pair's, or T15's closed form), the probability
    that the changed element is used at all. The dominating pairs of the compositions dominate their adaptive composition and the total variation
    of a product is at most 1 - Π_i (1 - TV_i) (couple each factor maximally), so the run is (0, δ)-DP for every
    δ ≥ the bound, hence (ε, δ)-DP for every ε ≥ 0, whatever σ. A shuffled partial epoch is counted as a whole one
    (its bound mixes the epoch's with silence, which only lowers its TV). The product is of the exact limits, rounded
    up to a float once, where it is small (:data:`_EXACT_BITS`): a δ equal to a limit a float holds (T15 at r = 1/2:
    1 - (1/2)^(m k)) is then seen to be at it; a longer run's is summed in log space and inflated by 1e-12 relative.

    Args:
        event: A training run (:func:`~tsdp.verify.events.training_event`), possibly composed with others, or k
            releases (:func:`~tsdp.verify.events.inference_event`).

    Returns:
        The bound, or None when a composition's bound has no limit (a claim without a pair).
    """
    units = []
    for unit, count in _units(event):
        bound, config, _ = resolve_event(unit)
        limit = bound.total_variation_limit(config)
        if limit is None:
            return None
        if limit >= 1:  # this composition may always use the changed element: no bound below 1
            return 1.0
        units.append((Fraction(limit), count))
    size = sum(count * ((1 - limit).numerator.bit_length() + (1 - limit).denominator.bit_length())
               for limit, count in units)
    if size <= _EXACT_BITS:  # exactly, rounded up once: at δ equal to a limit a float holds, δ ≥ it is seen
        tv = 1 - math.prod(((1 - limit) ** count for limit, count in units), start=Fraction(1))
        up = float(tv)
        return min(1.0, up if Fraction(up) >= tv else math.nextafter(up, 2.0))
    log_unused = 0.0  # Σ_i log(1 - TV_i), each TV_i rounded up
    for limit, count in units:
        log_unused += count * math.log1p(-min(math.nextafter(float(limit), 2.0), 1.0))
    return min(1.0, -math.expm1(log_unused) * (1 + 1e-12))  # the relative 1e-12 covers log1p's and expm1's rounding


def _units(event: DpEvent):
    """(bound event, times composed) of each bound event in a composed ``event``."""
    if isinstance(event, BoundDpEvent):
        yield event, 1
    elif isinstance(event, SelfComposedDpEvent):
        yield from ((unit, count * event.count) for unit, count in _units(event.event))
    elif isinstance(event, ComposedDpEvent):
        for e in event.events:
            yield from _units(e)


def _composed(accountant: PldAccountant, before: Optional[DpEvent], event: DpEvent) -> PldAccountant:
    """``accountant`` with ``before`` (when given), then ``event``, composed."""
    if before is not None:
        accountant.compose(before)
    return accountant.compose(event)


def _search(eps_at, target: float, sigma0: float, tolerance: float):
    """(good, ε(good), bad, ε(bad)) of :func:`narrow_log_sigma` from a bracket grown by halving or doubling σ
    from ``sigma0``; (σ_min, ε(σ_min), None, None) when the floor meets the target (two accountings,
    not a walk down); ConfigError when σ_max misses it (one more accounting, not a walk up)."""
    e0 = eps_at(sigma0)
    if e0 <= target:
        good, e_good = sigma0, e0
        bad, e_bad = SIGMA_MIN, (eps_at(SIGMA_MIN) if sigma0 > SIGMA_MIN else e0)
        if e_bad <= target:
            return SIGMA_MIN, e_bad, None, None
        while good / 2 > bad:  # halve towards the floor until a σ misses the target
            e = eps_at(good / 2)
            if e > target:
                bad, e_bad = good / 2, e
                break
            good, e_good = good / 2, e
    else:
        bad, e_bad, good, e_good = sigma0, e0, None, None
        if eps_at(SIGMA_MAX) > target:
            raise ConfigError("epsilon", f"target ε = {target:g} is not reached by any σ ≤ {SIGMA_MAX:g}", target)
        while bad < SIGMA_MAX:
            trial = min(bad * 2, SIGMA_MAX)
            e = eps_at(trial)
            if e <= target:
                good, e_good = trial, e
                break
            bad, e_bad = trial, e
        if good is None:
            raise ConfigError("epsilon", f"target ε = {target} is not reached below σ = {SIGMA_MAX:g}", target)
    return narrow_log_sigma(eps_at, target, good, e_good, bad, e_bad, tolerance)


def _final_width(tolerance: float) -> float:
    """The log σ width at which a bracket is closed: good - bad ≤ ``tolerance`` · good (a hair inside)."""
    return -math.log1p(-tolerance) * (1 - 1e-9)


def _walk_to_target(eps_at, target: float, sigma: float, e: float, width: float, slope: Optional[float]):
    """From σ with ε(σ) = e, step in log σ towards the target until it is straddled: (good, ε(good), bad, ε(bad)).

    Each step is ``width`` · 2^k (k: steps taken), or, when the ``slope`` (d log ε / d log σ, from a
    coarser search) predicts the root more than a ``width`` away, that distance plus half a
    ``width`` if larger; within
    [σ_min, σ_max]: (σ_min, ε, None, None) when the floor meets the target, ConfigError when σ_max
    misses it.
    """
    x, admissible, k = math.log(sigma), e <= target, 0
    ends = (math.log(SIGMA_MIN), math.log(SIGMA_MAX))
    while True:
        size = width * 2 ** k
        if slope is not None and 0 < e < math.inf:
            distance = abs((math.log(target) - math.log(e)) / slope)
            if distance > width:  # a predicted root within one width: a step of one width closes the bracket
                size = max(size, distance + width / 2)
        nx = min(max(x - size if admissible else x + size, ends[0]), ends[1])
        if nx == x:
            if admissible:
                return SIGMA_MIN, e, None, None
            raise ConfigError("epsilon", f"target ε = {target:g} is not reached by any σ ≤ {SIGMA_MAX:g}", target)
        ne = eps_at(math.exp(nx))
        if (ne <= target) != admissible:
            return (math.exp(x), e, math.exp(nx), ne) if admissible else (math.exp(nx), ne, math.exp(x), e)
        x, e, k = nx, ne, k + 1


def _slope(x0: float, e0: float, x1: float, e1: float) -> Optional[float]:
    """d log ε / d log σ through two points, or None unless finite and negative."""
    if not (0 < e0 < math.inf and 0 < e1 < math.inf) or x0 == x1:
        return None
    slope = (math.log(e1) - math.log(e0)) / (x1 - x0)
    return slope if slope < 0 else None


def narrow_log_sigma(eps_at, target: float, good: float, e_good: float, bad: float, e_bad: float,
                     tolerance: float):
    """Narrow an admissible ``good`` (ε(good) ≤ target) and a rejected ``bad`` < good (ε(bad) > target)
    until good - bad ≤ ``tolerance`` · good; returns (good, ε(good), bad, ε(bad)).

    Each probe is placed from what is known: the root of the secant through the last two
    points evaluated, in (log σ, log ε) where ε is close to a power of σ (the chord through
    both ends when the secant's root falls outside the bracket), moved half a final width to the
    admissible side; once the predicted root is within a final width of an end, the point
    that closes the bracket. After four moves of the same end in a row, the geometric midpoint
    (no run is much slower than bisection). ``eps_at`` must be non-increasing in σ (a sound ε of a
    mechanism that more noise post-processes). Direction: ``good`` stays admissible throughout
    (the safe side), and only evaluated values are returned.

    Args:
        eps_at: σ ↦ its sound ε (non-increasing in σ).
        target: The ε budget.
        good: An admissible σ (ε(good) ≤ target).
        e_good: ε(good).
        bad: A rejected σ < good (ε(bad) > target).
        e_bad: ε(bad).
        tolerance: Relative width at which the bracket is closed.

    Returns:
        (good, ε(good), bad, ε(bad)) of the narrowed bracket; ``good`` is still admissible (the safe side).
    """
    width = _final_width(tolerance)
    last = [(math.log(bad), e_bad), (math.log(good), e_good)]  # the two latest points, oldest first
    moved, streak = None, 0
    while good - bad > tolerance * good:
        lo, hi = math.log(bad), math.log(good)
        root = _secant_root(*last[0], *last[1], target)
        if root is None or not lo < root < hi:
            root = _secant_root(lo, e_bad, hi, e_good, target)
        if root is None or streak >= 4:
            probe = (lo + hi) / 2
        elif hi - root <= width:
            probe = hi - width  # rejected: the bracket is closed
        elif root - lo <= width:
            probe = lo + width  # admissible: the bracket is closed
        else:
            probe = root + width / 2
        x = min(max(probe, lo + (hi - lo) * 1e-6), hi - (hi - lo) * 1e-6)
        sigma = math.exp(x)
        e = eps_at(sigma)
        side = "good" if e <= target else "bad"
        if e <= target:
            good, e_good = sigma, e
        else:
            bad, e_bad = sigma, e
        streak = streak + 1 if side == moved else 1
        moved = side
        last = [last[1], (x, e)]
    return good, e_good, bad, e_bad


def _secant_root(x0: float, e0: float, x1: float, e1: float, target: float):
    """log σ where the line through (x0, log e0) and (x1, log e1) reaches log target, or None (not finite,
    not decreasing)."""
    slope = _slope(x0, e0, x1, e1)
    if slope is None or not target > 0:
        return None
    return x0 + (math.log(target) - math.log(e0)) / slope
