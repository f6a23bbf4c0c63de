"""The Monte Carlo auditor on the real loop: soundness, goodness of fit (and its power), tightness, claim C6."""
import math

import numpy as np
import pytest
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.attacks.montecarlo.audit import _sampler_replaced, audit
from tsdp.attacks.montecarlo.options import Statistic, TrialPlan
from tsdp.attacks.montecarlo.statistics import cp_lower, cp_upper
from tsdp.training.samplers import BiLevelSampler, TopBatch, WindowIndex, make_sampler

from mechanism_audit import epsilon_lower_bound

# the audit configuration: r = 0.5, ρ = 0.2
AUDIT = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)
SMALL = TrainingConfig(N=16, batch_size=4, L=6, context_length=2, forecast_length=1, sigma=0.8)

GRID = {  # construction -> configurations of the soundness grid
    "T1": [AUDIT, SMALL],
    "T3": [AUDIT.with_(instances=2), SMALL.with_(instances=2)],
    "T4": [AUDIT, SMALL],
    "T6": [AUDIT, SMALL],
    "T9": [AUDIT.with_(instances=4), SMALL.with_(instances=2)],
    "T10": [AUDIT, SMALL],
    "T11": [AUDIT.with_(L=8, sigma_forecast=1.0), SMALL.with_(sigma_context=0.5, sigma_forecast=2.0)],
    # pooled windows: T13 is sound only when one element lies in one window (k = 1: T = 1)
    "T13": [SMALL.with_(L=1, context_length=1)],
    "T14": [AUDIT.with_(L=1)],
}


def test_clopper_pearson_bounds_bracket_the_estimate():
    k, n = np.array([0, 3, 50, 100]), 100
    lo, hi = cp_lower(k, n, 0.025), cp_upper(k, n, 0.025)
    assert np.all(lo <= k / n) and np.all(hi >= k / n)
    assert lo[0] == 0 and hi[-1] == 1
    assert hi[0] == pytest.approx(1 - 0.025 ** (1 / n))  # exact one-sided bound for k = 0


def test_identical_worlds_give_no_privacy_loss():
    """Statistic with the same law in both worlds: the lower bound stays at (about) 0."""
    rng = np.random.default_rng(0)
    assert epsilon_lower_bound(rng.normal(size=100000), rng.normal(size=100000), 1e-3).value < 0.1


# the audit-sized cells (the first of each construction with two) take 2-10 s each: they run with the slow tests,
# every construction's small cell here
HEAVY = {(t, 0) for t, cs in GRID.items() if len(cs) == 2}


@pytest.mark.parametrize("theorem,config", [pytest.param(t, c, marks=pytest.mark.slow) if (t, i) in HEAVY else (t, c)
                                            for t, cs in GRID.items() for i, c in enumerate(cs)])
def test_empirical_epsilon_never_exceeds_the_sound_epsilon(theorem, config):
    """Soundness: ε lower (95%) ≤ sound ε after 1 and 2 steps, and the H_α lower bounds stay below the sound profile."""
    for steps in (1, 2):
        r = audit(theorem, config, delta=1e-3, steps=steps, trials=TrialPlan(4000, seed=steps), discretization=1e-3)
        assert 0 <= r.epsilon_lower <= r.epsilon_sound, r.to_dict()
        assert r.epsilon_attained <= r.epsilon_sound + 1e-6
        for point in r.profile:
            assert point.h_lower <= point.h_theory + 1e-9, point


def test_audit_result_json_keys():
    d = audit("T6", SMALL, delta=1e-3, trials=TrialPlan(2000), statistic=Statistic(alphas=[1.0, 2.0])).to_dict()
    for key in ("epsilon_lower", "confidence", "epsilon_sound", "epsilon_attained", "ratio", "gof_pvalue",
                "profile", "trials", "steps", "theorem", "config"):
        assert key in d
    assert [p["alpha"] for p in d["profile"]] == [1.0, 2.0]
    assert set(d["profile"][0]) == {"alpha", "h_lower", "h_theory"}


def test_bad_input_is_refused():
    with pytest.raises(ConfigError, match="trials"):
        audit("T6", SMALL, delta=1e-3, trials=TrialPlan(5))
    with pytest.raises(ConfigError, match="delta"):
        audit("T6", SMALL, delta=0.0, trials=TrialPlan(100))
    with pytest.raises(ConfigError, match="alphas"):
        audit("T6", SMALL, delta=1e-3, trials=TrialPlan(100), statistic=Statistic(alphas=[0.5]))


class _WithReplacementTop:
    """A broken top level: draws N' sequences WITH replacement (repeats allowed)."""

    def __init__(self, n, per_step):
        self.n, self.per_step, self.steps_per_epoch = n, per_step, 1

    def sample(self, n_steps, generator):
        seq = torch.randint(0, self.n, (n_steps, self.per_step), generator=generator)
        return TopBatch(seq, torch.ones_like(seq, dtype=torch.bool))


