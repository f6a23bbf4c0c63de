"""Closed forms pinned: H_1 of T6 is the total variation ρ r (2Φ(1/σ) - 1); every
profile has H(0) = 1 (numpy and mpmath paths)."""
import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings

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
