"""One-run canary audit of *your* training function (Steinke, Nasr & Jagielski 2023, via :mod:`attacks.canary.steinke_bound`).

You give ``train(series) -> model``: any code (your model, optimizer, data pipeline, Opacus or
not) that trains on a list of 1-D float arrays and returns something that scores windows.
The harness places m spike canaries in your data exactly as :func:`attacks.canary.trained_model.audit_model`
does (one element each, ±``spike`` standard deviations of its series, at least L_C + L_F
apart, each inserted with probability 1/2), calls ``train`` once on the data with the
inserted canaries, and scores every canary on its canary windows (the windows of Algorithm
4, front padding included, that hold its element):

    score_i = Σ_windows [ loss(window without canary i) - loss(window with canary i) ]

with ``loss(model, context, forecast) -> (B,)`` per-window losses (default: ``model(context,
forecast)``, the convention of tsdp's models). A model that memorised canary i fits the
window with the spike better than without it. The score is fixed before training, so
Steinke et al.'s theorem (one-run audit with abstention; :func:`attacks.canary.steinke_bound.certify`)
makes the reported ``epsilon_lower`` a **lower** bound, with probability ≥ ``confidence``, on
the ε of the training at event level (one changed element: the (ε, δ) the training claims
for an event-level or user-level relation must be at least this). ``violation`` says
whether it exceeds the ε you claim.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import numpy as np
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig

from tsdp.attacks.data.series import SeriesData
from tsdp.attacks.loop.windows import gather_windows, pad_series, split_window

from .spikes import canary_windows, place_canaries, with_canaries
from .steinke_bound import certify


def _default_loss(model, context: torch.Tensor, forecast: torch.Tensor):
    return model(context, forecast)


def _window_losses(model, loss, context: torch.Tensor, forecast: torch.Tensor) -> np.ndarray:
    """Per-window losses of ``model`` (on its own device, in eval mode, without gradients) as float64."""
    if isinstance(model, torch.nn.Module):
        param = next(model.parameters(), None)
        if param is not None:
            context, forecast = context.to(param.device), forecast.to(param.device)
        model.eval()
    with torch.no_grad():
        out = loss(model, context, forecast)
    out = torch.as_tensor(out).detach().cpu().double().numpy().reshape(-1)
    if out.shape[0] != context.shape[0]:
        raise ValueError(f"the loss must give one value per window: got {out.shape[0]} for {context.shape[0]} windows")
    return out


def _placed(base: SeriesData, config: TrainingConfig, canaries: int, rng: np.random.Generator, spike: float):
    """The canaries' (series, position, spike) (ConfigError naming ``canaries`` when they do not fit)."""
    try:
        return place_canaries(base, canaries, config, rng, spike)
    except ValueError as exc:  # too many canaries for the data, or series too short to hold out L_F
        raise ConfigError("canaries", str(exc), canaries) from None


def spike_evidence(train: Callable[[list], object], base: SeriesData, config: TrainingConfig, *, canaries: int,
                   loss: Optional[Callable] = None, seed=0, spike: float = 10.0) -> dict:
    """One training run of ``train`` with m spike canaries (module docstring): {"scores": {"memorisation"}, "included"}.

    ``seed``: an int or a ``numpy.random.SeedSequence`` (placements, signs and inclusion bits).
    """
    loss = _default_loss if loss is None else loss
    rng = np.random.default_rng(seed)
    series, position, values = _placed(base, config, canaries, rng, spike)
    included = rng.random(canaries) < 0.5
    model = train([s.copy() for s in with_canaries(base, series, position, values, included).series])

    every = with_canaries(base, series, position, values, np.ones(canaries, dtype=bool))
    lengths = torch.as_tensor(base.lengths)
    seq, start, valid = canary_windows(config, series, position, lengths - config.forecast_length + 1)
    flat = valid.reshape(-1)
    losses = []
    for version in (base, every):
        padded, _ = pad_series([torch.as_tensor(s) for s in version.series], config.context_length)
        windows = gather_windows(padded, seq.reshape(-1)[flat], start.reshape(-1)[flat], config.window_length)
        context, forecast = split_window(windows, config.context_length)
        per_window = np.zeros(flat.numel())
        per_window[flat.numpy()] = _window_losses(model, loss, context, forecast)
        losses.append(per_window.reshape(valid.shape).sum(1))
    return {"scores": {"memorisation": losses[0] - losses[1]}, "included": included}


@dataclass(frozen=True)
class SpikeTask:
    """One run of a multi-run spike audit (:func:`attacks.canary.runs.run_many`): picklable when ``train`` / ``loss`` are
    module-level functions; :meth:`check` refuses a placement that cannot fit before any run starts."""

    train: Callable
    data: SeriesData
    config: TrainingConfig
    canaries: int
    loss: Optional[Callable] = None
    spike: float = 10.0

    def check(self) -> None:
        _placed(self.data, self.config, self.canaries, np.random.default_rng(0), self.spike)

    def __call__(self, seed: np.random.SeedSequence) -> dict:
        return spike_evidence(self.train, self.data, self.config, canaries=self.canaries, loss=self.loss, seed=seed,
                              spike=self.spike)


def audit_training(train: Callable[[list], object], data: Union[SeriesData, Sequence], config: TrainingConfig, *,
                   canaries: int, delta: float, epsilon: Optional[float] = None,
                   loss: Optional[Callable] = None, seed: int = 0, confidence: float = 0.95,
                   spike: float = 10.0) -> dict:
    """One-run canary audit of ``train`` on ``data`` (module docstring); a lower bound on the training's ε.

    ``config`` gives the window geometry (L_C, L_F) the canaries are scored on; ``epsilon``
    (optional) is the ε your training claims at ``delta``. Returns a JSON-ready dict:
    canaries, included, epsilon_lower, confidence, delta, epsilon_claimed, violation, the
    score's guesses and AUC.
    """
    if canaries < 2:
        raise ConfigError("canaries", "must be >= 2", canaries)
    if not (0 < confidence < 1):
        raise ConfigError("confidence", "must be in (0, 1)", confidence)
    evidence = spike_evidence(train, as_series(data), config, canaries=canaries, loss=loss, seed=seed, spike=spike)
    bounds = certify(evidence["scores"], evidence["included"], delta, confidence)
    lower = bounds["epsilon_lower"]
    return {
        "canaries": canaries, "included": int(evidence["included"].sum()), "spike": spike, "delta": delta,
        "confidence": confidence, "epsilon_lower": lower, "epsilon_claimed": epsilon,
        "violation": epsilon is not None and math.isfinite(epsilon) and lower > epsilon,
        "scores": bounds["scores"],
    }


def as_series(data: Union[SeriesData, Sequence]) -> SeriesData:
    """``data`` as :class:`SeriesData` (a sequence of 1-D arrays is copied as float64)."""
    return data if isinstance(data, SeriesData) else SeriesData(tuple(np.asarray(s, dtype=np.float64) for s in data))
