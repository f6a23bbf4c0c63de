"""Property 5: the mixture lemmas the proofs rest on, verified on random Gaussian mixtures.

* Advanced joint convexity (Balle et al. 2018, Thm 2; paper Lemma `advanced_joint_convexity`),
  used by Thms F.1/F.2 (T7, T8) and the WOR reductions (T6, T9):
  H_α((1-p)P1 + pP2 ‖ (1-p)P1 + pQ2) = p H_α'(P2 ‖ (1-β)P1 + βQ2), α' = 1 + (α-1)/p, β = α/α'.
* Gaussian mean monotonicity (paper Lemma `gaussian_mean_monotonicity`; Schuchardt et al.
  2024, Thm O.6), used by Thm 4.1 (T5) and Thm E.2 (T2): H_α(MoG(-μ,p)‖MoG(ν,q)) is
  non-decreasing in every μ_i, ν_j ≥ 0.
* Binomial stochastic dominance (paper Lemma `binomial_dominance`), used by T5 and the
  optimistic bounds (T3, T9): Binom(n, p) dominates Binom(m, q) for n ≥ m, p ≥ q.
"""
from __future__ import annotations

from fractions import Fraction
from math import comb

import mpmath as mp
import numpy as np

from tsdp.theorems.hockey_stick import hockey_stick, hockey_stick_mp
from tsdp.theorems.mixture import GaussianMixture, MixturePair

from .common import hockey_stick_quad, worst
from .result import CheckResult, FAIL, FINDING, result

JOINT_CONVEXITY_TOL = mp.mpf("1e-20")
QUAD_TOL = 1e-9
MEAN_TOL = 1e-12
JOINT_DPS = 30


def _rational(x: float, digits: int = 6) -> Fraction:
    return Fraction(round(x * 10**digits), 10**digits)


def _random_joint_instance(rng: np.random.Generator):
    """P1 = N(m0), P2 with means ≤ m0, Q2 with means ≥ m0 (so every pair has a monotone loss)."""
    m0 = _rational(rng.uniform(-1, 1), 3)
    n2, n3 = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    P2 = GaussianMixture.of([m0 - _rational(rng.uniform(0, 3), 3) for _ in range(n2)],
                            _weights(rng, n2))
    Q2 = GaussianMixture.of([m0 + _rational(rng.uniform(0, 3), 3) for _ in range(n3)],
                            _weights(rng, n3))
    P1 = GaussianMixture.point(m0)
    p = _rational(rng.uniform(0.02, 0.98), 4)
    sigma = _rational(np.exp(rng.uniform(np.log(0.5), np.log(3))), 3)
    alpha = _rational(np.exp(rng.uniform(0, np.log(30))), 4)
    return P1, P2, Q2, p, sigma, alpha


def _weights(rng: np.random.Generator, n: int):
    raw = [Fraction(int(rng.integers(1, 1000))) for _ in range(n)]
    total = sum(raw)
    return [x / total for x in raw]


def _mix(p, A: GaussianMixture, B: GaussianMixture) -> GaussianMixture:
    return A.scaled(1 - p) + B.scaled(p)


