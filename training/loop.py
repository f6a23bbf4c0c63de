"""Algorithm 1's loop: the phases of a planned run (warm-up, then the main phase), each an epoch loop of Algorithm 2
steps, each phase's privacy event (the steps it ran) composed into the run's accountant.

The loop counts training steps only; turning the steps a phase ran into per-epoch compositions for deterministic or
shuffled iteration (a partial last epoch included) is the events module's job
(:func:`tsdp.verify.events.training_event`), never the loop's. The DP steps run on
the run's step path (:class:`~tsdp.training.captured.StepPath`): each batch its own size, or every batch in one
capacity (:mod:`tsdp.training.fixed_batch`), compiled whole or not (:mod:`tsdp.training.captured`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

import torch

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import training_event
from tsdp.verify.progress import progress_bar

from .captured import CapturedStep, StepPath
from .fixed_batch import batch_capacity, fixed_capacity
from .samplers import make_sampler, n_starts_of
from .step import apply_gradient, nonprivate_step, private_gradient
from .windows import augment, gather_windows, split_window


@dataclass
class _FixedShape:
    """The fixed-shape step path of a phase (:class:`~tsdp.training.captured.StepPath` ``fixed`` or ``captured``):
    every batch in ``capacity`` slots, the compiled step (or None: the factored engine, eagerly), and the steps
    that overflowed the capacity (run as variable-size steps, exact)."""

    capacity: int
    captured: Optional[CapturedStep] = None
    overflow_steps: int = 0


@dataclass(frozen=True)
class Trainee:
    """What every step of a run reads and changes: the model, its optimiser and generator, the training series laid
    out for it, and how its steps run.

    Attributes:
        model: The model being trained (on the run's device).
        opt: Its torch optimiser.
        generator: The run's generator (batches, augmentation, noise).
        lengths: The training series' lengths (the samplers').
        padded: The training series, front-padded (:func:`~tsdp.training.evaluation.run_tensors`).
        covariates: Their covariates laid out as ``padded`` (None: the model reads none).
        clip: The clipping norm C.
        private: DP steps (clipping and noise); False: plain steps.
        canaries: White-box gradient canaries attached to ``model`` (None: none).
    """

    model: torch.nn.Module
    opt: torch.optim.Optimizer
    generator: torch.Generator
    lengths: tuple
    padded: torch.Tensor
    covariates: Optional[torch.Tensor]
    clip: float
    private: bool
    canaries: object = None


@dataclass(frozen=True)
class LoopReport:
    """What the loop measured.

    Attributes:
        seconds: Wall-clock seconds of the training steps.
        batch_capacity: The slots of every DP step's batch on a fixed-shape step path (None: each its own size).
        overflow_steps: The DP steps whose windows exceeded ``batch_capacity`` (run as variable-size steps).
    """

    seconds: float
    batch_capacity: Optional[int]
    overflow_steps: int


def _step_batches(index, fixed: Optional[_FixedShape]):
    """Per step of ``index``: (seq, start, mask or None) of its batch. Without ``fixed``, the step's sampled
    windows compacted (its own size); with it, the batch of ``fixed.capacity`` slots and its mask, except for a
    step that overflows the capacity, which is compacted and counted. One host read per call (the overflow count),
    none per step."""
    if fixed is None:
        for i in range(index.n_steps):
            one = index.step(i)
            yield one.seq[0], one.start[0], None
        return
    batches = fixed_capacity(index, fixed.capacity)
    over = batches.overflow
    overflowed = set(over.nonzero()[:, 0].tolist()) if bool(over.any()) else set()
    fixed.overflow_steps += len(overflowed)
    for i in range(index.n_steps):
        if i in overflowed:
            one = index.step(i)
            yield one.seq[0], one.start[0], None
        else:
            yield batches.seq[i], batches.start[i], batches.mask[i]


def _run_steps(t: Trainee, config: TrainingConfig, n_steps: int, emit: Callable[[int], None], bar,
               fixed: Optional[_FixedShape]) -> None:
    """``n_steps`` training steps of ``config``'s scheme (Algorithm 1's inner loop, Algorithm 2 steps).

    Samples one epoch of batches at a time from its start (so deterministic/shuffled iteration restarts its epoch
    with every call, as the events module assumes) and calls ``emit(i)`` after step i (0-based within this call).
    The canaries (:class:`attacks.canary.gradient.GradientCanaries`, attached to the model) add their clipped sum to
    ĝ before the noise (divided by Λ with it) and score every step's parameter delta. The covariates are cropped with
    every window for a model that reads them. ``fixed``: private steps on batches of one shape, else each step's
    own size.
    """
    sampler = make_sampler(config, t.lengths)
    done = 0
    while done < n_steps:
        chunk = min(sampler.steps_per_epoch, n_steps - done)
        index = sampler.sample(chunk, t.generator)
        for i, (seq, start, mask) in enumerate(_step_batches(index, fixed if t.private else None)):
            windows = gather_windows(t.padded, seq, start, config.window_length)
            context, forecast = split_window(windows, config.context_length)
            window_covariates = (None if t.covariates is None else
                                 gather_windows(t.covariates, seq, start, config.window_length))
            if config.augmented:
                context, forecast = augment(context, forecast, sigma_context=config.sigma_context,
                                            sigma_forecast=config.sigma_forecast, v=config.v, generator=t.generator)
            extra = None
            if t.canaries is not None:
                extra = [g / config.batch_size for g in t.canaries.gradient()]
                before = t.canaries.snapshot()
            if t.private:
                _private_step(t, config, (context, forecast, mask, window_covariates), extra, fixed)
            elif context.shape[0] > 0 or extra is not None:
                nonprivate_step(t.model, t.opt, context, forecast, extra=extra, covariates=window_covariates)
            if t.canaries is not None:
                t.canaries.observe(before)
            emit(done + i)
            bar.update(1)
        done += chunk


def _private_step(t: Trainee, config: TrainingConfig, batch: tuple, extra, fixed: Optional[_FixedShape]) -> None:
    """One DP step (Algorithm 2) on ``batch`` = (context, forecast, mask, covariates) (``mask``: its sampled slots,
    or None: all): the compiled step where the phase has one (and the batch its fixed shape), else the factored
    engine; ``extra`` (canaries) added to g̃."""
    context, forecast, mask, covariates = batch
    captured = fixed.captured if fixed is not None and mask is not None else None
    if captured is not None and extra is None:
        captured.step(t.opt, context, forecast, mask, generator=t.generator, covariates=covariates)
        return
    if captured is not None:
        gradient = captured.gradient(context, forecast, mask, generator=t.generator, covariates=covariates)
    else:
        gradient = private_gradient(t.model, context, forecast, clip=t.clip, sigma=config.sigma,
                                    batch_size=config.batch_size, generator=t.generator, mask=mask,
                                    covariates=covariates)
    if extra is not None:
        names = [name for name, p in t.model.named_parameters() if p.requires_grad]
        gradient = {name: gradient[name] + e for name, e in zip(names, extra)}
    apply_gradient(t.model, t.opt, gradient)


def _fixed_shape(phase: TrainingConfig, path: StepPath, t: Trainee) -> Optional[_FixedShape]:
    """The fixed-shape step path of a phase for ``path`` (None for ``eager``): the batch capacity of its sampler,
    and for ``captured`` the compiled step of its σ."""
    if path == StepPath.EAGER:
        return None
    capacity = batch_capacity(phase, n_starts_of(phase, t.lengths).tolist())
    captured = (CapturedStep(t.model, clip=t.clip, sigma=phase.sigma, batch_size=phase.batch_size)
                if path == StepPath.CAPTURED else None)
    return _FixedShape(capacity, captured)


def run_phases(t: Trainee, phases: Sequence[Tuple[TrainingConfig, int]], path: StepPath, *,
               accountant: Optional[PldAccountant], theorem: Optional[str],
               after_step: Optional[Callable[[int], None]] = None, progress: bool = True,
               desc: str = "train") -> LoopReport:
    """Train the phases of a run in order (a warm-up, then the main phase), each phase's event (the steps it ran,
    :func:`tsdp.verify.events.training_event`) composed into ``accountant`` once the phase has run.

    Args:
        t: The run's model, optimiser, generator and series.
        phases: (configuration, training steps) of each phase; the last is the main phase.
        path: How the DP steps run (``auto`` already resolved for the device,
            :func:`~tsdp.training.captured.resolve_step_path`).
        accountant: The run's sound accountant (None without DP).
        theorem: The bound that accounts the steps (None: the scheme's tightest).
        after_step: Called after every step of the main phase with the run's 1-based step number (the
            checkpoints); None: nothing.
        progress: Show a progress bar.
        desc: The progress bar's label.

    Returns:
        The :class:`LoopReport`.
    """
    capacity, overflow_steps, before = None, 0, 0
    started = time.perf_counter()
    bar = progress_bar(total=sum(n for _, n in phases), disable=not progress, desc=desc, unit="step")
    for k, (phase, n_steps) in enumerate(phases):
        if n_steps == 0:
            continue
        emit = (lambda i: None)
        if after_step is not None and k == len(phases) - 1:
            emit = (lambda i, offset=before: after_step(offset + i + 1))
        fixed = _fixed_shape(phase, path, t) if t.private else None
        _run_steps(t, phase, n_steps, emit, bar, fixed)
        if accountant is not None:  # the phase's steps as they ran: whole epochs, then a partial one
            accountant.compose(training_event(phase, steps=n_steps, theorem=theorem))
        if fixed is not None:
            capacity, overflow_steps = fixed.capacity, overflow_steps + fixed.overflow_steps
        before += n_steps
    bar.close()
    return LoopReport(time.perf_counter() - started, capacity, overflow_steps)


__all__ = ["LoopReport", "Trainee", "run_phases"]
