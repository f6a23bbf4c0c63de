"""A plain Adam loop without clipping or noise on more windows than a quarter of its parameters, audited with gradient
canaries that take the data's part off by a whitened matching pursuit.

    python examples/plain_adam_at_scale.py [SERIES]

An MLP 10→32→1 (d = 385 parameters), 40 noisy synthetic series of 31 training values (1240 windows; SERIES changes
the number of series), 40 Adam steps of Λ = 10 windows, claimed ε = 1 at δ = 1e-5. The span of 1240 per-window
gradients is the whole space, so the audit finds each step's batch among them (:mod:`attacks.canary.data_span`) and
scores the canaries on what is left; ``data_part`` says what it found and what a step cost.

More series give more windows than the pursuit can take off in full: the certified ε falls as SERIES grows (try
160 and 640), and each audited step costs more; the line it prints gives the ε and what the data's part cost. A
wider model costs more still (the whitening is d × d).
"""
from __future__ import annotations

import sys

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from tsdp import BiLevelBatchSampler, TrainingConfig, WindowDataset, audit_training
from tsdp.attacks.canary.audit_result import TrainingAudit
from tsdp.datasets.series import synthetic
from tsdp.training.batch_sampler import batches_for_steps, fit_lengths
from tsdp.verify.rounded import rounded_down

STEPS, DELTA, CLAIM = 40, 1e-5, 1.0


def setup(series: int = 40):
    """(training series, configuration: Λ = 10 windows of 10 series drawn without replacement, σ = 4 claimed)."""
    data = synthetic(series, 32, seed=0, noise=2.0).split(1)[0]
    return data, fit_lengths(TrainingConfig(context_length=10, forecast_length=1, batch_size=10, instances=1,
                                            sigma=4.0, top="wor"), data.series)


def plain_adam(config: TrainingConfig):
    """``train(series)``: no clipping, no noise."""

    def train(series):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        dataset = WindowDataset([np.asarray(s) for s in series], config)
        loader = DataLoader(dataset, batch_sampler=BiLevelBatchSampler(
            dataset, generator=torch.Generator().manual_seed(0)), collate_fn=dataset.collate)
        for context, forecast in batches_for_steps(loader, STEPS):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(context.float()), forecast.float()).backward()
            optimizer.step()
        return model

    return train


def squared_error(model, context, forecast):
    """The loop's per-window loss (its batch mean is the loop's ``mse_loss``)."""
    return ((model(context.float()) - forecast.float()) ** 2).sum(-1)


def audit(series: int = 40, canaries: int = 200) -> TrainingAudit:
    data, config = setup(series)
    return audit_training(plain_adam(config), data, config, canaries=canaries, delta=DELTA, epsilon=CLAIM,
                          loss=squared_error, seed=0)


if __name__ == "__main__":
    try:
        n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    except ValueError:
        print("plain_adam_at_scale.py: error: SERIES must be an integer", file=sys.stderr)
        sys.exit(2)
    r = audit(n)
    print(f"{n} series: ε ≥ {rounded_down(r.epsilon_lower, 3, fixed=True)} against the claim {CLAIM:g} (violation: {r.violation}); "
          f"the data's part: {r.gradient.data_part.summary if r.gradient.data_part else r.gradient.data_span}")
