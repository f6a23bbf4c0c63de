"""Every erratum and reading of THEOREMS.md, pinned by a test that fails under the misreading.

Each test computes the quantity in which the correct reading and the misreading differ and
asserts the correct one (the comment says what the misreading would give).
"""
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from tsdp.theorems.bounds.shapes import against_gaussian, binomial_weights
from tsdp.theorems.config import DEFAULT_CONFIG, ConfigError
from tsdp.theorems.hockey_stick import hockey_stick
from tsdp.theorems.registry import REGISTRY, resolve

T = REGISTRY
ALPHAS = np.exp(np.linspace(-3, 6, 91))


@pytest.mark.parametrize("lam", [1, 2, 4])
@pytest.mark.parametrize("theorem", ["T3", "T9", "T14"])
def test_erratum_1_binomial_index_is_zero_based(theorem, lam):
    """Weights Binom(i; λ, r) on means 2i, i = 0..λ; the printed Binom(i | λ, r), i = 1..λ+1,
    on means 2(i-1) sums to 1 - (1-r)^λ and puts λ r (1-r)^(λ-1) on mean 0."""
    if theorem == "T14":
        cfg = DEFAULT_CONFIG.with_(top="pooled", context_length=lam, forecast_length=1)
    else:
        top = "deterministic" if theorem == "T3" else "wor"
        cfg = DEFAULT_CONFIG.with_(top=top, instances=lam, batch_size=32 * lam)
    P = T[theorem].pair(cfg).normal_form().P
    assert sp.simplify(sum(P.weights) - 1) == 0
    if theorem == "T3":
        expected = dict(zip([2 * i for i in range(lam + 1)], binomial_weights(lam, sp.Rational(cfg.r))))
        got = dict(zip(P.means, P.weights))
        assert got == expected
        assert got[0] == (1 - sp.Rational(cfg.r)) ** lam  # misreading: λ r (1-r)^(λ-1)
        printed = sum(sp.binomial(lam, i) * sp.Rational(cfg.r) ** i * (1 - sp.Rational(cfg.r)) ** (lam - i)
                      for i in range(1, lam + 2))
        assert printed == 1 - (1 - sp.Rational(cfg.r)) ** lam != 1


def test_erratum_2_alpha_below_one_uses_the_swapped_pair():
    """Lemma E.3's first case holds for α ≥ 1; for α < 1 the profile is H_α of the swapped pair.
    Read as α ≥ 0, the α < 1 values would be H_α(P‖Q) of the unswapped pair, which are smaller."""
    for theorem in ("T1", "T6", "T13"):
        cfg = DEFAULT_CONFIG.with_(top={"T1": "deterministic", "T6": "wor", "T13": "pooled"}[theorem],
                                   context_length=0 if theorem == "T13" else 1)
        ge, lt = T[theorem].pairs(cfg)
        a = np.array([0.05, 0.3, 0.7, 0.95])
        prof = T[theorem].profile(cfg, a)
        np.testing.assert_allclose(prof, hockey_stick(ge.swapped(), a), rtol=1e-12, atol=0)
        understated = prof - hockey_stick(ge, a)  # the misreading understates δ at every α < 1
        assert np.all(understated > 1e-9) and understated.max() > 1e-4
        # the α-symmetry H_α(P‖Q) = 1 - α + α H_{1/α}(Q‖P) ties the two branches together
        np.testing.assert_allclose(prof, 1 - a + a * T[theorem].profile(cfg, 1 / a), rtol=0, atol=1e-13)


@pytest.mark.parametrize("theorem,bottom", [("T7", "wr"), ("T8", "poisson")])
def test_erratum_3_t7_t8_hold_for_lambda_above_one(theorem, bottom):
    """T7/T8 apply to λ > 1 (their hypothesis 'λ = 1' is a typo): the registry selects them
    for λ = 3 and they dominate the lower bounds there; read literally, λ = 3 would be refused."""
    cfg = DEFAULT_CONFIG.with_(instances=3, batch_size=96, bottom=bottom)
    bound, _ = resolve(cfg)
    assert bound.id == theorem
    lower = T["T9" if theorem == "T7" else "T10"].profile(cfg, ALPHAS)
    assert np.all(T[theorem].profile(cfg, ALPHAS) >= lower - 1e-14)


def test_erratum_4_t9_is_a_lower_bound():
    """T9 is optimistic (kind 'lower'), strictly below the sound T7 for λ > 1, and never chosen
    to account; read as an upper bound it would understate δ."""
    assert T["T9"].kind == "lower"
    cfg = DEFAULT_CONFIG.with_(instances=3, batch_size=96)
    gap = T["T7"].profile(cfg, ALPHAS) - T["T9"].profile(cfg, ALPHAS)
    assert gap.min() >= -1e-14 and gap.max() > 1e-4
    assert resolve(cfg)[0].id != "T9"


