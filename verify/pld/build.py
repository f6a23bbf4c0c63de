"""One-step PMFs and PLDs: pessimistic connect-the-dots (upper) and optimistic privacy buckets (lower) on the grid."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Optional

import numpy as np
from scipy.special import ndtr

from tsdp.theorems.bounds.base import Bound
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.hockey_stick import loss_root, orient
from tsdp.theorems.mixture import MixturePair

from . import adapter
from .grid import fit_grid
from .profile import OneStepProfile, ProfileFn, _chunked, one_step_profile, pair_profile
from .settings import PldSettings


def connect_dots_pmf(profile: OneStepProfile, settings: PldSettings = PldSettings(), *,
                     memory_limit: Optional[int] = None):
    """Pessimistic connect-the-dots PMF of a profile (upper estimate; rounds every δ, ε up).

    Doroshenko et al. 2022, Algorithm 1; paper Appendix B.3 (connect-the-dots accounting).
    δ(ε) on the grid k·d, k_lo ≤ k ≤ k_hi (:func:`fit_grid`: d coarsened to fit the memory
    ceiling), inflated by a relative 1e-12, goes to the library's
    ``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``.

    Args:
        profile: The one-step profile.
        settings: The grid gap asked for (coarsened where the memory ceiling requires) and the library's
            ``log_mass_truncation_bound`` (where the grid ends); the tail mass truncation is not read.
        memory_limit: The memory ceiling in bytes (None: :func:`~tsdp.verify.pld.limits.resolve_memory_limit`).

    Returns:
        The pessimistic dense PMF.
    """
    from dp_accounting.pld import pld_pmf

    d, k_lo, k_hi = fit_grid(profile, settings, memory_limit=memory_limit)
    eps = np.arange(k_lo, k_hi + 1) * d
    deltas = np.minimum(1.0, _chunked(profile.safe(), eps))
    deltas = np.minimum.accumulate(deltas)  # a profile is non-increasing; remove float wiggles upward-safe
    if deltas.size < 2:
        return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(d, k_lo, k_hi, deltas)
    # the library's create_pmf_pessimistic_connect_dots_fixed_gap (Algorithm 1) for non-increasing δ in [0, 1], the
    # same operations, without its dictionary round trip (a third of a one-step build)
    diffs = np.diff(deltas)
    probs = np.zeros_like(deltas)
    probs[0] = 1 - deltas[0] + diffs[0] / math.expm1(d)
    probs[1:-1] = (diffs[1:] - diffs[:-1] * math.exp(d)) / math.expm1(d)
    probs[-1] = diffs[-1] / math.expm1(-d)
    return _pmf_of_array(d, k_lo, np.maximum(0.0, probs), deltas[-1], True)


def buckets_pmf_optimistic(pair: MixturePair, settings: PldSettings = PldSettings(), *,
                           memory_limit: Optional[int] = None):
    """Optimistic privacy-buckets PMF of one pair (lower estimate; rounds every δ, ε down).

    The library's ``pessimistic_estimate=False`` discretisation (privacy buckets, Meiser &
    Mohammadi 2018, as in dp_accounting ``_create_pld_pmf_from_monotone_privacy_loss``): P-mass
    with loss in [k d, (k+1) d) goes to k d, mass above the grid to its top point, mass
    below the grid is dropped. The bucket masses P(L > k d) are read at the loss roots of
    the whole grid at once (:func:`theorems.hockey_stick.loss_root`), in chunks; the grid is
    sized by :func:`fit_grid` (a coarser gap stays optimistic).

    Args:
        pair: The mixture pair (P, Q).
        settings: The grid gap asked for and the library's ``log_mass_truncation_bound``.
        memory_limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The optimistic PMF.
    """
    prof = pair_profile(pair)
    d, k_lo, k_hi = fit_grid(prof, settings, memory_limit=memory_limit)
    o = orient(pair.numeric())

    def survival(eps):  # P(L > eps)
        surv = np.empty_like(eps)
        surv[eps <= o.lower] = 1.0
        surv[eps >= o.upper] = 0.0
        inner = (eps > o.lower) & (eps < o.upper)
        if inner.any():
            z = loss_root(o, eps[inner])
            surv[inner] = ndtr(o.a[None, :] - z[:, None]) @ np.exp(o.log_p)
        return surv

    return _buckets_pmf(_chunked(survival, np.arange(k_lo, k_hi + 1) * d), k_lo, d)


def _buckets_pmf(surv: np.ndarray, k_lo: int, gap: float):
    """Optimistic buckets from P(L > k d), k = k_lo.. (mass between grid points to the lower one)."""
    surv = np.minimum.accumulate(np.clip(surv, 0.0, 1.0))
    probs = np.empty_like(surv)
    probs[:-1] = surv[:-1] - surv[1:]
    probs[-1] = surv[-1]
    probs = np.maximum(probs, 0.0)
    keep = np.flatnonzero(probs > 0)
    if keep.size == 0:
        keep = np.array([0])
    lo, hi = keep[0], keep[-1]
    return _pmf_of_array(gap, int(k_lo + lo), probs[lo:hi + 1], 0.0, False)


def _pmf_of_array(gap: float, lower: int, probs: np.ndarray, infinity_mass: float, pessimistic: bool):
    """The library's ``pld_pmf.create_pmf`` of the losses lower, lower + 1, ... with masses ``probs``, the same
    PMF without its dictionary round trip for a dense one (a sparse one, at most the library's sparse size,
    is made by the library)."""
    from dp_accounting.pld import pld_pmf

    if probs.size <= adapter.max_sparse_size():
        loss_probs = dict(zip(range(lower, lower + probs.size), probs.tolist()))
        return pld_pmf.create_pmf(loss_probs, gap, infinity_mass, pessimistic_estimate=pessimistic)
    return pld_pmf.DensePLDPmf(gap, lower, np.array(probs, dtype=float), infinity_mass, pessimistic)


def survival_pld(survival: ProfileFn, profile: OneStepProfile, settings: PldSettings = PldSettings(), *,
                 memory_limit: Optional[int] = None):
    """Optimistic (a **lower** estimate) symmetric PLD from a loss survival ε ↦ P(L > ε).

    For a construction whose privacy loss law is the same in both directions and known in
    closed form (T15's ``loss_survival``: a mixture over an observed label, no 1-D pair);
    buckets as :func:`buckets_pmf_optimistic`, on the grid range of ``profile``.

    Args:
        survival: ε ↦ P(L > ε) of the construction's privacy loss.
        profile: The bound's one-step profile (its grid range).
        settings: The grid gap asked for and the library's ``log_mass_truncation_bound``.
        memory_limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The optimistic symmetric ``PrivacyLossDistribution``.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    d, k_lo, k_hi = fit_grid(profile, settings, memory_limit=memory_limit)
    surv = _chunked(survival, np.arange(k_lo, k_hi + 1) * d)
    return PrivacyLossDistribution(_buckets_pmf(surv, k_lo, d))


def profile_pld(profile: OneStepProfile, settings: PldSettings = PldSettings(), *,
                memory_limit: Optional[int] = None):
    """A symmetric ``PrivacyLossDistribution`` holding the connect-the-dots PMF of ``profile``.

    Pessimistic (upper estimate): see :func:`connect_dots_pmf`.

    Args:
        profile: The one-step profile.
        settings: The grid gap asked for and the library's ``log_mass_truncation_bound``.
        memory_limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The pessimistic symmetric ``PrivacyLossDistribution``.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return PrivacyLossDistribution(connect_dots_pmf(profile, settings, memory_limit=memory_limit))


def sound_pld(bound: Bound, config: TrainingConfig, settings: PldSettings = PldSettings(), *,
              memory_limit: Optional[int] = None):
    """The one-step PLD of the bound's profile as the theorem states it (paper Appendix B.3).

    Connect-the-dots of :func:`one_step_profile` (the α < 1 branch from the swapped pair, or
    (1-ρ) max(0, 1-α) + ρ H_base for T7/T8). Pessimistic: composing it gives an upper
    bound on the composed ε of any mechanism the profile dominates.

    Args:
        bound: The bound.
        config: The configuration.
        settings: The grid gap asked for and the library's ``log_mass_truncation_bound``.
        memory_limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The pessimistic one-step ``PrivacyLossDistribution`` (upper).
    """
    return profile_pld(one_step_profile(bound, config), settings, memory_limit=memory_limit)


def pair_pld(pair: MixturePair, settings: PldSettings = PldSettings(), *, pessimistic: bool = False,
             memory_limit: Optional[int] = None):
    """The two-direction PLD of one fixed pair: REMOVE slot (P, Q), ADD slot (Q, P).

    The library's ``get_epsilon_for_delta`` then reports the larger ε of the two
    directions, as ``from_mixture_gaussian_mechanism`` does. ``pessimistic=False`` (default):
    optimistic privacy buckets, a **lower** estimate (:func:`buckets_pmf_optimistic`);
    ``pessimistic=True``: connect-the-dots per direction, an **upper** estimate of the
    same pair's composition (:func:`connect_dots_pmf`). Both directions share one gap (the
    coarser of the two when :func:`fit_grid` had to coarsen one).

    Args:
        pair: The mixture pair (P, Q).
        settings: The grid gap asked for and the library's ``log_mass_truncation_bound``.
        pessimistic: Pessimistic (upper) instead of optimistic (lower) discretisation.
        memory_limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The two-direction ``PrivacyLossDistribution``.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    def build(p, grid: PldSettings):
        if pessimistic:
            return connect_dots_pmf(pair_profile(p), grid, memory_limit=memory_limit)
        return buckets_pmf_optimistic(p, grid, memory_limit=memory_limit)

    fwd, rev = build(pair, settings), build(pair.swapped(), settings)
    if adapter.gap(fwd) < adapter.gap(rev):
        fwd = build(pair, replace(settings, discretization=adapter.gap(rev)))
    elif adapter.gap(rev) < adapter.gap(fwd):
        rev = build(pair.swapped(), replace(settings, discretization=adapter.gap(fwd)))
    return PrivacyLossDistribution(fwd, rev)
