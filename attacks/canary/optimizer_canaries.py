"""White-box gradient canaries in *your* training function, through torch's global optimizer-step hooks.

:func:`gradient_evidence` calls ``train(series)`` once while every ``torch.optim`` optimizer's
``step`` is hooked (``torch.optim.optimizer.register_optimizer_step_pre_hook`` / ``_post_hook``,
removed afterwards): your code stays as it is. The first optimizer that steps is the audited
one; at its first step the m canaries of :class:`attacks.canary.gradient.GradientCanaries`
attach to its parameters. Before each of its steps the canaries' clipped sum
Σ_i [i included] K_{t,i} C u_i, times the gradient's scale, is added to the gradients it is
about to step on (a parameter without a gradient in a step gets none: a loop adds no noise
there, and an element's gradient may be 0 on it); after the step the canaries are scored
(the ``sum`` and ``mixture`` scores of :mod:`attacks.canary.gradient`) on what was observed:

* for torch's own optimizers (``torch.optim``'s classes, Opacus's wrapped one included), the
  gradient g̃_t they stepped on (``.grad`` after the step, which they only read): what DP-SGD
  releases (Algorithm 2; the parameters are a post-processing of it), so an adaptive optimizer
  (Adam) does not blur the canaries. It is taken off the span of the data's per-window gradients
  at the step's parameters when the data's windows and a ``loss`` are given
  (:mod:`attacks.canary.data_span`: the auditor of the one-run game knows every element but the
  canaries, so this sees through a training without noise or clipping);
* for any other optimizer class (whose ``step`` may add its own noise), the parameter update
  -Δθ_t.

Where the canary enters, and why the claim still bounds it (the direction a lower bound needs).
DP-SGD steps on g̃_t = (Σ clipped + N(0, σ² C² I)) · s with s = 1/Λ under a mean over the
batch (Opacus's ``loss_reduction="mean"`` over its ``expected_batch_size``) and s = 1 under a
sum. Adding K_{t,i} C u_i · s to the gradient after the noise is the same as adding K_{t,i} C u_i
to the clipped sum before it: the canary is one element of clipped gradient norm ≤ C taking
part in steps with the law of one element of ``config``'s scheme (the argument of
:mod:`attacks.canary.gradient`). This needs the loop's noise in ``.grad`` by the time a torch
optimizer's step returns (added before ``step()``, or in a step pre-hook), as in Opacus, tsdp's
loop and hand-written DP-SGD; a loop that noises the parameters after the step must use an
optimizer class of its own (then the updates are observed). Opacus's ``DPOptimizer`` does not
pass through the global hooks; the optimizer it wraps does, with the noised gradient already in
``.grad``. Its wrapper is found once (the object whose ``original_optimizer`` is the stepping
optimizer) and gives C = ``max_grad_norm`` and s (1 / ``expected_batch_size`` or 1). A plain
optimizer gets ``clip`` and s = 1 / Λ of ``config`` (a mean over the configured batch size). A
scale smaller than the loop's own makes each canary weaker than an element (sound, less power);
a larger one would overstate it, so give ``scale=1`` only for a summed loss.
"""
from __future__ import annotations

import gc
import math
from typing import Callable, Optional, Tuple

import numpy as np
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from tsdp.theorems.config import Bottom, Top, TrainingConfig

from .options import CanaryOptions
from .data_span import MAX_ENTRIES, DataPart, DataSpan
from .gradient import GradientCanaries
from .mechanism import (CLIP_ALPHA, NOISE_ALPHA, SAMPLING_ALPHA, MechanismTest, MechanismTests, clipping_test,
                        noise_test, sampling_test, untested)


