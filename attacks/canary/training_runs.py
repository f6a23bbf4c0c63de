"""One run of an audit of *your* training function: your ``train`` called once with m canaries, the run's evidence.

:func:`spike_evidence` (black-box spike canaries, scored on the returned model) and :func:`gradient_evidence`
(white-box gradient canaries in your optimizer, with the mechanism tests); :class:`SpikeTask` and
:class:`GradientTask` are the same runs as picklable units of the multi-run engine (:func:`make_task`,
:mod:`attacks.canary.runs`). :mod:`attacks.canary.user_training` certifies them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig, window_starts

from tsdp.datasets.series import SeriesData
from tsdp.training.train import resolve_device
from tsdp.training.windows import every_window, gather_windows, pad_series, padding_of, split_window

from .spikes import canary_windows, place_canaries, with_canaries
from .options import CanaryOptions
from .audit_result import OptimizerFacts
from .evidence import Evidence
from .mechanism import MechanismTests
from .data_span import DIVERGED, FAILED
from .gradient import SCORES as GRADIENT_SCORES
from .gradient import CanaryEvidence, check_canaries_covered
from .optimizer_canaries import run_with_canaries
from .guarded_calls import DivergedError, UserFunctionError, _call, _limited


@dataclass(frozen=True)
class GradientRunEvidence(CanaryEvidence, OptimizerFacts):
    """The evidence of one run of a gradient-canary audit (:func:`gradient_evidence`), what the run showed of the
    optimizer (:class:`attacks.canary.audit_result.OptimizerFacts`) and its mechanism tests.

    Attributes:
        mechanism: the run's noise, clipping and sampling tests.
    """

    mechanism: MechanismTests


def _default_loss(model, context: torch.Tensor, forecast: torch.Tensor):
    return model(context, forecast)


def _window_losses(model, loss, train, context: torch.Tensor, forecast: torch.Tensor) -> np.ndarray:
    """Per-window losses of ``model`` (on its own device, in eval mode, without gradients) as float64;
    a failure is blamed on ``loss``, or with the default loss on the model ``train`` returned."""
    if isinstance(model, torch.nn.Module):
        param = next(model.parameters(), None)
        if param is not None:
            context, forecast = context.to(param.device), forecast.to(param.device)
        model.eval()
    # the default loss calls the model that train returned: blame train's model, not tsdp's helper
    role, fn, subject = ("loss", loss, "") if loss is not _default_loss else ("train", train, "returned a model that ")
    with torch.no_grad():
        out = _call(role, fn, model, context, forecast, via=loss, subject=subject)
        try:
            tensor = torch.as_tensor(out).detach()
        except (TypeError, ValueError, RuntimeError) as exc:
            raise UserFunctionError(role, fn, f"{subject}gave {type(out).__name__}, not per-window losses "
                                              f"({exc})") from None
        if tensor.is_complex():  # casting would drop the imaginary part in silence
            raise UserFunctionError(role, fn, f"{subject}gave complex losses ({tensor.dtype}): a loss is a real number")
        out = tensor.cpu().double().numpy().reshape(-1)
    if out.shape[0] != context.shape[0]:
        raise UserFunctionError(role, fn, f"{subject}gave {out.shape[0]} losses for {context.shape[0]} windows "
                                          "(one per window needed)")
    bad = int(np.count_nonzero(~np.isfinite(out)))
    if bad:
        raise UserFunctionError(role, fn, f"{subject}gave {bad} non-finite loss(es) (NaN or inf) of {out.shape[0]}: "
                                          "the canaries cannot be scored")
    return out



SPIKE_SCORES = ("memorisation",)
"""The score of a spike-canary run (:mod:`attacks.canary.user_training`)."""


def spike_evidence(train: Callable[[list], object], base: SeriesData, config: TrainingConfig, *, canaries: int,
                   loss: Optional[Callable] = None, seed=0, spike: float = 10.0) -> Evidence:
    """One training run of ``train`` with m spike canaries (:mod:`attacks.canary.user_training`): the ``memorisation`` score and the
    inclusion bits.

    ``seed``: an int or a ``numpy.random.SeedSequence`` (placements, signs and inclusion bits).

    Args:
        train: Your training, ``train(series) -> model``.
        base: The series.
        config: The window geometry.
        canaries: m, the spike canaries.
        loss: The per-window loss ``loss(model, context, forecast) -> (B,)`` (default ``model(context, forecast)``).
        seed: An int or a ``numpy.random.SeedSequence``.
        spike: The spikes' size in standard deviations of their series.

    Returns:
        The run's :class:`~attacks.canary.evidence.Evidence`.

    Raises:
        UserFunctionError: ``train`` or ``loss`` failed or ``train`` returned None.
    """
    loss = _default_loss if loss is None else loss
    rng = np.random.default_rng(seed)
    series, position, values = place_canaries(base, canaries, config, rng, spike)
    included = rng.random(canaries) < 0.5
    model = _call("train", train, [s.copy() for s in with_canaries(base, series, position, values, included).series])
    if model is None:
        raise UserFunctionError("train", train, "returned None, not a model")

    every = with_canaries(base, series, position, values, np.ones(canaries, dtype=bool))
    lengths = torch.as_tensor(base.lengths)
    seq, start, valid = canary_windows(config, series, position, window_starts(lengths, config.forecast_length))
    flat = valid.reshape(-1)
    losses = []
    for version in (base, every):  # padded as tsdp's loop pads for the model (its unobserved value, else zeros)
        padded, _ = pad_series([torch.as_tensor(s) for s in version.series], config.context_length,
                               padding_of(model))
        windows = gather_windows(padded, seq.reshape(-1)[flat], start.reshape(-1)[flat], config.window_length)
        context, forecast = split_window(windows, config.context_length)
        per_window = np.zeros(flat.numel())
        per_window[flat.numpy()] = _window_losses(model, loss, train, context, forecast)
        losses.append(per_window.reshape(valid.shape))
    return Evidence(scores=dict(zip(SPIKE_SCORES, [window_evidence(losses[0] - losses[1])])), included=included)


def window_evidence(gain: np.ndarray) -> np.ndarray:
    """Σ_w tanh(ℓ_w(without) - ℓ_w(with)) per canary from its (m, windows) loss gains (0 where a window is not valid).

    With a negative log-likelihood loss (tsdp's Student-t models) each gain is the window's
    log-likelihood ratio of the series with the canary against the series without it, and
    tanh keeps it where it is small (|x| < 0.35: within 4%); a window can add at most 1. A
    memoriser's gain is huge on every window it stored, and on a window it cannot tell from
    others (a context of front padding only, the same in every series) it is as huge and of
    a random sign: summed raw, that one window decides the canary's rank; bounded, it moves
    it by at most 2 of the 2 (L_C + L_F) - 2 (the manual's "Audit your own training" says why).

    Args:
        gain: (m, windows) loss gains.

    Returns:
        (m,) scores.
    """
    return np.tanh(gain).sum(axis=1)


@dataclass(frozen=True)
class SpikeTask:
    """One run of a multi-run spike audit (:func:`attacks.canary.runs.run_many`): picklable when ``train`` / ``loss`` are
    module-level functions; :meth:`check` refuses a placement that cannot fit before any run starts.

    Attributes:
        train: Your training, ``train(series) -> model``.
        data: The series.
        config: The window geometry.
        canaries: m, the spike canaries of a run.
        loss: The per-window loss (None: ``model(context, forecast)``).
        spike: The spikes' size in standard deviations.
        timeout: The most seconds a run may take (None: no limit).
    """

    train: Callable
    data: SeriesData
    config: TrainingConfig
    canaries: int
    loss: Optional[Callable] = None
    spike: float = 10.0
    timeout: Optional[float] = None

    def check(self) -> None:
        """Place the canaries once (a fixed seed) without training, so that a placement that cannot fit is refused before
        any run starts.

        Raises:
            Whatever :func:`place_canaries` raises for a placement that does not fit.
        """
        place_canaries(self.data, self.canaries, self.config, np.random.default_rng(0), self.spike)

    def __call__(self, seed: np.random.SeedSequence) -> Evidence:
        with _limited(self.train, self.timeout):
            return spike_evidence(self.train, self.data, self.config, canaries=self.canaries, loss=self.loss,
                                  seed=seed, spike=self.spike)


def gradient_evidence(train: Callable[[list], object], base: SeriesData, config: TrainingConfig, *, canaries: int,
                      loss: Optional[Callable] = None, seed=0, canary: CanaryOptions = CanaryOptions(),
                      progress: bool = False) -> GradientRunEvidence:
    """One training run of ``train`` with m gradient canaries in its optimizer (:mod:`attacks.canary.user_training`, ``"gradient"``): the
    ``sum`` and ``mixture`` scores, the inclusion bits and what the run showed (:class:`GradientRunEvidence`).

    ``loss(model, context, forecast) -> (B,)``: the per-window training loss (default
    ``model(context, forecast)``), with which the data's gradients are taken off the observed
    gradient (:mod:`attacks.canary.data_span`; ``data_span`` says why not when they are kept).
    ``canary``: the canaries' C, the gradient's scale (:mod:`attacks.canary.optimizer_canaries`;
    default read from an Opacus DP optimizer, else 1/Λ), the most per-window gradient entries held per step
    (``data_part`` says how the data was taken off and what a step cost) and where the audit's own torch work runs.

    Args:
        train: Your training, ``train(series) -> model``, stepping a torch optimizer.
        base: The series.
        config: The batching your loader draws and the σ you claim.
        canaries: m, the gradient canaries.
        loss: The per-window training loss (to take the data's gradients off).
        seed: An int or a ``numpy.random.SeedSequence`` (directions, inclusion bits, participations).
        canary: The canaries' options (:class:`attacks.canary.options.CanaryOptions`: ``clip``,
            ``gradient_scale``, ``span_entries``, ``device``).
        progress: A bar of the audited steps on stderr.

    Returns:
        The :class:`GradientRunEvidence`.

    Raises:
        UserFunctionError: ``train`` stepped no optimizer, diverged, or ``loss`` cannot give per-window gradients.
    """
    windows = every_window(base.series, config.context_length, config.forecast_length)
    hooks = _call("train", train, [s.copy() for s in base.series],
                  via=lambda series: run_with_canaries(train, series, config, canaries, canary=canary, seed=seed,
                                                       windows=windows, loss=loss or _default_loss,
                                                       progress=progress))
    if hooks.canaries is None or hooks.canaries.steps == 0:
        raise UserFunctionError("train", train, "never called a torch.optim optimizer's step(): gradient canaries "
                                                "hook into one (canary='spike' audits any returned model)")
    with np.errstate(invalid="ignore", over="ignore"):
        evidence = hooks.canaries.evidence()
    span = hooks.data_span
    scored = all(np.all(np.isfinite(s)) for s in evidence.scores.values())
    if not scored or (span is not None and span.startswith(DIVERGED)):
        raise DivergedError(train, _diverged(hooks), [t.name for t in hooks.mechanism_tests().tests if t.failed])
    if span is not None and span.startswith(FAILED):
        if loss is not None:  # asked for and not given: an error, not a quiet loss of power
            raise UserFunctionError("loss", loss, f"cannot give the data's per-window gradients: {span}")
        span += "; give loss(model, context, forecast) -> (B,) per-window losses"
    return GradientRunEvidence(scores=evidence.scores, included=evidence.included, parameters=evidence.parameters,
                               optimizer=hooks.optimizer, steps=hooks.canaries.steps, clip=hooks.clip,
                               scale=hooks.scale, observed=hooks.observed, data_span=span,
                               data_part=hooks.data_part(), mechanism=hooks.mechanism_tests())


def _diverged(hooks) -> str:
    """Why a run that diverged cannot be scored, and what its mechanism tests saw before (the training's fault, not
    the loss's: :data:`attacks.canary.data_span.DIVERGED`)."""
    found = [t.finding for t in hooks.mechanism_tests().tests if t.failed]
    return ("made non-finite gradients or parameter updates (NaN or inf: the training diverged): the canaries cannot "
            "be scored" + ("; before it, " + "; ".join(found) if found else "")
            + "; check the learning rate, the clipping norm and the noise at every step")


@dataclass(frozen=True)
class GradientTask:
    """One run of a multi-run gradient-canary audit (:func:`attacks.canary.runs.run_many`): picklable when
    ``train`` is a module-level function.

    Attributes:
        train: Your training, ``train(series) -> model``, stepping a torch optimizer.
        data: The series.
        config: The batching your loader draws and the σ you claim.
        canaries: m, the gradient canaries of a run.
        canary: The canaries' options (:class:`attacks.canary.options.CanaryOptions`).
        loss: The per-window training loss (to take the data's gradients off).
        timeout: The most seconds a run may take (None: no limit).
        progress: A bar of the audited steps on stderr.
    """

    train: Callable
    data: SeriesData
    config: TrainingConfig
    canaries: int
    canary: CanaryOptions = CanaryOptions()
    loss: Optional[Callable] = None
    timeout: Optional[float] = None
    progress: bool = False

    def check(self) -> None:
        """Nothing to place before the runs: the canaries attach to the optimizer at its first step."""

    def __call__(self, seed: np.random.SeedSequence) -> GradientRunEvidence:
        with _limited(self.train, self.timeout):
            return gradient_evidence(self.train, self.data, self.config, canaries=self.canaries, loss=self.loss,
                                     seed=seed, canary=self.canary, progress=self.progress)


def make_task(canary: CanaryOptions, train: Callable, data: SeriesData, config: TrainingConfig, canaries: int, *,
              loss: Optional[Callable] = None,
              timeout: Optional[float] = None, progress: bool = False) -> Union[SpikeTask, GradientTask]:
    """The run of an audit with ``canary``'s canaries, a function of a seed; ``timeout``: the most seconds one run may
    take (None: no limit); ``canary.device``: where gradient canaries' own torch work runs ("auto": cuda when torch
    sees one, else cpu; "cpu", "cuda", "cuda:N"; None: your parameters' device; ConfigError naming ``device`` when
    torch cannot use it). Spike canaries score the returned model on its own device.

    Args:
        canary: The canaries' options (:class:`attacks.canary.options.CanaryOptions`: the kind, the spikes'
            size for spike canaries; C, the gradient's scale, the entries held per step and the device for gradient
            canaries).
        train: Your training.
        data: The series.
        config: The configuration.
        canaries: m per run.
        loss: The per-window loss.
        timeout: The most seconds a run may take (None: no limit).
        progress: A bar of the audited steps.

    Returns:
        The :class:`SpikeTask` or :class:`GradientTask`.

    Raises:
        ConfigError: A device torch cannot use, naming ``device``; an augmented claim with gradient canaries, naming
            ``sigma_context`` (:func:`attacks.canary.gradient.check_canaries_covered`).
    """
    device = None if canary.device is None else str(resolve_device(canary.device))  # checked whatever the kind
    if canary.kind == "gradient":
        check_canaries_covered(config)  # the claim gradient canaries are certified against (T11 covers none)
        return GradientTask(train, data, config, canaries, canary.with_(device=device), loss, timeout, progress)
    return SpikeTask(train, data, config, canaries, loss, canary.spike, timeout)


CANARIES = {"gradient": GRADIENT_SCORES, "spike": SPIKE_SCORES}
"""The kinds of canaries (`tsdp audit-fn --canary`) and the scores each run gives (certified with Bonferroni)."""


__all__ = ["CANARIES", "SPIKE_SCORES", "GradientRunEvidence", "GradientTask", "SpikeTask", "gradient_evidence",
           "make_task", "spike_evidence", "window_evidence"]
