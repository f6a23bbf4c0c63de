"""Audit the Opacus loop of `tsdp bench planted-opacus` with white-box gradient canaries, as you would audit your own.

    python examples/opacus_audit.py               # the correct loop
    python examples/opacus_audit.py noise-off     # the same loop with a planted bug (see `tsdp bench planted-opacus`)

The training is ordinary Opacus code (``bench.planted_opacus.opacus_train``: an MLP
forecaster, SGD, ``PrivacyEngine.make_private`` over a DataLoader that draws its batches with
tsdp's ``BiLevelBatchSampler``). ``audit_training`` calls it once with 1000 gradient canaries
hooked into its optimizer (nothing in the loop changes), each taking part in steps as one element
of the loader's batching, and certifies a 95% lower bound on ε from the parameter updates, to set
against the ε the intended training reports (tsdp's sound accountant).
"""
from __future__ import annotations

import sys

from tsdp import CanaryOptions, audit_training
from tsdp.attacks.canary.audit_result import TrainingAudit
from tsdp.bench.planted_opacus import (BUGS, CLIP, CONFIG, DATA, DELTA, LR, STEPS, claimed_epsilon,
                                                      loader_config, opacus_train, runtime, squared_error)
from tsdp.verify.rounded import rounded_down, rounded_up


def main(bug: str = "correct", canaries: int = 1000) -> TrainingAudit:
    """Train the loop with ``bug`` once under ``canaries`` gradient canaries; print and return the audit."""
    config = loader_config(bug)
    sigma, clip = runtime(bug)

    def train(series):
        return opacus_train(series, config, sigma=sigma, clip=clip, steps=STEPS, lr=LR, seed=0)

    claim = claimed_epsilon(bug)
    result = audit_training(train, DATA.split(config.forecast_length)[0], config, canaries=canaries, delta=DELTA,
                            epsilon=claim, canary=CanaryOptions(clip=CLIP), loss=squared_error, seed=0)
    best = max(result.scores.values(), key=lambda s: s.epsilon_lower)
    print(f"{bug}: the intended training reports ε = {rounded_up(claim, fixed=True)} at δ = {DELTA:g} after {STEPS} steps "
          f"(σ = {CONFIG.sigma:g}, C = {CLIP:g}); it ran σ = {sigma:g}, C = {clip:g}")
    print(f"gradient-canary audit ({canaries} canaries, one run): ε ≥ {rounded_down(result.epsilon_lower, fixed=True)} with 95% "
          f"confidence (AUC {best.auc:.3f}); the claimed trade-off curve "
          f"{'rejected' if result.curve_rejected else 'not rejected'}; violation: {result.violation}")
    print(f"what the audit could see: at most ε = {rounded_up(max(best.ceiling['dp'], best.ceiling['steinke']), fixed=True)} "
          f"with every guess right; the answer is limited by the {best.limited_by}")
    return result


GRADIENT_BUGS = tuple(b for b in BUGS if b != "global-standardisation")  # the one a gradient canary cannot see

if __name__ == "__main__":
    bug = sys.argv[1] if len(sys.argv) > 1 else "correct"
    if bug not in GRADIENT_BUGS:
        print(f"opacus_audit.py: error: the bug must be one of {', '.join(GRADIENT_BUGS)} (got {bug!r})",
              file=sys.stderr)
        sys.exit(2)
    main(bug)
