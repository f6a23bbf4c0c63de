"""`tsdp bench blackbox`: spike-canary audits of returned models, side by side on the same data.

One black-box audit (:func:`attacks.canary.user_training.audit_training` with ``canary="spike"``:
m spike canaries, each inserted with probability 1/2, scored on the returned model's
per-window losses with and without it) of each of

* ``1-NN``: a nearest-neighbour forecaster that stores every training window (no noise, no
  clipping: true ε = ∞), scored by its squared error;
* tsdp's ``simple-ff`` and ``deepar`` trained without clipping or noise for ``epochs`` epochs
  (:func:`training.train.train` with ``private=False``; the test CRPS against the untrained
  model's says whether they fit), scored by their Student-t negative log-likelihood (the
  windows' log-likelihood ratio);
* the same two trained with DP-SGD for the same epochs at the σ calibrated to the claimed ε
  (:func:`tsdp.verify.calibration.calibrate_sigma`, tsdp's sound accountant).

For each: the AUC of the score, the certified ε (a **lower** bound at δ, 95%), the ceiling (the
ε of every guess right) and whether the claim is flagged. The data: seeded noisy synthetic
series, all audits on the same series and canary placements (one seed).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from tsdp.verify.rounded import rounded_down, rounded_up
from tsdp.theorems.config import TrainingConfig
from tsdp.verify.json_data import NOTE, Record, noted, record_dict

from tsdp.datasets.series import SeriesData, synthetic
from tsdp.training.batch_sampler import fit_lengths
from tsdp.training.windows import every_window

from tsdp.attacks.canary.steinke_bound import AUC_NOTE, AUC_UNDEFINED
from tsdp.attacks.canary.user_training import AuditOptions, audit_training

from tsdp.bench.rounds import Conditions, conditions_since, environment

MODELS = ("simple-ff", "deepar")
"""tsdp's models in the bench (trained without noise, then with DP)."""