def advanced_joint_convexity(rng: np.random.Generator, trials: int = 10, label: str = "",
                             printed_weight: bool = False) -> CheckResult:
    """Property 5: advanced joint convexity (paper Lemma `advanced_joint_convexity`; T7, T8, T6, T9).

    ``trials`` random instances: P1 = N(m0, σ), P2 a mixture of 1-3 Gaussians left of m0,
    Q2 one of 1-3 right of m0, p ∈ [0.02, 0.98], σ ∈ [0.5, 3], α ∈ [1, 30]. Both sides in
    mpmath at dps 30 (tolerance 1e-20), and the left side by direct quadrature too
    (:func:`hockey_stick_quad`, tolerance 1e-9), so the engine is not checked only against
    itself. ``printed_weight`` uses the lemma exactly as printed, α' = 1 + (α-1)/w with a
    weight w that is not the mixture weight p (w = p/2 here): see :func:`printed_joint_convexity`.

    Args:
        rng: The seeded generator.
        trials: Random instances drawn.
        label: The check's label.
        printed_weight: Use the lemma's printed weight (the erratum) instead of the proof's.

    Returns:
        The check's result.
    """
    worst_gap = mp.mpf(0)
    worst_quad = 0.0
    where = None
    for t in range(trials):
        P1, P2, Q2, p, sigma, alpha = _random_joint_instance(rng)
        lhs_pair = MixturePair.of(_mix(p, P1, P2), _mix(p, P1, Q2), sigma)
        w = p / 2 if printed_weight else p
        with mp.workdps(JOINT_DPS):
            a = mp.mpf(alpha.numerator) / alpha.denominator
            pw = mp.mpf(w.numerator) / w.denominator
            a_prime = 1 + (a - 1) / pw
            # β = α / α' as an exact rational: α w / (w + α - 1)
            beta_exact = alpha * w / (w + alpha - 1)
            rhs_pair = MixturePair.of(P2, _mix(beta_exact, P1, Q2), sigma)
            lhs = hockey_stick_mp(lhs_pair, a, JOINT_DPS)
            rhs = (mp.mpf(p.numerator) / p.denominator) * hockey_stick_mp(rhs_pair, a_prime, JOINT_DPS)
            gap = abs(lhs - rhs)
        quad = abs(hockey_stick_quad(lhs_pair, float(alpha)) - float(lhs))
        if gap > worst_gap:
            worst_gap, where = gap, {"trial": t, "p": float(p), "w": float(w), "alpha": float(alpha),
                                     "sigma": float(sigma), "lhs": float(lhs), "rhs": float(rhs)}
        worst_quad = max(worst_quad, quad)
    ok = worst_gap <= JOINT_CONVEXITY_TOL and worst_quad <= QUAD_TOL
    name = "P5.joint_convexity" + ("[as printed]" if printed_weight else "") + f"@{label}"
    return result(
        name, 5, ("T6", "T7", "T8", "T9"), ok,
        f"identity holds on {trials} random mixtures" if ok
        else f"identity off by {mp.nstr(worst_gap, 5)} (quadrature gap {worst_quad:.3g})",
        measured={"trials": trials, "max_abs_gap_mp": worst_gap, "max_quadrature_gap": worst_quad,
                  "worst_instance": where},
        tolerance={"mp_abs": JOINT_CONVEXITY_TOL, "dps": JOINT_DPS, "quadrature_abs": QUAD_TOL},
    )


def printed_joint_convexity(rng: np.random.Generator, trials: int = 5, label: str = "") -> CheckResult:
    """Erratum (paper Lemma `advanced_joint_convexity` as printed; T7, T8): α' = 1 + (α-1)/w.

    The printed lemma introduces "some w ∈ [0, 1]" and defines α' = 1 + (α-1)/w, while the
    mixtures are weighted by p; Balle et al. 2018 (Thm 2) has the mixture weight there.
    With w ≠ p (w = p/2) the identity fails: a ``finding`` with the gap. If it held anyway
    (gap below tolerance) the reading would be moot and the check fails, as the erratum
    would then be wrong.

    Args:
        rng: The seeded generator.
        trials: Random instances drawn.
        label: The check's label.

    Returns:
        The finding, or a failure.
    """
    r = advanced_joint_convexity(rng, trials, label, printed_weight=True)
    gap = r.measured["max_abs_gap_mp"]
    reproduced = gap > JOINT_CONVEXITY_TOL
    wi = r.measured["worst_instance"] or {}
    text = (f"Lemma advanced_joint_convexity as printed (α' = 1+(α-1)/w, w free) fails for w = p/2: "
            f"|LHS - RHS| up to {mp.nstr(gap, 4)} (LHS {wi.get('lhs', float('nan')):.4g}, "
            f"RHS {wi.get('rhs', float('nan')):.4g}); read w = p (Balle et al. 2018, Thm 2)")
    if not reproduced:
        text = "printed form (w = p/2) unexpectedly satisfies the identity; erratum not reproduced"
    return CheckResult(f"E.joint_convexity_printed_w@{label}", 9, ("T7", "T8"), FINDING if reproduced else FAIL,
                       text, r.measured, r.tolerance, None)


