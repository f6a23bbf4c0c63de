"""Audit a DP-SGD loop written by hand: per-window gradients with ``torch.func``, clipped to C by tsdp's
``clip_gradients`` (its factor keeps every clipped norm ≤ C under float rounding), Gaussian noise σC, the noisy sum
divided by Λ, plain SGD.

    python examples/hand_dp_sgd_audit.py [CANARIES] [SIGMA]

An MLP 10→32→1 (d = 385 parameters) on 8 noisy synthetic series of 10 training values (80 windows), 30 steps of
Λ = 2 windows (one window of each of 2 series drawn without replacement: a canary takes part in a quarter of the
steps). ``audit_training`` hooks gradient canaries into the SGD optimizer and, with ``loss=``, takes the data's
per-window gradients off (80 windows ≤ d / 4: their whole span). The loop is correct, so the certified ε is a lower
bound on a claim that holds: it stays below it (up to the stated 5%), and near ``epsilon_ideal``, the same audit on
the claimed mechanism itself.
"""
from __future__ import annotations

import sys

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.utils.data import DataLoader

from tsdp import (BiLevelBatchSampler, CanaryOptions, PldAccountant, TrainingConfig, WindowDataset, audit_training,
                  training_event)
from tsdp.attacks.canary.audit_result import TrainingAudit
from tsdp.datasets.series import synthetic
from tsdp.training import clip_gradients
from tsdp.training.batch_sampler import batches_for_steps, fit_lengths
from tsdp.verify.rounded import rounded_down, rounded_up

SERIES = synthetic(8, 11, seed=0, noise=2.0).split(1)[0]
CONFIG = fit_lengths(TrainingConfig(context_length=10, forecast_length=1, batch_size=2, instances=1, sigma=0.7,
                                    top="wor"), SERIES.series)
CLIP, LR, STEPS, DELTA = 1.0, 0.05, 30, 1e-5


def squared_error(model, context, forecast):
    """Per-window training loss."""
    return ((model(context.float()) - forecast.float()) ** 2).sum(-1)


def dp_sgd(sigma: float, seed: int = 0, steps: int = STEPS):
    """``train(series)``: the hand-written DP-SGD loop at noise multiplier ``sigma``."""

    def train(series):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(CONFIG.context_length, 32), nn.ReLU(), nn.Linear(32, CONFIG.forecast_length))
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        params = dict(model.named_parameters())
        per_window = vmap(grad(lambda p, c, f: squared_error(lambda x: functional_call(model, p, (x,)), c[None],
                                                             f[None]).sum()), in_dims=(None, 0, 0))
        dataset = WindowDataset([np.asarray(s) for s in series], CONFIG)
        loader = DataLoader(dataset, batch_sampler=BiLevelBatchSampler(
            dataset, generator=torch.Generator().manual_seed(seed)), collate_fn=dataset.collate)
        noise = torch.Generator().manual_seed(seed + 1)
        for context, forecast in batches_for_steps(loader, steps):
            grads = per_window({k: v.detach() for k, v in params.items()}, context.float(), forecast.float())
            # each window to norm ≤ C, float rounding included (g · min(1, C / ||g||) in float32 can exceed C)
            clipped, _ = clip_gradients(grads, CLIP, 1)
            for name, p in params.items():
                p.grad = (clipped[name].sum(0) + sigma * CLIP * torch.randn(p.shape, generator=noise)) / CONFIG.batch_size
            optimizer.step()
        return model

    return train


def claimed_epsilon(sigma: float = CONFIG.sigma, steps: int = STEPS) -> float:
    """The sound ε of the loop at δ = 1e-5 (tsdp's accountant of the configuration over the steps)."""
    return PldAccountant().compose(training_event(CONFIG.with_(sigma=sigma), steps=steps)).get_epsilon(DELTA)


def audit(canaries: int, sigma: float = CONFIG.sigma, seed: int = 0) -> TrainingAudit:
    """One audit of the loop at ``sigma`` (claimed: the same σ) with ``canaries`` gradient canaries."""
    return audit_training(dp_sgd(sigma, seed), SERIES, CONFIG.with_(sigma=sigma), canaries=canaries, delta=DELTA,
                          epsilon=claimed_epsilon(sigma), canary=CanaryOptions(clip=CLIP), loss=squared_error,
                          seed=seed)


if __name__ == "__main__":
    args = sys.argv[1:]
    try:
        m, sigma = int(args[0]) if args else 300, float(args[1]) if len(args) > 1 else CONFIG.sigma
    except ValueError:
        print("hand_dp_sgd_audit.py: error: arguments are CANARIES (an integer) and SIGMA (a number)", file=sys.stderr)
        sys.exit(2)
    r = audit(m, sigma)
    print(f"{m} canaries, σ = {sigma:g}: claimed ε = {rounded_up(r.epsilon_claimed, 3, fixed=True)}, certified ε ≥ "
          f"{rounded_down(r.epsilon_lower, 3, fixed=True)}, the same audit on the claimed mechanism "
          f"{rounded_down(r.gradient.epsilon_ideal, 3, fixed=True)}; violation: {r.violation}")
