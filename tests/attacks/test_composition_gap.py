"""The attained bracket and the composition gap (attacks.montecarlo.bracket) against the accountant and the audit."""
import pytest

from tsdp.theorems.config import TrainingConfig
from tsdp.attacks.montecarlo.audit import audit
from tsdp.attacks.montecarlo.options import Statistic, TrialPlan
from tsdp.attacks.montecarlo.bracket import attained_bracket
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import training_event

DEFAULT = TrainingConfig()  # the paper's Section 5 configuration (T6: WOR top, WR bottom)


@pytest.mark.parametrize("steps", [1, 10])
def test_bracket_orders_and_tightens_with_the_discretisation(steps):
    """lower ≤ upper ≤ sound; the rounding upper - lower shrinks with a finer grid and both ends stay inside the
    coarser bracket; the gap is sound - upper."""
    sound = PldAccountant("sound", discretization=1e-4).compose(training_event(DEFAULT, steps=steps)).get_epsilon(1e-5)
    coarse = attained_bracket(DEFAULT, steps, 1e-5, "T6", epsilon_sound=sound, discretization=1e-3)
    fine = attained_bracket(DEFAULT, steps, 1e-5, "T6", epsilon_sound=sound, discretization=1e-4)
    for b in (coarse, fine):
        assert b.lower <= b.upper <= sound + 1e-6
        assert b.composition_gap == pytest.approx(sound - b.upper)
    assert fine.rounding < coarse.rounding
    assert coarse.lower - 1e-9 <= fine.lower and fine.upper <= coarse.upper + 1e-9


def test_t6_one_step_has_no_composition_gap():
    """T6 is tight per step: after one step the pair's ε is the sound ε (gap 0 up to the grid)."""
    sound = PldAccountant("sound").compose(training_event(DEFAULT, steps=1)).get_epsilon(1e-5)
    b = attained_bracket(DEFAULT, 1, 1e-5, "T6", epsilon_sound=sound)
    assert abs(b.composition_gap) < 1e-3 and b.upper - b.lower < 1e-3


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_audit_result_carries_the_bracket():
    cfg = TrainingConfig(N=16, batch_size=4, L=6, context_length=2, forecast_length=1, sigma=0.8)
    r = audit("T10", cfg, delta=1e-3, steps=3, trials=TrialPlan(2000), statistic=Statistic(alphas=[1.0]),
              discretization=1e-3)
    b = r.attained_bracket
    assert b.lower == pytest.approx(r.epsilon_attained, rel=1e-9)
    assert b.lower <= b.upper <= r.epsilon_sound
    assert b.pair == "T10" and b.steps == 3
