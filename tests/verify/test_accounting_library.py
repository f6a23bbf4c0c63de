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
from tsdp.verify.accounting import compositions, epsilon, epsilon_of_steps, steps_per_epoch
from tsdp.verify.accounting import delta as account_delta
from tsdp.verify.pld import compose, pair_pld, sound_pld

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


@pytest.mark.parametrize("theorem", ["T6", "T1"])
def test_attained_and_sound_against_library(theorem):
    config, bound = CASES[theorem], get(theorem)
    lib_pess, lib_opt = library_plds(theorem)
    pair = bound.pair(config)
    ours_opt = pair_pld(pair, D)
    ours_pess = pair_pld(pair, D, pessimistic=True)
    sound = sound_pld(bound, config, D)
    for n in (1, 100, 1000):
        e_lib_p = compose(lib_pess, n).get_epsilon_for_delta(DELTA)
        e_lib_o = compose(lib_opt, n).get_epsilon_for_delta(DELTA)
        e_att = compose(ours_opt, n).get_epsilon_for_delta(DELTA)
        e_att_p = compose(ours_pess, n).get_epsilon_for_delta(DELTA)
        e_sound = compose(sound, n).get_epsilon_for_delta(DELTA)
        assert math.isclose(e_att, e_lib_o, rel_tol=1e-3), (n, e_att, e_lib_o)
        assert math.isclose(e_att_p, e_lib_p, rel_tol=1e-3), (n, e_att_p, e_lib_p)
        assert e_att <= e_att_p
        assert e_sound >= e_lib_p * (1 - 1e-9), (n, e_sound, e_lib_p)
        if n == 1:
            assert math.isclose(e_sound, e_lib_p, rel_tol=1e-3)


def test_schedules_and_training_hook():
    det = DEFAULT_CONFIG.with_(top="deterministic")
    assert steps_per_epoch(det) == math.ceil(det.N / det.sequences_per_step)
    assert compositions(get("T1"), det, steps=steps_per_epoch(det) + 1) == 2
    assert compositions(get("T1"), det, epochs=3) == 3
    assert compositions(get("T6"), DEFAULT_CONFIG, epochs=2) == 2 * DEFAULT_CONFIG.compositions_per_epoch
    with pytest.raises(ConfigError):
        compositions(get("T6"), DEFAULT_CONFIG, steps=-1)
    with pytest.raises(ConfigError):
        compositions(get("T6"), DEFAULT_CONFIG, steps=1, epochs=1)
    config = DEFAULT_CONFIG.with_(sigma=2.0)
    hook = epsilon_of_steps(config, DELTA, discretization=D)
    values = {s: hook(s) for s in (1, 5, 6, 20, 3)}
    for s, v in values.items():
        direct = epsilon(config, DELTA, steps=s, discretization=D).epsilon
        assert math.isclose(v, direct, rel_tol=1e-6), (s, v, direct)
    assert values[1] < values[5] < values[6] < values[20]
    assert hook(0) == 0.0


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
    assert aug.theorem == "T11" and aug.epsilon_attained is None
    with pytest.raises(ConfigError):
        epsilon(config, 1.5, steps=1)
