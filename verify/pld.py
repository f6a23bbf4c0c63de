"""One-step privacy loss distributions (dp-accounting PLDs) from the catalogue's bounds.

Paper Appendix B.3 accounts with PLDs built by the pessimistic connect-the-dots
construction (Doroshenko et al. 2022, "Connect the Dots", Algorithm 1): δ(ε) of the
one-step privacy profile is evaluated on the grid ε_i = i·d and handed to the library's
``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``; composition, FFT and tail
truncation are the library's own. This module only evaluates δ(ε) on the grid, fast:
every pair of the catalogue has a monotone privacy loss (THEOREMS.md), so the grid is
inverted at once (:func:`theorems.hockey_stick.loss_root`: interpolation on a coarse z-grid, then bracketed
Newton, vectorised) and H_α = P(Z > z*) - α Q(Z > z*) is read off Gaussian tails.

Soundness directions
--------------------
* :func:`profile_pld` / :func:`sound_pld` (pessimistic, an **upper** estimate): the
  connect-the-dots PLD's δ'(ε) is the chord interpolation, in α = e^ε, of the profile
  H(α) through the grid points (with H(0) = 1 and infinity mass δ at the top grid point);
  a profile is convex and non-increasing, so δ' ≥ H everywhere and every composed ε rounds
  up. The grid values themselves carry a float-error bound (1e-12 of the two tail terms
  whose difference they are, plus 1e-12 relative) so that float error never rounds them down.
* :func:`pair_pld` with ``pessimistic=False`` (optimistic, a **lower** estimate): privacy
  buckets with the loss rounded *down* to the grid and the mass below the grid dropped,
  the library's ``pessimistic_estimate=False`` discretisation (Meiser & Mohammadi 2018),
  built vectorised and wrapped in the library's ``PLDPmf``. δ(ε) = E_P[(1 - e^{ε-L})_+] is
  non-decreasing in every loss, so every composed δ (hence ε) rounds down; the one
  exception is the library's own composition, which adds its tail-truncation mass
  (1e-15 by default) to the infinity mass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Tuple

import numpy as np
from scipy.special import log_ndtr, logsumexp, ndtr

from tsdp.theorems.bounds.base import Bound, PairBound, WorMixtureBound
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.hockey_stick import OrientedPair, loss_root, orient
from tsdp.theorems.mixture import MixturePair, NumericMixturePair

DEFAULT_DISCRETIZATION = 1e-4
"""Width d of the privacy-loss grid (the library's default ``value_discretization_interval``)."""

DEFAULT_LOG_MASS_TRUNCATION = -50.0
"""The library's default ``log_mass_truncation_bound``: the grid ends where δ ≤ ½·e^{-50}."""

DEFAULT_TAIL_MASS_TRUNCATION = 1e-15
"""The library's default ``tail_mass_truncation`` of ``self_compose`` / ``compose``."""

_SAFETY = 1e-12  # relative inflation of the grid δ values (pessimistic path only)
_COARSE_STEP = 0.25

ProfileFn = Callable[[np.ndarray], np.ndarray]


def pair_profile_on(pair: NumericMixturePair, eps: np.ndarray, *, upper: bool = False) -> np.ndarray:
    """H_{e^ε}(P ‖ Q) for an array of ε, through :func:`theorems.hockey_stick.loss_root` (vectorised over ε).

    The profile-from-PLD identity H_α = Pr[L_PQ > log α] - α Pr[L_QP < -log α]
    (Balle et al. 2018, Thm 5) with Gaussian tails at the single root. Exact up to float
    rounding; agrees with :func:`theorems.hockey_stick.hockey_stick` (tests). With
    ``upper=True`` a float-error bound is added, 1e-12·(P(Z > z*) + α Q(Z > z*)) (the
    cancellation in the difference) plus 1e-12 relative: an upper estimate, never rounded down.
    """
    eps = np.asarray(eps, dtype=float)
    o = orient(pair)
    out = np.zeros_like(eps)
    everything = eps <= o.lower
    out[everything] = -np.expm1(eps[everything])
    inner = (~everything) & (eps < o.upper)
    if inner.any():
        e = eps[inner]
        z = loss_root(o, e)
        tail_p = ndtr(o.a[None, :] - z[:, None]) @ np.exp(o.log_p)
        # α Q(Z > z*) in log space: e^ε overflows past ε ≈ 709 where Q's tail underflows to 0
        log_tail_q = logsumexp(o.log_q[None, :] + log_ndtr(o.b[None, :] - z[:, None]), axis=1)
        with np.errstate(over="ignore"):
            scaled_q = np.exp(e + log_tail_q)
        out[inner] = tail_p - scaled_q
        if upper:
            out[inner] += _SAFETY * (tail_p + scaled_q)
    if upper:
        out = out * (1.0 + _SAFETY)
    with np.errstate(over="ignore"):  # 1 - e^ε → -inf past ε ≈ 709: the floor is 0 there
        floor = np.maximum(0.0, -np.expm1(eps))
    return np.clip(np.maximum(out, floor), 0.0, 1.0)


# ----------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class OneStepProfile:
    """δ(ε) of one bound for one configuration, vectorised over ε, with its grid range.

    ``delta(eps)`` is the theorem's profile exactly as stated (PairBound: the α ≥ 1 pair
    for ε ≥ 0 and the swapped pair for ε < 0; WorMixtureBound: (1-ρ) max(0, 1-α) + ρ H_base).
    ``upper_pair`` is the pair whose ε_hi fixes the grid's upper end, ``lower_pair`` the
    pair whose ε_hi, negated, fixes the lower end (see :func:`grid_range`).
    """

    bound_id: str
    delta: ProfileFn
    upper: ProfileFn
    lower: ProfileFn
    delta_upper: ProfileFn = None  # δ plus a float-error bound (defaults to ``delta``)

    def safe(self) -> ProfileFn:
        """δ(ε) rounded up by its float-error bound (the pessimistic path's input)."""
        return self.delta_upper if self.delta_upper is not None else self.delta


def _pair_fn(pair: NumericMixturePair, upper: bool = False) -> ProfileFn:
    return lambda eps: pair_profile_on(pair, eps, upper=upper)


def _switch_fn(ge: NumericMixturePair, lt: NumericMixturePair, upper: bool = False) -> ProfileFn:
    def fn(eps):
        eps = np.asarray(eps, dtype=float)
        out = np.empty_like(eps)
        hi = eps >= 0
        out[hi] = pair_profile_on(ge, eps[hi], upper=upper)
        out[~hi] = pair_profile_on(lt, eps[~hi], upper=upper)
        return out

    return fn


def one_step_profile(bound: Bound, config: TrainingConfig, *, check: bool = True) -> OneStepProfile:
    """The bound's one-step (one-epoch for epoch scope) profile δ(ε), ready for a PLD grid.

    PairBound (T1-T4, T6, T9, T10, T11-T14): H_{e^ε}(P ‖ Q) for ε ≥ 0 and H_{e^ε}(Q ‖ P) for
    ε < 0 (α-symmetry, Zhu et al. 2022, Lemma 31: the profile switches pair at ε = 0).
    WorMixtureBound (T7, T8, Thms F.1/F.2): (1-ρ) max(0, 1-e^ε) + ρ H_base(e^ε) with the base
    profile switched the same way. Any other bound falls back on ``bound.profile``. Exact up
    to float rounding (no directed rounding here; the PLD builders add their own).
    """
    if isinstance(bound, WorMixtureBound):
        if check:
            bound.check(config)
        base = one_step_profile(bound.base, config, check=False) if isinstance(bound.base, PairBound) else None
        rho = float(config.rho)
        if base is None:  # pragma: no cover - every WorMixtureBound of the catalogue has a pair base
            raise TypeError(f"{bound.id}: base bound has no pair")
        mix = lambda f: (lambda eps: (1 - rho) * np.maximum(0.0, -np.expm1(eps)) + rho * f(eps))  # noqa: E731
        return OneStepProfile(bound.id, mix(base.delta), base.upper, base.lower, mix(base.safe()))
    if isinstance(bound, PairBound):
        ge, lt = bound.pairs(config, check=check)
        nge, nlt = ge.numeric(), lt.numeric()
        return OneStepProfile(bound.id, _switch_fn(nge, nlt), _pair_fn(nge), _pair_fn(nge), _switch_fn(nge, nlt, True))
    if check:
        bound.check(config)
    fn = lambda eps: np.asarray(bound.profile(config, np.exp(np.asarray(eps, dtype=float)), check=False), dtype=float)  # noqa: E731
    return OneStepProfile(bound.id, fn, fn, fn)


def pair_profile(pair: MixturePair) -> OneStepProfile:
    """δ(ε) = H_{e^ε}(P ‖ Q) of one fixed pair for every ε (no switch): one adjacency direction.

    The grid's lower end comes from the reversed pair (Q, P): by the α-symmetry identity
    H_α(P‖Q) = 1 - α + α H_{1/α}(Q‖P), the mass of L_PQ below ε is governed by H_{e^{-ε}}(Q‖P).
    """
    num = pair.numeric()
    rev = pair.swapped().numeric()
    return OneStepProfile("pair", _pair_fn(num), _pair_fn(num), _pair_fn(rev), _pair_fn(num, True))


def _first_below(fn: ProfileFn, threshold: float) -> float:
    """The first ε ≥ 0 on a 0.25-spaced scan with fn(ε) ≤ threshold (fn non-increasing)."""
    start = 0.0
    width = 16.0
    while True:
        eps = start + np.arange(0.0, width, _COARSE_STEP)
        vals = fn(eps)
        below = np.flatnonzero(vals <= threshold)
        if below.size:
            return float(eps[below[0]])
        start, width = start + width, width * 2
        if start > 1e6:
            raise ValueError("privacy profile does not reach the truncation level; is σ too small?")


def grid_range(profile: OneStepProfile, discretization: float, log_mass_truncation_bound: float) -> Tuple[int, int]:
    """Integer grid ends (k_lo, k_hi), the PLD support being {k·d : k_lo ≤ k ≤ k_hi}.

    Upper end: the first ε with δ(ε) ≤ ½·e^{log_mass_truncation_bound} (the library's mass
    truncation level); its δ becomes the infinity mass. Lower end: minus the same level for
    the reversed direction, where the dropped lower-tail excess δ(ε) - (1 - e^ε) is
    e^ε·H_{e^{-ε}}(reversed) ≤ e^ε·½e^{bound}. Both truncations move mass up (pessimistic).
    """
    level = 0.5 * math.exp(log_mass_truncation_bound)
    eps_hi = _first_below(profile.upper, level)
    eps_lo = -_first_below(profile.lower, level)
    k_hi = math.ceil(eps_hi / discretization)
    k_lo = math.floor(eps_lo / discretization)
    if k_hi <= k_lo:
        k_hi = k_lo + 1
    return k_lo, k_hi


# ----------------------------------------------------------------------------- PLD builders


def _check_discretization(discretization: float) -> None:
    from tsdp.theorems.config import ConfigError

    if not (isinstance(discretization, (int, float)) and math.isfinite(discretization) and 0 < discretization <= 1):
        raise ConfigError("discretization", "must be in (0, 1]", discretization)


def connect_dots_pmf(profile: OneStepProfile, discretization: float = DEFAULT_DISCRETIZATION,
                     log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION):
    """Pessimistic connect-the-dots PMF of a profile (upper estimate; rounds every δ, ε up).

    Doroshenko et al. 2022, Algorithm 1; paper Appendix B.3 (connect-the-dots accounting).
    δ(ε) on the grid k·d, k_lo ≤ k ≤ k_hi (:func:`grid_range`), inflated by a relative 1e-12,
    goes to the library's ``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``.
    """
    from dp_accounting.pld import pld_pmf

    _check_discretization(discretization)
    k_lo, k_hi = grid_range(profile, discretization, log_mass_truncation_bound)
    eps = np.arange(k_lo, k_hi + 1) * discretization
    deltas = np.minimum(1.0, profile.safe()(eps))
    deltas = np.minimum.accumulate(deltas)  # a profile is non-increasing; remove float wiggles upward-safe
    return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(discretization, k_lo, k_hi, deltas)


def buckets_pmf_optimistic(pair: MixturePair, discretization: float = DEFAULT_DISCRETIZATION,
                           log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION):
    """Optimistic privacy-buckets PMF of one pair (lower estimate; rounds every δ, ε down).

    The library's ``pessimistic_estimate=False`` discretisation (privacy buckets, Meiser &
    Mohammadi 2018, as in dp_accounting ``_create_pld_pmf_from_monotone_privacy_loss``): P-mass
    with loss in [k d, (k+1) d) goes to k d, mass above the grid to its top point, mass
    below the grid is dropped. The bucket masses P(L > k d) are read at the loss roots of
    the whole grid at once (:func:`theorems.hockey_stick.loss_root`).
    """
    from dp_accounting.pld import pld_pmf

    _check_discretization(discretization)
    prof = pair_profile(pair)
    k_lo, k_hi = grid_range(prof, discretization, log_mass_truncation_bound)
    o = orient(pair.numeric())
    eps = np.arange(k_lo, k_hi + 1) * discretization
    surv = np.empty_like(eps)  # P(L > eps)
    surv[eps <= o.lower] = 1.0
    surv[eps >= o.upper] = 0.0
    inner = (eps > o.lower) & (eps < o.upper)
    if inner.any():
        z = loss_root(o, eps[inner])
        surv[inner] = ndtr(o.a[None, :] - z[:, None]) @ np.exp(o.log_p)
    surv = np.minimum.accumulate(np.clip(surv, 0.0, 1.0))
    probs = np.empty_like(surv)
    probs[:-1] = surv[:-1] - surv[1:]
    probs[-1] = surv[-1]
    probs = np.maximum(probs, 0.0)
    keep = np.flatnonzero(probs > 0)
    if keep.size == 0:
        keep = np.array([0])
    lo, hi = keep[0], keep[-1]
    loss_probs = dict(zip(range(k_lo + lo, k_lo + hi + 1), probs[lo:hi + 1].tolist()))
    return pld_pmf.create_pmf(loss_probs, discretization, 0.0, pessimistic_estimate=False)


def profile_pld(profile: OneStepProfile, discretization: float = DEFAULT_DISCRETIZATION,
                log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION):
    """A symmetric ``PrivacyLossDistribution`` holding the connect-the-dots PMF of ``profile``.

    Pessimistic (upper estimate): see :func:`connect_dots_pmf`.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return PrivacyLossDistribution(connect_dots_pmf(profile, discretization, log_mass_truncation_bound))


def sound_pld(bound: Bound, config: TrainingConfig, discretization: float = DEFAULT_DISCRETIZATION,
              log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION):
    """The one-step PLD of the bound's profile as the theorem states it (paper Appendix B.3).

    Connect-the-dots of :func:`one_step_profile` (the α < 1 branch from the swapped pair, or
    (1-ρ) max(0, 1-α) + ρ H_base for T7/T8). Pessimistic: composing it gives an upper
    bound on the composed ε of any mechanism the profile dominates.
    """
    return profile_pld(one_step_profile(bound, config), discretization, log_mass_truncation_bound)


def pair_pld(pair: MixturePair, discretization: float = DEFAULT_DISCRETIZATION, *, pessimistic: bool = False,
             log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION):
    """The two-direction PLD of one fixed pair: REMOVE slot (P, Q), ADD slot (Q, P).

    The library's ``get_epsilon_for_delta`` then reports the larger ε of the two
    directions, as ``from_mixture_gaussian_mechanism`` does. ``pessimistic=False`` (default):
    optimistic privacy buckets, a **lower** estimate (:func:`buckets_pmf_optimistic`);
    ``pessimistic=True``: connect-the-dots per direction, an **upper** estimate of the
    same pair's composition (:func:`connect_dots_pmf`).
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    if pessimistic:
        fwd = connect_dots_pmf(pair_profile(pair), discretization, log_mass_truncation_bound)
        rev = connect_dots_pmf(pair_profile(pair.swapped()), discretization, log_mass_truncation_bound)
    else:
        fwd = buckets_pmf_optimistic(pair, discretization, log_mass_truncation_bound)
        rev = buckets_pmf_optimistic(pair.swapped(), discretization, log_mass_truncation_bound)
    return PrivacyLossDistribution(fwd, rev)


def compose(pld, compositions: int, tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION):
    """``pld`` composed ``compositions`` times with the library's ``self_compose`` (FFT).

    Keeps the direction of ``pld``'s estimate (pessimistic stays an upper estimate; an
    optimistic one stays a lower estimate up to the tail_mass_truncation the library adds
    to the infinity mass).
    """
    if compositions < 1:
        raise ValueError(f"compositions must be >= 1, got {compositions}")
    if compositions == 1:
        return pld
    return pld.self_compose(compositions, tail_mass_truncation=tail_mass_truncation)


def attained_envelope(pld, compositions: int, read: Callable, tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION):
    """max of ``read(pld composed n times)`` over n ∈ {1, 2, 4, ..., 2^⌊log2 S⌋, S}: a lower bound.

    For an optimistic (lower-estimate) ``pld`` each composed value is a lower bound on the
    true ε or δ after n ≤ S compositions, hence after S (the true values are non-decreasing
    in n), so their maximum is too. The envelope undoes the optimistic discretisation's
    downward drift (up to one grid step per composition), which otherwise makes the
    composed lower bound fall as S grows when the per-step loss is below the grid width.
    """
    if compositions < 1:
        raise ValueError(f"compositions must be >= 1, got {compositions}")
    best = read(compose(pld, compositions, tail_mass_truncation))
    power, n = pld, 1
    while n <= compositions:
        if n != compositions:
            best = max(best, read(power))
        n *= 2
        if n <= compositions:
            power = power.compose(power, tail_mass_truncation=tail_mass_truncation)
    return best
