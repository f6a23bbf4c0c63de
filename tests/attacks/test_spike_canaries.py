"""Spike canaries on a returned model: a memoriser ranked right and certified near the ceiling, a model that learns
nothing not flagged, and the bounded per-window score (tsdp.attacks.canary.user_training)."""
import numpy as np
import pytest

from tsdp.bench.blackbox import NearestNeighbour
from tsdp.attacks.canary.user_training import audit_training, window_evidence
from tsdp.datasets.series import synthetic_for
from tsdp.theorems.config import TrainingConfig

GEOMETRY = TrainingConfig(N=200, L=100, context_length=2, forecast_length=1)
DATA = synthetic_for(GEOMETRY, seed=0)  # what `tsdp audit-fn --data synthetic --N 200 --L 100` trains on


def test_window_evidence_is_the_log_likelihood_ratio_bounded_per_window():
    """Σ_w tanh(gain): each window's term within 4% of its gain below 0.35 in size (the log-likelihood ratio of a
    probabilistic model that barely moved), at most 1 per window however large a gain (a memoriser's)."""
    rng = np.random.default_rng(0)
    small = rng.uniform(-0.35, 0.35, size=(300, 1))
    np.testing.assert_allclose(window_evidence(small), small[:, 0], rtol=0.04)
    windows = rng.uniform(-1, 1, size=(20, 3))
    np.testing.assert_allclose(window_evidence(windows), np.tanh(windows).sum(1), rtol=1e-12)
    large = np.array([[1e6, 1e6, -1e9], [1e3, 0.0, 0.0]])
    np.testing.assert_allclose(window_evidence(large), [1.0, 1.0], atol=1e-12)
    assert np.all(np.abs(window_evidence(rng.normal(0, 100, size=(50, 5)))) <= 5)


def test_a_memoriser_is_certified_near_the_ceiling_of_every_guess_right():
    """1-NN on every training window (true ε = ∞), 1000 spike canaries, claim 4.5: every canary ranked right
    (AUC 1), ε ≥ 4.5 and within 1% of the ceiling (measured 4.917 against 4.924), a violation, limited by the audit's
    size. Before (unbounded sum of squared-error gains, symmetric guess sets): 3.74 against 5.11, AUC 0.996."""
    r = audit_training(lambda series: NearestNeighbour(series, GEOMETRY), DATA, GEOMETRY, canaries=1000,
                       delta=1e-5, epsilon=4.5, canary="spike", seed=0)
    s = r.scores["memorisation"]
    ceiling = max(s.ceiling["dp"], s.ceiling["steinke"])
    assert s.auc == 1.0 and r.epsilon_lower >= 4.5 and r.epsilon_lower >= 0.99 * ceiling, r.epsilon_lower
    assert r.violation and s.limited_by == "audit size" and r.spike == 10.0 and r.gradient is None


@pytest.mark.parametrize("seed", [0, 1])
def test_a_model_that_learns_nothing_is_not_flagged(seed):
    """A model that forecasts 0 whatever it saw: its scores do not depend on the inclusions, so the 95% bound
    exceeds 0.5 with probability ≤ 5% (the false-failure rate of each seed); measured 0 (AUC ≈ 0.5)."""
    r = audit_training(lambda series: lambda c, f: (f.double() ** 2).sum(-1), DATA, GEOMETRY, canaries=1000,
                       delta=1e-5, epsilon=0.5, canary="spike", seed=seed)
    assert not r.violation and r.epsilon_lower <= 0.5, r.epsilon_lower


@pytest.mark.slow
def test_a_correct_dp_loop_is_flagged_no_more_often_than_the_error_rate():
    """tsdp's DP-SGD loop (simple-ff, σ calibrated so that 20 epochs spend the claim ε = 1 at δ = 1e-5) audited
    black-box with 400 spike canaries, 100 times (seeds 0-99: canaries, inclusions and training). Each audit flags a
    correct loop (its 95% bound above the claim, or the claimed curve rejected) with probability ≤ 5%, so 12 or more
    flags in 100 has probability ≤ P[Binomial(100, 0.05) ≥ 12] ≈ 0.0043 (the false-failure rate). No bound may be
    non-finite or negative."""
    from scipy import stats

    from tsdp.bench.blackbox import TsdpTraining
    from tsdp.datasets.series import synthetic
    from tsdp.training.batch_sampler import fit_lengths
    from tsdp.verify.calibration import calibrate_sigma

    data = synthetic(100, 41, seed=0, noise=2.0)
    config = fit_lengths(TrainingConfig(context_length=4, forecast_length=1, batch_size=32), data.split(1)[0].series)
    sigma = calibrate_sigma(config, 1.0, 1e-5, epochs=20).sigma
    bounds, flagged = [], 0
    for seed in range(100):
        r = audit_training(TsdpTraining(config, "simple-ff", 20, sigma, 1e-5, seed), data, config, canaries=400,
                           delta=1e-5, epsilon=1.0, canary="spike", seed=seed)
        bounds.append(r.epsilon_lower)
        flagged += bool(r.violation)
    assert np.all(np.isfinite(bounds)) and min(bounds) >= 0
    assert flagged <= 11 and stats.binom.sf(11, 100, 0.05) < 0.005, (flagged, max(bounds))
