"""Sound partial shuffled epochs (THEOREMS.md, "Sound partial epochs"): an epoch whose steps hold the changed sequence
with probability ρ < 1 is charged the whole epoch's bound mixed with silence by ρ.

References that do not use the accountant's PLD path: dp-accounting's own Gaussian and randomized-response PLDs (the
mixture's δ(ε) is ρ times theirs at ε ≥ 0), and T1's pair in mpmath (the exact ε of the mixed profile, found by
bisection on ρ H_{e^ε}(T1), which the pessimistic accountant may exceed by its grid only)."""
from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.theorems.config import DEFAULT_CONFIG, TrainingConfig
from tsdp.theorems.hockey_stick import hockey_stick_mp
from tsdp.theorems.registry import get
from tsdp.verify.accounting import epsilon
from tsdp.verify.pld import adapter
from tsdp.verify.pld.mixture import revealed_mixture

SHUFFLE = DEFAULT_CONFIG.with_(top="shuffle")  # N = 320, N' = 32: 10 steps an epoch
EPS = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 4.0])


def _libraries_plds():
    """A dense PLD (Gaussian, pessimistic) and a sparse one (randomized response), both from the library."""
    return [pld_lib.from_gaussian_mechanism(1.3, value_discretization_interval=1e-3),
            pld_lib.from_randomized_response(0.2, 4, value_discretization_interval=1e-3)]


@settings(max_examples=25, deadline=None)
@given(weight=st.floats(0.0, 1.0))
def test_the_mixture_is_w_times_the_pair_at_every_nonnegative_epsilon(weight):
    """δ_mix(ε) = w δ(ε) for ε ≥ 0 (the silent branch's loss 0 adds nothing there), total mass 1, the +∞ mass times
    w, the direction kept, for a dense and a sparse PMF."""
    for pld in _libraries_plds():
        mixed = revealed_mixture(pld, weight)
        for eps in EPS:
            assert mixed.get_delta_for_epsilon(eps) == pytest.approx(weight * pld.get_delta_for_epsilon(eps),
                                                                     rel=1e-9, abs=1e-15)
        for original, pmf in zip(adapter.pmfs(pld), adapter.pmfs(mixed)):
            if original is None:
                assert pmf is None
                continue
            dense = pmf.to_dense_pmf()
            total = adapter.probs(dense).sum() + adapter.infinity_mass(dense)
            assert total == pytest.approx(adapter.probs(original.to_dense_pmf()).sum() * weight + (1 - weight)
                                          + adapter.infinity_mass(original) * weight, abs=1e-12)
            assert adapter.infinity_mass(pmf) == pytest.approx(weight * adapter.infinity_mass(original), abs=1e-18)
            assert adapter.pessimistic(pmf) == adapter.pessimistic(original)


def test_weight_one_is_the_pair_and_a_weight_outside_the_unit_interval_is_refused():
    pld = _libraries_plds()[0]
    assert revealed_mixture(pld, 1.0) is pld
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            revealed_mixture(pld, bad)


def _exact_mixed_epsilon(config: TrainingConfig, rho: float, delta: float) -> float:
    """The ε at which ρ H_{e^ε}(T1's pair) = δ (ε ≥ 0), by bisection in mpmath at 30 digits."""
    pair = get("T1").pair_form(config).ge
    lo, hi = mp.mpf(0), mp.mpf(40)
    with mp.workdps(30):
        if rho * hockey_stick_mp(pair, mp.e ** lo, 30) <= delta:
            return 0.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if rho * hockey_stick_mp(pair, mp.e ** mid, 30) > delta:
                lo = mid
            else:
                hi = mid
    return float(hi)


@pytest.mark.parametrize("steps", [1, 3, 7])
@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_a_partial_epochs_sound_epsilon_is_the_mixed_profiles_rounded_up(steps, delta):
    """One shuffled epoch stopped after s of its 10 steps (ρ = s/10): the sound ε is at least the exact ε of
    (1 - ρ) max(0, 1 - α) + ρ H_α(T1) (mpmath) and above it by the rounding only (< 1e-4 at d = 1e-3), below
    the whole epoch's, which is T1's."""
    got = epsilon(SHUFFLE, delta, steps=steps, estimates=("sound",), discretization=1e-3).epsilon
    exact = _exact_mixed_epsilon(SHUFFLE, steps / 10, delta)
    assert exact <= got < exact + 1e-4
    whole = epsilon(SHUFFLE.with_(top="deterministic"), delta, epochs=1, estimates=("sound",),
                    discretization=1e-3).epsilon
    assert got < whole - 0.1
    assert epsilon(SHUFFLE, delta, steps=10, estimates=("sound",), discretization=1e-3).epsilon == whole


def test_the_sound_epsilon_grows_with_every_step_of_an_epoch_and_the_hidden_position_value_stays_below():
    """Over two epochs (20 steps), the sound ε never decreases, grows inside each epoch and never exceeds the
    deterministic order's epochs touched; the attained (hidden-position) value stays below it at every step."""
    runs = [epsilon(SHUFFLE, 1e-5, steps=s, discretization=1e-3) for s in range(1, 21)]
    sound = [r.epsilon for r in runs]
    assert all(a < b for a, b in zip(sound, sound[1:]))
    det = {e: epsilon(SHUFFLE.with_(top="deterministic"), 1e-5, epochs=e, estimates=("sound",),
                      discretization=1e-3).epsilon for e in (1, 2)}
    assert all(value <= det[-(-s // 10)] for s, value in enumerate(sound, start=1))
    assert all(r.epsilon_attained < r.epsilon for r in runs)
