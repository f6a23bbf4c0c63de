"""One-step privacy profiles δ(ε) of the catalogue's bounds, vectorised over ε (the connect-the-dots input)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import log_ndtr, logsumexp, ndtr

from tsdp.theorems.bounds.base import Bound
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.hockey_stick import loss_root, orient
from tsdp.theorems.mixture import MixturePair, NumericMixturePair

from .limits import _progress

_SAFETY = 1e-12  # relative inflation of the grid δ values (pessimistic path only)

_WEIGHT_SHIFT = 1e-12
"""ε shift η of the pessimistic evaluation (:func:`pair_profile_on` with ``upper``): the float pair's weights are
within a relative u ≤ 1e-13 of the exact ones (one rounding each, a float sum of merged components, exp(log p)), and
P ≤ P'/(1 - u), Q ≥ Q'/(1 + u) componentwise give H_α(P ‖ Q) ≤ H_{α(1-u)/(1+u)}(P' ‖ Q') / (1 - u): read at
α e^{-η} (η ≥ 2u) and inflated by :data:`_SAFETY` (≥ u), the float pair's profile covers the exact one. Without it a
weight 1 - ρr within 2^-53 of 1 (ρr below float resolution) rounded to 1, the loss limit at -∞ to 0, and δ(0) to 0."""

ProfileFn = Callable[[np.ndarray], np.ndarray]

_CHUNK = 1 << 15  # profile evaluations per chunk (bounds the points x mixture-components matrices)


def _chunked(fn: ProfileFn, eps: np.ndarray) -> np.ndarray:
    """fn over eps in chunks of 2^15 points (element-wise, so the same values as one call)."""
    if eps.size <= _CHUNK:
        return np.asarray(fn(eps), dtype=float)
    parts = []
    with _progress(eps.size, "PLD grid") as bar:
        for i in range(0, eps.size, _CHUNK):
            parts.append(np.asarray(fn(eps[i:i + _CHUNK]), dtype=float))
            bar.update(min(_CHUNK, eps.size - i))
    return np.concatenate(parts)


def pair_profile_on(pair: NumericMixturePair, eps: np.ndarray, *, upper: bool = False) -> np.ndarray:
    """H_{e^ε}(P ‖ Q) for an array of ε, through :func:`theorems.hockey_stick.loss_root` (vectorised over ε).

    The profile-from-PLD identity H_α = Pr[L_PQ > log α] - α Pr[L_QP < -log α]
    (Balle et al. 2018, Thm 5) with Gaussian tails at the single root. Exact up to float
    rounding; agrees with :func:`theorems.hockey_stick.hockey_stick` (tests). With
    ``upper=True`` it is read at ε - 1e-12 (the float weights' rounding, :data:`_WEIGHT_SHIFT`) and a float-error
    bound is added, 1e-12·(P(Z > z*) + α Q(Z > z*)) (the cancellation in the difference; 1e-12·(1 + α) where the
    float loss stays above log α, H = P(R) - α Q(R)) plus 1e-12 relative: an upper estimate, never rounded down.

    Args:
        pair: The numeric mixture pair (P, Q).
        eps: The ε values.
        upper: Add a float-error bound (the accountant's pessimistic input).

    Returns:
        The profile at each ε.
    """
    eps = np.asarray(eps, dtype=float)
    read = eps - _WEIGHT_SHIFT if upper else eps  # the float weights' rounding covered (:data:`_WEIGHT_SHIFT`)
    o = orient(pair)
    out = np.zeros_like(eps)
    everything = read <= o.lower
    out[everything] = -np.expm1(read[everything])
    if upper:  # P(R) - α Q(R): the float masses' cancellation (1 - ρr rounded to 1: exactly 0 where it is ρr TV)
        with np.errstate(over="ignore"):
            out[everything] += _SAFETY * (1 + np.exp(read[everything]))
    inner = (~everything) & (read < o.upper)
    if inner.any():
        e = read[inner]
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

    ``delta(eps)`` is the theorem's profile exactly as stated (a pair form: the α ≥ 1 pair
    for ε ≥ 0 and the swapped pair for ε < 0, mixed with weight w; see :func:`one_step_profile`).
    ``upper_pair`` is the pair whose ε_hi fixes the grid's upper end, ``lower_pair`` the
    pair whose ε_hi, negated, fixes the lower end (see :func:`grid_range`).

    Attributes:
        bound_id: The bound's T-id.
        delta: ε ↦ δ(ε) as the theorem states it.
        upper: ε ↦ δ(ε) of the pair whose ε_hi fixes the grid's upper end.
        lower: ε ↦ δ(ε) of the pair whose ε_hi, negated, fixes the grid's lower end.
        delta_upper: ε ↦ δ(ε) plus its float-error bound (None: ``delta``).
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
    """The bound's one-step (one-epoch for epoch scope; one release for T15) profile δ(ε), ready for a PLD grid.

    A bound with a :class:`~tsdp.theorems.bounds.base.PairForm` (T1-T4, T6-T14: w = 1 for a
    pair, w = ρ for T7/T8, Thms F.1/F.2): (1 - w) max(0, 1 - e^ε) + w H_{e^ε}(ge) for ε ≥ 0 and
    the swapped pair for ε < 0 (α-symmetry, Zhu et al. 2022, Lemma 31). Any other bound answers
    δ(ε) itself (``bound.delta_eps``, T15), or raises: no silent fallback. Exact up to float
    rounding (no directed rounding here; the PLD builders add their own).

    Args:
        bound: The bound.
        config: The configuration.
        check: Check that ``config`` fits the bound's scheme first.

    Returns:
        The profile.
    """
    form = bound.pair_form(config, check=check, numeric=True)  # the same floats, no sympy
    if form is None:
        if check:
            bound.check(config)
        fn = lambda eps: bound.delta_eps(config, eps, check=False)  # noqa: E731
        return OneStepProfile(bound.id, fn, fn, fn, lambda eps: bound.delta_eps(config, eps, upper=True, check=False))
    nge, nlt = form.ge.numeric(), form.lt.numeric()
    w = float(form.weight)

    def mix(f: ProfileFn, upper: bool = False) -> ProfileFn:
        if w == 1.0:
            return f
        def mixed(eps):
            with np.errstate(over="ignore"):  # 1 - e^ε → -inf past ε ≈ 709: its floor 0 is what counts
                out = (1 - w) * np.maximum(0.0, -np.expm1(eps)) + w * f(eps)
            # the upper form: the mixing's own rounding (w, 1 - e^ε, the products and the sum: a few ulps) covered too
            return np.minimum(1.0, out * (1.0 + _SAFETY)) if upper else out
        return mixed

    return OneStepProfile(bound.id, mix(_switch_fn(nge, nlt)), _pair_fn(nge), _pair_fn(nge),
                          mix(_switch_fn(nge, nlt, True), upper=True))


def pair_profile(pair: MixturePair) -> OneStepProfile:
    """δ(ε) = H_{e^ε}(P ‖ Q) of one fixed pair for every ε (no switch): one adjacency direction.

    The grid's lower end comes from the reversed pair (Q, P): by the α-symmetry identity
    H_α(P‖Q) = 1 - α + α H_{1/α}(Q‖P), the mass of L_PQ below ε is governed by H_{e^{-ε}}(Q‖P).

    Args:
        pair: The mixture pair (P, Q).

    Returns:
        The profile of that direction.
    """
    num = pair.numeric()
    rev = pair.swapped().numeric()
    return OneStepProfile("pair", _pair_fn(num), _pair_fn(num), _pair_fn(rev), _pair_fn(num, True))
