"""T15 (Appendix H): the profile against independent references, its axioms, reductions and monotonicity."""
import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.theorems.bounds.base import TheoremError
from tsdp.theorems.bounds.inference import T15, InferenceConfig
from tsdp.theorems.config import ConfigError
from tsdp.theorems.registry import get

from t15_forms import ALPHA, R, SIGMA, V, attained_profile, expression, gaussian_profile_expr

ALPHAS = ("0", "0.05", "0.4", "0.9", "1", "1.3", "3", "20", "400")
CONFIGS = [
    InferenceConfig(r=0.5, sigma=1.0, w=1, v=1.0, context_length=8),
    InferenceConfig(r=0.75, sigma=0.7, w=3, v=1.0, context_length=8),
    InferenceConfig(r=0.3, sigma=2.0, w=5, v=3.0, context_length=4),  # m = min(w, L_C) = 4
    InferenceConfig(r=1.0, sigma=0.25, w=2, v=0.1, context_length=2),
]


def _quadrature(config: InferenceConfig, alpha: mp.mpf) -> mp.mpf:
    """Σ_j Binom(j; m, r) ∫ max(dN(μ_j) - α dN(0), 0): the pair's densities integrated directly (mpmath),
    the crossing of the densities found numerically (no closed form of the Gaussian profile used)."""
    r, m = mp.mpf(repr(config.r)), config.m
    mu = mp.mpf(repr(config.v)) / mp.mpf(repr(config.sigma))
    total = mp.mpf(0)
    for j in range(m + 1):
        p = mp.binomial(m, j) * r**j * (1 - r) ** (m - j)
        if p == 0:
            continue
        if j == 0:
            total += p * max(mp.mpf(0), 1 - alpha)
            continue
        mj = mu * mp.sqrt(j)
        diff = lambda x: mp.npdf(x, mj, 1) - alpha * mp.npdf(x, 0, 1)  # noqa: E731
        if alpha == 0:
            total += p
            continue
        # dP/dQ increasing in x: one crossing, bracketed by a scan
        lo, hi = mp.mpf(-60), mp.mpf(60)
        cross = mp.findroot(lambda x: mp.log(mp.npdf(x, mj, 1)) - mp.log(alpha * mp.npdf(x, 0, 1)), (lo, hi),
                            solver="bisect") if diff(lo) < 0 < diff(hi) else (lo if diff(lo) >= 0 else hi)
        total += p * mp.quad(diff, [cross, cross + 10, cross + 40, mp.inf])
    return total


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"r={c.r},w={c.w},L={c.context_length}")
def test_profile_matches_mpmath_quadrature_of_the_pair(config):
    with mp.workdps(30):
        for a in ALPHAS:
            ref = _quadrature(config, mp.mpf(a))
            exact = T15.profile_mp(config, a, dps=30)
            assert abs(exact - ref) <= mp.mpf("1e-12") * max(ref, mp.mpf("1e-300")), (a, exact, ref)
            num = float(T15.profile(config, [float(a)])[0])
            assert num == pytest.approx(float(ref), rel=1e-12, abs=1e-300)


def test_w1_closed_form():
    """w = 1: δ(ε) = (1-r) max(0, 1-e^ε) + r (Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ)), μ = v/σ."""
    cfg = InferenceConfig(r=0.6, sigma=1.3, w=1, v=2.0, context_length=5)
    mu = 2.0 / 1.3
    from scipy.stats import norm

    for eps in (-2.0, -0.3, 0.0, 0.5, 1.7, 4.0):
        closed = 0.4 * max(0.0, 1 - math.exp(eps)) + 0.6 * (norm.cdf(mu / 2 - eps / mu)
                                                           - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu))
        assert T15.delta_eps(cfg, [eps])[0] == pytest.approx(closed, rel=1e-13, abs=1e-16)


def test_r_one_reduces_to_the_gaussian_mechanism_with_sensitivity_v_sqrt_w():
    cfg = InferenceConfig(r=0.5, sigma=1.0, w=3, v=1.0, context_length=8)
    expr = expression(cfg, symbolic=True).subs(R, 1)
    gauss = gaussian_profile_expr(V * sp.sqrt(3) / SIGMA)
    assert sp.simplify(expr - gauss) == 0
    # and the exact (non-symbolic) expression evaluates to the numpy path
    num = expression(cfg.with_(r=1.0, sigma=0.8))
    assert float(num.subs(ALPHA, 2)) == pytest.approx(float(T15.profile(cfg.with_(r=1.0, sigma=0.8), [2.0])[0]),
                                                      rel=1e-13)


