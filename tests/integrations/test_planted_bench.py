"""Planted bugs in a user-style Opacus loop (tsdp.attacks.integrations.planted_opacus) audited with 1000 white-box
gradient canaries hooked into the DPOptimizer, one run each, seed 0 (so each outcome is fixed).

Measured at seed 0 (claim: sound ε = 1.696 at δ = 1e-5 for 40 steps at σ = 8): noise off ε ≥ 3.217, σ / 10
ε ≥ 1.923, clipping off ε ≥ 3.217 (all flagged); the correct loop ε ≥ 0.302 (not flagged; by Steinke et al.'s
theorem a correct loop is flagged with probability ≤ 5%).
"""
import numpy as np
import pytest

pytest.importorskip("opacus")

from tsdp.attacks.canary.evidence import certify_evidence  # noqa: E402
from tsdp.attacks.integrations.planted_opacus import PlantedRun, claimed_epsilon  # noqa: E402


def _audit(bug):
    evidence = PlantedRun(bug, 1000)(np.random.SeedSequence(0))
    return certify_evidence(evidence, 1e-5, 0.95, claimed=claimed_epsilon(bug))


def test_dpoptimizer_hook_canaries_separate_without_noise():
    """The DPOptimizer hook (canaries added to summed_grad before Opacus's noise, scored on the SGD step): with
    noise_multiplier = 0, 300 canaries over 40 steps, the mixture score ranks included canaries first (AUC > 0.95)."""
    from tsdp.attacks.canary.steinke_bound import auc

    evidence = PlantedRun("noise-off", 300)(np.random.SeedSequence(1))
    assert auc(evidence["scores"]["mixture"], evidence["included"]) > 0.95


@pytest.mark.slow
@pytest.mark.parametrize("bug,lower", [("noise-off", 3.0), ("noise-10x-small", 1.8), ("clipping-off", 3.0)])
def test_planted_bug_is_flagged(bug, lower):
    r = _audit(bug)
    assert r["epsilon_lower"] >= lower and r["violation"], r


@pytest.mark.slow
def test_correct_loop_is_not_flagged():
    r = _audit("correct")
    assert 1.6 < r["epsilon_claimed"] < 1.8 and not r["violation"], r
