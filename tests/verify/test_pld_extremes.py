"""PLDs of pairs whose δ(ε) reaches the truncation level only past ε ≈ 709, where e^ε
overflows float64 (found by the report's C4 at λ = 16): the grid values stay finite and the
composed ε is an upper bound above the attained lower bound."""
import math
import warnings

import numpy as np

from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.theorems.hockey_stick import hockey_stick
from tsdp.theorems.registry import REGISTRY
from tsdp.verify.accounting import epsilon
from tsdp.verify.pld import pair_profile_on


def test_profile_past_exp_overflow_is_finite_and_matches_engine():
    cfg = DEFAULT_CONFIG.with_(top="deterministic", instances=16, batch_size=320, context_length=5, forecast_length=6)
    pair = REGISTRY["T2"].pair(cfg).numeric()
    eps = np.array([1.0, 100.0, 400.0, 700.0, 720.0, 900.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = pair_profile_on(pair, eps, upper=True)
        res = epsilon(cfg, 1e-5, epochs=1, theorem="T2", discretization=1e-2)  # grid to ε ≈ 620
    assert np.all(np.isfinite(got)) and np.all(np.diff(got) <= 0)
    small = eps < 700  # where α = e^ε is a float the engine can take
    ref = hockey_stick(pair, np.exp(eps[small]))
    assert np.all(got[small] >= ref) and np.allclose(got[small], ref, rtol=1e-9, atol=1e-300)
    assert math.isfinite(res.epsilon) and res.epsilon >= res.epsilon_attained > 500
