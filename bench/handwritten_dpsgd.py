"""Hand-written DP-SGD loops in plain torch, each with one planted bug, for white-box audits (tests and benches).

The loop (:func:`dp_sgd`): an MLP L_C → 32 → L_F (d = 385 parameters), per-window gradients with
``torch.func`` (``vmap`` of ``grad``), each clipped to norm C (tsdp's ``clip_gradients``: at most C under float
rounding), the clipped sum plus Gaussian noise
of std σ · C, divided by the batch size Λ, plain SGD; batches drawn by tsdp's
``BiLevelBatchSampler`` (the scheme the claim accounts). Data (:data:`SERIES`): 32 noisy
synthetic series of 20 training values; Λ = 4 windows (one of each of 4 series, WOR top level:
8 steps per epoch), 30 steps, σ = 2 (:data:`CONFIG`).

Bugs (:data:`BUGS`), each the same loop with one change; the claim is always the intended
training's (tsdp's sound accountant of :data:`CONFIG` over the steps run):

* ``correct``: no bug;
* ``noise-off``: no noise (σ = 0);
* ``noise-10x-small``: σ / 10;
* ``noise-once-per-epoch``: the noise is added on the first step of each epoch only;
* ``clipping-off``: the per-window gradients are summed unclipped (the noise is the intended σ · C);
* ``claim-4x-small``: the correct loop, audited against a claim of a quarter of its ε (the accountant's
  ε of :data:`CONFIG` divided by 4; not a loop bug: what the one-run ε test sees of a claim alone).

How often the white-box audit flags each loop, and which of its tests names the bug, is measured by `tsdp bench
planted` (:mod:`.bug_rates`: 1000 gradient canaries, the loss given so that the data's gradients are taken off, as
the tutorial audits, many seeds per loop); the figures are on its page (docs/benchmarks/planted.json, rendered on
the benchmarks page), not here. The mechanism tests name what the ε bound cannot see: in ``clipping-off`` the
canaries enter after the (missing) clipping, of norm C, so the ε bound sees nothing; the clipping test does.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.utils.data import DataLoader

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import training_event

from tsdp.attacks.canary.audit_result import TrainingAudit
from tsdp.datasets.series import synthetic
from tsdp.training import clip_gradients
from tsdp.training.batch_sampler import BiLevelBatchSampler, WindowDataset, batches_for_steps, fit_lengths

BUGS = ("correct", "noise-off", "noise-10x-small", "noise-once-per-epoch", "clipping-off", "claim-4x-small")
SERIES = synthetic(32, 21, seed=0, noise=2.0).split(1)[0]
CONFIG = fit_lengths(TrainingConfig(context_length=10, forecast_length=1, batch_size=4, instances=1, sigma=2.0,
                                    top="wor"), SERIES.series)
CLIP, LR, STEPS, DELTA, HIDDEN = 1.0, 0.002, 30, 1e-5, 32  # LR: clipping-off stays finite (0.01 diverged on 15 of 20 seeds)


def squared_error(model: nn.Module, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
    """Per-window training loss (the loop's; give it as the audit's ``loss``).

    Args:
        model: the loop's MLP.
        context: (B, L_C) contexts.
        forecast: (B, L_F) targets.

    Returns:
        (B,) squared errors summed over the forecast steps.
    """
    return ((model(context.float()) - forecast.float()) ** 2).sum(-1)


def dp_sgd(bug: str = "correct", seed: int = 0, config: TrainingConfig = CONFIG, steps: int = STEPS,
           clip: float = CLIP) -> Callable[[list], nn.Module]:
    """``train(series) -> model``: the hand-written DP-SGD loop at ``config``'s σ with ``bug`` planted (module
    docstring); ``seed`` fixes the model, the batches and the noise.

    Args:
        bug: one of :data:`BUGS`.
        seed: the model's, the batches' and the noise's seed.
        config: the training configuration (σ, C's batch structure).
        steps: the steps trained.
        clip: the clip norm C.

    Returns:
        ``train(series) -> model``.

    Raises:
        ValueError: an unknown bug.
    """
    if bug not in BUGS:
        raise ValueError(f"bug must be one of {', '.join(BUGS)} (got {bug!r})")
    per_epoch = config.steps_per_epoch

    def noise_multiplier(step: int) -> float:
        if bug == "noise-off" or (bug == "noise-once-per-epoch" and step % per_epoch):
            return 0.0
        return config.sigma / 10 if bug == "noise-10x-small" else config.sigma

    def train(series):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(config.context_length, HIDDEN), nn.ReLU(),
                              nn.Linear(HIDDEN, config.forecast_length))
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        params = dict(model.named_parameters())
        per_window = vmap(grad(lambda p, c, f: squared_error(lambda x: functional_call(model, p, (x,)), c[None],
                                                             f[None]).sum()), in_dims=(None, 0, 0))
        dataset = WindowDataset([np.asarray(s) for s in series], config)
        loader = DataLoader(dataset, batch_sampler=BiLevelBatchSampler(
            dataset, generator=torch.Generator().manual_seed(seed)), collate_fn=dataset.collate)
        noise = torch.Generator().manual_seed(seed + 1)
        for done, (context, forecast) in enumerate(batches_for_steps(loader, steps)):
            grads = per_window({k: v.detach() for k, v in params.items()}, context.float(), forecast.float())
            # each window to norm ≤ C, float rounding included (g · min(1, C / ||g||) in float32 can exceed C)
            clipped = grads if bug == "clipping-off" else clip_gradients(grads, clip, 1)[0]
            sigma = noise_multiplier(done)
            for name, p in params.items():
                p.grad = (clipped[name].sum(0) + sigma * clip * torch.randn(p.shape, generator=noise)) / config.batch_size
            optimizer.step()
        return model

    return train


def claimed_epsilon(bug: str = "correct", config: TrainingConfig = CONFIG, steps: int = STEPS,
                    delta: float = DELTA) -> float:
    """The ε the intended training claims at ``delta``: tsdp's sound accountant of ``config`` over ``steps`` (an
    **upper** bound on the correct loop's ε), a quarter of it for ``claim-4x-small``.

    Args:
        bug: one of :data:`BUGS`.
        config: the training configuration.
        steps: the steps trained.
        delta: δ.

    Returns:
        The claimed ε.
    """
    epsilon = PldAccountant().compose(training_event(config, steps=steps)).get_epsilon(delta)
    return epsilon / 4 if bug == "claim-4x-small" else epsilon


def audit(bug: str, canaries: int, seed: int = 0, *, with_loss: bool = True, **kwargs) -> TrainingAudit:
    """One white-box audit (:func:`attacks.canary.user_training.audit_training`) of the loop with ``bug`` against
    the intended claim, ``canaries`` gradient canaries, the data's part taken off with the loop's loss unless
    ``with_loss`` is False; ``kwargs`` go to ``audit_training``.

    Args:
        bug: one of :data:`BUGS`.
        canaries: gradient canaries inserted.
        seed: the loop's and the audit's seed.
        with_loss: take the data's part off with the loop's loss.

    Returns:
        The audit's result.
    """
    from tsdp.attacks.canary.user_training import CanaryOptions, audit_training

    kwargs.setdefault("epsilon", claimed_epsilon(bug))
    return audit_training(dp_sgd(bug, seed), SERIES, CONFIG, canaries=canaries, delta=DELTA,
                          loss=squared_error if with_loss else None, canary=CanaryOptions(clip=CLIP), seed=seed,
                          **kwargs)


__all__ = ["BUGS", "CONFIG", "SERIES", "audit", "claimed_epsilon", "dp_sgd", "squared_error"]
