"""Runs of tsdp's loop with gradient canaries trained together: an adapter over :mod:`tsdp.training.together`.

:func:`tsdp.training.together.train_together` trains K runs of one model and scheme (differing in seed) as one
stacked program, each run the run it is alone to float rounding. A white-box audit adds each run's gradient canaries
(:class:`attacks.canary.gradient.GradientCanaries`) to its noisy gradient before the optimizer's step and records the
step's parameter delta after it, as :func:`tsdp.training.train.train` does for one run (``canaries=``). The stacked
loop has no seam of its own for that, so the canaries enter where they enter a user's optimizer
(:mod:`attacks.canary.optimizer_canaries`): torch's global optimizer step hooks, held only while the runs train. On
the stack's optimizer (the one whose parameters have the K runs as their leading dimension, in the models'
``named_parameters`` order), the pre-step hook adds run k's canary sum / Λ to row k of every parameter's gradient and
takes run k's snapshot; the post-step hook records run k's step. Each run's canaries draw from their own seed, as
alone, so run k's evidence is the evidence of run k trained alone (float rounding aside).

The runs must end at the same step (they share the plan: same configuration, data and length); a run dropped from
the stack before the others would move the rows, and is refused.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from tsdp.theorems.config import TrainingConfig

from tsdp.training.result import TrainResult
from tsdp.training.together import GroupSettings, Run, train_together

from .gradient import GradientCanaries


class _StackHooks:
    """The global step hooks of one group of runs (module docstring): found on the first step of an optimizer whose
    parameters stack ``len(canaries)`` runs."""

    def __init__(self, canaries: Sequence[GradientCanaries], batch_size: int):
        self.canaries, self.batch_size = list(canaries), batch_size
        self.optimizer: Optional[torch.optim.Optimizer] = None
        self.before: List[torch.Tensor] = []

    def _params(self, optimizer) -> List[torch.Tensor]:
        return [p for group in optimizer.param_groups for p in group["params"]]

    def _ours(self, optimizer) -> bool:
        if self.optimizer is None:
            params = self._params(optimizer)
            if not params or any(p.dim() == 0 or p.shape[0] != len(self.canaries) for p in params):
                return False
            self.optimizer = optimizer
            for k, c in enumerate(self.canaries):  # each run's rows, as its own model's parameters
                c.attach([p.detach()[k].requires_grad_(True) for p in params])
            return True
        if optimizer is not self.optimizer:
            if any(p.shape[0] == len(self.canaries) for p in self._params(optimizer)):
                return False  # another stack (not ours)
            raise RuntimeError("a run left the stacked runs before the others: canary runs trained together must "
                               "end at the same step")
        return True

    def pre(self, optimizer, args, kwargs) -> None:
        if not self._ours(optimizer):
            return
        params = self._params(optimizer)
        self.before = []
        with torch.no_grad():
            for k, c in enumerate(self.canaries):
                for p, g in zip(params, c.gradient()):
                    p.grad[k] += g / self.batch_size
                self.before.append(c.snapshot())

    def post(self, optimizer, args, kwargs) -> None:
        if optimizer is not self.optimizer:
            return
        for c, before in zip(self.canaries, self.before):
            c.observe(before)


def train_with_canaries(config: TrainingConfig, runs: Sequence[Run], settings: GroupSettings,
                        canaries: Sequence[GradientCanaries]) -> List[TrainResult]:
    """Train ``runs`` together (:func:`tsdp.training.together.train_together`), run k with the gradient canaries
    ``canaries[k]`` fed every step as :func:`tsdp.training.train.train` feeds them alone (module docstring).

    Args:
        config: The runs' configuration (the canaries' batching).
        runs: The runs (one seed each, no budget: the runs end at the same step).
        settings: What every run shares (``private=False``: no clipping or noise; the canaries keep their norm).
        canaries: One unattached :class:`~attacks.canary.gradient.GradientCanaries` per run, in run order.

    Returns:
        Each run's :class:`~tsdp.training.result.TrainResult`, in order; each run's canaries hold its evidence.

    Raises:
        ValueError: A canaries object per run is not given.
        RuntimeError: The runs did not end at the same step.
    """
    if len(canaries) != len(runs):
        raise ValueError(f"give one canaries object per run ({len(runs)} runs, {len(canaries)} given)")
    hooks = _StackHooks(canaries, config.batch_size)
    handles = (register_optimizer_step_pre_hook(hooks.pre), register_optimizer_step_post_hook(hooks.post))
    try:
        results = train_together(config, runs, settings)
    finally:
        for handle in handles:
            handle.remove()
    if hooks.optimizer is None:
        raise RuntimeError("the runs took no step: no canary was fed")
    return results


__all__ = ["train_with_canaries"]
