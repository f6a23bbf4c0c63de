"""Composed privacy profiles δ(ε) on an ε grid, with their soundness direction.

Every curve of the report comes from here, and every value on it from the accountant's estimates
(:class:`tsdp.verify.accountant.PldAccountant`, the one place that composes PLDs), over the
run of ``n`` unit events of the scheme (one step, or one epoch for deterministic/shuffled top
levels; :func:`tsdp.verify.events.training_event`). Three kinds, never mixed up: one per estimate of
:func:`delta_curves`, each with its soundness direction.

Paper Appendix B.3 composes at value discretisation 1e-3; :data:`FIGURE_DISCRETIZATION`.
"""
from __future__ import annotations

import functools
from typing import Dict, Iterable, Optional

import numpy as np

from tsdp.theorems.bounds.base import Scope
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.estimate import Estimate
from tsdp.verify.events import training_event, unit_event
from tsdp.verify.pld import DEFAULT_TAIL_MASS_TRUNCATION as TAIL_MASS
from tsdp.verify.pld import PldSettings

FIGURE_DISCRETIZATION = 1e-3
"""PLD value discretisation of the claim sweeps and figures (paper Appendix B.3)."""

FIGURE_SETTINGS = PldSettings(FIGURE_DISCRETIZATION, TAIL_MASS)
"""The accountant's settings of the claim sweeps and figures: :data:`FIGURE_DISCRETIZATION`, the library's
truncations."""


NEGLIGIBLE = 1e-10
"""δ below this on both sides of a comparison is a tie: each composition adds up to TAIL_MASS of
truncated tail to δ, 1e-12 after 1000 compositions, so smaller δ are beyond the accountant's
resolution (kept with a 100x margin)."""


TIE_REL = 1e-6
"""Relative difference below which two δ values are a tie (float rounding of composed PLDs,
e.g. both ≈ 1 when the composition has lost all privacy)."""


def eps_grid(n: int = 61, lo: float = -3.0, hi: float = np.log10(50.0)) -> np.ndarray:
    """ε on a log grid from 10^lo to 10^hi (the paper's figures use log-scaled ε axes).

    Args:
        n: Points.
        lo: log10 of the smallest ε.
        hi: log10 of the largest ε.

    Returns:
        The grid.
    """
    return np.logspace(lo, hi, n)


def delta_curves(estimate: Estimate, theorem: str, config: TrainingConfig, counts: Iterable[int], eps: np.ndarray,
                 settings: PldSettings = FIGURE_SETTINGS) -> Dict[int, np.ndarray]:
    """δ(ε) after n compositions of ``theorem`` on ``config``, for each n in ``counts``, under one of the accountant's
    estimates (:func:`_deltas`):

    * ``Estimate.SOUND``: an **upper** bound (rounded up) on δ(ε): the profile exactly as the theorem states it,
      connect-the-dots (paper Appendix B.3), composed; refused for a lower bound.
    * ``Estimate.ATTAINED_UPPER``: an upper estimate (rounded up) of the construction pair's δ(ε) (the pair,
      pessimistic buckets, composed), the upper end of the attained bracket. For a tight bound (T1, T6) an upper
      bound on the scheme; for a lower bound (T3, T9, T10, T14) an upper estimate *of the lower bound*, what the
      paper plots for it - never a budget. Comparing two of these is like for like.
    * ``Estimate.ATTAINED``: a **lower** bound (rounded down, up to the library's 1e-15 tail mass) on δ(ε) that a
      real attack reaches: the construction's pair (the bound's own pair for T1, T3, T6, T9, T13, T14;
      ``bound.construction`` otherwise), optimistic privacy buckets, both adjacency directions, the accountant's
      envelope over sub-runs.

    Args:
        estimate: The accountant's estimate (an :class:`~tsdp.verify.estimate.Estimate` or its string).
        theorem: The bound's T-id.
        config: The configuration.
        counts: Numbers of unit events (steps for step-scoped bounds, epochs for epoch-scoped ones).
        eps: The ε grid.
        settings: The accountant's grid and truncations.

    Returns:
        n -> δ over ``eps``.

    Raises:
        UnsupportedBoundError: The sound estimate of a lower bound, or an attained one of a bound without a
            construction.
        ConfigError: A count below 1.
    """
    estimate = Estimate.of("estimate", estimate)
    grid = tuple(float(e) for e in eps)
    out: Dict[int, np.ndarray] = {}
    for n in sorted(set(int(c) for c in counts)):
        if n < 1:
            raise ConfigError("compositions", "must be >= 1", n)
        out[n] = _deltas(estimate, theorem, config, n, grid, settings).copy()
    return out


