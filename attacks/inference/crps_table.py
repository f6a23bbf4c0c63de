"""CRPS of private forecasts by ε and keep rate r (the shape of paper Appendix H, Tables "1_event_inference_*").

For each (ε, r): σ is calibrated so that one release is (ε, δ)-DP for (w, v)-event neighbours
under T15's **sound** (upper-bound) accounting (:func:`tsdp.verify.inference_accounting.calibrate_sigma`),
every series' last L_C training values go through the real mechanism
(:func:`tsdp.attacks.inference.mechanism.private_forecast`), and the forecasts are scored by CRPS on the
held-out last L_F steps. As in the paper, the model is trained without DP-SGD (privacy is
enforced at inference time). T15's ε is that of the context's release given the model: here the model was trained,
without DP, on the same series up to the release (the released contexts included), so a cell's ε does not cover the
whole pipeline (a model that memorised the context could reveal it); it does for a model trained on other data or
with DP-SGD. The answers are frozen records (:class:`InferenceRow`, :class:`InferenceTable`) whose
``as_dict()`` is the JSON of `tsdp forecast tradeoff --json` and of the report's inference section.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Dict, Optional, Sequence, Tuple

import numpy as np
import torch

from tsdp.theorems.bounds.inference import InferenceConfig
from tsdp.verify.json_data import Record, noted

from tsdp.datasets.series import SeriesData
from tsdp.training.generators import seeded_generator
from tsdp.training.metrics import crps_from_samples

from .mechanism import forecast_covariates, private_forecast

PAPER_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
PAPER_RATES = (1.0, 0.75, 0.5)
PAPER_DELTA = 1e-4
REFERENCE_NOTE = "null: ε = ∞, the non-private reference (no noise)"
"""What the reference row's ε (infinite, null in JSON) means."""


def last_contexts(data: SeriesData, context_length: int) -> np.ndarray:
    """(N, L_C): each series' last L_C values; ValueError naming the series when one is shorter.

    Args:
        data: The series.
        context_length: L_C.

    Returns:
        The (N, L_C) contexts.

    Raises:
        ValueError: A series shorter than L_C.
    """
    short = [i for i, n in enumerate(data.lengths) if n < context_length]
    if short:
        raise ValueError(f"series {short[0]} has {data.lengths[short[0]]} values, fewer than the context length "
                         f"L_C = {context_length}")
    return np.stack([s[-context_length:] for s in data.series])


@dataclass(frozen=True)
class InferenceGrid:
    """The (ε, r) cells of an inference table and their accounting (T15, one release).

    Attributes:
        epsilons: The ε of the rows.
        rates: The keep rates r of the rows.
        delta: The δ of every cell.
        v: The (w, v)-event neighbours' value change.
        w: The (w, v)-event neighbours' window.
    """

    epsilons: Sequence[float] = PAPER_EPSILONS
    rates: Sequence[float] = PAPER_RATES
    delta: float = PAPER_DELTA
    v: float = 1.0
    w: int = 1


@dataclass(frozen=True)
class Releases:
    """How each cell's private forecasts are drawn and scored.

    Attributes:
        n_samples: Forecast samples per series and release.
        repeats: Independent releases of every series per cell (their CRPS mean and std).
        seed: The seed of the releases (:func:`inference_table`: of the data and the training too); None (the
            default): a fresh one from the operating system's entropy per call, since a seed others know lets them
            redraw the keep patterns and noise, which voids the releases' ε (give one only to reproduce a table).
        device: The torch device.
    """

    n_samples: int = 100
    repeats: int = 1
    seed: Optional[int] = None
    device: str = "cpu"


@dataclass(frozen=True)
class InferenceRow(Record):
    """One cell of an inference table: the private forecasts' CRPS at (ε, r) with σ calibrated under T15.

    Attributes:
        epsilon: The cell's ε (an **upper** bound on one release's ε under T15's sound accounting); ∞ for the
            non-private reference, written as null with ``epsilon_note`` (:data:`REFERENCE_NOTE`) beside it.
        r: The keep rate.
        sigma: The noise σ calibrated for (ε, r) (0: the reference, no noise).
        crps: The CRPS, the mean over the releases.
        crps_std: The releases' standard deviation of the CRPS (ddof 0).
    """

    epsilon: float = noted(REFERENCE_NOTE)
    r: float
    sigma: float
    crps: float
    crps_std: float


@dataclass(frozen=True)
class TableSettings(Record):
    """How :func:`inference_table` trained its model and drew its releases.

    Attributes:
        model: The forecaster's name.
        N: The series.
        L: Their training length.
        context_length: L_C.
        forecast_length: L_F.
        epochs: The non-private training epochs.
        delta: The δ of every cell.
        v: The (w, v)-event neighbours' value change.
        w: The (w, v)-event neighbours' window.
        n_samples: Forecast samples per series and release.
        repeats: Releases of every series per cell.
        seed: The seed of the data, the training and the releases.
        data: The data's name.
        theorem: The bound the cells are calibrated under (T15).
    """

    model: str
    N: int
    L: int
    context_length: int
    forecast_length: int
    epochs: int
    delta: float
    v: float
    w: int
    n_samples: int
    repeats: int
    seed: int
    data: str
    theorem: str = "T15"


@dataclass(frozen=True)
class InferenceTable(Record):
    """The paper's inference table (:func:`inference_table`).

    Attributes:
        rows: The cells, the non-private reference first (:func:`crps_tradeoff`).
        best_r: Per ε of the grid, the keep rate with the lowest mean CRPS.
        settings: How the model was trained and the releases drawn.
    """

    rows: Tuple[InferenceRow, ...]
    best_r: Dict[float, float]
    settings: TableSettings


