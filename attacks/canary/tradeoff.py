"""Trade-off curves of the f-DP one-run audit (Mahloujifar, Melis & Chaudhuri 2025): Gaussian (μ-GDP), (ε, δ)-DP,
and a claimed privacy profile's; each family's f̄⁻¹(y) = f(1 - y), what the test of :mod:`attacks.canary.one_run`
runs its recursion on.

Numpy/scipy only. A claimed profile's curve is the sup over a finite ε grid, a lower curve than the profile's own: a
weaker hypothesis, so a test of it stays sound.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
from scipy import special

from .steinke_bound import EPS_MAX

MU_MAX = 40.0  # search ceiling on μ


def gdp_delta(epsilon, mu):
    """δ(ε) of μ-GDP, exact: Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2) (0 for μ = 0).

    Args:
        epsilon: ε values.
        mu: μ values (broadcast with ε).

    Returns:
        δ(ε) of μ-GDP.
    """
    epsilon, mu = np.broadcast_arrays(np.asarray(epsilon, dtype=float), np.asarray(mu, dtype=float))
    out = np.zeros(epsilon.shape)
    pos = mu > 0
    e, u = epsilon[pos], mu[pos]
    # e^ε Φ(-ε/μ - μ/2) in log space (no overflow for large ε)
    second = np.exp(e + special.log_ndtr(-e / u - u / 2))
    out[pos] = np.maximum(special.ndtr(-e / u + u / 2) - second, 0.0)
    return out if out.ndim else float(out)


def gdp_epsilon(delta: float, mu, tol: float = 1e-6):
    """ε of μ-GDP at δ (bisection on the exact curve, vectorised over μ): the LOWER end of the bracket.

    Args:
        delta: The δ.
        mu: μ values.
        tol: The bisection tolerance.

    Returns:
        The ε of μ-GDP at δ.
    """
    mu = np.asarray(mu, dtype=float)
    lo, hi = np.zeros(mu.shape), np.full(mu.shape, EPS_MAX)
    while np.any(hi - lo > tol):
        mid = (lo + hi) / 2
        above = gdp_delta(mid, mu) > delta
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out = np.where(gdp_delta(0.0, mu) > delta, lo, 0.0)
    return out if out.ndim else float(out)


def dp_tradeoff(alpha, epsilon, delta):
    """f_{ε,δ}(α) = max(0, 1 - δ - e^ε α, e^{-ε}(1 - δ - α)), the trade-off curve of (ε, δ)-DP.

    Args:
        alpha: Type-I errors α.
        epsilon: ε.
        delta: δ.

    Returns:
        f_{ε,δ}(α).
    """
    alpha = np.asarray(alpha, dtype=float)
    return np.maximum.reduce([np.zeros(np.broadcast(alpha, epsilon).shape), 1 - delta - np.exp(epsilon) * alpha,
                              np.exp(-np.asarray(epsilon, dtype=float)) * (1 - delta - alpha)])


def profile_deltas(profile, epsilons) -> np.ndarray:
    """δ(ε) on ``epsilons`` from a claimed profile: tsdp's accountant (``get_delta_curve``, e.g.
    ``PldAccountant("sound").compose(event)``), a dp-accounting PLD (``get_delta_for_epsilon``) or a callable.

    The profile must bound both orders of the neighbouring pair (DP's definition; dp-accounting
    PLDs and the accountant's reads take the larger of the two).

    Args:
        profile: A claimed profile (callable δ(ε), a PLD, tsdp's accountant, or (ε grid, δ grid)).
        epsilons: The ε grid.

    Returns:
        δ(ε) on the grid.
    """
    epsilons = np.asarray(epsilons, dtype=float)
    if hasattr(profile, "get_delta_curve"):
        return np.asarray(profile.get_delta_curve(epsilons), dtype=float)
    if hasattr(profile, "get_delta_for_epsilon"):
        return np.array([float(profile.get_delta_for_epsilon(float(e))) for e in epsilons])
    if callable(profile):
        return np.asarray([float(profile(float(e))) for e in epsilons])
    raise TypeError("a claimed profile is an accountant (get_delta_curve), a PLD (get_delta_for_epsilon), "
                    "a callable δ(ε) or a pair (ε_grid, δ_grid)")


def profile_tradeoff(alpha, epsilons, deltas):
    """f(α) = max over the grid of max(0, 1 - δ(ε) - e^ε α, e^{-ε}(1 - δ(ε) - α)): the claimed profile's curve.

    A sup over a finite grid is at most the sup over all ε: a lower (weaker) curve, so a
    rejection of it is a rejection of the claim.

    Args:
        alpha: Type-I errors α.
        epsilons: The profile's ε grid.
        deltas: Its δ values.

    Returns:
        The profile's trade-off curve at α (the sup over the grid: a lower curve than the profile's own).
    """
    alpha = np.asarray(alpha, dtype=float)
    eps = np.asarray(epsilons, dtype=float).reshape((-1,) + (1,) * alpha.ndim)
    dl = np.asarray(deltas, dtype=float).reshape(eps.shape)
    return np.max(dp_tradeoff(alpha[None], eps, dl), axis=0)


def claimed_curve(profile, epsilons: Optional[Sequence[float]] = None):
    """(ε grid, δ grid) of a claimed profile (:func:`profile_deltas`'s kinds, or a pair (ε_grid, δ_grid) as given);
    ``epsilons`` defaults to 0, 0.05, ..., 20.

    Args:
        profile: A claimed profile (see :func:`profile_deltas`).
        epsilons: The ε grid (default 0 to 20 in steps of 0.05).

    Returns:
        (ε grid, δ grid).
    """
    if isinstance(profile, tuple) and len(profile) == 2:
        eps, dl = (np.asarray(x, dtype=float) for x in profile)
        if eps.shape != dl.shape or eps.ndim != 1:
            raise ValueError("a claimed profile as arrays is (ε_grid, δ_grid) of one shape")
        return eps, dl
    eps = np.linspace(0.0, 20.0, 401) if epsilons is None else np.asarray(epsilons, dtype=float)
    return eps, profile_deltas(profile, eps)



def _inverse(family: str, delta: float = 0.0, claim=None) -> Callable:
    """f̄⁻¹(y, θ) = f_θ(1 - y) of a family: "gdp" (θ = μ), "dp" (θ = ε at ``delta``), "claimed" (θ unused)."""
    if family == "gdp":
        return lambda y, mu: special.ndtr(special.ndtri(y) - mu)
    if family == "dp":
        return lambda y, eps: np.maximum.reduce([np.zeros_like(y), 1 - delta - np.exp(eps) * (1 - y),
                                                 np.exp(-eps) * (y - delta)])
    if family == "claimed":
        eps, dl = claim
        return lambda y, _theta: profile_tradeoff(1 - y, eps, dl)
    raise ValueError(f"unknown family {family!r}")


__all__ = ["MU_MAX", "claimed_curve", "dp_tradeoff", "gdp_delta", "gdp_epsilon", "profile_deltas",
           "profile_tradeoff"]
