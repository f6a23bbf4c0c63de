"""One-run canary audits (Steinke, Nasr & Jagielski 2023): the bound's statistics and an audit of a trained model."""
import numpy as np
from scipy import stats

from theorems.config import TrainingConfig
from attacks.canary import epsilon_lower_bound, guess_bound, p_value


def test_p_value_without_delta_is_the_binomial_tail():
    for r, v, eps in ((100, 70, 0.5), (40, 40, 2.0), (10, 3, 0.0)):
        q = 1 / (1 + np.exp(-eps))
        assert p_value(1000, r, v, eps, 0.0) == stats.binom.sf(v - 1, r, q)


def test_delta_only_weakens_the_bound():
    assert p_value(1000, 200, 190, 2.0, 1e-5) >= p_value(1000, 200, 190, 2.0, 0.0)
    assert epsilon_lower_bound(1000, 200, 190, 1e-5, 0.05) <= epsilon_lower_bound(1000, 200, 190, 0.0, 0.05)


def test_perfect_guesses_on_1000_canaries_give_a_large_bound_and_random_scores_none():
    rng = np.random.default_rng(0)
    included = rng.random(1000) < 0.5
    perfect = guess_bound(included + 0.01 * rng.random(1000), included, 1e-5, 0.025)
    assert perfect["epsilon_lower"] >= 2 and perfect["correct"] == perfect["guesses"]
    assert guess_bound(rng.random(1000), included, 1e-5, 0.025)["epsilon_lower"] < 0.5


def test_audit_of_a_model_trained_at_epsilon_1_stays_below_1():
    """Soundness on a real training run: the one-run lower bound does not exceed the training ε = 1."""
    from attacks.canary import audit_model

    cfg = TrainingConfig(N=50, L=40, context_length=8, forecast_length=1, batch_size=20, instances=2, sigma=10.0)
    r = audit_model("simple-ff", cfg, canaries=200, epsilon=1.0, delta=1e-5, seed=0, lr=1e-2)
    assert r["steps"] > 0 and r["epsilon_spent"] <= 1.0
    assert r["epsilon_lower"] <= 1.0, r
