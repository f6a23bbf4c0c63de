"""Accounting and calibration of private forecast releases (paper Appendix H, bound T15).

k releases (``InferenceConfig.releases``) of overlapping contexts of one series compose as
:func:`tsdp.verify.events.inference_event`. Two numbers, as for training:

* **sound** (an **upper** bound, rounds up): T15's profile, connect-the-dots, composed k times
  (what the ``PldAccountant("sound")`` computes for the event).
* **attained** (a **lower** bound, rounds down): the exact privacy loss law of T15's tight
  construction with the drop pattern observed (x = 0, x' = v on the w changed steps;
  ``T15.loss_survival``), optimistic buckets, composed, as the envelope over 1, 2, 4, ..., k
  compositions (``PldAccountant("attained")``). The imputed series reveals the pattern exactly
  only when L_C = 1; for L_C > 1 a lone kept step hides its position
  (:mod:`tsdp.theorems.bounds.inference`), so no attained value is claimed there (None).
Both come from the one accountant (:mod:`tsdp.verify.accountant`); nothing here composes.

:func:`calibrate_sigma` finds the smallest σ (relative ``tolerance``) whose sound ε meets a
target: T15 depends on σ through v/σ only and is non-increasing in σ (more noise is
post-processing), so a bracketed search in log σ is exact up to the tolerance. At δ at or above the probability
that some release keeps a changed step, 1 - (1 - r)^(m k), every σ > 0 meets the target with ε = 0, and it says so.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Optional

from tsdp.verify.json_data import Record
from tsdp.theorems.bounds.inference import T15, InferenceConfig
from tsdp.theorems.config import ConfigError, check_calibration_target, check_delta, check_epsilon

from .calibration import narrow_log_sigma
from .estimate import Estimate, UnsupportedBoundError
from .events import inference_event
from .pld import DEFAULT_DISCRETIZATION, PldSettings
from .pld_accountant import PldAccountant

DEFAULT_TOLERANCE = 1e-3
SIGMA_RANGE = (1e-3, 1e4)  # σ / v searched by calibrate_sigma


@dataclass(frozen=True)
class InferenceAccounting(Record):
    """Sound (upper) and attained (lower) ε at δ, or δ at ε, of ``releases`` releases.

    Attributes:
        epsilon: Sound ε (the target when δ was asked).
        delta: Sound δ (the target when ε was asked).
        epsilon_attained: Attained ε (lower bound; None where not claimed).
        delta_attained: Attained δ (lower bound; None where not claimed).
        releases: The releases k.
        theorem: The bound's T-id (T15).
        kind: The bound's kind.
        discretization: The grid.
        config: The configuration's fields.
    """

    epsilon: float
    delta: float
    epsilon_attained: Optional[float]
    delta_attained: Optional[float]
    releases: int
    theorem: str
    kind: str
    discretization: float
    config: dict


def _check(config) -> InferenceConfig:
    if not isinstance(config, InferenceConfig):
        raise ConfigError("config", "must be an InferenceConfig", config)
    return config


def _read(config: InferenceConfig, estimate: Estimate, delta, epsilon, settings: PldSettings) -> Optional[float]:
    """``PldAccountant(estimate)`` over :func:`tsdp.verify.events.inference_event` (None if it refuses)."""
    acc = PldAccountant.with_settings(estimate, settings)
    try:
        acc.compose(inference_event(_check(config)))
    except UnsupportedBoundError:
        return None
    return acc.get_epsilon(delta) if delta is not None else acc.get_delta(epsilon)


def sound(config: InferenceConfig, *, delta: Optional[float] = None, epsilon: Optional[float] = None,
          discretization: float = DEFAULT_DISCRETIZATION) -> float:
    """Sound ε at ``delta`` (or δ at ``epsilon``) of the k releases (upper bound, rounds up):
    the accountant's sound estimate, T15's connect-the-dots PLD composed k times.

    Args:
        config: The release configuration.
        delta: The target δ (give exactly one of ``delta`` and ``epsilon``).
        epsilon: The target ε.
        discretization: The grid.

    Returns:
        The sound ε (or δ).
    """
    return _read(config, Estimate.SOUND, delta, epsilon, PldSettings(discretization))


def attained(config: InferenceConfig, *, delta: Optional[float] = None, epsilon: Optional[float] = None,
             discretization: float = DEFAULT_DISCRETIZATION) -> Optional[float]:
    """Attained ε at ``delta`` (or δ at ``epsilon``): T15's construction with the pattern observed (lower
    bound), the accountant's attained estimate; None where the imputed release does not reveal the
    pattern exactly (L_C > 1: a lone kept step hides its position; :mod:`tsdp.theorems.bounds.inference`, "Kind").

    Args:
        config: The release configuration (its L_C decides whether a value is claimed).
        delta: The δ at which ε is read (exactly one of ``delta`` and ``epsilon``).
        epsilon: The ε at which δ is read.
        discretization: The privacy-loss grid of the optimistic PLD.

    Returns:
        The attained ε (or δ), or None.
    """
    return _read(config, Estimate.ATTAINED, delta, epsilon, PldSettings(discretization))


def account(config: InferenceConfig, *, delta: Optional[float] = None, epsilon: Optional[float] = None,
            discretization: float = DEFAULT_DISCRETIZATION) -> InferenceAccounting:
    """Both values at exactly one of ``delta`` (→ ε) and ``epsilon`` (→ δ).

    Args:
        config: The k releases' configuration.
        delta: δ, to read ε at.
        epsilon: ε, to read δ at.
        discretization: The grid of both PLDs.

    Returns:
        Sound (upper) and attained (lower) values.

    Raises:
        ConfigError: Neither or both targets, or a bad value.
    """
    _check(config)
    if (delta is None) == (epsilon is None):
        raise ConfigError("delta", "give exactly one of delta and epsilon", (delta, epsilon))
    settings = PldSettings(discretization)
    if delta is not None:
        delta = check_delta(delta)
        e, ea = (_read(config, estimate, delta, None, settings) for estimate in (Estimate.SOUND, Estimate.ATTAINED))
        d, da = delta, (None if ea is None else delta)
    else:
        epsilon = check_epsilon(epsilon)
        d, da = (_read(config, estimate, None, epsilon, settings) for estimate in (Estimate.SOUND, Estimate.ATTAINED))
        e, ea = epsilon, (None if da is None else epsilon)
    return InferenceAccounting(epsilon=e, delta=d, epsilon_attained=ea, delta_attained=da, releases=config.releases,
                               theorem=T15.id, kind=T15.kind, discretization=discretization, config=config.as_dict())


def epsilon_one(config: InferenceConfig, delta: float) -> float:
    """ε at δ of one release straight from T15's profile (root of δ(ε) = δ; no discretisation, no rounding).

    Exact up to float error; the sound PLD value rounds it up. 0 when δ(0) ≤ δ.

    Args:
        config: The release configuration (one release).
        delta: The target δ.

    Returns:
        ε of one release.
    """
    from scipy.optimize import brentq

    f = lambda e: float(T15.delta_eps(config, [e])[0]) - delta  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2
    return float(brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-12))


@dataclass(frozen=True)
class InferenceCalibration(Record):
    """σ (smallest admissible to a relative ``tolerance``) and its sound ε; the rejected σ just below and
    an ε there that exceeds the target (its sound ε, or the exact one-release ε, a lower bound on it);
    ``evaluations`` counts PLD accountings.

    Attributes:
        sigma: The calibrated σ.
        epsilon: Its sound ε.
        sigma_rejected: The σ just below, rejected (None when every σ meets the target).
        epsilon_rejected: An ε at ``sigma_rejected`` above the target (None when every σ meets the target).
        target_epsilon: The ε budget.
        delta: The target δ.
        evaluations: PLD accountings made.
        config: The configuration at the calibrated σ.
        total_variation: :func:`tsdp.verify.calibration.total_variation_bound` of the k releases, 1 - (1 - r)^(m k)
            rounded up: the probability that some release keeps a changed step, an upper bound on δ(0) at every σ.
        every_sigma: δ ≥ ``total_variation``: every σ > 0 meets the target with ε = 0 exactly. Nothing is searched
            or accounted then: ``sigma`` is the search's floor 1e-3 v, ``epsilon`` 0, ``evaluations`` 0.
    """

    sigma: float
    epsilon: float
    sigma_rejected: Optional[float]
    epsilon_rejected: Optional[float]
    target_epsilon: float
    delta: float
    evaluations: int
    config: dict
    total_variation: float
    every_sigma: bool


def calibrate_sigma(config: InferenceConfig, target_epsilon: float, delta: float, *,
                    tolerance: float = DEFAULT_TOLERANCE,
                    discretization: float = DEFAULT_DISCRETIZATION) -> InferenceCalibration:
    """Smallest σ (relative ``tolerance``) with sound ε(δ) ≤ ``target_epsilon`` for ``config``'s r, w, v, L_C, k.

    At δ at or above the probability that some release keeps a changed step, 1 - (1 - r)^(m k)
    (:func:`tsdp.verify.calibration.total_variation_bound` over T15's
    :meth:`~tsdp.theorems.bounds.inference.InferenceBound.total_variation_limit`), every σ > 0 meets any target with
    ε = 0: that is answered first (``every_sigma``), with no search. Otherwise a search in log σ on [1e-3 v, 1e4 v],
    first (bisection) on the one-release ε (:func:`epsilon_one`, a lower bound on the sound ε of k releases), then on
    the sound ε upwards from there (:func:`tsdp.verify.calibration.narrow_log_sigma`); when one release meets the
    target even at 1e-3 v but k > 1 do not have to (δ at or above one release's limit, or a very large target), the
    sound ε of the k releases brackets it alone, halving σ from v. Direction: the returned σ re-accounts to ε ≤ target
    (the safe side); ``sigma_rejected`` ≥ σ (1 - tolerance) exceeds it. ConfigError if the target is unreachable in
    that range, or (one release) met even at its floor. ``config.sigma`` is ignored.

    Args:
        config: The release configuration (its ``sigma`` is ignored).
        target_epsilon: The ε budget.
        delta: The target δ.
        tolerance: The relative tolerance on σ.
        discretization: The grid.

    Returns:
        σ, its sound ε, and the rejected σ just below; or ``every_sigma`` (σ the floor 1e-3 v, ε = 0).

    Raises:
        ConfigError: The target is unreachable in the range searched, met by one release even at σ = 1e-3 v, or
            (k > 1) met at the smallest σ whose PLD can be accounted; or a bad value.
    """
    from .calibration import total_variation_bound

    _check(config)
    delta = check_delta(delta)
    target_epsilon, tolerance = check_calibration_target(target_epsilon, tolerance)
    settings = PldSettings(discretization)
    evaluations = 0

    def eps_at(sigma: float) -> float:
        nonlocal evaluations
        evaluations += 1
        return _read(config.with_(sigma=sigma), Estimate.SOUND, delta, None, settings)

    v = float(config.v)
    bad, good = SIGMA_RANGE[0] * v, SIGMA_RANGE[1] * v
    if not math.isfinite(good):  # the search would start at σ = inf
        raise ConfigError("v", f"must be <= {sys.float_info.max / SIGMA_RANGE[1]:.4g}: the calibration searches σ "
                               f"up to {SIGMA_RANGE[1]:g} v, a finite float", v)
    tv = total_variation_bound(inference_event(config))
    common = dict(target_epsilon=float(target_epsilon), delta=delta, total_variation=tv)
    if delta >= tv:  # ε = 0 at every σ > 0: nothing to search, nothing accounted
        return InferenceCalibration(sigma=bad, epsilon=0.0, sigma_rejected=None, epsilon_rejected=None,
                                    evaluations=0, config=config.with_(sigma=bad).as_dict(), every_sigma=True,
                                    **common)
    # one release exactly (no grid): ε_1 ≤ ε_k, so σ with ε_1(σ) > target is rejected without a PLD,
    # which also keeps the PLD grids small (their length grows like (v/σ)²)
    if epsilon_one(config.with_(sigma=good), delta) > target_epsilon:
        raise ConfigError("epsilon", f"target ε = {target_epsilon} is not reached below σ = {good:g}", target_epsilon)
    if epsilon_one(config.with_(sigma=bad), delta) > target_epsilon:
        while good - bad > tolerance * good:
            mid = math.sqrt(good * bad)
            if epsilon_one(config.with_(sigma=mid), delta) > target_epsilon:
                bad = mid
            else:
                good = mid
        e_bad = epsilon_one(config.with_(sigma=bad), delta)  # > target, so the sound ε at bad is too
        e_good = eps_at(good)
    elif config.releases == 1:  # δ below the limit: ε_1 is finite, and this large target is met at the floor
        raise ConfigError("epsilon", f"target ε = {target_epsilon} is met even at σ = {bad:g}, the smallest σ "
                                     f"searched (1e-3 v)", target_epsilon)
    else:  # k releases: one release's ε brackets nothing below; the sound ε of the k does, from σ = v down
        good, e_good, bad, e_bad = v, eps_at(v), None, None
        while e_good <= target_epsilon:
            if good / 2 < SIGMA_RANGE[0] * v:
                raise ConfigError("epsilon", f"target ε = {target_epsilon} is met even at σ = {good:g}, the "
                                             f"smallest σ searched (about 1e-3 v)", target_epsilon)
            try:
                e_bad = eps_at(good / 2)
            except ConfigError as exc:  # the PLD of a smaller σ does not fit in memory
                raise ConfigError("epsilon", f"target ε = {target_epsilon} is met at σ = {good:g}; smaller σ "
                                             f"were not accounted ({exc})", target_epsilon) from exc
            bad = good / 2
            if e_bad > target_epsilon:
                break
            good, e_good = bad, e_bad
    while e_good > target_epsilon:  # k > 1 (or the grid's rounding): walk up
        bad, e_bad = good, e_good
        good = min(good * 2, SIGMA_RANGE[1] * v)
        e_good = eps_at(good)
        if e_good > target_epsilon and good >= SIGMA_RANGE[1] * v:
            raise ConfigError("epsilon", f"target ε = {target_epsilon} is not reached below σ = {good:g}",
                              target_epsilon)
    good, e_good, bad, e_bad = narrow_log_sigma(eps_at, target_epsilon, good, e_good, bad, e_bad, tolerance)
    return InferenceCalibration(sigma=good, epsilon=e_good, sigma_rejected=bad, epsilon_rejected=e_bad,
                                evaluations=evaluations, config=config.with_(sigma=good).as_dict(),
                                every_sigma=False, **common)
