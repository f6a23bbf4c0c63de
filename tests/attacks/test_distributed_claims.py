"""Full-size tightness claims for the sharded auditor with thresholds from theory (T6, audit configuration
N = 320, Λ = 64, L = 4, σ = 1, δ = 1e-3, 95% confidence), fixed seeds; full size under the `claim` marker."""
import pytest

from tsdp.theorems.config import TrainingConfig
from tsdp.attacks.montecarlo.audit import audit
from tsdp.attacks.montecarlo.options import TrialPlan

AUDIT = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)


def _check(r, minimum):
    assert r.epsilon_lower <= r.epsilon_sound
    assert r.ratio >= minimum, r.to_dict()
    assert r.gof_pvalue > 1e-3


@pytest.mark.claim
def test_t6_one_step_1e6_trials_on_five_seeds():
    """1 step, 1e6 trials per world, seeds 0-4: every seed ≥ 0.87 (the criterion of the claim).

    The certified bound is the union test at its exact level (attacks.montecarlo.exact_level). Simulated at the design's rates
    (threshold 3.5085, union split 0.005 + 0.045; 2e5 audits, the certified value interpolated on an exact grid of
    counts): mean ratio 0.926, sd 0.035 (the ~50 false positives' noise), so one run falls below 0.87 with
    probability 0.048 and five seeds all reach it with probability 0.78 (the union bound alone: 0.907, 0.14, 0.46).
    Measured: 0.927, 0.916, 0.908, 0.875 (61 false positives against 50 expected), 0.933 (union bound alone
    0.908, 0.897, 0.889, 0.857, 0.915); 16-30 s per seed.
    """
    for seed in range(5):
        _check(audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(1_000_000, seed=seed)), 0.87)


@pytest.mark.claim
def test_t6_one_step_1e7_trials_reaches_095():
    """1 step, 1e7 trials per world: ratio ≥ 0.95 (the design's expected union bound 0.968, sd ≈ 0.013; the exact
    level adds ~0.007 at these counts). Measured: certified 3.71741 (union bound alone 3.6909, ratio 0.9929), i.e.
    ratio 1.00001 against the attained 3.71737 and just under the sound 3.71742: seed 7 drew 332 false positives
    against 368 expected (1.9 sd low), a draw in the 5% tail where a 95% lower bound may pass the truth (here by
    ~3e-5; about 3% of runs by the normal approximation). 2 workers, 139 s."""
    _check(audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(10_000_000, seed=7, workers=2)), 0.95)


@pytest.mark.claim
def test_t6_one_step_at_the_papers_delta_1e5():
    """The distributed run at δ = 1e-5 (1 step, 1e7 trials per world): the design expects a union bound of ratio 0.78
    (threshold where ~6 false positives are expected, sd ≈ 0.06); ≥ 0.65 asserted. Measured 0.8058 (ε_lower 5.299
    of attained 6.575; union bound alone 5.216, 0.7932: 2188 true and 5 false positives; 2 workers, 139 s)."""
    _check(audit("T6", AUDIT, delta=1e-5, trials=TrialPlan(10_000_000, seed=7, workers=2)), 0.65)


@pytest.mark.claim
def test_t6_ten_steps_1e7_trials_reaches_090():
    """10 steps, 1e7 trials per world: ratio ≥ 0.90 (the design's expected union bound 0.916: a narrow margin).
    Measured 0.9756 (ε_lower 7.301 of attained 7.484; union bound alone 7.259, 0.9699: 27515 true and 6 false
    positives against 11 expected; GOF p = 0.49; 2 workers, 19 min on 2 cores)."""
    _check(audit("T6", AUDIT, delta=1e-3, steps=10, trials=TrialPlan(10_000_000, seed=7, workers=2)), 0.90)


@pytest.mark.slow
def test_t6_one_step_2e5_trials_mean_ratio():
    """2e5 trials per world (fits CI), seeds 3-5: mean ratio ≥ 0.72. The design's expected union bound is 0.81; with
    ~20 false positives the ratio of one run spreads by ~0.06 (sd of the mean of three ~0.035). Measured (certified
    at the exact level) 0.755, 0.838, 0.792; the union bound alone 0.722, 0.807, 0.761. The 50% selection split
    certifies on 1e5 trials, whose ceiling (the optimal threshold known in advance) is 0.757 in expectation for the
    union bound; measured on the same seeds 0.959, 0.801, 0.841 (union bound alone 0.900, 0.757, 0.790)."""
    ratios = [audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(200_000, seed=seed)).ratio for seed in (3, 4, 5)]
    assert sum(ratios) / 3 >= 0.72, ratios
