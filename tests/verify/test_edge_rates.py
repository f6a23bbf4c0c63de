"""Edges of the rates: r = 1 (every window holds the element), ρ = 1 (Λ = N λ), q = 1 (λ = T), the pooled batch the
whole pool. Each bound's pair then collapses to one Gaussian mechanism, N(s, σ) against N(0, σ) with the shift s the
bound's largest mean gap, and n compositions are the Gaussian mechanism of shift s √n, whose
δ(ε) = Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ), μ = s √n / σ, is solved for ε in mpmath (50 digits). The sound ε must lie
above it and within the grid's slack.
"""
import mpmath as mp
import pytest

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import training_event

D = 1e-3
DELTA = 1e-5
SIGMA = 2.0


def gaussian_epsilon(shift: float, count: int) -> float:
    """ε at DELTA of ``count`` Gaussian mechanisms of mean gap ``shift`` and std SIGMA (mpmath, 50 digits)."""
    with mp.workdps(50):
        mu = mp.mpf(shift) * mp.sqrt(count) / SIGMA

        def delta(eps):
            return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu) - DELTA

        return float(mp.findroot(delta, (mp.mpf(0), mp.mpf(60)), solver="bisect", tol=mp.mpf(10) ** -30))


BASE = dict(N=16, sigma=SIGMA, context_length=1, forecast_length=1)
CASES = {  # (theorem, configuration, the shift s)
    "T1 r = 1": ("T1", TrainingConfig(L=1, batch_size=4, top="deterministic", **BASE), 2.0),
    "T2 r = 1": ("T2", TrainingConfig(L=1, batch_size=8, instances=2, top="deterministic", **BASE), 8.0),
    "T4 q = 1": ("T4", TrainingConfig(L=20, batch_size=20, instances=20, top="deterministic", bottom="poisson",
                                      **BASE), 4.0),
    "T6 r = ρ = 1": ("T6", TrainingConfig(L=1, batch_size=16, **BASE), 2.0),
    "T7 r = ρ = 1": ("T7", TrainingConfig(L=1, batch_size=32, instances=2, **BASE), 8.0),
    "T8 q = ρ = 1": ("T8", TrainingConfig(L=20, batch_size=320, instances=20, bottom="poisson", **BASE), 4.0),
    "T13 whole pool": ("T13", TrainingConfig(L=1, batch_size=16, top="pooled", **BASE), 2.0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bound_at_its_edge_is_the_gaussian_mechanism(case):
    theorem, config, shift = CASES[case]
    rates = {"r": config.r, "ρ": config.rho, "q": config.q, "pool": config.batch_size / config.n_windows_total}
    assert all(rates[name] == 1 for name in ("r", "ρ", "q", "pool") if name in case.replace("whole pool", "pool"))
    for count in (1, 3):
        unit = {"epochs": count} if config.top == "deterministic" else {"steps": count}
        ours = PldAccountant("sound", discretization=D).compose(
            training_event(config, theorem=theorem, **unit)).get_epsilon(DELTA)
        reference = gaussian_epsilon(shift, count)
        assert reference <= ours <= reference + 2 * count * D, (case, count, ours, reference)
