"""`tsdp epsilon --epsilon E` far in the tail: the sound δ is an upper bound, never negative nor below the attained
lower bound. After 10 steps of the paper's configuration (σ = 1, a step uses the changed element with probability
q ≈ 0.01) the composed loss passes ε = 20 only where a step's Gaussian passes about ε + log(1/q) ≈ 25 standard
deviations: T6's true δ there is below 1e-130, so every answer is the PLD's floating-point floor, its truncated tail
mass (1e-15). Before, the FFT's rounding read δ = -4.6e-16 (ε = 30), printed as 'sound -4.62527e-16 (upper bound),
attained 1e-15 (lower bound)'."""
import json

import pytest

from cli_run import run_cli


@pytest.mark.parametrize("epsilon", ["20", "30", "40"])
def test_the_sound_delta_far_in_the_tail_is_not_below_zero_nor_the_attained_one(epsilon):
    code, out, err = run_cli(["epsilon", "--epsilon", epsilon, "--steps", "10", "--json"])
    assert code == 0, err
    got = json.loads(out)
    assert 0 <= got["delta_attained"] <= got["delta"] <= 1e-14  # the truncated mass, not a real δ (true δ < 1e-100)
    code, out, _ = run_cli(["epsilon", "--epsilon", epsilon, "--steps", "10"])
    assert code == 0 and "sound -" not in out


def test_the_delta_curve_keeps_the_same_floor_as_each_reading():
    """get_delta_curve reads the floor once per PLD; every point equals get_delta's reading at that ε, the sound
    curve is never below the attained one nor below 0, and a δ above the floor (ε = 1) is the library's reading."""
    from tsdp.theorems.config import DEFAULT_CONFIG
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    eps = [1.0, 20.0, 30.0, 40.0]
    run = training_event(DEFAULT_CONFIG, steps=10)
    sound, attained = (PldAccountant(e, discretization=1e-3).compose(run) for e in ("sound", "attained"))
    curve_s, curve_a = sound.get_delta_curve(eps), attained.get_delta_curve(eps)
    assert list(curve_s) == [sound.get_delta(e) for e in eps]
    assert list(curve_a) == [attained.get_delta(e) for e in eps]
    assert all(0 <= a <= s for a, s in zip(curve_a, curve_s))
    assert curve_s[0] > 1e-3 > curve_s[-1]
