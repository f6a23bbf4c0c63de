"""The evaluation engine: H_α(P ‖ Q) for a pair of Gaussian mixtures with one σ.

Every pair of the catalogue has a privacy loss L(x) = log dP/dQ(x) that is monotone in x
(THEOREMS.md, last paragraph of "Bounds"). With z = x/σ and standardised means,

    L(z) = F_p(z) - F_q(z),    F_w(z) = log Σ_i w_i exp(m_i z - m_i² / 2),

so {L > log α} is a half-line bounded by the single root z* of L(z) = log α, and

    H_α(P ‖ Q) = P(Z > z*) - α Q(Z > z*)          (L increasing)

(the mirror image for L decreasing). This is the profile-from-PLD identity
H_α = Pr[L_PQ > log α] - α Pr[L_QP < -log α] (Balle et al. 2018, Thm 5) evaluated with
Gaussian CDFs. Two paths share this reduction:

* :func:`hockey_stick` - numpy/scipy, vectorised over an array of α (fast path);
* :func:`hockey_stick_mp` - mpmath at a chosen precision (reference path).

Soundness: both are exact up to floating-point error; neither rounds in a chosen
direction. Callers that need a one-sided value (the accountant) add their own margin.
"""
from __future__ import annotations

from dataclasses import dataclass

import mpmath as mp
import numpy as np
from scipy.special import log_ndtr, logsumexp, ndtr

from .mixture import MixturePair, NumericMixturePair

_NEWTON_ITERATIONS = 200
_Z_GRID = 4097  # tabulation points of L for many roots at once
_GRID_FROM = 64  # arrays longer than this get their brackets from the tabulation


@dataclass(frozen=True)
class OrientedPair:
    """A numeric pair mirrored (if needed) so that its privacy loss is non-decreasing in z.

    ``lower`` / ``upper`` are the limits of L at -∞ / +∞ (possibly infinite).

    Attributes:
        a: P's standardised means.
        log_p: log of P's weights.
        b: Q's standardised means.
        log_q: log of Q's weights.
        lower: L at -∞.
        upper: L at +∞.
        mirrored: Whether z was mirrored.
    """

    a: np.ndarray
    log_p: np.ndarray
    b: np.ndarray
    log_q: np.ndarray
    lower: float
    upper: float
    mirrored: bool


def _limits(a, p, b, q):
    """Slopes and finite limits of L at ±∞ for the standardised, merged pair."""
    slope_hi = a[-1] - b[-1]
    slope_lo = a[0] - b[0]
    lim_hi = np.inf if slope_hi > 0 else (-np.inf if slope_hi < 0 else np.log(p[-1] / q[-1]))
    lim_lo = -np.inf if slope_lo > 0 else (np.inf if slope_lo < 0 else np.log(p[0] / q[0]))
    return lim_lo, lim_hi


def orient(pair: NumericMixturePair) -> OrientedPair:
    """Mirror the pair (z → -z) when its loss decreases.

    The direction is read off the limits of L at ±∞ (the leading components of P and Q);
    monotonicity itself is a property of the catalogue's pairs (THEOREMS.md), not checked here.
    A pair with P = Q has constant loss 0 and is kept as it is.

    Args:
        pair: The numeric pair.

    Returns:
        The oriented pair.
    """
    a, p, b, q = pair.a, pair.p, pair.b, pair.q
    lo, hi = _limits(a, p, b, q)
    mirrored = bool(hi < lo)
    if mirrored:
        a, b = -a[::-1], -b[::-1]
        p, q = p[::-1], q[::-1]
        lo, hi = _limits(a, p, b, q)
    return OrientedPair(a, np.log(p), b, np.log(q), float(lo), float(hi), mirrored)


def _loss_and_slope(o: OrientedPair, z: np.ndarray):
    """L(z) and L'(z) for the oriented pair, vectorised over z (log-sum-exp by the row maximum)."""
    zp = z[:, None] * o.a - (0.5 * o.a**2 - o.log_p)
    zq = z[:, None] * o.b - (0.5 * o.b**2 - o.log_q)
    mp_, mq_ = zp.max(axis=1), zq.max(axis=1)
    ep, eq = np.exp(zp - mp_[:, None]), np.exp(zq - mq_[:, None])
    sp_, sq_ = ep.sum(axis=1), eq.sum(axis=1)
    return (mp_ + np.log(sp_)) - (mq_ + np.log(sq_)), (ep @ o.a) / sp_ - (eq @ o.b) / sq_