class NearestNeighbour:
    """A forecaster that stores every training window and forecasts the forecast part of the one whose context is
    nearest (Euclidean); called as ``model(context, forecast)`` it gives each window's squared error.

    Args:
        series (torch.Tensor): The training series.
        config: The window sizes (L_C, L_F).
    """

    def __init__(self, series, config: TrainingConfig):
        self.context, self.forecast = (t.double() for t in every_window(series, config.context_length,
                                                                        config.forecast_length))

    def __call__(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        nearest = torch.cdist(context.double(), self.context).argmin(1)
        return ((self.forecast[nearest] - forecast.double()) ** 2).sum(-1)


@dataclass(frozen=True)
class TrainingFacts(Record):
    """What one training of tsdp's loop gave (:meth:`TsdpTraining.train`).

    Attributes:
        crps: The trained model's test CRPS.
        untrained_crps: The untrained model's.
        epsilon: The sound accountant's ε (an **upper** bound; None without noise).
        steps: The training steps.
        seconds: The training's wall seconds.
    """

    crps: float
    untrained_crps: float
    epsilon: Optional[float]
    steps: int
    seconds: float


@dataclass(frozen=True)
class TsdpRun:
    """One training of tsdp's loop (:meth:`TsdpTraining.train`): the model it returned and what it gave.

    Attributes:
        model: The trained model, on the CPU.
        facts: Its CRPS, untrained CRPS, ε, steps and seconds.
    """

    model: torch.nn.Module
    facts: TrainingFacts


@dataclass(frozen=True)
class TsdpTraining:
    """``train(series) -> model`` of tsdp's loop: ``model`` on the series (their last L_F values held out), for
    ``epochs`` epochs, without noise when ``sigma`` is None, else DP-SGD at ``sigma`` (C = 1).

    Called, it returns the model (an audit's training function); :meth:`train` returns the model with what the
    training gave.

    Attributes:
        config: The configuration (the window sizes and batching).
        model: The model's name (:func:`tsdp.training.models.make_model`).
        epochs: Training epochs.
        sigma: The noise multiplier (None: no noise).
        delta: δ of the ε reported.
        seed: The seed.
        lr: The learning rate.
    """

    config: TrainingConfig
    model: str
    epochs: int
    sigma: Optional[float]
    delta: float
    seed: int = 0
    lr: float = 1e-2

    def train(self, series: Sequence[np.ndarray]) -> TsdpRun:
        """Train on ``series``.

        Args:
            series: The training series (1-D arrays).

        Returns:
            The :class:`TsdpRun`: the model and its :class:`TrainingFacts`.
        """
        from tsdp.training.options import Budget, Checkpoints, Evaluation, Loop
        from tsdp.training.train import train

        private = self.sigma is not None
        config = self.config.with_(sigma=self.sigma) if private else self.config
        run = train(config, self.model, SeriesData(tuple(np.asarray(s, dtype=np.float64) for s in series)),
                    budget=Budget(epochs=self.epochs, delta=self.delta if private else None, private=private),
                    loop=Loop(lr=self.lr), evaluation=Evaluation(n_samples=20),
                    checkpoints=Checkpoints(return_model=True), device="cpu", seed=self.seed, progress=False)
        facts = TrainingFacts(crps=run.crps, untrained_crps=run.untrained_crps, epsilon=run.epsilon, steps=run.steps,
                              seconds=run.seconds)
        return TsdpRun(run.trained_model.cpu(), facts)

    def __call__(self, series: Sequence[np.ndarray]) -> torch.nn.Module:
        """The model :meth:`train` returns.

        Args:
            series: The training series (1-D arrays).

        Returns:
            The trained model, on the CPU.
        """
        return self.train(series).model


class AuditedTraining:
    """The training function an audit calls (``train(series) -> model``), keeping the :class:`TrainingFacts` of each
    training it ran, in order: an audit answers with its bound only, so what the training gave is read here.

    Args:
        training: tsdp's loop with its settings.
    """

    def __init__(self, training: TsdpTraining):
        self.training = training
        self.runs: List[TrainingFacts] = []

    def __call__(self, series: Sequence[np.ndarray]) -> torch.nn.Module:
        run = self.training.train(series)
        self.runs.append(run.facts)
        return run.model

    def only_run(self) -> TrainingFacts:
        """What the one training the audit ran gave.

        Returns:
            Its :class:`TrainingFacts`.

        Raises:
            RuntimeError: The audit trained more or less than once.
        """
        if len(self.runs) != 1:
            raise RuntimeError(f"the audit trained {len(self.runs)} times, not once")
        return self.runs[0]


@dataclass(frozen=True)
class BlackboxRow(Record):
    """One model audited with spike canaries.

    Its JSON form is flat: the audit's fields, then the training's (:class:`TrainingFacts`, tsdp's models only), whose
    ``seconds`` (the training's) stands in the audit's ``seconds`` key; ``auc_note`` last when the AUC is undefined.

    Attributes:
        model: The model's name (``1-NN``: the memoriser).
        trained: How it was trained.
        sigma: The noise multiplier (None: no noise).
        auc: The memorisation score's AUC (NaN, null in JSON with ``auc_note``: undefined).
        epsilon_lower: The certified ε (a **lower** bound).
        ceiling: What every guess right certifies.
        limited_by: What limits the bound (``audit size`` or ``training``).
        flagged: Whether the certified ε exceeds the claim.
        seconds: The audit's wall seconds.
        training: What the training gave (None: the memoriser, not trained by tsdp).
    """

    model: str
    trained: str
    sigma: Optional[float]
    auc: float = noted(AUC_NOTE)
    epsilon_lower: float
    ceiling: float
    limited_by: str
    flagged: bool
    seconds: float
    training: Optional[TrainingFacts] = None

    def as_dict(self) -> dict:
        """The JSON form: the audit's fields, the training's after them, then ``auc_note`` if any."""
        own = record_dict(self)
        training, note = own.pop("training"), own.pop("auc" + NOTE, None)
        own.update(training or {})
        return own if note is None else {**own, "auc" + NOTE: note}


@dataclass(frozen=True)
class BlackboxData(Record):
    """The synthetic data and batching of the bench.

    Attributes:
        series: The synthetic series.
        length: Training values per series.
        context_length: L_C.
        forecast_length: L_F.
        batch_size: Λ.
    """

    series: int
    length: int
    context_length: int
    forecast_length: int
    batch_size: int


@dataclass(frozen=True)
class BlackboxBench(Record):
    """What :func:`bench_blackbox` measured.

    Attributes:
        canaries: The canary series of each audit.
        epochs: The training epochs.
        epsilon_claimed: The claimed ε.
        delta: Its δ.
        confidence: The audits' confidence.
        sigma: The σ that spends the claim (the DP rows').
        seed: The seed.
        data: The data and batching.
        rows: One audit per model.
        seconds: The wall seconds.
        environment: The machine and its load before and after (:func:`~tsdp.bench.rounds.environment`).
    """

    canaries: int
    epochs: int
    epsilon_claimed: float
    delta: float
    confidence: float
    sigma: float
    seed: int
    data: BlackboxData
    rows: Tuple[BlackboxRow, ...]
    seconds: float
    environment: Conditions


def bench_blackbox(*, canaries: int = 400, epochs: int = 100, epsilon: float = 1.0, delta: float = 1e-5,
                   confidence: float = 0.95, seed: int = 0, series: int = 100, length: int = 40,
                   context_length: int = 4, progress: Optional[Callable[[str], None]] = None) -> BlackboxBench:
    """The table of the module docstring (JSON-ready): ``series`` synthetic series of ``length`` training values,
    L_C = ``context_length``, L_F = 1, Λ = 32 windows per step (half the series when fewer than 64), a window of
    each series drawn without replacement; the claim ``epsilon`` at ``delta``.

    Args:
        canaries: Canary series of the audit.
        epochs: Training epochs.
        epsilon: The claimed ε.
        delta: δ.
        confidence: The confidence of the audit's lower bound.
        seed: The seed.
        series: Synthetic series.
        length: Training values per series.
        context_length: L_C.
        progress: Called with what starts (None: nothing).

    Returns:
        The :class:`BlackboxBench`.
    """
    from tsdp.verify.calibration import calibrate_sigma

    before = environment()
    data = synthetic(series, length + 1, seed=seed, noise=2.0)
    config = fit_lengths(TrainingConfig(context_length=context_length, forecast_length=1,
                                        batch_size=min(32, max(1, series // 2))),
                         data.split(1)[0].series)
    sigma = calibrate_sigma(config, epsilon, delta, epochs=epochs).sigma
    rows = []
    started = time.perf_counter()

    def audit(name: str, train, loss=None, trained: str = "", noise: Optional[float] = None):
        if progress is not None:
            progress(f"{name}: training and scoring {canaries} spike canaries")
        t = time.perf_counter()
        r = audit_training(train, data, config, canaries=canaries, delta=delta, epsilon=epsilon, canary="spike",
                           loss=loss, seed=seed, options=AuditOptions(confidence=confidence))
        s = r.scores["memorisation"]
        rows.append(BlackboxRow(name, trained, noise, auc=s.auc, epsilon_lower=r.epsilon_lower,
                                ceiling=max(s.ceiling["dp"], s.ceiling["steinke"]), limited_by=s.limited_by,
                                flagged=r.violation, seconds=time.perf_counter() - t,
                                training=train.only_run() if isinstance(train, AuditedTraining) else None))

    def squared_error(model, context, forecast):
        return model(context, forecast)

    audit("1-NN", lambda s: NearestNeighbour(s, config), squared_error, "stores every window")
    for noise in (None, sigma):
        for model in MODELS:
            audit(model, AuditedTraining(TsdpTraining(config, model, epochs, noise, delta, seed)),
                  trained=(f"{epochs} epochs without noise" if noise is None
                           else f"DP-SGD, {epochs} epochs at σ = {noise:.3f}"), noise=noise)
    return BlackboxBench(canaries, epochs, epsilon, delta, confidence, sigma, seed,
                         BlackboxData(series, length, context_length, 1, config.batch_size), tuple(rows),
                         time.perf_counter() - started, conditions_since(before))


def format_bench(result: Union[BlackboxBench, dict]) -> str:
    """Human-readable table of :func:`bench_blackbox` (``--json`` prints its ``as_dict()``).

    Args:
        result: What :func:`bench_blackbox` returned, or its ``as_dict()`` (the benchmark page's).

    Returns:
        The table.
    """
    if isinstance(result, BlackboxBench):
        result = result.as_dict()
    d = result["data"]
    lines = [f"black-box spike-canary audits: {result['canaries']} canaries, {d['series']} synthetic series of "
             f"{d['length']} values (L_C = {d['context_length']}, L_F = 1, Λ = {d['batch_size']}), claim ε = "
             f"{result['epsilon_claimed']:g} at δ = {result['delta']:g}, {result['confidence']:.0%}",
             f"{'model':<10} {'trained':<36} {'test CRPS':>14} {'AUC':>6} {'ε ≥':>7} {'ceiling':>8} {'flagged':>8}"]
    for r in result["rows"]:
        crps = (f"{r['crps']:.3f}/{r['untrained_crps']:.3f}" if "crps" in r else "")
        auc = f"{r['auc']:.3f}" if math.isfinite(r["auc"]) else "n/a"
        lines.append(f"{r['model']:<10} {r['trained']:<36} {crps:>14} {auc:>6} {rounded_down(r['epsilon_lower'], 3, fixed=True):>7} "
                     f"{rounded_up(r['ceiling'], 3, fixed=True):>8} {'yes' if r['flagged'] else 'no':>8}")
    lines.append("test CRPS: trained / untrained model (lower fits better); ceiling: every guess right"
                 + ("; AUC n/a: " + AUC_UNDEFINED if any(not math.isfinite(r["auc"]) for r in result["rows"]) else ""))
    lines.append(f"{result['seconds']:.1f} s")
    return "\n".join(lines)


__all__ = ["MODELS", "AuditedTraining", "BlackboxBench", "BlackboxData", "BlackboxRow", "NearestNeighbour",
           "TrainingFacts", "TsdpRun", "TsdpTraining", "bench_blackbox", "format_bench"]
