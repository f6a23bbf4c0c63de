"""Audit a plain training loop that claims DP but has neither clipping nor noise, with the canaries `--plan` recommends.

    python examples/plain_training_audit.py            # loss given: the data's gradients are taken off
    python examples/plain_training_audit.py --no-loss  # the data's gradients kept (what the audit then says)

``train`` is ordinary torch code (tsdp's ``BiLevelBatchSampler`` DataLoader over the planted
bench's 40 series, an MLP 8→256→1, Adam 1e-3, 40 steps), claimed to be the bench's DP-SGD run
(σ = 8, C = 1: ε = 1.696 at δ = 1e-5). The plan says how many canaries can flag a training
without noise against that claim; ``audit_training`` then calls ``train`` once with them hooked
into its optimizer. With ``loss=`` (the loop's per-window loss) the auditor, who knows every
element but the canaries, takes the data's per-window gradients off the gradient Adam steps on,
and the unclipped data no longer hides the canaries.
"""
from __future__ import annotations

import sys

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from tsdp import BiLevelBatchSampler, WindowDataset, audit_training
from tsdp.attacks.canary.planning import plan
from tsdp.attacks.canary.audit_result import TrainingAudit
from tsdp.attacks.canary.user_training import CANARIES, analyses_of
from tsdp.bench.planted_opacus import CONFIG, DATA, DELTA, STEPS, claimed_epsilon, squared_error
from tsdp.training.batch_sampler import batches_for_steps
from tsdp.verify.rounded import rounded_down, rounded_up


def train(series):
    """Your training: no PrivacyEngine, no clipping, no noise."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(CONFIG.context_length, 256), nn.ReLU(), nn.Linear(256, CONFIG.forecast_length))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    dataset = WindowDataset([np.asarray(s) for s in series], CONFIG)
    loader = DataLoader(dataset, batch_sampler=BiLevelBatchSampler(dataset, generator=torch.Generator().manual_seed(0)),
                        collate_fn=dataset.collate)
    for context, forecast in batches_for_steps(loader, STEPS):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(context.float()), forecast.float()).backward()
        optimizer.step()
    return model


def main(with_loss: bool = True) -> TrainingAudit:
    """Plan the audit against the claim, run it once, print and return it."""
    claim = claimed_epsilon("correct")
    needed = plan(2, DELTA, 0.95, claimed_epsilon=claim, scores=len(CANARIES["gradient"]),
                  analyses=analyses_of("gradient", "fdp")).canaries_needed
    print(f"claimed ε = {rounded_up(claim, fixed=True)} at δ = {DELTA:g}; the plan: {needed} canaries can flag a training without noise")
    result = audit_training(train, DATA.split(CONFIG.forecast_length)[0], CONFIG, canaries=needed, delta=DELTA,
                            epsilon=claim, loss=squared_error if with_loss else None, seed=0)
    best = max(result.scores.values(), key=lambda s: s.epsilon_lower)
    kept = result.gradient.data_span
    print(f"gradient-canary audit ({needed} canaries, one run, scored on the gradient {result.gradient.optimizer} "
          f"stepped on, {'the data' + chr(39) + 's gradients taken off' if kept is None else 'the data kept: ' + kept}): "
          f"ε ≥ {rounded_down(result.epsilon_lower, fixed=True)} (AUC {best.auc:.3f}); the claimed curve "
          f"{'rejected' if result.curve_rejected else 'not rejected'}; violation: {result.violation}")
    return result


if __name__ == "__main__":
    flags = sys.argv[1:]
    if flags not in ([], ["--no-loss"]):
        print(f"plain_training_audit.py: error: the only option is --no-loss (got {' '.join(flags)})", file=sys.stderr)
        sys.exit(2)
    main(with_loss=not flags)
