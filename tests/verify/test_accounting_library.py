"""Agreement with dp-accounting's own mixture mechanism, and the accountant's API.

T1 and T6 are one mixture against one Gaussian, exactly what
``from_mixture_gaussian_mechanism`` accounts (REMOVE and ADD directions). Discretisation
1e-3 on both sides (the library's per-point inversion is slow at 1e-4).
"""
import math

import pytest
from dp_accounting.pld import privacy_loss_distribution as lib

from tsdp.theorems.config import DEFAULT_CONFIG, ConfigError
from tsdp.theorems.registry import get
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.accounting import delta as account_delta
from tsdp.verify.accounting import epsilon
from tsdp.verify.events import training_event

D = 1e-3
DELTA = 1e-5
CASES = {"T6": DEFAULT_CONFIG, "T1": DEFAULT_CONFIG.with_(top="deterministic", sigma=2.0)}


def library_plds(theorem):
    config = CASES[theorem]
    num = get(theorem).pair(config).numeric()
    sens, probs = list(num.a * num.sigma), list(num.p)
    pess = lib.from_mixture_gaussian_mechanism(num.sigma, sens, probs, value_discretization_interval=D)
    opt = lib.from_mixture_gaussian_mechanism(num.sigma, sens, probs, value_discretization_interval=D,
                                              pessimistic_estimate=False, use_connect_dots=False)
    return pess, opt


@pytest.mark.parametrize("theorem", [pytest.param("T6", marks=pytest.mark.slow), "T1"])
def test_attained_and_sound_against_library(theorem):
    """The accountant's three estimates after n compositions against the library's own mixture PLD."""
    config = CASES[theorem]
    lib_pess, lib_opt = library_plds(theorem)

    def ours(estimate, n):
        run = training_event(config, theorem=theorem, **({"epochs": n} if get(theorem).scope == "epoch" else {"steps": n}))
        assert run.count == n
        return PldAccountant(estimate, discretization=D).compose(run).get_epsilon(DELTA)

    for n in (1, 100, 1000):
        e_lib_p = (lib_pess if n == 1 else lib_pess.self_compose(n)).get_epsilon_for_delta(DELTA)
        e_lib_o = (lib_opt if n == 1 else lib_opt.self_compose(n)).get_epsilon_for_delta(DELTA)
        e_att, e_att_p, e_sound = ours("attained", n), ours("attained_upper", n), ours("sound", n)
        assert math.isclose(e_att, e_lib_o, rel_tol=1e-3), (n, e_att, e_lib_o)
        assert math.isclose(e_att_p, e_lib_p, rel_tol=1e-3), (n, e_att_p, e_lib_p)
        assert e_att <= e_att_p
        assert e_sound >= e_lib_p * (1 - 1e-9), (n, e_sound, e_lib_p)
        if n == 1:
            assert math.isclose(e_sound, e_lib_p, rel_tol=1e-3)


def test_sound_and_attained_are_the_accountants():
    """accounting.epsilon is the accountant over training_event, the same two numbers to the last bit."""
    config = DEFAULT_CONFIG.with_(sigma=2.0)
    for steps in (1, 5, 20):
        r = epsilon(config, DELTA, steps=steps, discretization=D)
        run = training_event(config, steps=steps)
        assert r.epsilon == PldAccountant("sound", discretization=D).compose(run).get_epsilon(DELTA)
        assert r.epsilon_attained == PldAccountant("attained", discretization=D).compose(run).get_epsilon(DELTA)
        assert r.compositions == steps


def test_sound_upper_attained_lower_and_delta_mode():
    config = DEFAULT_CONFIG.with_(instances=2, batch_size=64, sigma=2.0)
    r = epsilon(config, DELTA, steps=10, discretization=D)
    assert r.theorem == "T7" and r.construction == "T9"
    assert r.epsilon_attained <= r.epsilon
    back = account_delta(config, r.epsilon, steps=10, discretization=D)
    assert math.isclose(back.delta, DELTA, rel_tol=1e-2)
    assert back.delta_attained <= back.delta
    aug = epsilon(DEFAULT_CONFIG.with_(sigma_context=1.0, sigma_forecast=1.0, sigma=2.0), DELTA, steps=2,
                  discretization=D)
    assert aug.theorem == "T11" and aug.construction == "T11"  # Thm G.1's construction pair
    assert aug.epsilon_attained <= aug.epsilon
    with pytest.raises(ConfigError):
        epsilon(config, 1.5, steps=1)


@pytest.mark.parametrize("bad", [(), ("upper",), "exact", ("sound", "bogus")])
def test_estimates_must_name_known_estimates(bad):
    from tsdp.verify.accountant import account

    with pytest.raises(ConfigError, match="estimates"):
        account(training_event(DEFAULT_CONFIG, steps=1), delta=1e-5, estimates=bad)


@pytest.mark.parametrize("cpus", [1, 2])
def test_estimates_composed_side_by_side_are_each_one_alone(monkeypatch, cpus):
    """account() composes its estimates on one thread per available CPU, and the attained envelope its whole run beside
    its chain of powers; every value is the one its own accountant gives alone, bit for bit, at δ and at
    ε, on 1 CPU (in turn) and 2 (side by side); a refusal and the sound estimate's δ-too-small error keep their
    places."""
    from tsdp.verify import cpus as cpu_module
    from tsdp.verify.accountant import DeltaTooSmallError, account

    monkeypatch.setattr(cpu_module, "available_cpus", lambda: cpus)
    event = training_event(DEFAULT_CONFIG, steps=300)
    both = account(event, delta=1e-5, bracket=True)
    for estimate in ("sound", "attained", "attained_upper"):
        alone = PldAccountant(estimate).compose(event)
        assert getattr(both, f"epsilon_{estimate}") == alone.get_epsilon(1e-5)
    at_eps = account(event, epsilon=2.0)
    assert at_eps.delta_sound == PldAccountant("sound").compose(event).get_delta(2.0)
    assert at_eps.delta_attained == PldAccountant("attained").compose(event).get_delta(2.0)
    with pytest.raises(DeltaTooSmallError):
        account(event, delta=1e-300)
