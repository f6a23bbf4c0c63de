"""One-step pessimism of the connect-the-dots PLD against the exact mpmath profile.

For hypothesis-drawn configurations and the bound the registry selects (T1, T2, T4, T6,
T7, T8, T11), ε(δ) of the one-step PLD at discretisation 1e-4 is ≥ the exact ε solving
H(e^ε) = δ with the mpmath engine (``bound.profile_mp``) and within 1e-2 relative of it.
"""
import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import resolve
from tsdp.verify.pld import PldSettings, one_step_profile, pair_profile_on, sound_pld
from tsdp.theorems.hockey_stick import hockey_stick

DPS = 20


@st.composite
def configs(draw):
    top = draw(st.sampled_from(["wor", "deterministic"]))
    bottom = draw(st.sampled_from(["wr", "wr", "poisson"]))
    lam = draw(st.integers(1, 2))
    forecast = draw(st.integers(1, 2))
    context = draw(st.integers(0, 2))
    L = draw(st.integers(forecast + 9, 40))
    N = draw(st.integers(20, 400))
    per_step = draw(st.integers(1, max(1, N // 4)))
    sigma = draw(st.floats(2.5, 6.0))
    aug = draw(st.sampled_from([0.0, 0.0, 0.5])) if (top == "wor" and bottom == "wr" and lam == 1) else 0.0
    return TrainingConfig(N=N, L=L, context_length=context, forecast_length=forecast, batch_size=per_step * lam,
                          instances=lam, sigma=sigma, top=top, bottom=bottom, sigma_context=aug, sigma_forecast=aug)


def exact_root_bracket(bound, config, delta, eps):
    """Bracket the exact root of H(e^ε) = δ (mpmath engine, ``bound.profile_mp``) by [0.99 ε, ε].

    H is non-increasing in ε, so H(e^ε) ≤ δ means the exact root is ≤ ε (pessimism) and
    H(e^{0.99 ε}) > δ means it is > 0.99 ε (within 1e-2 relative).
    """
    with mp.workdps(DPS):
        f = lambda e: bound.profile_mp(config, mp.exp(e), DPS) - delta  # noqa: E731
        return f(mp.mpf(eps)), f(mp.mpf(eps) * (1 - mp.mpf("1e-2")))


def _pessimistic_and_close(config, decades):
    bound, _ = resolve(config)
    h1 = float(bound.profile(config, np.array([1.0]))[0])  # δ at ε = 0
    delta = h1 * 10.0 ** (-decades)
    pld = sound_pld(bound, config, PldSettings(1e-4))
    eps = float(pld.get_epsilon_for_delta(delta))
    assert eps > 0
    assume(eps >= 0.05)  # relative 1e-2 is meaningless when ε is a few grid steps (d = 1e-4)
    at_eps, below = exact_root_bracket(bound, config, delta, eps)
    assert at_eps <= 0, f"PLD ε {eps} is below the exact root (H - δ = {at_eps})"
    assert below > 0, f"PLD ε {eps} is more than 1e-2 above the exact root"


@settings(max_examples=20, deadline=None)
@given(configs(), st.floats(0.5, 3.0))
def test_one_step_epsilon_is_pessimistic_and_close(config, decades):
    """The one-step PLD's ε at δ is at or above the exact (mpmath) root and within 1e-2 of it (20 configurations; 200 with the slow tests)."""
    _pessimistic_and_close(config, decades)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(configs(), st.floats(0.5, 3.0))
def test_one_step_epsilon_is_pessimistic_and_close_on_200_configurations(config, decades):
    _pessimistic_and_close(config, decades)

def test_grid_profile_matches_engine():
    """The fast grid evaluation equals the engine's hockey_stick (and the bound's profile)."""
    config = TrainingConfig(instances=2, batch_size=64)
    bound, _ = resolve(config)  # T7
    eps = np.linspace(-8, 8, 3001)
    prof = one_step_profile(bound, config)
    assert np.max(np.abs(prof.delta(eps) - bound.profile(config, np.exp(eps)))) < 1e-13
    pair = bound.base.pair(config, check=False).numeric()
    assert np.max(np.abs(pair_profile_on(pair, eps) - hockey_stick(pair, np.exp(eps)))) < 1e-13
    assert math.isclose(float(prof.delta(np.array([0.0]))[0]), float(bound.profile_mp(config, 1, 30)), rel_tol=1e-12)
