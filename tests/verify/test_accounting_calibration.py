"""Calibration round trip: σ re-accounts to ≤ target, σ (1 - tolerance) exceeds it."""
from fractions import Fraction

import pytest

from tsdp.theorems.config import DEFAULT_CONFIG, ConfigError
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.calibration import calibrate_sigma
from tsdp.verify.events import count_compositions, training_event

D = 1e-3
TOL = 1e-2
CONFIGS = [
    (DEFAULT_CONFIG.with_(N=n, batch_size=b, instances=lam, top=top, bottom=bottom), target, steps)
    for n, b, lam, top, bottom, target, steps in [
        (320, 32, 1, "wor", "wr", 1.0, 1), (320, 32, 1, "wor", "wr", 2.0, 10), (100, 20, 1, "wor", "wr", 4.0, 5),
        (320, 64, 2, "wor", "wr", 2.0, 3), (320, 64, 2, "wor", "poisson", 3.0, 2),
        (320, 32, 1, "deterministic", "wr", 2.0, 10), (320, 32, 1, "deterministic", "poisson", 2.0, 10),
        (320, 64, 2, "deterministic", "wr", 3.0, 10), (50, 10, 1, "wor", "wr", 0.5, 1),
        (200, 40, 1, "wor", "wr", 1.5, 20), (200, 40, 1, "wor", "poisson", 1.5, 3),
        (400, 16, 1, "wor", "wr", 1.0, 8), (320, 96, 3, "wor", "wr", 5.0, 2), (320, 32, 1, "shuffle", "wr", 1.0, 1),
        (64, 64, 1, "wor", "wr", 8.0, 1), (320, 32, 1, "wor", "wr", 0.3, 1), (500, 50, 1, "wor", "wr", 2.5, 30),
        (320, 32, 1, "deterministic", "wr", 0.8, 25), (120, 24, 2, "wor", "poisson", 4.0, 4),
        (320, 32, 1, "wor", "wr", 6.0, 12),
    ]
]


def sound_epsilon(config, steps):
    """The sound ε(1e-5) of ``steps`` training steps, re-accounted by a fresh accountant."""
    return PldAccountant("sound", discretization=D).compose(training_event(config, steps=steps)).get_epsilon(1e-5)


@pytest.mark.parametrize("config,target,steps", CONFIGS)
def test_calibration_round_trip(config, target, steps):
    r = calibrate_sigma(config, target, 1e-5, steps=steps, tolerance=TOL, discretization=D)
    assert r.compositions == count_compositions(training_event(config, steps=steps))
    assert sound_epsilon(config.with_(sigma=r.sigma), steps) == r.epsilon <= target  # an accounting at D
    assert sound_epsilon(config.with_(sigma=r.sigma * (1 - TOL)), steps) > target


@pytest.mark.parametrize("config,target,steps", CONFIGS[:6])
def test_the_coarse_search_changes_cost_not_the_guarantee(config, target, steps, monkeypatch):
    """Without the coarse search (COARSE_MAX below every grid) the answer meets the same guarantee,
    and the coarse search never costs more accountings on the asked grid."""
    from tsdp.verify import calibration

    with_coarse = calibrate_sigma(config, target, 1e-5, steps=steps, tolerance=TOL, discretization=D)
    monkeypatch.setattr(calibration, "COARSE_MAX", 0.0)
    plain = calibrate_sigma(config, target, 1e-5, steps=steps, tolerance=TOL, discretization=D)
    assert plain.coarse_discretization is None and with_coarse.coarse_discretization == 10 * D
    assert with_coarse.evaluations <= plain.evaluations
    for r in (plain, with_coarse):
        assert r.sigma_rejected >= r.sigma * (1 - TOL) and r.epsilon_rejected > target >= r.epsilon


def test_a_target_every_sigma_meets_answers_the_floor_after_two_accountings():
    """ε = 1e9 (the checker's `tsdp calibrate --epsilon 1e9 --delta 1e-5 --steps 10`, which walked down five costly
    σ and ran past a time limit): σ₀ and the floor are the only accountings on the coarse grid, the floor the only
    one on the asked grid, and the floor's ε is the real one."""
    from tsdp.verify.calibration import SIGMA_MIN

    r = calibrate_sigma(DEFAULT_CONFIG, 1e9, 1e-5, steps=10, discretization=D)
    assert (r.coarse_evaluations, r.evaluations) == (2, 1) and r.coarse_discretization == 10 * D
    assert r.sigma == SIGMA_MIN and r.sigma_rejected is None
    assert r.epsilon == sound_epsilon(DEFAULT_CONFIG.with_(sigma=SIGMA_MIN), 10) <= 1e9


def test_calibration_rejects_bad_target():
    with pytest.raises(ConfigError):
        calibrate_sigma(DEFAULT_CONFIG, 0.0, 1e-5, steps=1)


@pytest.mark.parametrize("theorem", ["T9", "T3", "T10"])
def test_calibration_refuses_a_lower_bound(theorem):
    """A lower bound as the accountant: T9 gave σ = 2.17 where the sound bound needs 5.68."""
    from tsdp.theorems.bounds.base import TheoremError

    config = DEFAULT_CONFIG.with_(instances=2, batch_size=64,
                                 **({"top": "deterministic"} if theorem == "T3" else {}),
                                 **({"bottom": "poisson"} if theorem == "T10" else {}))
    with pytest.raises(TheoremError, match="lower bound"):
        calibrate_sigma(config, 2.0, 1e-5, steps=100, theorem=theorem, discretization=D)


