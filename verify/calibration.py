"""Calibrate the noise multiplier σ for a target (ε, δ) under the sound accounting.

The sound composed ε (paper Appendix B.3 accounting of the theorem's one-step profile, the
``PldAccountant("sound")`` of :mod:`tsdp.verify.accountant`) is non-increasing in σ: every pair of the
catalogue at σ' > σ is the pair at σ followed by independent Gaussian noise
(post-processing). Bisection in log σ therefore finds the smallest admissible σ.

Soundness direction: the returned σ is always one whose re-accounted sound ε is ≤ the
target (an **upper** bound on the smallest admissible σ, the safe side); ``sigma_rejected``
is a σ ≥ σ·(1 - tolerance) whose ε exceeds the target, so σ is within a relative
``tolerance`` of the smallest admissible value on the accountant's grid.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

from tsdp.theorems.config import ConfigError, TrainingConfig, check_calibration_target

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
    the bound ``theorem`` (default: the tightest sound upper bound of the scheme). Bisection
    in log σ from a bracket grown geometrically around ``config.sigma`` within
    [1e-2, 1e4]. Direction: the answer never exceeds the target when re-accounted (it is the
    bracket's admissible end); it may be up to ``tolerance`` (relative) larger than needed.
    Raises ConfigError when the target is unreachable below σ = 1e4.
    """
    delta = check_delta(delta)
    target_epsilon, tolerance = check_calibration_target(target_epsilon, tolerance)
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
    good, e_good, bad, e_bad = bisect_log_sigma(eps_at, target_epsilon, good, e_good, bad, e_bad, tolerance)
    return _result(good, e_good, bad, e_bad, target_epsilon, delta, bound, reason, n, steps, epochs, tolerance,
                   evaluations, discretization, config)


def bisect_log_sigma(eps_at, target: float, good: float, e_good: float, bad: float, e_bad: float,
                     tolerance: float):
    """Bisection in log σ between an admissible ``good`` (ε(good) ≤ target) and a rejected ``bad`` < good
    until good - bad ≤ ``tolerance`` · good; returns (good, ε(good), bad, ε(bad)).

    ``eps_at`` must be non-increasing in σ (a sound ε of a mechanism that more noise post-processes).
    Direction: ``good`` stays admissible throughout (the safe side).
    """
    while good - bad > tolerance * good:
        mid = math.sqrt(good * bad)
        e = eps_at(mid)
        if e <= target:
            good, e_good = mid, e
        else:
            bad, e_bad = mid, e
    return good, e_good, bad, e_bad


def _result(sigma, eps, bad, e_bad, target, delta, bound, reason, n, steps, epochs, tolerance, evaluations,
            discretization, config) -> CalibrationResult:
    return CalibrationResult(
        sigma=float(sigma), epsilon=float(eps), sigma_rejected=None if bad is None else float(bad),
        epsilon_rejected=None if e_bad is None else float(e_bad), target_epsilon=float(target), delta=delta,
        theorem=bound.id, reason=reason, compositions=n, steps=steps, epochs=epochs, tolerance=tolerance,
        evaluations=evaluations, discretization=discretization, config=config.with_(sigma=float(sigma)).as_dict(),
    )
