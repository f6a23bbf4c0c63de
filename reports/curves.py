"""Composed privacy profiles δ(ε) on an ε grid, with their soundness direction.

Every curve of the report comes from here. Two kinds, never mixed up:

* :func:`sound_curves` - the theorem's one-step profile as stated, connect-the-dots PLD
  (pessimistic, :func:`verify.pld.sound_pld`), composed by dp-accounting: an **upper**
  bound on δ(ε) of every mechanism the theorem dominates, rounded up. For a bound of kind
  ``lower`` (T3, T9, T10, T14) it is the pessimistic evaluation of that lower bound, which
  is what the paper plots; use :func:`attained_curves` when the direction matters.
* :func:`attained_curves` - the construction's pair (the bound's own pair for T1, T3, T6,
  T9, T13, T14; ``bound.construction`` otherwise), optimistic privacy buckets, both
  adjacency directions, composed: a **lower** bound on δ(ε) that a real attack reaches,
  rounded down (up to the library's 1e-15 tail mass).

Paper Appendix B.3 composes at value discretisation 1e-3; :data:`FIGURE_DISCRETIZATION`.
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional

import numpy as np

from tsdp.theorems.bounds.base import PairBound
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.registry import get
from tsdp.verify.pld import DEFAULT_LOG_MASS_TRUNCATION, compose, pair_pld, sound_pld

FIGURE_DISCRETIZATION = 1e-3
"""PLD value discretisation of the claim sweeps and figures (paper Appendix B.3)."""

TAIL_MASS = 1e-15
"""Tail mass truncated at each composition (dp-accounting default)."""

NEGLIGIBLE = 1e-10
"""δ below this on both sides of a comparison is a tie: each composition adds up to TAIL_MASS of
truncated tail to δ, 1e-12 after 1000 compositions, so smaller δ are beyond the accountant's
resolution (kept with a 100x margin)."""


TIE_REL = 1e-6
"""Relative difference below which two δ values are a tie (float rounding of composed PLDs,
e.g. both ≈ 1 when the composition has lost all privacy)."""


def eps_grid(n: int = 61, lo: float = -3.0, hi: float = np.log10(50.0)) -> np.ndarray:
    """ε on a log grid from 10^lo to 10^hi (the paper's figures use log-scaled ε axes)."""
    return np.logspace(lo, hi, n)


def _composed_deltas(one, counts: Iterable[int], eps: np.ndarray) -> Dict[int, np.ndarray]:
    """δ(ε) of ``one`` composed n times for each n in ``counts`` (incremental composition)."""
    out: Dict[int, np.ndarray] = {}
    last_n, last = 0, None
    for n in sorted(set(int(c) for c in counts)):
        if n < 1:
            raise ConfigError("compositions", "must be >= 1", n)
        if last is None:
            pld = compose(one, n, TAIL_MASS)
        else:
            pld = last.compose(compose(one, n - last_n, TAIL_MASS), tail_mass_truncation=TAIL_MASS)
        out[n] = np.asarray(pld.get_delta_for_epsilon(list(map(float, eps))), dtype=float)
        last_n, last = n, pld
    return out


def sound_curves(theorem: str, config: TrainingConfig, counts: Iterable[int], eps: np.ndarray,
                 discretization: float = FIGURE_DISCRETIZATION) -> Dict[int, np.ndarray]:
    """Upper bound (rounded up) on δ(ε) after n compositions of ``theorem``'s one-step profile.

    Connect-the-dots PLD of the profile exactly as the theorem states it (paper Appendix B.3),
    composed by dp-accounting; ``counts`` are numbers of compositions (steps for step-scoped
    bounds, epochs for epoch-scoped ones). Returns {n: δ array over ``eps``}.
    """
    one = sound_pld(get(theorem), config, discretization, DEFAULT_LOG_MASS_TRUNCATION)
    return _composed_deltas(one, counts, eps)


def construction_of(theorem: str) -> Optional[str]:
    """The id whose pair a real attack attains for ``theorem`` (T7 → T9, T2 → T3, ...), or None."""
    b = get(theorem)
    if b.construction is None or not isinstance(get(b.construction), PairBound):
        return None
    return b.construction


def attained_curves(theorem: str, config: TrainingConfig, counts: Iterable[int], eps: np.ndarray,
                    discretization: float = FIGURE_DISCRETIZATION) -> Dict[int, np.ndarray]:
    """Lower bound (rounded down) on δ(ε) after n compositions of ``theorem``'s construction.

    The construction's pair (both adjacency directions, optimistic privacy buckets) composed
    n times; a running maximum over the ascending ``counts`` keeps the optimistic
    discretisation's drift from pulling the value down (a lower bound after m ≤ n
    compositions is one after n). Raises ConfigError when the bound has no construction.
    """
    target = construction_of(theorem)
    if target is None:
        raise ConfigError("theorem", "has no construction (no attained pair)", theorem)
    pair = get(target).pair(config, check=False)
    one = pair_pld(pair, discretization, pessimistic=False)
    raw = _composed_deltas(one, counts, eps)
    out, best = {}, None
    for n in sorted(raw):
        best = raw[n] if best is None else np.maximum(best, raw[n])
        out[n] = best
    return out


def with_ratios(config: TrainingConfig, r: float, batch_ratio: float) -> TrainingConfig:
    """The configuration with r = k / T and Λ / N set (paper Appendix C grid), λ = 1.

    Keeps N, L_C, L_F, σ; sets L so that T = k / r and Λ = batch_ratio · N. Raises
    ConfigError when the ratios are not exactly representable with these N, L_C, L_F.
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
    """Where ``ours`` > ``other`` beyond a tie (see :func:`first_win_epsilon`): the smallest and largest
    such grid ε and the largest δ of each side there; None when ours ≤ other everywhere."""
    compared = ~((ours < NEGLIGIBLE) & (other < NEGLIGIBLE))
    bad = compared & (ours > other * (1 + TIE_REL))
    if not bad.any():
        return None
    return {"eps_min": float(eps[bad].min()), "eps_max": float(eps[bad].max()),
            "delta_ours_max": float(ours[bad].max()), "delta_other_max": float(other[bad].max())}
