"""CRPS of private forecasts by ε and keep rate r (the shape of paper Appendix H, Tables "1_event_inference_*").

For each (ε, r): σ is calibrated so that one release is (ε, δ)-DP for (w, v)-event neighbours
under T15's **sound** (upper-bound) accounting (:func:`tsdp.verify.inference_accounting.calibrate_sigma`),
every series' last L_C training values go through the real mechanism
(:func:`tsdp.attacks.inference.mechanism.private_forecast`), and the forecasts are scored by CRPS on the
held-out last L_F steps. As in the paper, the model is trained without DP-SGD (privacy is
enforced at inference time). Everything returned is plain data (lists of dicts, floats).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch

from tsdp.theorems.bounds.inference import InferenceConfig

from tsdp.datasets.series import SeriesData
from tsdp.training.metrics import crps_from_samples

from .mechanism import forecast_covariates, private_forecast

PAPER_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
PAPER_RATES = (1.0, 0.75, 0.5)
PAPER_DELTA = 1e-4
REFERENCE_NOTE = "null: ε = ∞, the non-private reference (no noise)"
"""What the reference row's ε (infinite, null in JSON) means."""


def last_contexts(data: SeriesData, context_length: int) -> np.ndarray:
    """(N, L_C): each series' last L_C values; ValueError naming the series when one is shorter."""
    short = [i for i, n in enumerate(data.lengths) if n < context_length]
    if short:
        raise ValueError(f"series {short[0]} has {data.lengths[short[0]]} values, fewer than the context length "
                         f"L_C = {context_length}")
    return np.stack([s[-context_length:] for s in data.series])


def crps_tradeoff(model: torch.nn.Module, data: SeriesData, *, context_length: int, forecast_length: int,
                  epsilons: Sequence[float], rates: Sequence[float], delta: float, v: float, w: int = 1,
                  n_samples: int = 100, repeats: int = 1, seed: int = 0, device: str = "cpu",
                  freq: Optional[str] = None) -> list:
    """[{epsilon, r, sigma, crps, crps_std}] for every (ε, r), plus one row ε = inf (r = 1, no noise) as the
    reference, which says so in ``epsilon_note`` (JSON writes its ε as null). ``crps`` is the mean over ``repeats`` independent releases of every series, ``crps_std`` their std.

    ``data`` holds whole series; the last ``forecast_length`` steps of each are the targets.
    σ per (ε, r) is the smallest admissible under T15 (sound accounting, one release). ``freq``: the step of the
    data ``model`` was trained on, for a model that reads covariates (:func:`~tsdp.attacks.inference.mechanism.
    forecast_covariates`).
    """
    from tsdp.verify.inference_accounting import calibrate_sigma

    train, targets = data.split(forecast_length)
    x = torch.as_tensor(last_contexts(train, context_length), dtype=torch.float32, device=device)
    covariates = forecast_covariates(model, freq, train.starts, train.lengths, context_length, forecast_length)
    extra = () if covariates is None else (covariates.to(device),)
    gen = torch.Generator(device=device).manual_seed(seed)
    model.eval()
    with torch.no_grad():
        reference = crps_from_samples(targets, model.sample(x, n_samples, gen, *extra).cpu().numpy())
    rows = [{"epsilon": float("inf"), "r": 1.0, "sigma": 0.0, "crps": reference, "crps_std": 0.0,
             "epsilon_note": REFERENCE_NOTE}]
    for eps in epsilons:
        for r in rates:
            cfg = InferenceConfig(r=float(r), sigma=1.0, w=w, v=float(v), context_length=context_length)
            sigma = calibrate_sigma(cfg, eps, delta).sigma
            scores = [crps_from_samples(targets, private_forecast(model, x, float(r), sigma, n_samples, gen,
                                                                  covariates).cpu().numpy()) for _ in range(repeats)]
            rows.append({"epsilon": float(eps), "r": float(r), "sigma": sigma, "crps": float(np.mean(scores)),
                         "crps_std": float(np.std(scores))})
    return rows


def inference_table(*, model: str = "simple-ff", N: int = 64, L: int = 96, context_length: int = 8,
                    forecast_length: int = 4, epochs: int = 3, epsilons: Sequence[float] = PAPER_EPSILONS,
                    rates: Sequence[float] = PAPER_RATES, delta: float = PAPER_DELTA, v: float = 1.0, w: int = 1,
                    n_samples: int = 100, repeats: int = 5, seed: int = 0, device: str = "cpu",
                    data: Optional[SeriesData] = None, data_name: str = "synthetic") -> dict:
    """The paper's inference table: train ``model`` without DP-SGD on ``data`` (default: N seeded synthetic
    series of length L + L_F), then :func:`crps_tradeoff` with ``repeats`` releases per cell. Returns
    {"rows": [{epsilon, r, sigma, crps, crps_std}], "best_r": {ε: r with the lowest mean CRPS},
    "settings": {...}} (plain data for the report). With ``data`` given, N and L are taken from it."""
    from tsdp.theorems.config import TrainingConfig

    from tsdp.datasets.series import synthetic
    from tsdp.training.options import Budget, Checkpoints
    from tsdp.training.train import train as train_model

    if data is None:
        data = synthetic(N, L + forecast_length, seed=seed)
    else:
        N, L = data.N, min(data.lengths) - forecast_length
    config = TrainingConfig(N=N, L=L, context_length=context_length, forecast_length=forecast_length,
                            batch_size=min(32, N), instances=1, sigma=1.0)
    trained = train_model(config, model, data, budget=Budget(epochs=epochs, private=False),
                          checkpoints=Checkpoints(return_model=True), device=device, seed=seed,
                          progress=False).trained_model
    rows = crps_tradeoff(trained, data, context_length=context_length, forecast_length=forecast_length,
                         epsilons=epsilons, rates=rates, delta=delta, v=v, w=w, n_samples=n_samples,
                         repeats=repeats, seed=seed, device=device, freq=data.freq)
    best = {}
    for eps in epsilons:
        cand = [row for row in rows if row["epsilon"] == float(eps)]
        best[float(eps)] = min(cand, key=lambda row: row["crps"])["r"]
    settings = {"model": model, "N": N, "L": L, "context_length": context_length, "forecast_length": forecast_length,
                "epochs": epochs, "delta": delta, "v": v, "w": w, "n_samples": n_samples, "repeats": repeats,
                "seed": seed,
                "data": data_name, "theorem": "T15"}
    return {"rows": rows, "best_r": best, "settings": settings}
