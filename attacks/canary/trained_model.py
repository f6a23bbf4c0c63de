"""One-run canary audit of a tsdp forecaster trained by the real loop (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run").

m spike canaries (:mod:`attacks.canary.spikes`) are each inserted independently with
probability 1/2; the model is trained once with the real loop (:func:`training.train.train`),
and each canary is scored on its canary windows in the data with every canary present:

* black box ("loss"): the drop of the model's loss on the canary windows from the initial
  model to the trained one;
* white box ("gradient"): minus the norm of the trained model's gradient on the canary
  windows (a memorised canary sits near a stationary point of its own loss; an unseen
  spike leaves a large gradient).

Contexts must be distinctive for that (e.g. noisy series; on smooth series the forecaster
cannot tell canary contexts apart and the scores are at chance). Both scores are fixed in
advance and certified by :func:`attacks.canary.steinke_bound.certify` (a **lower** bound on
the training's ε at event level, with probability ≥ confidence).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import torch

from tsdp.theorems.config import Relation, TrainingConfig, check_confidence, window_starts
from tsdp.verify.json_data import Record, noted

from tsdp.datasets.formats import load_series
from tsdp.datasets.series import SeriesData
from tsdp.training.step import per_sample_gradients
from tsdp.training.options import Budget, Checkpoints, Evaluation, Loop
from tsdp.training.train import initial_model, resolve_device, train
from tsdp.training.windows import covariates_of, gather_windows, pad_covariates, pad_series, padding_of, split_window

from .certified import ScoreBound
from .gradient import check_canaries_covered
from .spikes import canary_windows, place_canaries, with_canaries
from .steinke_bound import certify


def _scores(model, init_model, padded, n_starts, config, series, position, covariates=None):
    """(black-box loss drop, white-box minus gradient norm) per canary on its canary windows (module docstring);
    ``covariates``: the series' covariates laid out as ``padded``, for a model that reads them (DeepAR)."""
    seq, start, valid = canary_windows(config, series, position, n_starts)
    windows = gather_windows(padded, seq, start, config.window_length)
    context, forecast = split_window(windows, config.context_length)
    flat = [context.reshape(-1, config.context_length), forecast.reshape(-1, config.forecast_length)]
    window_covariates = None
    if covariates is not None:
        window_covariates = gather_windows(covariates, seq, start, config.window_length)
        flat.append(window_covariates.reshape(-1, *window_covariates.shape[-2:]))
    with torch.no_grad():
        loss_final = (model(*flat).reshape(valid.shape) * valid).sum(1)
        loss_init = (init_model(*flat).reshape(valid.shape) * valid).sum(1)
    black = (loss_init - loss_final).numpy()
    grads = per_sample_gradients(model, context, forecast, covariates=window_covariates)
    summed = torch.cat([(g * valid.reshape(*valid.shape, *([1] * (g.dim() - 2)))).reshape(*valid.shape, -1).sum(1)
                        for g in grads.values()], dim=1)
    white = (-summed.norm(dim=1)).numpy()
    return black, white


NO_NOISE_NOTE = "null: ε = ∞, trained without noise"
"""The JSON ``epsilon_budget_note`` beside the null of an infinite budget."""


@dataclass(frozen=True)
class ModelAuditResult(Record):
    """A one-run canary audit of a model trained by tsdp's loop (module docstring).

    Attributes:
        model: the forecaster's name.
        canaries: m, the spike canaries placed.
        included: how many of them the training data held (each with probability 1/2).
        epsilon_budget: the training's ε budget at ``delta`` (inf: trained without noise; null in JSON, with
            ``epsilon_budget_note``).
        epsilon_spent: the sound accountant's ε of the steps that ran, an **upper** bound (None without noise).
        sigma: the noise multiplier trained at (calibrated with ``epochs``; 0.0 without noise).
        delta: the δ of the budget and of the bounds.
        confidence: the probability with which ``epsilon_lower`` holds.
        epsilon_lower: the largest certified lower bound over the scores (Steinke et al. 2023, a **lower** bound).
        violation: ``epsilon_lower`` exceeds ``epsilon_spent``: the training leaks more than its accountant says.
        scores: the certified bound of each score, ``loss`` (black box) and ``gradient`` (white box).
        steps: training steps that ran.
        crps: the trained model's test CRPS.
        device: the torch device trained on.
        seconds: wall-clock seconds of the training steps.
    """

    model: str
    canaries: int
    included: int
    epsilon_budget: float = noted(NO_NOISE_NOTE)
    epsilon_spent: Optional[float]
    sigma: float
    delta: float
    confidence: float
    epsilon_lower: float
    violation: bool
    scores: Dict[str, ScoreBound]
    steps: int
    crps: float
    device: str
    seconds: float



@dataclass(frozen=True)
class ModelTraining:
    """How :func:`audit_model` trains the model (:func:`tsdp.training.train.train`'s keywords of the same names).

    Attributes:
        epochs: Train exactly that many epochs at a calibrated σ (None: at ``config.sigma`` until the budget is
            spent).
        lr: The learning rate.
        device: The torch device ("auto": cuda when available).
        progress: Report training progress.
    """

    epochs: Optional[int] = None
    lr: float = 1e-3
    device: str = "auto"
    progress: bool = False