def crps_tradeoff(model: torch.nn.Module, data: SeriesData, *, context_length: int, forecast_length: int,
                  grid: InferenceGrid, releases: Releases = Releases(),
                  freq: Optional[str] = None) -> Tuple[InferenceRow, ...]:
    """An :class:`InferenceRow` for every (ε, r), plus one row ε = inf (r = 1, no noise) as the reference, which says
    so in ``epsilon_note`` (JSON writes its ε as null). ``crps`` is the mean over the releases' ``repeats``
    independent releases of every series, ``crps_std`` their std.

    ``data`` holds whole series; the last ``forecast_length`` steps of each are the targets.
    σ per (ε, r) is the smallest admissible under T15 (sound accounting, one release: an **upper** bound on each
    cell's ε).

    Args:
        model: The trained forecaster (with ``sample``).
        data: The whole series.
        context_length: L_C.
        forecast_length: L_F, the held-out targets.
        grid: The (ε, r) cells, δ and the neighbours' (w, v).
        releases: Samples, repeats, seed and device of the releases.
        freq: The step of the data ``model`` was trained on, for a model that reads covariates
            (:func:`~tsdp.attacks.inference.mechanism.forecast_covariates`).

    Returns:
        The rows, the reference first.

    Raises:
        ValueError: A series shorter than ``context_length``.
    """
    from tsdp.verify.inference_accounting import calibrate_sigma

    device, n_samples = releases.device, releases.n_samples
    train, targets = data.split(forecast_length)
    x = torch.as_tensor(last_contexts(train, context_length), dtype=torch.float32, device=device)
    covariates = forecast_covariates(model, freq, train.starts, train.lengths, context_length, forecast_length)
    extra = () if covariates is None else (covariates.to(device),)
    seed = secrets.randbits(63) if releases.seed is None else releases.seed  # the releases' draws must be secret
    gen = seeded_generator(seed, device)  # every bit of the secret seed (torch's manual_seed keeps 32 on the CPU)
    model.eval()
    with torch.no_grad():
        reference = crps_from_samples(targets, model.sample(x, n_samples, gen, *extra).cpu().numpy())
    rows = [InferenceRow(epsilon=float("inf"), r=1.0, sigma=0.0, crps=reference, crps_std=0.0)]
    for eps in grid.epsilons:
        for r in grid.rates:
            cfg = InferenceConfig(r=float(r), sigma=1.0, w=grid.w, v=float(grid.v), context_length=context_length)
            sigma = calibrate_sigma(cfg, eps, grid.delta).sigma
            scores = [crps_from_samples(targets, private_forecast(model, x, float(r), sigma, n_samples, gen,
                                                                  covariates).cpu().numpy())
                      for _ in range(releases.repeats)]
            rows.append(InferenceRow(epsilon=float(eps), r=float(r), sigma=sigma, crps=float(np.mean(scores)),
                                     crps_std=float(np.std(scores))))
    return tuple(rows)


def inference_table(*, model: str = "simple-ff", N: int = 64, L: int = 96, context_length: int = 8,
                    forecast_length: int = 4, epochs: int = 3, grid: InferenceGrid = InferenceGrid(),
                    releases: Releases = Releases(repeats=5), data: Optional[SeriesData] = None,
                    data_name: str = "synthetic") -> InferenceTable:
    """The paper's inference table: train ``model`` without DP-SGD on ``data`` (default: N seeded synthetic
    series of length L + L_F), then :func:`crps_tradeoff` on ``grid`` with ``releases``. With ``data`` given, N and
    L are taken from it.

    Args:
        model: The forecaster's name.
        N: Synthetic series (without ``data``).
        L: Their training length (without ``data``).
        context_length: L_C.
        forecast_length: L_F.
        epochs: Non-private training epochs.
        grid: The (ε, r) cells, δ and the neighbours' (w, v).
        releases: Samples, repeats, device and the seed (of the data, the training and the releases).
        data: The series (None: synthetic).
        data_name: The data's name in the settings.

    Returns:
        The :class:`InferenceTable`: its rows, the keep rate with the lowest mean CRPS per ε, the settings.
    """
    from tsdp.theorems.config import TrainingConfig

    from tsdp.datasets.series import synthetic
    from tsdp.training.options import Budget, Checkpoints
    from tsdp.training.train import train as train_model

    seed = secrets.randbits(63) if releases.seed is None else releases.seed  # recorded in the settings
    releases = replace(releases, seed=seed)
    if data is None:
        data = synthetic(N, L + forecast_length, seed=seed)
    else:
        N, L = data.N, min(data.lengths) - forecast_length
    config = TrainingConfig(N=N, L=L, context_length=context_length, forecast_length=forecast_length,
                            batch_size=min(32, N), instances=1, sigma=1.0)
    trained = train_model(config, model, data, budget=Budget(epochs=epochs, private=False),
                          checkpoints=Checkpoints(return_model=True), device=releases.device, seed=seed,
                          progress=False).trained_model
    rows = crps_tradeoff(trained, data, context_length=context_length, forecast_length=forecast_length,
                         grid=grid, releases=releases, freq=data.freq)
    best = {}
    for eps in grid.epsilons:
        cand = [row for row in rows if row.epsilon == float(eps)]
        best[float(eps)] = min(cand, key=lambda row: row.crps).r
    settings = TableSettings(model=model, N=N, L=L, context_length=context_length, forecast_length=forecast_length,
                             epochs=epochs, delta=grid.delta, v=grid.v, w=grid.w, n_samples=releases.n_samples,
                             repeats=releases.repeats, seed=seed, data=data_name)
    return InferenceTable(rows, best, settings)
