"""Training entry point: Algorithm 1's epoch loop over Algorithm 2 steps, to an ε budget or for a number of epochs.

Privacy accounting is not done here: :func:`train` takes ``epsilon_of_steps(s)``, the sound
ε after s compositions of the configuration's mechanism (``verify.accounting`` provides it).
A composition is one step for top-level wor / poisson / pooled and one epoch for
deterministic / shuffled iteration (THEOREMS.md scopes "step" and "epoch").
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np
import torch
from tqdm.auto import tqdm

from tsdp.theorems.config import TrainingConfig

from .data import SeriesData
from .metrics import crps_from_samples, point_crps, seasonal_naive
from .models import make_model
from .samplers import make_sampler
from .step import apply_gradient, nonprivate_step, private_gradient
from .windows import augment, gather_windows, pad_series, split_window

EPOCH_SCOPED = ("deterministic", "shuffle")


def resolve_device(device: str) -> torch.device:
    """``auto`` → cuda when available, else cpu; otherwise the named device (ValueError for cuda without one)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but torch sees no CUDA device; use --device cpu or auto")
    return torch.device(device)


def max_compositions(epsilon: float, epsilon_of_steps: Callable[[int], float], cap: Optional[int] = None) -> int:
    """Largest s ≤ cap with epsilon_of_steps(s) ≤ ε (0 if even one composition exceeds it).

    Assumes ε(s) non-decreasing in s (true for any composition accountant): doubling, then
    bisection, O(log s) accountant calls. Without a cap, raises if ε(2^40) is still within budget.
    """
    if cap == 0 or epsilon_of_steps(1) > epsilon:
        return 0
    lo, s = 1, 2
    while True:
        if cap is not None and s > cap:
            hi = cap + 1
            break
        if epsilon_of_steps(s) > epsilon:
            hi = s
            break
        if s >= 2 ** 40:
            raise ValueError(f"ε budget {epsilon} is never reached; pass epochs to bound the training")
        lo, s = s, 2 * s
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if epsilon_of_steps(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def _test_contexts(train: SeriesData, context_length: int) -> torch.Tensor:
    """The last L_C training values of every series, front-padded with zeros like Algorithm 4: (N, L_C)."""
    out = torch.zeros(train.N, context_length)
    for n, s in enumerate(train.series):
        tail = s[-context_length:]
        out[n, context_length - len(tail):] = torch.as_tensor(tail, dtype=torch.float32)
    return out


def evaluate(model: torch.nn.Module, train: SeriesData, targets: np.ndarray, context_length: int,
             *, n_samples: int, generator: torch.Generator, device: torch.device) -> float:
    """Test CRPS (mean weighted quantile loss of ``n_samples`` sample paths) on the held-out last L_F steps."""
    model.eval()
    samples = model.sample(_test_contexts(train, context_length).to(device), n_samples, generator)
    model.train()
    return crps_from_samples(targets, samples.cpu().numpy())


def train(
    config: TrainingConfig,
    model_name: str,
    data: SeriesData,
    *,
    epsilon: Optional[float] = None,
    delta: Optional[float] = None,
    epochs: Optional[int] = None,
    epsilon_of_steps: Optional[Callable[[int], float]] = None,
    clip: float = 1.0,
    lr: float = 1e-3,
    optimizer: str = "adam",
    device: str = "auto",
    seed: int = 0,
    progress: bool = True,
    private: bool = True,
    season: int = 24,
    n_samples: int = 100,
    return_model: bool = False,
) -> dict:
    """Train ``model_name`` on ``data`` with Algorithm 1 (batching of ``config``) and Algorithm 2 steps.

    Stops after the most steps whose accountant ε stays ≤ ``epsilon`` (needs
    ``epsilon_of_steps``; for deterministic/shuffled top level only whole epochs count), or
    after ``epochs`` epochs, whichever is first when both are given. ``private=False`` trains
    without clipping and noise (ε = ∞ reference). Each series' last L_F steps are the test
    set. Returns a JSON-ready dict: crps, untrained_crps, seasonal_naive_crps, epsilon (ε
    spent, None without accountant), steps, compositions, epochs, seconds, …
    ``return_model=True`` adds the trained model (key ``trained_model``, not JSON) for audits.
    """
    if epsilon is None and epochs is None:
        raise ValueError("give an ε budget (epsilon) or a number of epochs")
    if epsilon is not None and epsilon_of_steps is None:
        raise ValueError("an ε budget needs the accountant callable epsilon_of_steps")
    if epsilon is not None and not private:
        raise ValueError("an ε budget needs private training (private=True)")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be adam or sgd, got {optimizer!r}")
    train_data, targets = data.split(config.forecast_length)
    if train_data.N != config.N:
        raise ValueError(f"data has {train_data.N} series but the configuration says N = {config.N} (set --N {train_data.N})")
    if min(train_data.lengths) < config.L:
        raise ValueError(
            f"shortest training series has length {min(train_data.lengths)} < configured L = {config.L}; "
            f"the accountant would understate r = k/T (set --L {min(train_data.lengths)})"
        )
    dev = resolve_device(device)
    generator = torch.Generator(device=dev).manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = make_model(model_name, config.context_length, config.forecast_length).to(dev)
    opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=lr)

    padded, _ = pad_series([torch.as_tensor(s) for s in train_data.series], config.context_length)
    padded = padded.to(dev)
    sampler = make_sampler(config, train_data.lengths)
    per_composition = sampler.steps_per_epoch if config.top in EPOCH_SCOPED else 1
    cap = None if epochs is None else epochs * sampler.steps_per_epoch // per_composition
    compositions = cap if epsilon is None else max_compositions(epsilon, epsilon_of_steps, cap)
    total_steps = compositions * per_composition

    untrained = evaluate(model, train_data, targets, config.context_length, n_samples=n_samples, generator=generator, device=dev)
    started = time.perf_counter()
    bar = tqdm(total=total_steps, disable=not progress, desc=f"train {model_name}", unit="step")
    done = 0
    while done < total_steps:
        chunk = min(sampler.steps_per_epoch, total_steps - done)
        index = sampler.sample(chunk, generator)
        for i in range(chunk):
            one = index.step(i)
            windows = gather_windows(padded, one.seq[0], one.start[0], config.window_length)
            context, forecast = split_window(windows, config.context_length)
            if config.augmented:
                context, forecast = augment(context, forecast, sigma_context=config.sigma_context,
                                            sigma_forecast=config.sigma_forecast, v=config.v, generator=generator)
            if private:
                gradient = private_gradient(model, context, forecast, clip=clip, sigma=config.sigma,
                                            batch_size=config.batch_size, generator=generator)
                apply_gradient(model, opt, gradient)
            elif context.shape[0] > 0:
                nonprivate_step(model, opt, context, forecast)
            bar.update(1)
        done += chunk
    bar.close()
    seconds = time.perf_counter() - started

    crps = evaluate(model, train_data, targets, config.context_length, n_samples=n_samples, generator=generator, device=dev)
    spent = None
    if private and epsilon_of_steps is not None:
        spent = float(epsilon_of_steps(compositions)) if compositions > 0 else 0.0
    naive = point_crps(targets, seasonal_naive(train_data.series, config.forecast_length, season))
    result = {
        "model": model_name,
        "private": private,
        "top": config.top,
        "bottom": config.bottom,
        "sigma": config.sigma if private else 0.0,
        "clip": clip if private else None,
        "epsilon_budget": epsilon,
        "epsilon": spent,
        "delta": delta,
        "steps": total_steps,
        "compositions": compositions,
        "epochs": total_steps / sampler.steps_per_epoch,
        "crps": crps,
        "untrained_crps": untrained,
        "seasonal_naive_crps": naive,
        "seconds": seconds,
        "device": str(dev),
    }
    if return_model:
        result["trained_model"] = model
    return result
