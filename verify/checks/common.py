"""Shared numerics of the checks: α grids, profile evaluation, bounds of the catalogue.

All profiles are evaluated on the theorem engine (:mod:`theorems.hockey_stick`): the numpy
path for dense grids, the mpmath path for references.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np

from tsdp.theorems.bounds.base import Bound
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.hockey_stick import log_tail_masses
from tsdp.theorems.registry import REGISTRY

TRAINING_SCOPES = ("step", "epoch")


def evaluated_ids() -> List[str]:
    """Every training bound of the registry, in registry order (read at call time: a bound added to
    the registry, or substituted in it, is checked with no other edit). T15 (scope "release") has
    its own checks (:meth:`tsdp.verify.checks.runner._Planner.inference`); claims (T5) live outside
    the bound registry."""
    return [i for i, b in REGISTRY.items() if b.scope in TRAINING_SCOPES]


def bound(theorem_id: str) -> Bound:
    """The registry's bound object with this id.

    Args:
        theorem_id: The T-id.

    Returns:
        The registry's bound.
    """
    return REGISTRY[theorem_id]


def bounds() -> Dict[str, Bound]:
    """{id: bound} for :func:`evaluated_ids` and T15 (the registry's objects)."""
    return dict(REGISTRY)


def dense_alphas(points_linear: int = 4001, points_log: int = 1000, top: float = 1e4) -> np.ndarray:
    """α on [0, 4] linearly (spacing 1e-3 by default) then log-spaced on (4, ``top``].

    Args:
        points_linear: Points on [0, 4].
        points_log: Log-spaced points on (4, ``top``].
        top: The largest α.

    Returns:
        The α grid, increasing.
    """
    lin = np.linspace(0.0, 4.0, points_linear)
    log = np.exp(np.linspace(np.log(4.0), np.log(top), points_log + 1))[1:]
    return np.concatenate([lin, log])


def order_alphas() -> np.ndarray:
    """α for comparisons between profiles: [0, 1] at spacing 5e-3, then log-spaced to 1e4."""
    return np.unique(np.concatenate([np.linspace(0.0, 1.0, 201), np.exp(np.linspace(0.0, np.log(1e4), 400))]))


REFERENCE_ALPHAS = (0.0, 0.05, 0.3, 0.7, 0.95, 1.0, 1.05, 1.5, 2.0, 4.0, 12.0, 60.0)
"""α for the mpmath reference comparisons (both branches, α = 1, far tails)."""


def raw_profile(b: Bound, config: TrainingConfig, alpha: np.ndarray, *, check: bool = True) -> np.ndarray:
    """P(L > log α) - α Q(L > log α) **without** the engine's final clamp to max(0, 1-α).

    The engine (:func:`tsdp.theorems.hockey_stick.hockey_stick`) clamps its result at
    max(0, 1 - α), which would hide a violation of that axiom; this recomputes the two
    tails at the same root (``log_tail_masses``) of the bound's pair form (the α ≥ 1 pair
    for α ≥ 1, the swapped pair below, mixed as (1 - w) max(0, 1 - α) + w (raw pair)).
    Bounds without a pair form: ``bound.profile``.

    Args:
        b: The bound.
        config: The configuration.
        alpha: The α values.
        check: Check that ``config`` fits the bound's scheme first.

    Returns:
        The unclamped profile at each α (may be below max(0, 1 - α) by float error: what the checks measure).
    """
    alpha = np.asarray(alpha, dtype=float)
    form = b.pair_form(config, check=check)
    if form is None:
        return np.asarray(b.profile(config, alpha, check=check), dtype=float)
    out = np.empty_like(alpha)
    for mask, pair in ((alpha >= 1, form.ge), (alpha < 1, form.lt)):
        if mask.any():
            lp, lq = log_tail_masses(pair, alpha[mask])
            out[mask] = np.exp(lp) - alpha[mask] * np.exp(lq)
    w = float(form.weight)
    return (1 - w) * np.maximum(0.0, 1 - alpha) + w * out


def worst(values: np.ndarray, alphas: np.ndarray) -> Dict[str, float]:
    """The largest entry of ``values`` and the α where it occurs.

    Args:
        values: The values (e.g. violations) on the grid.
        alphas: The grid.

    Returns:
        (largest value, its α).
    """
    if values.size == 0:
        return {"max": float("-inf"), "at_alpha": float("nan")}
    i = int(np.argmax(values))
    return {"max": float(values[i]), "at_alpha": float(alphas[i])}


def ids_with_construction() -> List[str]:
    """Bounds whose proof gives a construction a real attack attains (``bound.construction``)."""
    return [i for i in evaluated_ids() if REGISTRY[i].construction is not None]


def hockey_stick_quad(pair, alpha: float) -> float:
    """H_α(P ‖ Q) by direct quadrature of max(dP - α dQ, 0): an evaluation path independent
    of the engine's monotone-loss reduction (no root of the privacy loss is assumed).

    Standardised means (z = x/σ); the sign changes of dP - α dQ are located on a grid of
    40001 points spanning every mean ± 40, refined by ``brentq``, and each positive piece
    is integrated with ``scipy.integrate.quad`` (epsabs 1e-14). Accurate to ~1e-11.

    Args:
        pair: The mixture pair (P, Q).
        alpha: α ≥ 0.

    Returns:
        H_α(P ‖ Q), by mpmath quadrature.
    """
    from scipy.integrate import quad
    from scipy.optimize import brentq

    num = pair.numeric() if hasattr(pair, "numeric") else pair
    a, p, b, q = num.a, num.p, num.b, num.q

    def g(z):
        z = np.asarray(z, dtype=float)
        fp = np.sum(p * np.exp(-0.5 * (z[..., None] - a) ** 2), axis=-1)
        fq = np.sum(q * np.exp(-0.5 * (z[..., None] - b) ** 2), axis=-1)
        return (fp - alpha * fq) / np.sqrt(2 * np.pi)

    lo = min(a.min(), b.min()) - 40.0
    hi = max(a.max(), b.max()) + 40.0
    zs = np.linspace(lo, hi, 40001)
    gs = g(zs)
    sign = gs > 0
    cuts = [lo]
    for i in np.flatnonzero(sign[1:] != sign[:-1]):
        cuts.append(brentq(lambda t: float(g(t)), zs[i], zs[i + 1], xtol=1e-15, rtol=1e-15))
    cuts.append(hi)
    total = 0.0
    for u, v in zip(cuts[:-1], cuts[1:]):
        mid = 0.5 * (u + v)
        if g(mid) > 0:
            total += quad(lambda t: float(g(t)), u, v, epsabs=1e-14, epsrel=1e-12, limit=200)[0]
    return max(total, max(0.0, 1.0 - alpha))