def test_sympy_form_agrees_with_mpmath_and_numpy():
    cfg = CONFIGS[1]
    expr = expression(cfg)
    for a in (0.3, 1.0, 5.0):
        val = sp.N(expr.subs(ALPHA, sp.Rational(repr(a))), 30)
        assert abs(float(val) - float(T15.profile_mp(cfg, a))) <= 1e-25 + 1e-20 * abs(float(val))


@settings(max_examples=60)
@given(r=st.floats(0.01, 1.0), drop=st.floats(0.0, 0.99), sigma=st.floats(0.2, 5.0), w=st.integers(1, 6),
       eps=st.floats(-3.0, 8.0))
def test_smaller_r_never_increases_delta(r, drop, sigma, w, eps):
    cfg = InferenceConfig(r=r, sigma=sigma, w=w, v=1.0, context_length=6)
    smaller = cfg.with_(r=max(r * (1 - drop), 1e-3))
    big, small = T15.delta_eps(cfg, [eps])[0], T15.delta_eps(smaller, [eps])[0]
    assert small <= big + 1e-15 * (1 + math.exp(eps))


@settings(max_examples=30)
@given(r=st.floats(0.01, 1.0), sigma=st.floats(0.1, 5.0), w=st.integers(1, 6), L=st.integers(1, 10))
def test_axioms_h0_is_one_convex_nonincreasing_floor(r, sigma, w, L):
    cfg = InferenceConfig(r=r, sigma=sigma, w=w, v=1.0, context_length=L)
    a = np.concatenate([np.linspace(0, 4, 801), np.exp(np.linspace(np.log(4), np.log(1e4), 300))[1:]])
    h = T15.profile(cfg, a)
    tol = 1e-13 * (1 + a)
    assert h[0] == 1.0 and T15.profile_mp(cfg, 0) == 1
    assert np.all(np.diff(h) <= tol[1:])
    chord = ((a[2:] - a[1:-1]) * h[:-2] + (a[1:-1] - a[:-2]) * h[2:]) / (a[2:] - a[:-2])
    assert np.all(h[1:-1] <= chord + tol[1:-1])
    assert np.all(h >= np.maximum(0, 1 - a) - tol)


def test_alpha_symmetry_one_pair_serves_both_sides():
    cfg = CONFIGS[1]
    with mp.workdps(40):
        for a in ("0.05", "0.5", "0.95"):
            al = mp.mpf(a)
            gap = T15.profile_mp(cfg, al) - (1 - al + al * T15.profile_mp(cfg, 1 / al))
            assert abs(gap) < mp.mpf("1e-30")


def test_attained_profile_brackets_and_equals_at_one_step_context():
    cfg = InferenceConfig(r=0.5, sigma=1.0, w=2, v=1.0, context_length=8)
    a = np.array([0.0, 0.5, 1.0, 2.0, 10.0, 100.0])
    upper, att = T15.profile(cfg, a), attained_profile(cfg, a)
    gap = cfg.m * 0.5 * 0.5 ** 7 * T15.profile(cfg.with_(w=1, r=1.0), a)  # m r (1-r)^{L-1} G_α(v/σ)
    assert np.all(att <= upper + 1e-15) and np.all(att >= upper - gap - 1e-15)
    assert np.any(att < upper - 1e-6)  # the hidden-position event is a real gap
    one = InferenceConfig(r=0.5, sigma=1.0, w=1, v=1.0, context_length=1)
    assert np.array_equal(attained_profile(one, a), T15.profile(one, a))


@pytest.mark.parametrize("field,value,flag", [("r", 0.0, "r"), ("r", 1.2, "r"), ("sigma", 0.0, "sigma"),
                                              ("w", 0, "w"), ("w", 1.5, "w"), ("v", -1.0, "v"),
                                              ("context_length", 0, "context_length"), ("releases", 0, "releases"),
                                              ("r", float("nan"), "r")])
def test_config_validation_names_the_parameter(field, value, flag):
    base = dict(r=0.5, sigma=1.0, w=1, v=1.0, context_length=4, releases=1)
    base[field] = value
    with pytest.raises(ConfigError) as exc:
        InferenceConfig(**base)
    assert exc.value.parameter == flag


def test_registered_and_refuses_training_configs():
    from tsdp.theorems.config import DEFAULT_CONFIG

    assert get("t15") is T15 and T15.kind == "upper"
    with pytest.raises(TheoremError):
        T15.profile(DEFAULT_CONFIG, [1.0])


def test_axioms_and_symmetry_join_tsdp_verify():
    from tsdp.verify.checks.runner import verify

    for quick, count in ((True, 2), (False, 14)):
        out = verify(quick=quick, select="[T15]", jobs=1)
        assert out.summary["pass"] == count == out.summary["total"]
        assert "T15" in out.theorems_covered
