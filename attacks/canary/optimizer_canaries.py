"""White-box gradient canaries in *your* training function, through torch's global optimizer-step hooks.

:func:`gradient_evidence` calls ``train(series)`` once while every ``torch.optim`` optimizer's
``step`` is hooked (``torch.optim.optimizer.register_optimizer_step_pre_hook`` / ``_post_hook``,
removed afterwards): your code stays as it is. The first optimizer that steps is the audited
one; at its first step the m canaries of :class:`attacks.canary.gradient.GradientCanaries`
attach to its parameters. Before each of its steps the canaries' clipped sum
Σ_i [i included] K_{t,i} C u_i, times the gradient's scale, is added to the gradients it is
about to step on; after the step the parameter deltas are projected on the canaries'
directions (the ``sum`` and ``mixture`` scores of :mod:`attacks.canary.gradient`).

Where the canary enters, and why the claim still bounds it (the direction a lower bound needs).
DP-SGD steps on g̃_t = (Σ clipped + N(0, σ² C² I)) · s with s = 1/Λ under a mean over the
batch (Opacus's ``loss_reduction="mean"`` over its ``expected_batch_size``) and s = 1 under a
sum. Adding K_{t,i} C u_i · s to the gradient after the noise is the same as adding K_{t,i} C u_i
to the clipped sum before it: the canary is one element of clipped gradient norm ≤ C taking
part in steps with the law of one element of ``config``'s scheme (the argument of
:mod:`attacks.canary.gradient`). Opacus's ``DPOptimizer`` does not pass through the global
hooks; the optimizer it wraps does, with the noised gradient already in ``.grad``. Its wrapper
is found once (the object whose ``original_optimizer`` is the stepping optimizer) and gives
C = ``max_grad_norm`` and s (1 / ``expected_batch_size`` or 1). A plain optimizer gets ``clip``
and s = 1 / Λ of ``config`` (a mean over the configured batch size). A scale smaller than the
loop's own makes each canary weaker than an element (sound, less power); a larger one would
overstate it, so give ``scale=1`` only for a summed loss.
"""
from __future__ import annotations

import gc
from typing import Callable, Optional

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from tsdp.theorems.config import TrainingConfig

from .gradient import GradientCanaries


def _dp_wrapper(optimizer: torch.optim.Optimizer):
    """The Opacus-style DP optimizer wrapping ``optimizer`` (its ``original_optimizer``), or None."""
    for holder in gc.get_referrers(optimizer):
        owners = [holder] + ([o for o in gc.get_referrers(holder) if getattr(o, "__dict__", None) is holder]
                             if isinstance(holder, dict) else [])
        for owner in owners:
            if getattr(owner, "original_optimizer", None) is optimizer and hasattr(owner, "max_grad_norm"):
                return owner
    return None


class OptimizerCanaries:
    """m gradient canaries hooked into the first torch optimizer that steps inside the ``with`` block (module docstring).

    After the block: ``canaries`` (a :class:`GradientCanaries`, None when no optimizer
    stepped), ``optimizer`` (the audited one's class name), ``clip`` and ``scale`` (as used),
    ``others`` (steps of other optimizers, not audited).
    """

    def __init__(self, config: TrainingConfig, m: int, *, clip: float = 1.0, scale: Optional[float] = None, seed=0):
        self.config, self.m, self.seed = config, m, seed
        self.clip, self.scale = float(clip), scale
        self.canaries: Optional[GradientCanaries] = None
        self.optimizer: Optional[str] = None
        self.others = 0
        self._owner = None
        self._before: Optional[torch.Tensor] = None

    def _attach(self, optimizer: torch.optim.Optimizer) -> None:
        wrapper = _dp_wrapper(optimizer)
        if wrapper is not None:
            self.clip = float(wrapper.max_grad_norm)
            if self.scale is None:  # a given scale stands (the caller knows the loop)
                reduction = getattr(wrapper, "loss_reduction", "mean")
                self.scale = 1.0 / wrapper.expected_batch_size if reduction == "mean" else 1.0
        elif self.scale is None:
            self.scale = 1.0 / self.config.batch_size
        params = [p for group in optimizer.param_groups for p in group["params"]]
        self.canaries = GradientCanaries(self.config, self.m, clip=self.clip, seed=self.seed).attach(params)
        self._owner = optimizer
        self.optimizer = type(wrapper if wrapper is not None else optimizer).__name__

    def _pre(self, optimizer, args, kwargs) -> None:
        if self._owner is None:
            self._attach(optimizer)
        if optimizer is not self._owner:
            self.others += 1
            return
        for p, g in zip(self.canaries.params, self.canaries.gradient()):
            if p.grad is None:
                p.grad = g * self.scale
            else:
                p.grad.add_(g, alpha=self.scale)
        self._before = self.canaries.snapshot()

    def _post(self, optimizer, args, kwargs) -> None:
        if optimizer is self._owner and self._before is not None:
            self.canaries.observe(self._before)
            self._before = None

    def __enter__(self) -> "OptimizerCanaries":
        self._hooks = (register_optimizer_step_pre_hook(self._pre), register_optimizer_step_post_hook(self._post))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._hooks:
            h.remove()


def run_with_canaries(train: Callable[[list], object], series: list, config: TrainingConfig, m: int, *,
                      clip: float = 1.0, scale: Optional[float] = None, seed=0) -> OptimizerCanaries:
    """``train(series)`` with m gradient canaries hooked into its optimizer (module docstring); the hooks after the run."""
    with OptimizerCanaries(config, m, clip=clip, scale=scale, seed=seed) as hooks:
        train(series)
    return hooks


__all__ = ["OptimizerCanaries", "run_with_canaries"]
