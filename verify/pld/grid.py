"""The privacy-loss grid of a one-step PLD: its ends (the library's mass truncation) and its gap (the memory ceiling)."""
from __future__ import annotations

import math
import warnings
from typing import Optional, Tuple

import numpy as np

from .limits import (
    MAX_COARSE_DISCRETIZATION,
    MEMORY_LIMIT_ENV,
    PldCoarsenedWarning,
    PldTooLargeError,
    _bytes,
    max_grid_points,
    resolve_memory_limit,
)
from .profile import OneStepProfile, ProfileFn
from .settings import PldSettings

_COARSE_STEP = 0.25
_EPS_CEILING = 1e300  # the profile search gives up here: no finite grid


def _first_below(fn: ProfileFn, threshold: float, what: str = "privacy profile") -> float:
    """The first ε ≥ 0 on the 0.25-spaced grid with fn(ε) ≤ threshold (fn non-increasing).

    Scans [0, 16) at once; beyond, an exponential search then bisection on the multiples of
    0.25 (the same point for a non-increasing fn, in O(log ε) evaluations, so a tiny σ whose
    loss reaches 1e11 costs no more than σ = 1). Raises :class:`PldTooLargeError` when fn
    stays above the threshold up to ε = 1e300.
    """
    eps = np.arange(0.0, 16.0, _COARSE_STEP)
    below = np.flatnonzero(fn(eps) <= threshold)
    if below.size:
        return float(eps[below[0]])

    def above(k: int) -> bool:
        return bool(fn(np.array([k * _COARSE_STEP]))[0] > threshold)

    lo, hi = eps.size - 1, 2 * eps.size  # fn(lo) > threshold
    while above(hi):
        lo, hi = hi, 2 * hi
        if hi * _COARSE_STEP > _EPS_CEILING:
            raise PldTooLargeError(f"the {what} stays above {threshold:.3g} at every ε up to {_EPS_CEILING:g}: "
                                   "no finite privacy-loss grid (σ too small)", math.inf, 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return hi * _COARSE_STEP


def _eps_range(profile: OneStepProfile, log_mass_truncation_bound: float) -> Tuple[float, float]:
    level = 0.5 * math.exp(log_mass_truncation_bound)
    what = f"{profile.bound_id} one-step privacy profile"
    return -_first_below(profile.lower, level, what), _first_below(profile.upper, level, what)


def _ends(eps_lo: float, eps_hi: float, gap: float) -> Tuple[int, int]:
    k_hi = math.ceil(eps_hi / gap)
    k_lo = math.floor(eps_lo / gap)
    return k_lo, max(k_hi, k_lo + 1)


def grid_range(profile: OneStepProfile, settings: PldSettings) -> Tuple[int, int]:
    """Integer grid ends (k_lo, k_hi), the PLD support being {k·d : k_lo ≤ k ≤ k_hi}.

    Upper end: the first ε with δ(ε) ≤ ½·e^{log_mass_truncation_bound} (the library's mass
    truncation level); its δ becomes the infinity mass. Lower end: minus the same level for
    the reversed direction, where the dropped lower-tail excess δ(ε) - (1 - e^ε) is
    e^ε·H_{e^{-ε}}(reversed) ≤ e^ε·½e^{bound}. Both truncations move mass up (pessimistic).
    No size check here: see :func:`fit_grid`.

    Args:
        profile: The one-step profile.
        settings: The grid gap (``discretization``) and the library's ``log_mass_truncation_bound``.

    Returns:
        (k_lo, k_hi).
    """
    return _ends(*_eps_range(profile, settings.log_mass_truncation_bound), settings.discretization)


def fit_grid(profile: OneStepProfile, settings: PldSettings, *,
             memory_limit: Optional[int] = None) -> Tuple[float, int, int]:
    """(d, k_lo, k_hi): :func:`grid_range` at the finest gap d = ``settings.discretization``·2^j that fits.

    At most :func:`max_grid_points` points, checked before anything is allocated. A coarser
    gap keeps the construction's direction (connect-the-dots stays an upper estimate at any
    gap, privacy buckets a lower one), and is announced by a :class:`PldCoarsenedWarning`.
    Raises :class:`PldTooLargeError` (with the number of points it would need) when even
    d = 1 does not fit.

    Args:
        profile: The one-step profile whose grid is fitted.
        settings: Its ``discretization``, the finest gap wanted (doubled until the grid fits), and its
            ``log_mass_truncation_bound``, where the grid ends.
        memory_limit: The ceiling in bytes (None: :func:`resolve_memory_limit`).

    Returns:
        (d, k_lo, k_hi).

    Raises:
        PldTooLargeError: No gap fits the ceiling.
    """
    discretization = settings.discretization
    eps_lo, eps_hi = _eps_range(profile, settings.log_mass_truncation_bound)
    cap = max_grid_points(memory_limit)
    d, span = discretization, eps_hi - eps_lo
    if span / d + 3 > cap:  # in floats first: ε / 1e-308 is no integer
        d = math.ldexp(d, math.ceil(math.log2(span + 3 * d) - math.log2(d) - math.log2(cap)))  # d·2^j, exact
        while span / d + 3 > cap:
            d *= 2
        if d > MAX_COARSE_DISCRETIZATION:
            need = span / MAX_COARSE_DISCRETIZATION
            raise PldTooLargeError(
                f"the {profile.bound_id} one-step privacy loss spans ε in [{eps_lo:.4g}, {eps_hi:.4g}]: a PLD grid "
                f"of {need:.3g} points even at discretisation {MAX_COARSE_DISCRETIZATION:g}, more than the {cap} "
                f"that the memory limit of {_bytes(resolve_memory_limit(memory_limit))} allows ({MEMORY_LIMIT_ENV}); "
                "raise σ", need, cap)
    k_lo, k_hi = _ends(eps_lo, eps_hi, d)
    if d != discretization:
        warnings.warn(PldCoarsenedWarning(
            f"{profile.bound_id}: one-step PLD at discretisation {d:.3g} instead of {discretization:g} "
            f"(the loss spans ε in [{eps_lo:.4g}, {eps_hi:.4g}]; at most {cap} grid points); the estimate "
            "keeps its direction (sound: upper, attained: lower)"), stacklevel=3)
    return d, k_lo, k_hi
