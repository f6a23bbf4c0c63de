"""Canary audits refuse a claim of amplification by augmentation (T11, Thm G.1): T11 covers one element changed by at
most v and seen through the inputs' noise, which neither kind of canary is (a gradient canary enters the clipped sum
after that noise; a spike moves its element by `spike` standard deviations). Audited against T11's ε, a correct
DP-SGD loop that augments its inputs was flagged: 3 of 3 seeds (2000 gradient canaries, N = 20, L = 3, Λ = 20, σ = 2,
σ_C = σ_F = 8, 5 steps: T11's ε = 1.43 at δ = 1e-5, certified 1.61, 2.05, 1.89), because the canaries' own law is T6's
(ε = 11.48 there), which the first test shows with the audit of the claimed mechanism itself."""
import pytest

from tsdp.theorems.config import ConfigError, TrainingConfig

AUGMENTED = TrainingConfig(N=20, L=3, context_length=2, forecast_length=1, batch_size=20, sigma=2.0, top="wor",
                           sigma_context=8.0, sigma_forecast=8.0)
STEPS, DELTA = 5, 1e-5


def test_gradient_canaries_on_the_claimed_mechanism_exceed_t11():
    """Why the audit is refused: the canaries on the claimed mechanism itself (what a correct loop gives them,
    augmentation or not) certify more than T11's sound ε, at 95%, so a correct loop is flagged."""
    from tsdp.attacks.canary.ideal import ideal_epsilon
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    claimed = PldAccountant().compose(training_event(AUGMENTED, steps=STEPS)).get_epsilon(DELTA)
    assert ideal_epsilon(AUGMENTED, 2000, STEPS, DELTA, 0.95) > claimed


def _never(series):
    raise AssertionError("the audit ran the training of a claim it cannot test")


@pytest.mark.parametrize("field", ["sigma_context", "sigma_forecast"])
def test_a_gradient_canary_audit_of_an_augmented_claim_is_refused_before_training(field):
    from tsdp.attacks.canary.user_training import audit_training
    from tsdp.datasets.series import synthetic

    config = AUGMENTED.with_(sigma_context=0.0, sigma_forecast=0.0).with_(**{field: 1.0})
    with pytest.raises(ConfigError) as err:
        audit_training(_never, synthetic(20, 4, seed=0).split(1)[0], config, canaries=100, delta=DELTA)
    assert err.value.parameter == field and "T11" in str(err.value)


def test_gradient_canaries_of_an_augmented_claim_are_refused():
    """Every way in (Opacus's DPOptimizer hook, tsdp's white-box loop, a torch optimizer) makes them here."""
    from tsdp.attacks.canary.gradient import GradientCanaries

    with pytest.raises(ConfigError) as err:
        GradientCanaries(AUGMENTED, 10, clip=1.0)
    assert err.value.parameter == "sigma_context"


def test_a_model_audit_of_an_augmented_training_is_refused_before_training():
    from tsdp.attacks.canary.trained_model import audit_model

    with pytest.raises(ConfigError) as err:
        audit_model("simple-ff", AUGMENTED.with_(L=20), canaries=4, epsilon=4.0, delta=DELTA)
    assert err.value.parameter == "sigma_context"


def test_the_audit_without_augmentation_still_runs():
    """The claim the refusal points to (the same scheme without augmentation: T6) is accepted."""
    from tsdp.attacks.canary.gradient import check_canaries_covered

    check_canaries_covered(AUGMENTED.with_(sigma_context=0.0, sigma_forecast=0.0))
