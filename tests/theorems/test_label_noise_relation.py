"""The label-noise bound (T11, Thm G.1, proved for (1, v)-event neighbours) is applied only where its proof holds.

Paper Def. `bounded_neighboring_relations`: w-event neighbours differ in w consecutive indices, w-user neighbours in
any w indices; at w = 1 both differ in one index by at most v, one relation. tsdp's label-noise level trains
(1, v)-user-level (THEOREMS.md erratum 14) and gets T11: sound. For w > 1 the paper's generalisation keeps σ_C = σ_F
only, with τ for a mean shift of √w, under either relation; σ_C ≠ σ_F must be refused. References: the hockey-stick
divergence of T11's pair in closed form (scipy's normal tails), with r from the relation's own
k (event: L_C + L_F + w - 1; user: w (L_C + L_F); at most T) and τ = erf(√w / (2√2 σ)), not from tsdp's code.
"""
import math

import numpy as np
import pytest
from scipy import special, stats

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.hockey_stick import hockey_stick as pair_hockey_stick
from tsdp.theorems.registry import select_bound

BASE = dict(N=20, L=40, context_length=4, forecast_length=2, batch_size=5, top="wor", bottom="wr", sigma=1.2, v=1.0)
ALPHAS = (1.0, 1.5, 3.0, 10.0)


def hockey_stick(weight, sigma, alpha):
    """H_α((1 - w) N(0, σ) + w N(2, σ) ‖ N(0, σ)) for α ≥ 1 in closed form: p > α q exactly where
    x > x* = 1 + σ²/2 · ln(1 + (α - 1)/w), so H = (1 - w - α) Φ̄(x*/σ) + w Φ̄((x* - 2)/σ)."""
    x = 1 + sigma**2 / 2 * math.log1p((alpha - 1) / weight)
    return (1 - weight - alpha) * stats.norm.sf(x / sigma) + weight * stats.norm.sf((x - 2) / sigma)


def tau(s, w):
    return 1.0 if s == 0 else special.erf(math.sqrt(w) / (2 * math.sqrt(2) * s))


def closed_form_weight(relation, w, sigma_context, sigma_forecast):
    lc, lf, t = BASE["context_length"], BASE["forecast_length"], BASE["L"] - BASE["forecast_length"] + 1
    k = min(lc + lf + w - 1 if relation == "event" else w * (lc + lf), t)
    rho = (BASE["batch_size"] // 1) / BASE["N"]
    phi = lf / (lc + lf)
    return rho * k / t * (phi * tau(sigma_forecast, w) + (1 - phi) * tau(sigma_context, w))


def assert_profile(bound, config, weight):
    """The bound's profile on both of tsdp's paths (sympy, and the accountant's numeric one) against the closed form."""
    want = [hockey_stick(weight, BASE["sigma"], a) for a in ALPHAS]
    numeric = bound.pair_form(config, numeric=True)
    assert numeric.weight == 1
    for got in (bound.profile(config, np.array(ALPHAS)), pair_hockey_stick(numeric.ge, np.array(ALPHAS))):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("relation", ["event", "user"])
@pytest.mark.parametrize("sigma_forecast", [1.0, 2.0, 5.0])
def test_label_noise_at_w_1_is_t11_with_the_one_relation_both_names_mean(relation, sigma_forecast):
    config = TrainingConfig(**BASE, relation=relation, w=1, sigma_forecast=sigma_forecast)
    bound, _ = select_bound(config)
    assert bound.id == "T11"
    weight = closed_form_weight(relation, 1, 0.0, sigma_forecast)
    assert_profile(bound, config, weight)


@pytest.mark.parametrize("relation", ["event", "user"])
@pytest.mark.parametrize("w", [2, 5])
def test_w_above_1_takes_equal_noise_with_the_relations_own_k_and_a_root_w_shift(relation, w):
    config = TrainingConfig(**BASE, relation=relation, w=w, sigma_context=1.5, sigma_forecast=1.5)
    bound, _ = select_bound(config)
    assert bound.id == "T11"
    weight = closed_form_weight(relation, w, 1.5, 1.5)
    assert_profile(bound, config, weight)


@pytest.mark.parametrize("relation", ["event", "user"])
@pytest.mark.parametrize("sigma_context", [0.0, 0.5])
def test_w_above_1_refuses_label_noise_unequal_to_the_context_noise(relation, sigma_context):
    with pytest.raises(ConfigError) as refused:
        TrainingConfig(**BASE, relation=relation, w=3, sigma_context=sigma_context, sigma_forecast=2.0)
    assert refused.value.parameter == "sigma_context"