def test_erratum_5_sigma_f_to_infinity_is_forecast_length_to_zero():
    """Section 5's limit: σ_C = 0, σ_F → ∞ in T11 leaves the weight ρ L_C / T, i.e. L_F → 0
    (r φ → 0); the printed 'L_C → 0' would leave ρ L_F / T. L_C = 3 ≠ L_F = 1 tells them apart.
    The 'with replacement requires 10 compositions' is WOR: floor(N / Λ) = 10 per epoch."""
    cfg = DEFAULT_CONFIG.with_(context_length=3, forecast_length=1, sigma_forecast=1e6)
    big = T["T11"].profile(cfg, ALPHAS)
    rho, T_ = Fraction(cfg.rho), cfg.T
    lf_to_zero = against_gaussian([0, 2], [1 - rho * Fraction(3, T_), rho * Fraction(3, T_)], 1)
    lc_to_zero = against_gaussian([0, 2], [1 - rho * Fraction(1, T_), rho * Fraction(1, T_)], 1)
    ge = ALPHAS >= 1
    np.testing.assert_allclose(big[ge], hockey_stick(lf_to_zero, ALPHAS[ge]), rtol=1e-5, atol=1e-12)
    assert np.max(np.abs(big[ge] - hockey_stick(lc_to_zero, ALPHAS[ge]))) > 1e-3
    assert DEFAULT_CONFIG.compositions_per_epoch == 10
    assert DEFAULT_CONFIG.with_(top="deterministic").compositions_per_epoch == 1


def test_erratum_6_bottom_level_is_wr():
    """Appendix C.1.3's 'bottom-level WOR' is WR: there is no WOR bottom level in the catalogue
    (the configuration refuses it) and the paper default accounts with T6 (WR bottom level)."""
    with pytest.raises(ConfigError, match="invalid bottom"):
        DEFAULT_CONFIG.with_(bottom="wor")
    assert resolve(DEFAULT_CONFIG)[0].id == "T6"


def test_erratum_7_event_count_and_short_sequences():
    """k = L_C + L_F - 1 + w (w-event level), capped at T: sequences shorter than k are
    accepted (the official accountant raises) and have r = 1."""
    cfg = DEFAULT_CONFIG.with_(context_length=2, forecast_length=2, w=3)
    assert cfg.k == 2 + 2 - 1 + 3 and cfg.r == Fraction(6, 19)
    short = DEFAULT_CONFIG.with_(L=4, context_length=5, forecast_length=2)
    assert short.T == 3 and short.k == 3 and short.r == 1
    assert T["T6"].profile(short, np.array([1.0]))[0] > T["T6"].profile(DEFAULT_CONFIG, np.array([1.0]))[0]


def test_erratum_8_t10_is_the_constructions_pair():
    """T10 compares two mixtures (x_1 holds +1, x'_1 holds -1), not a mixture against N(0,σ);
    the printed form is encoded separately (T10-printed) and lies below the construction's."""
    cfg = DEFAULT_CONFIG.with_(instances=2, batch_size=64, bottom="poisson")
    P, Q = T["T10"].pair(cfg).normal_form().P, T["T10"].pair(cfg).normal_form().Q
    assert len(Q.means) > 1 and Q.means == [-m for m in P.means][::-1] or sorted(Q.means) == sorted(-m for m in P.means)
    assert len(T["T10-printed"].pair(cfg).normal_form().Q.means) == 1
    construction, printed = T["T10"].profile(cfg, ALPHAS), T["T10-printed"].profile(cfg, ALPHAS)
    assert np.all(construction >= printed - 1e-14) and (construction - printed).max() > 1e-3
    assert np.all(construction <= T["T8"].profile(cfg, ALPHAS) + 1e-14)


@pytest.mark.parametrize("lam", [2, 3, 4])
def test_erratum_9_t3_form_understates_the_sound_t2(lam):
    """For WR bottom level with λ > 1 the sound bound is T2 (mixture against mixture); the
    T3 form is 10-30 % below it at r = 0.1, so the accountant never uses it."""
    cfg = DEFAULT_CONFIG.with_(top="deterministic", instances=lam, batch_size=32 * lam)
    a = np.exp(np.linspace(0.05, 3, 60))
    t2, t3 = T["T2"].profile(cfg, a), T["T3"].profile(cfg, a)
    rel = (t2 - t3) / t2
    assert rel.min() > 0.05 and 0.1 < rel.max() < 0.35
    assert resolve(cfg)[0].id == "T2"
