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


# N = 2^53 sequences, one a step (ρ = 2^-53), r = 2/8: ρ r = 2^-55, so the weight 1 - ρ r of T6's zero component
# rounds to 1 in float64 and the float pair's privacy loss reads 0 near its root
TINY_RATE = dict(N=2**53, L=8, context_length=1, forecast_length=1, batch_size=1)


@pytest.mark.parametrize("sigma", [0.05, 0.5, 1.0])
def test_the_safe_profile_at_a_rate_below_float_resolution_is_not_rounded_to_zero(sigma):
    """T6 at ρ r = 2^-55: δ(0) is the total variation ρ r (2Φ(1/σ) - 1) exactly (P - Q = ρ r (N(2, σ²) - N(0, σ²))), and
    H_α(P ‖ Q) ≥ ∫_{x > 1} (dP - α dQ) for every α (a half-line lower bound). Both from closed forms in mpmath, not
    from the engine. The float pair rounded 1 - ρ r to 1: its loss limit at -∞ read 0 and δ(0) came out 0 (the
    mpmath engine path too, as it took its limits from the float pair)."""
    config = TrainingConfig(sigma=sigma, **TINY_RATE)
    bound = REGISTRY["T6"]
    q = mp.mpf(2) ** -55
    assert config.rho * config.r == mp.mpf(2) ** -55
    with mp.workdps(60):
        s = mp.mpf(sigma)
        tv = q * (2 * mp.ncdf(1 / s) - 1)

        def half_line(eps):  # ∫_{x > 1} (dP - α dQ), P = (1 - q) N(0, σ²) + q N(2, σ²), Q = N(0, σ²)
            alpha = mp.exp(eps)
            return q * mp.ncdf(1 / s) + (1 - q - alpha) * mp.ncdf(-1 / s)

        safe = one_step_profile(bound, config).safe()
        assert safe(np.array([0.0]))[0] >= tv, (safe(np.array([0.0]))[0], tv)
        assert bound.profile_mp(config, 1, dps=60) >= tv * (1 - mp.mpf(10) ** -40)
        for eps in (1e-12, 1e-6):
            assert safe(np.array([eps]))[0] >= half_line(mp.mpf(eps)), eps


def test_the_sound_pld_at_a_rate_below_float_resolution_keeps_its_mass():
    """The pessimistic PLD of T6 at ρ r = 2^-55, σ = 0.05: its δ(ε) must stay above the half-line lower bound
    ∫_{x > 1.5} (dP - e^ε dQ) ≥ (1 - 10^-6) ρ r at ε = 1 and 100 (the mark N(2, σ²) is 10σ above x = 1.5); with δ(0)
    read as 0 the PLD's running minimum zeroed every δ at ε ≥ 0 (sound ε(1e-17) was 0 where it is about 770)."""
    from tsdp.verify.pld import PldSettings, sound_pld

    config = TrainingConfig(sigma=0.05, **TINY_RATE)
    pld = sound_pld(REGISTRY["T6"], config, PldSettings(discretization=1e-2))
    q = 2.0 ** -55
    for eps in (1.0, 100.0):
        assert pld.get_delta_for_epsilon(eps) >= (1 - 1e-6) * q, eps
