"""The anytime-valid sequential violation test (attacks.montecarlo.sequential) on planted bugs in the real loop, the correct loop,
and identical worlds (attacks.montecarlo.planted)."""
import math

import numpy as np
import pytest
from scipy import stats

from tsdp.theorems.config import TrainingConfig
from tsdp.attacks.montecarlo.audit import SoundClaim, audit, audit_statistics, theory
from tsdp.attacks.montecarlo.options import Confidence, Statistic, TrialPlan
from tsdp.attacks.montecarlo.statistics import cp_lower, cp_upper, error_split
from tsdp.attacks.montecarlo.planted import planted_loop
from tsdp.attacks.montecarlo.sequential import checkpoints
from tsdp.attacks.montecarlo.constructions import build, pair_numeric

import torch

from update_trials import released_updates

AUDIT = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)


def test_checkpoints_are_geometric_and_end_at_the_plan():
    assert checkpoints(1) == [1]
    assert checkpoints(16) == [1, 2, 4, 8, 16]
    assert checkpoints(20) == [1, 2, 4, 8, 16, 20]


@pytest.mark.parametrize("loop,means,weight,sigma", [
    ("noise_halved", [0.0, 2.0], 0.1, 0.5),     # noise std σC/2
    ("sampling_doubled", [0.0, 2.0], 0.2, 1.0),  # changed sequence drawn with probability 2N'/N: w = 2ρr
    ("clip_doubled", [0.0, 3.0], 0.1, 1.0),      # marked gradient 2C kept, noise σC: the marked mean moves 2 -> 3
])
def test_planted_bug_changes_the_loop_law_as_designed(loop, means, weight, sigma):
    """The planted loop's world-P updates follow the bugged mixture (KS, false-failure rate 1% per case, seed 1),
    so the bug lives in the loop, not in the statistics."""
    construction, overrides = planted_loop(build("T6", AUDIT), loop)
    y = released_updates(construction, "p", 20000, 1, torch.Generator().manual_seed(1), **overrides)[:, 0].numpy()
    cdf = lambda x: (1 - weight) * stats.norm.cdf(x, means[0], sigma) + weight * stats.norm.cdf(x, means[1], sigma)
    assert stats.kstest(y, cdf).pvalue > 0.01


@pytest.mark.parametrize("loop,seed", [("noise_halved", 0), ("sampling_doubled", 0), ("clip_doubled", 0)])
def test_planted_bugs_are_caught_within_ten_thousand_trials(loop, seed):
    """T6 on the audit configuration, δ = 1e-3, 95% confidence: a certified violation of the sound profile at a
    checkpoint of ≤ 8000 trials per world (shards of 1000: checkpoints 1000, 2000, 4000, 8000). Measured
    stopping points: noise halved 1000-2000, sampling doubled 2000, clipping doubled 2000-8000 trials."""
    r = audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(16000, seed=seed, shard_size=1000),
              confidence=Confidence(sequential=True), loop=loop)
    assert r.violation and r.violation_test.violation and r.violation_test.sequential, r.violation_test
    assert r.violation_test.trials <= 10_000
    assert r.run.stopped_early


@pytest.mark.slow
def test_correct_loop_raises_no_violation_beyond_the_stated_rate():
    """200 small sequential audits (2000 trials per world, shards of 500) of the correct loop, T6 (tight after one
    step: the sound profile is attained, the hardest case). Each raises a false violation with probability ≤ 5%;
    the count must stay ≤ the 1 - 1e-3 quantile of Bin(200, 0.05) (false-failure rate ≤ 1e-3)."""
    construction = build("T6", AUDIT)
    th = theory(construction, 1, 1e-3, [1.0])
    grid = [float(math.exp(e)) for e in np.linspace(0, th.epsilon_sound, 8)]
    profile = list(zip(grid, theory(construction, 1, 1e-3, grid).h_theory))
    violations = 0
    for seed in range(200):
        s = audit_statistics(construction, delta=1e-3, steps=1,
                             trials=TrialPlan(2000, seed=seed, shard_size=500, device="cpu"),
                             statistic=Statistic(alphas=[1.0]), confidence=Confidence(0.95, sequential=True),
                             sound=SoundClaim(th.epsilon_sound, tuple(profile)))
        violations += s.violation_test.violation
    assert violations <= stats.binom.isf(1e-3, 200, 0.05), violations


