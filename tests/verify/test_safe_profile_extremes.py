"""The accountant's one-step input at extreme but valid parameters: the float profile it builds its pessimistic PLD
from (``OneStepProfile.safe()``, the theorem's δ(ε) plus its float-error bound) is never below the bound's mpmath
value at 50 digits (an independent path: the root of the privacy loss refined in mpmath, the tails by mpmath's erfc),
at tiny and huge σ, one sequence a step (N' = 1) and every sequence a step (N' = N), r = 1 (L = 1) and r small
(L = 200), for ε from -30 to 300 wherever δ(ε) ≥ 1e-25 (the accountant reads δ ≥ 1e-23 at its default truncation).
No tolerance: the direction is the claim (a float profile below the exact one would make the 'sound' PLD optimistic).
"""
import mpmath as mp
import numpy as np
import pytest

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY
from tsdp.verify.pld.profile import one_step_profile

SHAPES = {  # (N, N', L, L_C): N' = 1 with r = 1 / T small, N' = N, r = 1 (L = 1, no context)
    "N'=1, L=200": (500, 1, 200, 1),
    "N'=N": (10, 10, 3, 2),
    "r=1": (7, 1, 1, 0),
}
BOUNDS = ["T1", "T4", "T6", "T8", "T13", "T2", "T7", "T11"]
EPSILONS = np.concatenate([-np.logspace(-3, 1.5, 6)[::-1], [0.0], np.logspace(-4, 2.5, 12)])


def _config(bound, shape, sigma):
    n, per_step, length, context = SHAPES[shape]
    lam = 2 if bound.id in ("T2", "T7") else 1
    extra = dict(sigma_context=0.5, sigma_forecast=0.5) if bound.id == "T11" else {}
    config = TrainingConfig(N=n, L=length, context_length=context, forecast_length=1, batch_size=per_step * lam,
                            instances=lam, sigma=sigma, top=bound.scheme.top[0], bottom=bound.scheme.bottom[0], **extra)
    bound.check(config)
    return config


def _cases(sigmas):
    for theorem in BOUNDS:
        for shape in SHAPES:
            for sigma in sigmas:
                yield pytest.param(theorem, shape, sigma, id=f"{theorem}-{shape}-{sigma:g}")


def _check(theorem, shape, sigma):
    bound = REGISTRY[theorem]
    try:
        config = _config(bound, shape, sigma)
    except Exception as exc:  # a shape outside the bound's scheme (T11 needs a context, T13 one window)
        pytest.skip(f"{theorem} does not cover {shape}: {exc}")
    safe = one_step_profile(bound, config).safe()(EPSILONS)
    checked = 0
    for eps, value in zip(EPSILONS, safe):
        if value < 1e-25:
            continue
        exact = bound.profile_mp(config, mp.e ** mp.mpf(float(eps)), dps=50)
        assert value >= exact, (theorem, shape, sigma, float(eps), value, float(exact))
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("theorem, shape, sigma", list(_cases([0.05, 300.0])))
def test_the_safe_profile_is_never_below_the_mpmath_profile_at_extremes(theorem, shape, sigma):
    _check(theorem, shape, sigma)


@pytest.mark.slow
@pytest.mark.parametrize("theorem, shape, sigma", list(_cases([0.02, 0.3, 1.0, 30.0, 3000.0])))
def test_the_safe_profile_is_never_below_the_mpmath_profile_on_more_noise_levels(theorem, shape, sigma):
    _check(theorem, shape, sigma)