def _expanding_brackets(o: OrientedPair, c: np.ndarray):
    """Brackets [lo, hi] with L(lo) < c < L(hi), grown geometrically from the means' span."""
    span = float(max(np.max(np.abs(o.a)), np.max(np.abs(o.b)), 1.0))
    lo = np.full(c.shape, -span)
    hi = np.full(c.shape, span)
    for _ in range(1100):
        l_lo, _ = _loss_and_slope(o, lo)
        l_hi, _ = _loss_and_slope(o, hi)
        bad_lo = l_lo >= c
        bad_hi = l_hi <= c
        if not (bad_lo.any() or bad_hi.any()):
            break
        lo = np.where(bad_lo, lo * 2.0, lo)
        hi = np.where(bad_hi, hi * 2.0, hi)
    return lo, hi, 0.5 * (lo + hi)


def _grid_brackets(o: OrientedPair, c: np.ndarray):
    """Brackets from L tabulated on a z-grid spanning the roots of min(c) and max(c).

    Each c gets the grid cell holding its root as bracket and linear interpolation in the
    cell as Newton's start: one tabulation instead of a bracket search per point.
    """
    ends = _bracketed_newton(o, np.array([c.min(), c.max()]), *_expanding_brackets(o, np.array([c.min(), c.max()])))
    z_lo, z_hi = float(ends[0]), float(ends[1])
    pad = 1e-9 * (1.0 + abs(z_lo) + abs(z_hi)) + 1e-12
    zg = np.linspace(z_lo - pad, z_hi + pad, _Z_GRID)
    lg = np.maximum.accumulate(_loss_and_slope(o, zg)[0])
    idx = np.clip(np.searchsorted(lg, c, side="left"), 1, _Z_GRID - 1)
    lo, hi = zg[idx - 1].copy(), zg[idx].copy()
    span = lg[idx] - lg[idx - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(span > 0, (c - lg[idx - 1]) / span, 0.5)
    return lo, hi, lo + np.clip(frac, 0.0, 1.0) * (hi - lo)


def _bracketed_newton(o: OrientedPair, c: np.ndarray, lo: np.ndarray, hi: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Newton on L(z) = c inside [lo, hi], bisecting whenever a step leaves the bracket."""
    z = z.copy()
    active = np.arange(c.size)
    for _ in range(_NEWTON_ITERATIONS):
        if active.size == 0:
            break
        za = z[active]
        val, slope = _loss_and_slope(o, za)
        f = val - c[active]
        lo[active] = np.where(f < 0, za, lo[active])
        hi[active] = np.where(f > 0, za, hi[active])
        la, ha = lo[active], hi[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = za - f / slope
        inside = np.isfinite(newton) & (newton > la) & (newton < ha)
        step = np.where(inside, newton, 0.5 * (la + ha))
        tol = 1e-14 * (1.0 + np.abs(za))  # a root error η moves H_α by O(η²) only
        done = (np.abs(step - za) <= tol) | (f == 0) | (ha - la <= tol)
        z[active] = step
        active = active[~done]
    return z


def loss_root(o: OrientedPair, c: np.ndarray) -> np.ndarray:
    """Solve L(z) = c for every c strictly inside (lower, upper): bracketed Newton, vectorised.

    A few values get brackets grown geometrically; many (a PLD grid) get them from one
    tabulation of L (:func:`_grid_brackets`). Newton then runs to float precision.

    Args:
        o: The oriented pair.
        c: The loss values.

    Returns:
        z with L(z) = c, per c.
    """
    c = np.asarray(c, dtype=float)
    if c.size == 0:
        return c.copy()
    brackets = _grid_brackets(o, c) if c.size > _GRID_FROM else _expanding_brackets(o, c)
    return _bracketed_newton(o, c, *brackets)


def hockey_stick(pair: MixturePair | NumericMixturePair, alpha) -> np.ndarray:
    """H_α(P ‖ Q) for an array of α ≥ 0 (numpy path; vectorised over α).

    Exact up to float64 rounding (no directed rounding). Agrees with
    :func:`hockey_stick_mp` to 1e-10 absolute (tests/theorems/test_engine_reference.py).

    Args:
        pair: The pair (P, Q).
        alpha: The α values.

    Returns:
        H_α(P ‖ Q) at each α.
    """
    num = pair.numeric() if isinstance(pair, MixturePair) else pair
    alpha = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(alpha)) or np.any(alpha < 0):
        raise ValueError("alpha must be finite and >= 0")
    o = orient(num)
    shape = alpha.shape
    alpha = alpha.ravel()
    out = np.empty_like(alpha)
    with np.errstate(divide="ignore"):
        c = np.log(alpha)
    everything = c <= o.lower  # {L > log α} is the whole line
    nothing = c >= o.upper  # {L > log α} is empty
    out[everything] = 1.0 - alpha[everything]
    out[nothing & ~everything] = 0.0
    inner = ~(everything | nothing)
    if inner.any():
        z = loss_root(o, c[inner])
        tail_p = np.sum(np.exp(o.log_p) * ndtr(o.a[None, :] - z[:, None]), axis=1)
        tail_q = np.sum(np.exp(o.log_q) * ndtr(o.b[None, :] - z[:, None]), axis=1)
        out[inner] = tail_p - alpha[inner] * tail_q
    out = np.maximum(out, np.maximum(0.0, 1.0 - alpha))
    return out.reshape(shape)


def log_tail_masses(pair: MixturePair | NumericMixturePair, alpha) -> tuple[np.ndarray, np.ndarray]:
    """log P(L > log α) and log Q(L > log α), vectorised over α (for PLD construction).

    Args:
        pair: The pair (P, Q).
        alpha: The α values.

    Returns:
        (log P(L > log α), log Q(L > log α)).
    """
    num = pair.numeric() if isinstance(pair, MixturePair) else pair
    alpha = np.asarray(alpha, dtype=float).ravel()
    o = orient(num)
    with np.errstate(divide="ignore"):
        c = np.log(alpha)
    lp = np.zeros_like(c)
    lq = np.zeros_like(c)
    nothing = c >= o.upper
    lp[nothing] = -np.inf
    lq[nothing] = -np.inf
    inner = (c > o.lower) & ~nothing
    if inner.any():
        z = loss_root(o, c[inner])
        lp[inner] = logsumexp(o.log_p + log_ndtr(o.a[None, :] - z[:, None]), axis=1)
        lq[inner] = logsumexp(o.log_q + log_ndtr(o.b[None, :] - z[:, None]), axis=1)
    return lp, lq


# ----------------------------------------------------------------------------- mpmath path


def _mp_arrays(pair: MixturePair):
    """Standardised means and weights as mpf at the current precision, merged and sorted."""
    nf = pair.normal_form()
    sigma = mp.mpf(_mp_value(nf.sigma))

    def conv(mix):
        m = [mp.mpf(_mp_value(x)) / sigma for x in mix.means]
        w = [mp.mpf(_mp_value(x)) for x in mix.weights]
        kept = [(mi, wi) for mi, wi in zip(m, w) if wi > 0]
        return [mi for mi, _ in kept], [wi for _, wi in kept]

    a, p = conv(nf.P)
    b, q = conv(nf.Q)
    return a, p, b, q


def _mp_value(expr):
    """A sympy expression as an mpf at the current mpmath precision (exact rationals stay exact)."""
    import sympy as sp

    expr = sp.sympify(expr)
    if expr.is_Rational:
        return mp.mpf(int(expr.p)) / int(expr.q)
    return mp.mpf(sp.N(expr, mp.mp.dps + 10))


def _mp_limits(a, p, b, q):
    """The limits of L at -∞ and +∞ (the leading components, as :func:`_limits`) at the working precision, for a
    pair oriented so that L is non-decreasing."""
    lo = -mp.inf if a[0] > b[0] else (mp.inf if a[0] < b[0] else mp.log(p[0] / q[0]))
    hi = mp.inf if a[-1] > b[-1] else (-mp.inf if a[-1] < b[-1] else mp.log(p[-1] / q[-1]))
    return lo, hi


def _mp_loss_and_slope(a, p, b, q, z):
    """L(z) and L'(z) in mpmath at the working precision."""
    ep = [w * mp.exp(m * z - m * m / 2) for m, w in zip(a, p)]
    eq = [w * mp.exp(m * z - m * m / 2) for m, w in zip(b, q)]
    fp, fq = mp.fsum(ep), mp.fsum(eq)
    slope = mp.fsum(e * m for e, m in zip(ep, a)) / fp - mp.fsum(e * m for e, m in zip(eq, b)) / fq
    return mp.log(fp) - mp.log(fq), slope


def _mp_root(a, p, b, q, c, z0: float, tol):
    """The root of L(z) = c at the working precision: Newton from the float root z0.

    Newton converges quadratically from a float-accurate start (a handful of steps at
    dps = 40); a step that leaves the bracket [z0 ± 1e-6] falls back to bisection. ``tol`` is
    the root's absolute tolerance; the caller works with guard digits (:func:`_guard_digits`)
    so that L's rounding, which grows with the exponents m z - m²/2 that cancel in it, moves
    the root by less than ``tol``. Bisection ends on the bracket's width, never on |L - c|,
    so a loss whose rounding exceeds ``tol`` still gets its root to within that rounding.
    """
    lo, hi = mp.mpf(z0) - mp.mpf("1e-6") * (1 + abs(z0)), mp.mpf(z0) + mp.mpf("1e-6") * (1 + abs(z0))
    z = mp.mpf(z0)
    for _ in range(60):
        val, slope = _mp_loss_and_slope(a, p, b, q, z)
        step = (val - c) / slope if slope != 0 else mp.inf
        new = z - step
        if not (lo < new < hi):
            break
        z = new
        if abs(step) <= tol:
            return z
    f = lambda x: _mp_loss_and_slope(a, p, b, q, x)[0] - c  # noqa: E731
    while f(lo) > 0:
        lo -= 2 * (hi - lo)
    while f(hi) < 0:
        hi += 2 * (hi - lo)
    for _ in range(2000):  # each halving narrows the bracket; 2000 covers any start at any dps ≤ 10000
        if hi - lo <= tol:
            break
        mid = (lo + hi) / 2
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def _guard_digits(o: OrientedPair, z0: float) -> int:
    """Extra decimal digits for the root: log10 of the largest exponent |m z| + m²/2 + |log w| in L near z0.

    L(z) = log Σ p_i e^{a_i z - a_i²/2} - log Σ q_j e^{b_j z - b_j²/2} is a difference of terms of that size, so
    its absolute rounding is about 10^-dps times it (σ = 1e-3 with λ = 4 puts it at 3.2e7: eight digits lost).
    """
    means = np.concatenate([o.a, o.b])
    logw = np.concatenate([o.log_p, o.log_q])
    size = float(np.max(np.abs(means) * (abs(z0) + np.abs(means) / 2) + np.abs(logw)))
    return int(np.ceil(np.log10(1.0 + size))) + 5


def hockey_stick_mp(pair: MixturePair, alpha, dps: int = 40) -> mp.mpf:
    """H_α(P ‖ Q) in arbitrary precision (reference path), for one α ≥ 0.

    The root of L(z) = log α is refined from the float root by Newton in mpmath to 10^-dps
    (an error η in the root changes H_α by O(η²), since the integrand vanishes there), working
    with guard digits for the cancellation inside L (:func:`_guard_digits`: at σ = 1e-3 the
    exponents reach 1e7 and dps = 40 alone left the root unresolved); the tails use mpmath's erfc.
    Agrees with direct quadrature of max(dP - α dQ, 0) to relative 1e-15 at dps = 40
    (tests/theorems/test_engine_reference.py).

    Args:
        pair: The pair (P, Q).
        alpha: α ≥ 0.
        dps: Decimal digits.

    Returns:
        H_α(P ‖ Q), an mpmath number.
    """
    with mp.workdps(dps):
        alpha = mp.mpf(alpha)
        if alpha < 0:
            raise ValueError("alpha must be >= 0")
        o = orient(pair.numeric())
        if alpha == 0:
            return mp.mpf(1)
        c_float = float(mp.log(alpha))
        inside = o.lower < c_float < o.upper  # the float root is a start only where the float loss reaches c
        z0 = float(loss_root(o, np.array([c_float]))[0]) if inside else 0.0
        tol = mp.mpf(10) ** (-dps) * (1 + abs(mp.mpf(z0)))
    with mp.workdps(dps + _guard_digits(o, z0)):
        a, p, b, q = _mp_arrays(pair)
        if o.mirrored:
            a, p = [-m for m in reversed(a)], list(reversed(p))
            b, q = [-m for m in reversed(b)], list(reversed(q))
        c = mp.log(alpha)
        lower, upper = _mp_limits(a, p, b, q)  # at this precision: the float pair's may round a weight ratio to 1
        if c <= lower:
            h = max(mp.mpf(0), 1 - alpha)
        elif c >= upper:
            h = mp.mpf(0)
        else:
            z = _mp_root(a, p, b, q, c, z0, tol)
            tail = lambda m, zz: mp.erfc((zz - m) / mp.sqrt(2)) / 2  # noqa: E731
            h = mp.fsum(w * tail(m, z) for m, w in zip(a, p)) - alpha * mp.fsum(w * tail(m, z) for m, w in zip(b, q))
            h = max(h, max(mp.mpf(0), 1 - alpha))
    with mp.workdps(dps):
        return +h  # rounded to the digits asked for
