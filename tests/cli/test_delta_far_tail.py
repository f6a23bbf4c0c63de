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