@pytest.mark.parametrize("kw,steps,epochs,per_unit", [
    ({}, 10, None, lambda c: c.rho * c.r),  # T6: ρ r
    ({"instances": 2, "batch_size": 64}, 7, None, lambda c: c.rho * (1 - (1 - c.r) ** 2)),  # T7: ρ (1 - (1 - r)^λ)
    ({"bottom": "poisson"}, 5, None, lambda c: c.rho * (1 - (1 - c.q) ** c.k)),  # T8: ρ (1 - (1 - q)^k)
    ({"top": "deterministic"}, None, 3, lambda c: c.r),  # T1: r per epoch
    ({"top": "deterministic", "instances": 2, "batch_size": 64}, None, 2, lambda c: 1 - (1 - c.r) ** 2),  # T2
    ({"top": "pooled", "theorem": "T13"}, 4, None, lambda c: Fraction(c.batch_size, c.n_windows_total)),  # T13
])
def test_the_total_variation_bound_is_the_probability_that_the_element_is_used_at_all(kw, steps, epochs, per_unit):
    """1 - (1 - p)^n with p the closed-form probability that a composition uses the changed element (THEOREMS.md's
    rates, exact Fractions), rounded up by at most 1e-11 relative."""
    from fractions import Fraction as F

    from tsdp.verify.calibration import total_variation_bound

    theorem = kw.pop("theorem", None)
    config = DEFAULT_CONFIG.with_(**kw)
    run = training_event(config, steps=steps, epochs=epochs, theorem=theorem)
    exact = 1 - (1 - F(per_unit(config))) ** count_compositions(run)
    got = total_variation_bound(run)
    assert exact <= F(got) <= exact * (1 + F(1, 10 ** 11))


def test_the_total_variation_bound_caps_the_one_step_delta_at_every_sigma():
    """T6's one-step δ(0) is ρ r (2Φ(1/σ) - 1) (tests/theorems/test_closed_forms.py): below the bound of one step, ρ r,
    at every σ, and reaching it as σ → 0."""
    from scipy.stats import norm

    from tsdp.verify.calibration import total_variation_bound

    limit = total_variation_bound(training_event(DEFAULT_CONFIG, steps=1))
    rate = float(DEFAULT_CONFIG.rho * DEFAULT_CONFIG.r)
    assert limit == pytest.approx(rate, rel=1e-11)
    closed = [rate * (2 * norm.cdf(1 / sigma) - 1) for sigma in (4.0, 1.0, 0.5, 0.05)]
    assert closed == sorted(closed) and closed[-1] <= limit and closed[-1] == pytest.approx(limit, rel=1e-11)


@pytest.mark.parametrize("delta,every", [(0.6, True), (0.0957, True), (0.095, False)])
def test_calibration_says_when_every_sigma_meets_the_target(delta, every):
    """10 steps of the default configuration use the changed element with probability 1 - 0.99^10 = 0.0956: at δ above
    it every σ meets any target (ε = 0); below it a σ is calibrated, with a rejected σ below it."""
    r = calibrate_sigma(DEFAULT_CONFIG, 1.0, delta, steps=10, tolerance=TOL, discretization=D)
    assert r.every_sigma is every and r.total_variation == pytest.approx(1 - 0.99 ** 10, rel=1e-11)
    assert every or r.sigma_rejected is not None


@pytest.mark.parametrize("kw,steps,epochs", [({}, 10, None), ({"top": "deterministic"}, None, 2),
                                             ({"top": "shuffle", "instances": 2, "batch_size": 64}, None, 1)])
def test_a_delta_above_the_total_variation_is_answered_without_a_search(kw, steps, epochs, monkeypatch):
    """At δ ≥ the total variation every σ > 0 meets the target with ε = 0 exactly (total_variation_bound's argument),
    so no σ is accounted: no accounting runs (get_epsilon fails if called), the counts say so (0 and 0, no coarse
    grid), σ is the search's floor (the smallest σ calibrate names; its ε is the exact 0, not a grid's estimate) and
    the configuration carries it."""
    from tsdp.verify.calibration import SIGMA_MIN, total_variation_bound

    def no_accounting(*args, **kwargs):
        raise AssertionError("an accounting ran")

    config = DEFAULT_CONFIG.with_(**kw)
    tv = total_variation_bound(training_event(config, steps=steps, epochs=epochs))
    monkeypatch.setattr(PldAccountant, "get_epsilon", no_accounting)
    r = calibrate_sigma(config, 1.0, tv, steps=steps, epochs=epochs, discretization=D)
    assert r.every_sigma and r.total_variation == tv
    assert (r.sigma, r.epsilon, r.sigma_rejected, r.epsilon_rejected) == (SIGMA_MIN, 0.0, None, None)
    assert (r.evaluations, r.coarse_evaluations, r.coarse_discretization) == (0, 0, None)
    assert r.config == config.with_(sigma=SIGMA_MIN).as_dict() and r.discretization == D


def test_a_run_that_always_uses_the_changed_element_has_total_variation_one():
    """Deterministic iteration with L = 2, L_C = L_F = 1 has one window per sequence (r = 1): every epoch uses the
    changed element, so the bound is 1 (a domain error of log1p(-1) before), and calibrate searches a σ at any δ."""
    from tsdp.verify.calibration import total_variation_bound

    config = DEFAULT_CONFIG.with_(top="deterministic", L=2, context_length=1, forecast_length=1)
    assert config.r == 1 and total_variation_bound(training_event(config, epochs=2)) == 1.0
    r = calibrate_sigma(config, 1.0, 0.5, epochs=1, tolerance=TOL, discretization=D)
    assert not r.every_sigma and r.total_variation == 1.0 and r.sigma_rejected is not None
