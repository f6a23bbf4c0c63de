"""Calibrate the noise multiplier σ for a target (ε, δ) under the sound accounting.

The sound composed ε (paper Appendix B.3 accounting of the theorem's one-step profile, the
``PldAccountant("sound")`` of :mod:`tsdp.verify.accountant`) is non-increasing in σ: every pair of the
catalogue at σ' > σ is the pair at σ followed by independent Gaussian noise
(post-processing). A bracketed search in log σ (:func:`narrow_log_sigma`) therefore finds the
smallest admissible σ.

Soundness direction: the returned σ is always one whose re-accounted sound ε is ≤ the
target (an **upper** bound on the smallest admissible σ, the safe side); ``sigma_rejected``
is a σ ≥ σ·(1 - tolerance) whose ε exceeds the target, so σ is within a relative
``tolerance`` of the smallest admissible value on the accountant's grid.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

from tsdp.theorems.config import ConfigError, TrainingConfig

from .accountant import PldAccountant, check_delta
from .events import training_event
from .pld import DEFAULT_DISCRETIZATION, DEFAULT_LOG_MASS_TRUNCATION, DEFAULT_TAIL_MASS_TRUNCATION

DEFAULT_TOLERANCE = 1e-3
"""Relative tolerance on σ: σ_rejected ≥ σ (1 - tolerance)."""

SIGMA_MIN = 1e-2
SIGMA_MAX = 1e4


@dataclass(frozen=True)
class CalibrationResult:
    """σ (the smallest admissible to a relative ``tolerance``) and its re-accounted ε."""

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

    def as_dict(self) -> dict:
        return asdict(self)


def calibrate_sigma(config: TrainingConfig, target_epsilon: float, delta: float, *, steps: Optional[int] = None,
                    epochs: Optional[int] = None, theorem: Optional[str] = None,
                    tolerance: float = DEFAULT_TOLERANCE, discretization: float = DEFAULT_DISCRETIZATION,
                    tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
                    log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION) -> CalibrationResult:
    """Smallest σ (relative ``tolerance``) whose composed **sound** ε(δ) is ≤ ``target_epsilon``.

    Sound accounting of paper Appendix B.3 (connect-the-dots, Doroshenko et al. 2022) for
    the bound ``theorem`` (default: the tightest sound upper bound of the scheme). A bracket
    grown geometrically around ``config.sigma`` within [1e-2, 1e4], narrowed in log σ by
    :func:`narrow_log_sigma`; one-step PLDs of every σ tried are cached on disk
    (:mod:`tsdp.verify.pld_cache`), so asking again costs the compositions only. Direction: the answer never exceeds the target when re-accounted (it is the
    bracket's admissible end); it may be up to ``tolerance`` (relative) larger than needed.
    Raises ConfigError when the target is unreachable below σ = 1e4.
    """
    delta = check_delta(delta)
    if isinstance(target_epsilon, bool) or not isinstance(target_epsilon, (int, float)) or not (
        math.isfinite(target_epsilon) and target_epsilon > 0
    ):
        raise ConfigError("epsilon", "target ε must be finite and > 0", target_epsilon)
    if not (isinstance(tolerance, (int, float)) and 0 < tolerance < 1):
        raise ConfigError("tolerance", "must be in (0, 1)", tolerance)
    run = training_event(config, steps=steps, epochs=epochs, theorem=theorem)
    bound, _, reason = run.event.resolve()
    n = run.count
    evaluations = 0

    from tqdm import tqdm

    bar = tqdm(desc="calibrating σ", unit="accounting", leave=False, delay=2.0, dynamic_ncols=True)

    def eps_at(sigma: float) -> float:
        nonlocal evaluations
        evaluations += 1
        bar.set_postfix_str(f"σ = {sigma:.4g}")
        bar.update(1)
        acc = PldAccountant("sound", discretization=discretization, tail_mass_truncation=tail_mass_truncation,
                            log_mass_truncation_bound=log_mass_truncation_bound)
        return acc.compose(training_event(config.with_(sigma=sigma), steps=steps, epochs=epochs,
                                          theorem=bound.id)).get_epsilon(delta)

    PldAccountant("sound").compose(run)  # records only: a lower-bound theorem is refused before any search

    sigma0 = float(min(max(config.sigma, SIGMA_MIN), SIGMA_MAX))
    e0 = eps_at(sigma0)
    if e0 <= target_epsilon:
        good, e_good = sigma0, e0
        bad, e_bad = SIGMA_MIN, (eps_at(SIGMA_MIN) if sigma0 > SIGMA_MIN else e0)
        if e_bad <= target_epsilon:  # the floor meets the target: answer it after two evaluations, not a walk down
            return _result(SIGMA_MIN, e_bad, None, None, target_epsilon, delta, bound, reason, n, steps, epochs,
                           tolerance, evaluations, discretization, config)
        while good / 2 > bad:  # halve towards the floor until a σ misses the target
            e = eps_at(good / 2)
            if e > target_epsilon:
                bad, e_bad = good / 2, e
                break
            good, e_good = good / 2, e
    else:
        bad, e_bad, good, e_good = sigma0, e0, None, None
        if eps_at(SIGMA_MAX) > target_epsilon:  # unreachable: refuse after one evaluation, not a walk up
            raise ConfigError("epsilon", f"target ε = {target_epsilon:g} is not reached by any σ ≤ {SIGMA_MAX:g}",
                              target_epsilon)
        while bad < SIGMA_MAX:
            trial = min(bad * 2, SIGMA_MAX)
            e = eps_at(trial)
            if e <= target_epsilon:
                good, e_good = trial, e
                break
            bad, e_bad = trial, e
        if good is None:
            raise ConfigError("epsilon", f"target ε = {target_epsilon} is not reached below σ = {SIGMA_MAX:g}",
                              target_epsilon)
    good, e_good, bad, e_bad = narrow_log_sigma(eps_at, target_epsilon, good, e_good, bad, e_bad, tolerance)
    return _result(good, e_good, bad, e_bad, target_epsilon, delta, bound, reason, n, steps, epochs, tolerance,
                   evaluations, discretization, config)


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
    """
    width = -math.log1p(-tolerance) * (1 - 1e-9)  # log σ width at which good - bad ≤ tolerance · good
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
    if not (0 < e0 < math.inf and 0 < e1 < math.inf and 0 < target) or e0 == e1 or x0 == x1:
        return None
    slope = (math.log(e1) - math.log(e0)) / (x1 - x0)
    if not slope < 0:
        return None
    return x0 + (math.log(target) - math.log(e0)) / slope


def _result(sigma, eps, bad, e_bad, target, delta, bound, reason, n, steps, epochs, tolerance, evaluations,
            discretization, config) -> CalibrationResult:
    return CalibrationResult(
        sigma=float(sigma), epsilon=float(eps), sigma_rejected=None if bad is None else float(bad),
        epsilon_rejected=None if e_bad is None else float(e_bad), target_epsilon=float(target), delta=delta,
        theorem=bound.id, reason=reason, compositions=n, steps=steps, epochs=epochs, tolerance=tolerance,
        evaluations=evaluations, discretization=discretization, config=config.with_(sigma=float(sigma)).as_dict(),
    )