def audit_model(model_name: str, config: TrainingConfig, *, data: SeriesData | str = "synthetic", canaries: int,
                epsilon: float, delta: float, seed: int = 0, confidence: float = 0.95, spike: float = 10.0,
                training: ModelTraining = ModelTraining()) -> ModelAuditResult:
    """One-run canary audit (Steinke et al. 2023) of ``model_name`` trained on ``data`` with ``config``'s batching.

    ``data``: a :class:`SeriesData` or what :func:`~tsdp.datasets.formats.load_series` reads. ``epsilon`` is the
    training budget at ``delta`` under the sound accountant of :mod:`tsdp.verify.accountant`
    (event level, the canaries' relation), which the training loop feeds one event per step.
    With ``training.epochs`` the training runs exactly that many epochs: σ is calibrated
    (:func:`tsdp.verify.calibration.calibrate_sigma`) so that they spend at most ``epsilon``;
    without, it runs at ``config.sigma`` until the budget is spent (a budget that buys no step
    is refused, as by ``tsdp train``).
    ``epsilon = inf`` trains without clipping or noise for ``training.epochs``.

    Args:
        model_name: The model to train (a name of :mod:`tsdp.training.models`).
        config: The batching, σ and window geometry (the relation is set to event level, the canaries').
        data: A :class:`SeriesData` or what :func:`~tsdp.datasets.formats.load_series` reads.
        canaries: m, the spike canaries.
        epsilon: The training budget at ``delta`` (inf: no noise, with ``training.epochs``).
        delta: The δ of the budget and of the bound.
        seed: The seed of the canaries and of the training.
        confidence: The probability with which the bound holds.
        spike: The spikes' size in standard deviations of their series.
        training: The epochs, learning rate, device and progress of the training (:class:`ModelTraining`).

    Returns:
        A :class:`ModelAuditResult`: a **lower** bound on ε (confidence ``confidence``) per score and their AUCs
        (``as_dict()``: its JSON).

    Raises:
        ValueError: Data of another size than ``config.N``, or ``epsilon = inf`` without ``training.epochs``.
        ConfigError: An augmented ``config`` (naming ``sigma_context``): its claim, T11, does not cover spike canaries
            (:func:`attacks.canary.gradient.check_canaries_covered`); a confidence outside (0.5, 1)
            (:func:`tsdp.theorems.validate.check_confidence`).
    """
    from tsdp.verify.calibration import calibrate_sigma

    confidence = check_confidence(confidence)
    check_canaries_covered(config)  # spikes move their element by more than the v an augmented claim (T11) covers
    rng = np.random.default_rng(seed)
    if isinstance(data, SeriesData):
        base = data
    else:
        base = load_series(data, config=config, seed=seed)
    if base.N != config.N:
        raise ValueError(f"data has {base.N} series but the configuration says N = {config.N} (set --N {base.N})")
    series, position, values = place_canaries(base, canaries, config, rng, spike)
    included = rng.random(canaries) < 0.5
    private, epochs, device = math.isfinite(epsilon), training.epochs, training.device
    if not private and epochs is None:
        raise ValueError("training without noise (epsilon = inf) needs --epochs")
    if config.relation != Relation.EVENT or config.w != 1:
        config = config.with_(relation="event", w=1)  # a canary changes one element
    if private and epochs is not None:
        config = config.with_(sigma=calibrate_sigma(config, epsilon, delta, epochs=epochs).sigma)
    trained = train(config, model_name, with_canaries(base, series, position, values, included),
                    budget=Budget(epsilon=epsilon if private else None, delta=delta if private else None,
                                  epochs=epochs, private=private),
                    loop=Loop(lr=training.lr), evaluation=Evaluation(n_samples=20), checkpoints=Checkpoints(return_model=True),
                    device=device, seed=seed, progress=training.progress)
    model = trained.trained_model.cpu()
    full = with_canaries(base, series, position, values, np.ones(canaries, dtype=bool))
    train_part, _ = full.split(config.forecast_length)
    init_model = initial_model(model_name, config, train_part, seed=seed)  # train()'s initial model
    padded, lengths = pad_series([torch.as_tensor(s) for s in train_part.series], config.context_length,
                                 padding_of(model))  # the windows as the training loop padded them
    covariates = (pad_covariates(train_part.starts, train_part.lengths, config.context_length)
                  if covariates_of(model) else None)
    black, white = _scores(model, init_model, padded, window_starts(lengths, config.forecast_length), config, series,
                           position, covariates)
    bounds = certify({"loss": black, "gradient": white}, included, delta, confidence)
    lower = bounds.epsilon_lower
    return ModelAuditResult(
        model=model_name, canaries=canaries, included=int(included.sum()), epsilon_budget=epsilon,
        epsilon_spent=trained.epsilon, sigma=config.sigma if private else 0.0, delta=delta, confidence=confidence,
        epsilon_lower=lower, violation=trained.epsilon is not None and lower > trained.epsilon,
        scores=dict(bounds.scores), steps=trained.steps,
        crps=trained.crps, device=str(resolve_device(device)), seconds=trained.seconds)


__all__ = ["ModelAuditResult", "ModelTraining", "NO_NOISE_NOTE", "audit_model"]