def steps_on_its_gradient(optimizer: torch.optim.Optimizer) -> bool:
    """Whether ``optimizer`` is one of torch's own (its step only reads ``.grad``): then the gradient is observed.

    Args:
        optimizer: The optimizer that stepped.

    Returns:
        Whether it steps on ``.grad`` alone.
    """
    return type(optimizer).__module__.startswith("torch.optim.")


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

    ``windows``: the data's (context, forecast) windows and ``loss(model, context, forecast) ->
    (B,)`` its per-window training loss, to take the data's gradients off the observed gradient
    (:mod:`attacks.canary.data_span`; None: kept). After the block: ``canaries`` (a
    :class:`GradientCanaries`, None when no optimizer stepped), ``optimizer`` (the audited one's
    class name), ``observed`` ("gradient" or "update"), ``data_span`` (None when the data's
    gradients were taken off, else why not), ``clip`` and ``scale`` (as used), ``others`` (steps of
    other optimizers, not audited). ``device``: where the audit's own tensors live (the canaries' directions,
    participations and projections, the copy of the model that gives the data's per-window gradients; None: the
    optimizer's parameters' device); what it adds to ``.grad`` is moved to each parameter's device.

    Args:
        config: The batching your loader draws and the σ you claim.
        m: The gradient canaries.
        clip: The clipping norm C of a plain optimizer (Opacus's is read from its DP optimizer).
        scale: The gradient's scale (None: read from Opacus, else 1/Λ).
        seed: An int or a ``numpy.random.SeedSequence``.
        windows: The data's (context, forecast) windows (None: the data's part kept).
        loss: The per-window training loss.
        span_entries: The most per-window gradient entries held per step.
        progress: A bar of the audited steps on stderr.
        device: Where the audit's own tensors live (None: the parameters' device).
    """

    def __init__(self, config: TrainingConfig, m: int, *, clip: float = 1.0, scale: Optional[float] = None, seed=0,
                 windows: Optional[Tuple[torch.Tensor, torch.Tensor]] = None, loss: Optional[Callable] = None,
                 span_entries: int = MAX_ENTRIES, progress: bool = False, device=None):
        self.config, self.m, self.seed, self.device = config, m, seed, device
        self.span_entries = span_entries
        self._progress = None
        if progress:
            from tsdp.verify.progress import progress_bar

            self._progress = progress_bar(desc="audited optimizer steps", leave=False,  # no total: a count, not a rate
                                  bar_format="{desc}: {n_fmt} steps [{elapsed}{postfix}]")
        self.clip, self.scale = float(clip), scale
        self.windows, self.loss = windows, loss
        self.canaries: Optional[GradientCanaries] = None
        self.optimizer: Optional[str] = None
        self.observed: Optional[str] = None
        self.data_span: Optional[str] = "no data windows given"
        self.others = 0
        self._owner = None
        self._span: Optional[DataSpan] = None
        self._step_state: Optional[torch.Tensor] = None  # the span basis at θ_t, or θ_t itself (updates)
        self._noise: list = []  # per step: (Σ r_t² off the data's span, its dimensions, |Q^T r_t|, its dimensions)
        self._moves: list = []  # per step with the data's per-window gradients: (⟨r_t, v_t⟩, |mean clipped| / C)

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
        self.canaries = GradientCanaries(self.config, self.m, clip=self.clip, seed=self.seed).attach(params,
                                                                                                  self.device)
        self._owner = optimizer
        self.optimizer = type(wrapper if wrapper is not None else optimizer).__name__
        self.observed = "gradient" if steps_on_its_gradient(optimizer) else "update"
        if self.observed == "update":
            self.data_span = "the parameter updates of an optimizer of its own are observed"
        elif self.windows is not None:
            self._span = DataSpan.of(self.canaries.params, self.windows, self.loss,
                                     atoms=2 * self.config.batch_size, max_entries=self.span_entries,
                                     floor=self.clip, device=self.device)
            self.data_span = self._span.reason

    def _pre(self, optimizer, args, kwargs) -> None:
        if self._owner is None:
            self._attach(optimizer)
        if optimizer is not self._owner:
            self.others += 1
            return
        users = self.canaries.stepped_gradient() if self.observed == "gradient" else None
        has = [p.grad is not None for p in self.canaries.params]
        for p, g in zip(self.canaries.params, self.canaries.gradient()):
            if p.grad is not None:
                p.grad.add_(g, alpha=self.scale)
        if self.observed == "gradient":
            mean = (self._span.clipped_mean(self.canaries.params, self.clip)
                    if self._span is not None and fixed_batch(self.config) is not None else None)
            self._step_state = (self._span.basis(self.canaries.params, self.canaries.stepped_gradient())
                                if self._span is not None else None)
            self._record_noise(users, has, self._step_state if self._span is not None and self._span.mode == "span"
                               else None, mean)
            if self._progress is not None:
                self._progress.update(1)
                if self._span is not None and self._span.steps:
                    self._progress.set_postfix_str(self.data_part().summary, refresh=False)
        else:
            self._step_state = self.canaries.snapshot()

    def _post(self, optimizer, args, kwargs) -> None:
        if optimizer is not self._owner:
            return
        if self.observed == "gradient":
            self.canaries.observe_gradient(self._step_state)
            if self._span is not None and self._span.reason is not None:
                self.data_span = self._span.reason  # it failed mid-run: the later steps keep the data
        elif self._step_state is not None:
            self.canaries.observe(self._step_state)
        self._step_state = None

    def _record_noise(self, users: torch.Tensor, has: list, basis: Optional[torch.Tensor],
                      mean: Optional[torch.Tensor] = None) -> None:
        """The step's statistics of the mechanism tests (:mod:`attacks.canary.mechanism`) from the user's gradient
        before the canaries (``users``, flat), the parameters that have a gradient (``has``), the data's span at
        θ_t (``basis``; a pursuit's basis depends on the observation and is not used) and the mean of the data's
        clipped per-window gradients at θ_t in units of C (``mean``, the sampling test's direction; None: not
        recorded)."""
        r = users.double() / (self.scale * self.clip)
        if not all(has):  # a loop adds no noise where there is no gradient: those coordinates are left out
            keep = torch.cat([torch.full((p.numel(),), h, dtype=torch.bool, device=r.device)
                              for p, h in zip(self.canaries.params, has)])
            r, basis = r[keep], None
            mean = None if mean is None else mean.to(r.device)[keep]
        if mean is not None and float(mean.norm()) > 0:
            size = mean.to(r).norm()
            self._moves.append((float(r @ mean.to(r)) / float(size), float(size)))
        if basis is None:
            self._noise.append((float(r @ r), r.numel(), float(r.norm()), r.numel()))
            return
        inside = basis.T.to(r) @ r
        off = r - basis.to(r) @ inside
        self._noise.append((float(off @ off), r.numel() - basis.shape[1], float(inside.norm()), basis.shape[1]))

    def mechanism_tests(self) -> MechanismTests:
        """The noise, clipping and sampling tests of the run (:mod:`attacks.canary.mechanism`) against ``config``'s
        σ, the clip C and the gradient scale as used, B the configured batch of a fixed-size scheme (else every
        window of the configured dataset)."""
        steps = self.canaries.steps if self.canaries is not None else 0
        if self.observed != "gradient":
            why = ("the optimizer's parameter updates are observed (an optimizer class of its own may add noise "
                   "in its step)")
            return MechanismTests((untested("noise", NOISE_ALPHA, steps, why),
                                   untested("clipping", CLIP_ALPHA, steps, why),
                                   untested("sampling", SAMPLING_ALPHA, steps, why)))
        rows = np.array(self._noise, dtype=float).reshape(-1, 4)
        sigma = float(self.config.sigma)
        clipping = clipping_test(rows[:, 2], rows[:, 3], most_windows(self.config), sigma, self.scale)
        return MechanismTests((noise_test(rows[:, 0], rows[:, 1], sigma, self.scale, self.clip), clipping,
                               self._sampling_test(clipping, steps)))

    def _sampling_test(self, clipping: MechanismTest, steps: int) -> MechanismTest:
        """The sampling test of the run (:func:`attacks.canary.mechanism.sampling_test`) at the declared σ or the noise
        std measured by the noise test when larger, or why not: a scheme whose batch is random, a failed clipping test
        (its bound assumes every window clipped to C), or no per-window gradients of the data at the steps'
        parameters."""
        batch = fixed_batch(self.config)
        if batch is None:
            return untested("sampling", SAMPLING_ALPHA, steps, "the declared scheme's batch size is random (a Poisson "
                                                               "level): no fixed number of windows to hold a step to")
        if clipping.failed:
            return untested("sampling", SAMPLING_ALPHA, steps, "the clipping test failed, and the sampling test's "
                                                               f"bound ({batch} windows of norm ≤ C) assumes the clip")
        if not self._moves:
            why = self.data_span or "they failed"
            return untested("sampling", SAMPLING_ALPHA, steps, "no per-window gradients of the data at the steps' "
                                                               f"parameters ({why}; give loss=, --loss)")
        moves, rows = np.array(self._moves, dtype=float), np.array(self._noise, dtype=float).reshape(-1, 4)
        measured = math.sqrt(rows[:, 0].sum() / rows[:, 1].sum()) if rows[:, 1].sum() > 0 else 0.0
        return sampling_test(moves[:, 0], moves[:, 1], batch, max(float(self.config.sigma), measured))

    def data_part(self) -> Optional[DataPart]:
        """How the data's part was taken off (:class:`DataPart`; None when it was kept)."""
        span = self._span
        if span is None or span.reason is not None or not span.steps:
            return None
        found, each = span.windows_found / span.steps, span.seconds / span.steps
        what = (f"the span of all {span.context.shape[0]} windows' gradients" if span.mode == "span"
                else f"{found:.1f} of {span.context.shape[0]} windows per step found by matching pursuit "
                     f"(at most {span.atoms})")
        return DataPart(span.mode, span.atoms, span.steps, found, each, f"{what}, {each * 1e3:.0f} ms per step")

    def __enter__(self) -> "OptimizerCanaries":
        self._hooks = (register_optimizer_step_pre_hook(self._pre), register_optimizer_step_post_hook(self._post))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._hooks:
            h.remove()
        if self._progress is not None:
            self._progress.close()


def fixed_batch(config: TrainingConfig) -> Optional[int]:
    """The batch Λ of ``config``'s scheme when both levels draw a fixed number (deterministic, shuffled, WOR or
    pooled top level; WR bottom level): every step holds exactly Λ windows; None when a Poisson level draws it.

    Args:
        config: The scheme.

    Returns:
        Λ, or None.
    """
    if config.top in (Top.DETERMINISTIC, Top.SHUFFLE, Top.WOR, Top.POOLED) and config.bottom == Bottom.WR:
        return int(config.batch_size)
    return None


def most_windows(config: TrainingConfig) -> int:
    """The most windows one step of ``config``'s scheme holds: its batch Λ (:func:`fixed_batch`), else every window
    of the dataset.

    Args:
        config: The scheme.

    Returns:
        The most windows of a step.
    """
    batch = fixed_batch(config)
    return int(config.n_windows_total) if batch is None else batch


def run_with_canaries(train: Callable[[list], object], series: list, config: TrainingConfig, m: int, *,
                      canary: Optional[CanaryOptions] = None, seed=0,
                      windows: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
                      loss: Optional[Callable] = None, progress: bool = False) -> OptimizerCanaries:
    """``train(series)`` with m gradient canaries hooked into its optimizer (module docstring); the hooks after the run.

    Args:
        train: Your training, ``train(series) -> model``, stepping a torch optimizer.
        series: The series it trains on.
        config: The batching your loader draws and the σ you claim.
        m: The gradient canaries.
        canary: The canaries' options (:class:`attacks.canary.options.CanaryOptions`: ``clip``,
            ``gradient_scale``, ``span_entries``, the most per-window gradient entries held per step
            (:mod:`attacks.canary.data_span`), ``device``, where the audit's own tensors live; None: the defaults).
        seed: An int or a ``numpy.random.SeedSequence``.
        windows: The data's (contexts, forecasts), to take its per-window gradients off.
        loss: The per-window training loss.
        progress: A bar of the audited steps on stderr.

    Returns:
        The :class:`OptimizerCanaries` after the run.
    """
    canary = CanaryOptions() if canary is None else canary
    with OptimizerCanaries(config, m, clip=canary.clip, scale=canary.gradient_scale, seed=seed, windows=windows,
                           loss=loss, span_entries=canary.span_entries, progress=progress,
                           device=canary.device) as hooks:
        train(series)
    return hooks


__all__ = ["OptimizerCanaries", "fixed_batch", "most_windows", "run_with_canaries", "steps_on_its_gradient"]