def _null_failure_probability(n, rate, delta, confidence, fp_share):
    """An upper bound on P(ε_lower > 0) of the fixed-threshold test when both worlds have the same rate: TP, FP i.i.d.
    Bin(n, rate). The certified value is positive only where its statistic, the union bound, is: CP_lower(TP) - δ >
    CP_upper(FP) at the split ``fp_share`` (exact double sum)."""
    a_pos, a_neg = error_split(confidence, fp_share)
    k = np.arange(n + 1)
    w = stats.binom.pmf(k, n, rate)
    lo, hi = cp_lower(k, n, a_pos) - delta, cp_upper(k, n, a_neg)
    cdf_fp = np.cumsum(w)
    j = np.searchsorted(hi, lo, side="left") - 1  # FP counts with CP_upper(FP) < lo: k ≤ j
    return float(np.sum(w * np.where(j >= 0, cdf_fp[np.clip(j, 0, n)], 0.0)))


def test_identical_worlds_certify_zero_in_every_run():
    """Null check: world Q runs world P's dataset; ε_lower = 0 on 10 seeds (theory threshold, 4000 trials).
    Per run P(ε_lower > 0) is bounded exactly from the design's rate and split; over 10 runs the false-failure rate
    is ≤ 10 × that (asserted < 1%)."""
    construction = build("T6", AUDIT)
    for seed in range(10):
        s = audit_statistics(construction, delta=1e-3, steps=1,
                             trials=TrialPlan(4000, seed=seed, shard_size=1000, device="cpu"),
                             statistic=Statistic(alphas=[1.0]), loop="identical_worlds")
        assert s.test.value == 0.0, s.test
    rate = s.design.tp_rate  # the statistic's law in world P: both worlds here
    assert 10 * _null_failure_probability(4000, rate, 1e-3, 0.95, s.design.fp_share) < 1e-2
    assert pair_numeric(construction.pair)[1][1] == pytest.approx(0.1)  # w = ρ r = 0.2 * 0.5


def test_certified_profile_holds_simultaneously_on_the_whole_grid():
    """Simultaneous coverage of the certified lower profile δ(ε) on 12 ε values (numpy draws of the T6 pair, not the
    loop): in 100 runs of 4000 draws per world, runs with the curve above the true H_α anywhere stay ≤ the
    1 - 1e-3 quantile of Bin(100, 0.05) (false-failure rate ≤ 1e-3)."""
    from tsdp.attacks.montecarlo.design import histogram_edges, tail_thresholds
    from tsdp.attacks.montecarlo.laws import statistic_law
    from tsdp.attacks.montecarlo.statistics import bin_counts, log_likelihood_ratio
    from tsdp.attacks.montecarlo.sequential import certified_profile

    num = (np.array([0.0, 2.0]), np.array([0.9, 0.1]), np.array([0.0]), np.array([1.0]), 1.0)
    law = statistic_law(num, 1)
    tests = tail_thresholds(law)
    edges = histogram_edges(law, [t for t, _ in tests])
    alphas = np.exp(np.linspace(0, 4, 12))
    true_h = np.array([np.sum(law.p * np.clip(1 - a * np.exp(-law.grid), 0, None)) for a in alphas])
    rng = np.random.default_rng(2)
    bad = 0
    for _ in range(100):
        yp = rng.normal(np.where(rng.random(4000) < 0.1, 2.0, 0.0), 1.0)[:, None]
        yq = rng.normal(0.0, 1.0, 4000)[:, None]
        lower = certified_profile(bin_counts(log_likelihood_ratio(yp, num), edges),
                                  bin_counts(log_likelihood_ratio(yq, num), edges), edges, tests, alphas, 0.05)
        assert np.all(lower >= 0) and np.all(np.diff(lower) <= 1e-12)  # a profile: non-increasing in α
        bad += bool(np.any(lower > true_h + 1e-4))  # 1e-4: the law's grid error on the true H_α
    assert bad <= stats.binom.isf(1e-3, 100, 0.05), bad


def test_an_audit_stopped_at_its_violation_says_how_many_trials_it_ran():
    """Noise halved stops at a checkpoint of 1000-2000 trials of the 16000 planned: the human report's first line
    gives the trials the bounds used and the plan ("2000 of 16000 planned trials"), not the plan alone as if run."""
    from tsdp.cli.cmd_audit import _human_audit

    r = audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(16000, seed=0, shard_size=1000),
              confidence=Confidence(sequential=True), loop="noise_halved")
    assert r.run.stopped_early and r.run.trials_run == r.violation_test.trials < 16000
    head = next(x for x in _human_audit(r.to_dict()).splitlines() if x.startswith("audit of T6"))
    assert f": {r.run.trials_run} of 16000 planned trials (the violation test stopped the run) x 1 training" in head