class _PaddingOffByOne:
    """A broken window sampler: starts shifted by one (the padding is one element short)."""

    def __init__(self, base, n_starts):
        self.base, self.n_starts, self.steps_per_epoch = base, n_starts, base.steps_per_epoch

    def sample(self, n_steps, generator):
        i = self.base.sample(n_steps, generator)
        return WindowIndex(i.seq, torch.clamp(i.start + 1, max=self.n_starts - 1), i.mask)


def test_gof_accepts_the_correct_loop_at_one_percent():
    for theorem, seed in (("T6", 0), ("T1", 0)):
        assert audit(theorem, AUDIT, delta=1e-3, trials=TrialPlan(20000, seed=seed)).gof_pvalue > 0.01


def test_gof_rejects_padding_off_by_one():
    broken = _PaddingOffByOne(make_sampler(AUDIT), AUDIT.T)
    with _sampler_replaced(broken):
        assert audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(50000, seed=0)).gof_pvalue < 1e-6


def test_gof_rejects_wor_drawing_with_replacement():
    cfg = TrainingConfig(N=8, batch_size=4, L=4, context_length=1, forecast_length=1, sigma=1.0)
    good = make_sampler(cfg)
    broken = BiLevelSampler(_WithReplacementTop(cfg.N, cfg.sequences_per_step), good.bottom)
    assert audit("T6", cfg, delta=1e-3, trials=TrialPlan(50000, seed=0)).gof_pvalue > 0.01
    with _sampler_replaced(broken):
        assert audit("T6", cfg, delta=1e-3, trials=TrialPlan(50000, seed=0)).gof_pvalue < 1e-4


@pytest.mark.slow  # 2e5 trials per world; the tightness ratios of every construction are the report's and the slow audits'
def test_moderate_tightness_t6_one_step():
    """2e5 trials per world on the audit configuration: the attack reaches ≥ 0.65 of the attained ε (T6 tight)."""
    r = audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(200000, seed=3))
    assert r.epsilon_lower <= r.epsilon_sound
    assert r.ratio >= 0.65, r.to_dict()
    assert r.epsilon_attained == pytest.approx(r.epsilon_sound, rel=1e-3)  # T6 is tight after one step


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_c6_pooled_loop_leaks_more_than_the_one_record_guarantee():
    """Claim C6: on the pooled-window loop (L_C + L_F = 8), ε lower (95%) > the ε that T13 claims."""
    cfg = TrainingConfig(N=40, L=12, context_length=4, forecast_length=4, batch_size=36, sigma=2.0, top="pooled")
    r = audit("T13", cfg, delta=1e-3, trials=TrialPlan(10000, seed=0))
    assert r.confidence == 0.95
    assert r.epsilon_lower > r.epsilon_sound, r.to_dict()
    assert r.epsilon_lower <= r.epsilon_attained * 1.05  # and stays below what the construction can attain


@pytest.mark.parametrize("theorem,steps,trials,minimum", [
    # measured 0.952 (ε lower 3.541 of 3.717), 474 s on the shared 2 cores
    pytest.param("T6", 1, 10_000_000, 0.9, marks=pytest.mark.claim),
    # measured 0.931 (6.003 of 6.450), 132 s
    pytest.param("T1", 1, 10_000_000, 0.9, marks=pytest.mark.claim),
    # "10 steps" = 2 epochs (5 steps each): measured 0.866 (8.186 of 9.450), 489 s
    pytest.param("T1", 2, 10_000_000, 0.8, marks=pytest.mark.claim),
    # 10 steps at 3e6 per world: measured 0.889 (6.652 of 7.484), 657 s on the shared 2 cores
    pytest.param("T6", 10, 3_000_000, 0.8, marks=pytest.mark.claim),
    # 10 steps at 2e5 (fits CI): measured 0.658 (4.923 of 7.484), 47 s
    pytest.param("T6", 10, 200_000, 0.6, marks=pytest.mark.slow),
])
def test_full_tightness_claim(theorem, steps, trials, minimum):
    """The tightness claim on the audit configuration, δ = 1e-3, 95% confidence, 20% of the trials choose the test.

    ``steps`` counts compositions: for T1 (deterministic top level, epoch scope) the claim's
    "10 steps" are 2 epochs of ceil(320/64) = 5 steps, and the attained ε is composed twice.
    T6 after 10 steps runs 3e6 trials per world in the claim (1e7 would take ~10x a one-step
    run, ~50 min on 2 cores; fewer trials only lower the certified bound) and 2e5 in the slow
    test; the ratio is capped by the sample size (ε_attained = 7.48 needs false-positive rates
    ~e^-7.5 P(S)): measured through the loop 0.658 at 2e5, 0.760 at 1e6 and 0.889 at 3e6. The bound is a lower bound (CP at 97.5% on
    each rate); the ratio thresholds sit ≥ 0.03 below the measured values at seed 7.
    """
    r = audit(theorem, AUDIT, delta=1e-3, steps=steps, trials=TrialPlan(trials, seed=7),
              statistic=Statistic(select_fraction=0.2))
    assert r.epsilon_lower <= r.epsilon_sound
    assert r.ratio >= minimum, r.to_dict()
    assert r.gof_pvalue > 0.01
    assert math.isfinite(r.epsilon_attained)
