"""Closed forms pinned: H_1 of T6 is the total variation ρ r (2Φ(1/σ) - 1); every
profile has H(0) = 1 (numpy and mpmath paths)."""
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY

from .strategies import config_for

BOUNDS = [b for b in REGISTRY.values() if b.kind != "claim" and b.scope != "release"]  # T15: tests/inference


@settings(max_examples=40)
@given(config=config_for(REGISTRY["T6"]))
def test_t6_at_alpha_one_is_rho_r_times_tv_of_the_gaussians(config):
    with mp.workdps(40):
        rho = mp.mpf(config.rho.numerator) / config.rho.denominator
        r = mp.mpf(config.r.numerator) / config.r.denominator
        sigma = mp.mpf(repr(config.sigma))  # the engine reads a float by its shortest decimal
        closed = rho * r * (2 * mp.ncdf(1 / sigma) - 1)
        engine = REGISTRY["T6"].profile_mp(config, 1, dps=40)
        assert abs(engine - closed) <= mp.mpf("1e-35") * max(closed, mp.mpf("1e-300"))
    assert float(REGISTRY["T6"].profile(config, [1.0])[0]) == pytest.approx(float(closed), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("bound", BOUNDS, ids=lambda b: b.id)
def test_every_profile_is_one_at_alpha_zero(bound):
    @settings(max_examples=15)
    @given(config=config_for(bound))
    def check(config):
        assert bound.profile(config, np.array([0.0]))[0] == 1.0
        assert bound.profile_mp(config, 0, dps=30) == 1
        # and just above 0 the profile leaves 1 no faster than the floor 1 - α allows
        assert 1 - 1e-6 - 1e-15 <= bound.profile(config, np.array([1e-6]))[0] <= 1.0  # float rounding of 1 - α

    check()


def _gaussian_mechanism(distance, alpha):
    """H_α(N(0, 1) ‖ N(Δ, 1)) = Φ(Δ/2 - log α / Δ) - α Φ(-Δ/2 - log α / Δ) (Balle & Wang 2018), in mpmath."""
    c = mp.log(alpha)
    return mp.ncdf(distance / 2 - c / distance) - alpha * mp.ncdf(-distance / 2 - c / distance)


SIGMAS = st.floats(-3.0, 4.0).map(lambda e: 10.0**e)
ALPHAS = st.floats(-3.0, 3.0).map(lambda e: 10.0**e)


@pytest.mark.parametrize("alpha", [1e-3, 0.5, 1.5, 10.0, 100.0, 1e3])
@pytest.mark.parametrize("sigma", [1e-3, 1e4])
@pytest.mark.parametrize("bound_id, instances", [("T1", 1), ("T2", 2), ("T2", 4), ("T2", 8), ("T4", 2), ("T4", 8)])
def test_the_mpmath_path_is_the_gaussian_mechanism_at_extreme_sigma(bound_id, instances, sigma, alpha):
    """The corners of the sweep below, by hand (T2 at σ = 1e-3, λ = 4, α = 10 raised 'Could not find root')."""
    _check_rate_one(bound_id, instances, sigma, alpha)


@settings(max_examples=60, deadline=None)
@given(bound_id=st.sampled_from(["T1", "T2", "T4"]), instances=st.integers(1, 8), sigma=SIGMAS, alpha=ALPHAS)
def test_the_mpmath_path_is_the_gaussian_mechanism_at_rate_one_for_any_sigma(bound_id, instances, sigma, alpha):
    _check_rate_one(bound_id, instances, sigma, alpha)


def _check_rate_one(bound_id, instances, sigma, alpha):
    """At r = 1 (L = 2, L_C = L_F = 1: T = k = 2) every window holds the element and each pair is two Gaussians:
    T1 N(2, σ) against N(0, σ), T2 N(-2λ, σ) against N(2λ, σ), T4 (q = min(1, λ/T) = 1 for λ ≥ 2) N(-2, σ) against
    N(2, σ): standardised distance Δ = 2/σ, 4λ/σ, 4/σ. The mpmath path equals the Gaussian mechanism's closed form
    (symmetric in α ↔ swapped pair, so one formula serves α < 1) for σ from 1e-3 to 1e4, where the loss's exponents
    reach (Δ/2)² ≈ 10^8 and cancel in L = log dP/dQ (the float path is held to the same closed form)."""
    bound = REGISTRY[bound_id]
    lam = 1 if bound_id == "T1" else max(instances, 2)
    config = TrainingConfig(N=10, L=2, context_length=1, forecast_length=1, batch_size=lam, instances=lam,
                            sigma=sigma, top="deterministic", bottom="poisson" if bound_id == "T4" else "wr")
    assert config.r == 1
    distance = {"T1": 2, "T2": 4 * lam, "T4": 4}[bound_id]
    with mp.workdps(40):
        closed = _gaussian_mechanism(distance / mp.mpf(repr(sigma)), mp.mpf(alpha))
        engine = bound.profile_mp(config, alpha, dps=40)
        assert abs(engine - closed) <= mp.mpf("1e-25") * closed + mp.mpf("1e-300"), (engine, closed)
    assert float(bound.profile(config, [alpha])[0]) == pytest.approx(float(closed), rel=1e-9, abs=1e-15)