@functools.lru_cache(maxsize=256)
def _deltas(estimate: str, theorem: str, config: TrainingConfig, n: int, grid: tuple, settings: PldSettings):
    """δ at each ε of ``grid`` after n unit events, from the accountant (cached: claims share curves,
    e.g. C1 and C2 both read T6 on the configuration): a :class:`PldAccountant` of ``estimate`` over
    the run of n unit events (:func:`tsdp.verify.events.training_event`: n steps, or n epochs for an
    epoch-scoped scheme), read on the whole grid at once (``get_delta_curve``)."""
    unit = unit_event(config, theorem)
    acc = PldAccountant.with_settings(estimate, settings)
    acc.compose(training_event(config, theorem=theorem, **{"epochs" if unit.scope == Scope.EPOCH else "steps": n}))
    return acc.get_delta_curve(np.asarray(grid))


def with_ratios(config: TrainingConfig, r: float, batch_ratio: float) -> TrainingConfig:
    """The configuration with r = k / T and Λ / N set (paper Appendix C grid), λ = 1.

    Keeps N, L_C, L_F, σ; sets L so that T = k / r and Λ = batch_ratio · N. Raises
    ConfigError when the ratios are not exactly representable with these N, L_C, L_F.

    Args:
        config: The configuration.
        r: r = k / T.
        batch_ratio: Λ / N.

    Returns:
        The configuration with those ratios.

    Raises:
        ConfigError: The ratios are not representable with these N, L_C, L_F.
    """
    k = config.with_(instances=1, sigma_context=0.0, sigma_forecast=0.0).k
    if k == 0:
        raise ConfigError("context_length", "L_C + L_F must be >= 1 for the r grid", k)
    T = k / r
    lam = batch_ratio * config.N
    if abs(T - round(T)) > 1e-9 or abs(lam - round(lam)) > 1e-9 or round(lam) < 1:
        raise ConfigError("r", f"r = {r}, Λ/N = {batch_ratio} not representable with N = {config.N}, k = {k}",
                          (r, batch_ratio))
    out = config.with_(L=int(round(T)) + config.forecast_length - 1, batch_size=int(round(lam)), instances=1,
                       lengths=None, sigma_context=0.0, sigma_forecast=0.0)
    if out.k != k or abs(float(out.r) - r) > 1e-12:
        raise ConfigError("r", f"r = {r} needs T ≥ k = {k}", r)
    return out


def first_win_epsilon(eps: np.ndarray, ours: np.ndarray, other: np.ndarray) -> dict:
    """Where ``ours`` ≤ ``other`` on the ε grid; ties (both < NEGLIGIBLE, or within TIE_REL
    relative) count as ≤.

    Returns {"all_from": smallest grid ε from which ours ≤ other at every larger grid ε
    (None if not even at the last one), "everywhere": ours ≤ other at every compared ε,
    "compared": number of compared grid points}. Direction: a comparison of numbers, the
    caller states which bound each side is.

    Args:
        eps: The ε grid.
        ours: δ(ε) of our side.
        other: δ(ε) of the other side.

    Returns:
        ``{"all_from", "everywhere", "compared"}``.
    """
    compared = ~((ours < NEGLIGIBLE) & (other < NEGLIGIBLE))
    ok = (ours <= other * (1 + TIE_REL)) | ~compared
    all_from = None
    for i in range(len(eps) - 1, -1, -1):
        if not ok[i]:
            break
        all_from = float(eps[i])
    return {"all_from": all_from, "everywhere": bool(ok.all()), "compared": int(compared.sum())}


def losing_range(eps: np.ndarray, ours: np.ndarray, other: np.ndarray) -> Optional[dict]:
    """Where ``ours`` > ``other`` beyond a tie, or either is NaN (where :func:`first_win_epsilon` finds ours not ≤
    other): the smallest and largest such grid ε and the largest δ of each side there (NaN when a side is NaN
    throughout); None when ours ≤ other everywhere.

    Args:
        eps: The ε grid.
        ours: δ(ε) of our side.
        other: δ(ε) of the other side.

    Returns:
        The range and the largest δ of each side there, or None.
    """
    compared = ~((ours < NEGLIGIBLE) & (other < NEGLIGIBLE))
    bad = compared & ~(ours <= other * (1 + TIE_REL))
    if not bad.any():
        return None

    def largest(x):
        x = x[bad]
        return float(np.nanmax(x)) if np.isfinite(x).any() else float("nan")

    return {"eps_min": float(eps[bad].min()), "eps_max": float(eps[bad].max()),
            "delta_ours_max": largest(ours), "delta_other_max": largest(other)}
