"""The attained ε `tsdp epsilon` prints, certified through each top-level scheme's real loop by `tsdp audit`.

Shuffled iteration runs the deterministic constructions with a fresh permutation per epoch and reads each
epoch's maximum (attacks.montecarlo.shuffled); the other schemes run their own constructions. Each audit is
a lower confidence bound (95%) on the ε of the statistic it reads, whose exact value is the attained ε up to
the discretisation, so at a fixed seed it must sit in [c · attained, attained_upper]: the upper check fails
with probability ≤ 5% for a correct loop before the seed is fixed, the lower one only if the loop leaks
less than the construction's law says.
"""
import pytest

from tsdp.attacks.montecarlo.audit import audit
from tsdp.attacks.montecarlo.options import TrialPlan
from tsdp.attacks.montecarlo.constructions import build
from tsdp.attacks.montecarlo.shuffled import reading_of
from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accounting import epsilon

SMALL = TrainingConfig(N=16, batch_size=4, L=6, context_length=2, forecast_length=1, sigma=2.0)

SCHEMES = [  # (id, construction, configuration, training steps): attained ε at δ = 1e-3 from 1.05 to 2.27
    ("deterministic", "T1", SMALL.with_(top="deterministic"), 4),
    ("shuffle", "T1", SMALL.with_(top="shuffle"), 4),
    ("shuffle-partial-epoch", "T1", SMALL.with_(top="shuffle"), 6),  # 1 epoch of 4 steps, then 2 of the next
    ("wor", "T6", SMALL.with_(top="wor"), 2),
    ("pooled", "T13", SMALL.with_(top="pooled", L=1, context_length=1), 2),
]


@pytest.mark.parametrize("name,theorem,config,steps", SCHEMES, ids=[s[0] for s in SCHEMES])
def test_printed_attained_epsilon_is_certified_through_the_schemes_loop(name, theorem, config, steps):
    """`tsdp epsilon`'s attained ε (verify.accounting.epsilon) is the audit's, and 10^4 trials per world through the
    scheme's loop certify at least half of it and no more than its upper rounding; the loop's law fits (KS p > 1e-3).
    Poisson top level has no construction (no attained ε), so it has no cell."""
    printed = epsilon(config, 1e-3, steps=steps, discretization=1e-3)
    r = audit(theorem, config, delta=1e-3, steps=steps, trials=TrialPlan(10_000, seed=11), discretization=1e-3)
    assert r.epsilon_attained == pytest.approx(printed.epsilon_attained, abs=1e-9)
    assert 0.5 * r.epsilon_attained <= r.epsilon_lower <= r.attained_bracket.upper, r.to_dict()
    assert r.epsilon_lower <= printed.epsilon  # never certifies above the sound ε (T1 for shuffled iteration)
    assert r.gof_pvalue > 1e-3
    assert not r.violation
    if config.top == "shuffle":
        assert "hidden-position" in r.attained_pair
        known = epsilon(config.with_(top="deterministic"), 1e-3, steps=steps, discretization=1e-3)
        assert r.epsilon_attained < known.epsilon_attained  # never the known-position value


def test_short_last_batch_is_centred_with_its_own_size():
    """N = 18, N' = 4: the epoch's last step holds 2 sequences; the reading removes what the constant centring
    (-N'λ) leaves there, 2 in units of C, and the real loop's first-epoch maximum then fits its exact law."""
    config = SMALL.with_(top="shuffle", N=18)
    con = build("T1", config)
    reading = reading_of(con, config.steps_per_epoch)
    assert list(reading.corrections) == [0.0, 0.0, 0.0, 0.0, 2.0]
    r = audit("T1", config, delta=1e-3, steps=config.steps_per_epoch, trials=TrialPlan(6000, seed=2),
              discretization=1e-3)
    assert r.gof_pvalue > 1e-3, r.gof


@pytest.mark.slow
def test_default_configuration_one_epoch_reaches_most_of_the_shuffled_attained_epsilon():
    """The issue's figure: default configuration, 10 steps (one epoch), δ = 1e-3, 10^6 trials per world through the
    real shuffled loop: the certified ε is ≥ 0.8 × the attained ε `tsdp epsilon --top shuffle` prints (1.6122).
    Measured at seed 0: 1.5932 of 1.6122 (ratio 0.988; 3116 true and 390 false positives of 10^6, test fixed before
    sampling at max ≥ 1.5165), KS p = 1.0, 342 s on the shared 2 cores."""
    config = TrainingConfig(top="shuffle")
    r = audit("T1", config, delta=1e-3, steps=10, trials=TrialPlan(1_000_000, seed=0))
    assert r.epsilon_attained == pytest.approx(1.6122, abs=2e-3)
    assert r.epsilon_lower <= r.attained_bracket.upper <= epsilon(config, 1e-3, steps=10).epsilon
    assert r.ratio >= 0.8, r.to_dict()


@pytest.mark.parametrize("theorem,config", [("T3", SMALL.with_(top="shuffle", instances=2)),
                                            ("T4", SMALL.with_(top="shuffle", bottom="poisson", sigma=1.0))],
                         ids=["T3-lambda-2", "T4-poisson-bottom"])
def test_the_other_epoch_constructions_follow_their_hidden_position_law_through_the_loop(theorem, config):
    """T3 (λ = 2, WR bottom: T2's construction) and T4 (Poisson bottom, mirrored pair) shuffled: the real loop's
    first-epoch maximum fits the hidden-position law of the construction's step pair (KS p > 1e-3, 6000 trials
    per world), and the audit stays within [0, attained_upper] of the printed attained ε."""
    r = audit(theorem, config, delta=1e-3, steps=config.steps_per_epoch, trials=TrialPlan(6000, seed=5),
              discretization=1e-3)
    assert r.gof_pvalue > 1e-3, r.gof
    assert r.epsilon_attained == pytest.approx(
        epsilon(config, 1e-3, steps=config.steps_per_epoch, discretization=1e-3).epsilon_attained, abs=1e-9)
    assert 0 <= r.epsilon_lower <= r.attained_bracket.upper


def test_a_run_stopped_inside_its_first_epoch_follows_the_partial_epoch_law():
    """2 of the 5 steps of an epoch (N = 18, N' = 4): the real loop's maximum over the 2 steps that ran fits the
    partial-epoch law (the changed sequence ran with probability ρ = 8/18; KS p > 1e-3, 6000 trials per world)."""
    config = SMALL.with_(top="shuffle", N=18)
    r = audit("T1", config, delta=1e-3, steps=2, trials=TrialPlan(6000, seed=3), discretization=1e-3)
    assert r.compositions == 1 and r.gof_pvalue > 1e-3, r.gof
    assert r.epsilon_attained < epsilon(config, 1e-3, steps=5, discretization=1e-3).epsilon_attained
