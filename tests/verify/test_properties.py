"""Hypothesis property tests for properties 1-5 of `tsdp verify`, driving the same check
functions (:mod:`verify.checks`) on drawn configurations and mixtures.

Example counts (``max_examples``, derandomised by tests/conftest.py): axioms 30, orders 15,
α-symmetry 10 (mpmath, dps 40), profile self-symmetry 10, T5 8, parameter monotonicity 12,
lemmas 6 seeds each (each seed several random mixtures). Every test asserts the check's
status and a measured number, so a wrong engine or bound fails here.
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY
from tsdp.verify.checks import axioms, lemmas, ordering
from tsdp.verify.checks.common import evaluated_ids

TRAINING_IDS = evaluated_ids()
from tsdp.verify.checks.grid import for_bound
from tsdp.verify.checks.ordering import ORDER_TOL

PAIR_IDS = [i for i in TRAINING_IDS if i not in ("T7", "T8")]


@st.composite
def base_configs(draw) -> TrainingConfig:
    """A base configuration that every scheme can be fitted to (λ ≤ 4: Λ = 4 N', N' ≤ N/4)."""
    N = draw(st.integers(8, 1000))
    forecast = draw(st.integers(1, 4))
    context = draw(st.integers(0, 5))
    L = draw(st.integers(forecast, 60))
    per_step = draw(st.integers(1, N // 4))
    sigma = draw(st.sampled_from([0.5, 0.7, 1.0, 1.5, 2.5, 4.0]))
    relation = draw(st.sampled_from(["event", "user"]))
    w = draw(st.integers(1, 2))
    sf = draw(st.sampled_from([0.0, 0.3, 1.0, 2.5]))
    sc = sf if w > 1 else draw(st.sampled_from([0.0, 0.5, 1.5]))
    return TrainingConfig(N=N, L=L, context_length=context, forecast_length=forecast, batch_size=4 * per_step,
                          sigma=sigma, relation=relation, w=w, sigma_context=sc, sigma_forecast=sf)


@settings(max_examples=30)
@given(base_configs(), st.sampled_from(TRAINING_IDS), st.integers(1, 4))
def test_property1_profile_axioms(config, theorem, lam):
    b = REGISTRY[theorem]
    r = axioms.profile_axioms(b, for_bound(b, config, instances=lam), "hyp")
    assert r.status == "pass", r.explanation
    assert r.measured["H(0)"] == 1.0


@settings(max_examples=15)
@given(base_configs(), st.integers(1, 4))
def test_property2_orders(config, lam):
    B = REGISTRY
    plain = config.with_(sigma_context=0.0, sigma_forecast=0.0)
    det = plain.with_(top="deterministic")
    checks = [
        ordering.order(B["T3"], B["T2"], for_bound(B["T2"], det, instances=lam)),
        ordering.order(B["T9"], B["T7"], for_bound(B["T9"], plain, instances=lam)),
        ordering.order(B["T10"], B["T8"], for_bound(B["T10"], plain, instances=lam)),
        ordering.order(B["T10-printed"], B["T10"], for_bound(B["T10"], plain, instances=lam)),
        ordering.order(B["T11"], B["T6"], for_bound(B["T11"], config)),
        ordering.order(B["T13"], B["T14"], for_bound(B["T14"], config)),
        ordering.order(B["T3"], B["T1"], for_bound(B["T3"], det, instances=1), for_bound(B["T1"], det), equal=True),
        ordering.order(B["T9"], B["T6"], for_bound(B["T9"], plain, instances=1), for_bound(B["T6"], plain), equal=True),
    ]
    for r in checks:
        assert r.status == "pass", (r.name, r.explanation)
        assert r.measured["max_lower_minus_upper"]["max"] <= ORDER_TOL


@settings(max_examples=10)
@given(base_configs(), st.sampled_from(PAIR_IDS), st.integers(1, 3))
def test_property3_pair_symmetry(config, theorem, lam):
    b = REGISTRY[theorem]
    r = axioms.pair_symmetry(b, for_bound(b, config, instances=lam), "hyp")
    assert r.status == "pass", r.explanation
    assert r.measured["max_abs_gap"] <= 1e-25


@settings(max_examples=10)
@given(base_configs(), st.sampled_from(TRAINING_IDS))
def test_property3_profile_self_symmetry(config, theorem):
    b = REGISTRY[theorem]
    r = axioms.profile_self_symmetry(b, for_bound(b, config, instances=2), "hyp")
    assert r.status == "pass", r.explanation


@settings(max_examples=8)
@given(base_configs())
def test_property4_t5_lambda_one_minimises(config):
    B = REGISTRY
    r = ordering.t5_monotonicity(B["T1"], B["T2"], B["T3"], B["T4"], config, "hyp")
    assert r.status == "pass", r.explanation
    assert r.measured["max_excess"] <= ORDER_TOL


@settings(max_examples=12)
@given(base_configs(), st.sampled_from(TRAINING_IDS))
def test_property4_parameter_monotonicity(config, theorem):
    b = REGISTRY[theorem]
    cfg = for_bound(b, config, instances=2)
    sweeps = ordering.parameter_sweeps(b, cfg)
    assert {"r", "sigma"} <= {s[0] for s in sweeps}
    for par, inc, vals, cfgs in sweeps:
        r = ordering.monotone_in(b, cfgs, par, inc, "hyp", vals)
        assert r.status == "pass", (par, r.explanation)


@settings(max_examples=6)
@given(st.integers(0, 2**32 - 1))
def test_property5_joint_convexity(seed):
    r = lemmas.advanced_joint_convexity(np.random.default_rng(seed), trials=3, label="hyp")
    assert r.status == "pass", r.explanation
    assert r.measured["max_quadrature_gap"] <= 1e-9


@settings(max_examples=6)
@given(st.integers(0, 2**32 - 1))
def test_property5_mean_monotonicity_and_binomial_dominance(seed):
    rng = np.random.default_rng(seed)
    m = lemmas.mean_monotonicity(rng, trials=8, label="hyp")
    assert m.status == "pass", m.explanation
    d = lemmas.binomial_dominance(rng, trials=30, label="hyp")
    assert d.status == "pass", d.explanation
    assert d.measured["max_cdf_excess"] <= 0