def mean_monotonicity(rng: np.random.Generator, trials: int = 20, label: str = "") -> CheckResult:
    """Property 5: Gaussian mean monotonicity (paper Lemma `gaussian_mean_monotonicity`; T2, T4, T5).

    ``trials`` random pairs P = MoG(-μ, p, σ), Q = MoG(ν, q, σ) with 1-3 components each,
    μ, ν ∈ [0, 3]^n, σ ∈ [0.5, 3]; one random coordinate of μ or ν is moved out by
    Δ ∈ (0, 1]. H_α must not decrease at any α of a grid on [0.02, 50] (numpy engine,
    tolerance 1e-12 absolute).

    Args:
        rng: The seeded generator.
        trials: Random pairs drawn.
        label: The check's label.

    Returns:
        The check's result.
    """
    alphas = np.exp(np.linspace(np.log(0.02), np.log(50.0), 121))
    worst_drop = {"max": -np.inf, "at_alpha": float("nan")}
    for _ in range(trials):
        n, m = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        mu = [_rational(rng.uniform(0, 3), 3) for _ in range(n)]
        nu = [_rational(rng.uniform(0, 3), 3) for _ in range(m)]
        p, q = _weights(rng, n), _weights(rng, m)
        sigma = _rational(np.exp(rng.uniform(np.log(0.5), np.log(3))), 3)
        step = _rational(rng.uniform(0.01, 1.0), 3)
        mu2, nu2 = list(mu), list(nu)
        j = int(rng.integers(0, n + m))
        if j < n:
            mu2[j] += step
        else:
            nu2[j - n] += step
        before = MixturePair.of(GaussianMixture.of([-x for x in mu], p), GaussianMixture.of(nu, q), sigma)
        after = MixturePair.of(GaussianMixture.of([-x for x in mu2], p), GaussianMixture.of(nu2, q), sigma)
        drop = hockey_stick(before, alphas) - hockey_stick(after, alphas)
        w = worst(drop, alphas)
        if w["max"] > worst_drop["max"]:
            worst_drop = w
    ok = worst_drop["max"] <= MEAN_TOL
    return result(
        f"P5.mean_monotonicity@{label}", 5, ("T2", "T4", "T5"), ok,
        f"H_α non-decreasing when a mean moves away from 0 ({trials} random pairs)" if ok
        else f"H_α dropped by {worst_drop['max']:.3g} at α = {worst_drop['at_alpha']:.4g}",
        measured={"trials": trials, "max_drop": worst_drop}, tolerance={"abs": MEAN_TOL},
    )


def binomial_dominance(rng: np.random.Generator, trials: int = 50, label: str = "") -> CheckResult:
    """Property 5: binomial stochastic dominance (paper Lemma `binomial_dominance`; T3, T5, T9).

    ``trials`` random n ≥ m in 1..12, p ≥ q rational in [0, 1]: the CDF of Binom(n, p) is
    ≤ that of Binom(m, q) at every i, in exact rational arithmetic (tolerance 0).

    Args:
        rng: The seeded generator.
        trials: Random (n, m, p, q) drawn.
        label: The check's label.

    Returns:
        The check's result.
    """
    worst_excess = Fraction(-1)
    where = None
    for _ in range(trials):
        m = int(rng.integers(1, 13))
        n = int(rng.integers(m, 13))
        q = _rational(rng.uniform(0, 1), 3)
        p = q + (1 - q) * _rational(rng.uniform(0, 1), 3)
        cdf_n = cdf_m = Fraction(0)
        for i in range(n + 1):
            cdf_n += comb(n, i) * p**i * (1 - p) ** (n - i)
            if i <= m:
                cdf_m += comb(m, i) * q**i * (1 - q) ** (m - i)
            excess = cdf_n - cdf_m
            if excess > worst_excess:
                worst_excess, where = excess, {"n": n, "p": float(p), "m": m, "q": float(q), "i": i}
    ok = worst_excess <= 0
    return result(
        f"P5.binomial_dominance@{label}", 5, ("T3", "T5", "T9"), ok,
        f"Binom(n,p) dominates Binom(m,q) on {trials} random instances (exact)" if ok
        else f"CDF excess {float(worst_excess):.3g} at {where}",
        measured={"trials": trials, "max_cdf_excess": float(worst_excess), "at": where}, tolerance={"exact": 0},
    )
