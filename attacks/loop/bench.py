"""Throughput of Algorithm 2: torch.func per-sample gradients versus a naive per-example autograd loop."""
from __future__ import annotations

import time
from typing import Sequence

import torch

from .models import MODELS, make_model
from .step import apply_gradient, clip_gradients, dp_step, noisy_mean


def naive_dp_step(model, optimizer, context, forecast, *, clip, sigma, batch_size, generator):
    """Algorithm 2 written literally: one backward pass per window, clip, sum, noise, update (the baseline)."""
    names = [k for k, p in model.named_parameters() if p.requires_grad]
    summed = {k: torch.zeros_like(p) for k, p in model.named_parameters() if p.requires_grad}
    for i in range(context.shape[0]):
        model.zero_grad(set_to_none=True)
        model(context[i : i + 1], forecast[i : i + 1]).sum().backward()
        one = {k: p.grad[None] for k, p in model.named_parameters() if k in summed}
        clipped, _ = clip_gradients(one, clip, 1)
        for k in names:
            summed[k] = summed[k] + clipped[k][0]
    apply_gradient(model, optimizer, noisy_mean(summed, clip=clip, sigma=sigma, batch_size=batch_size, generator=generator))


def _rate(step, n_steps: int) -> float:
    step()  # warm-up
    started = time.perf_counter()
    for _ in range(n_steps):
        step()
    return n_steps / (time.perf_counter() - started)


def bench_loop(models: Sequence[str] = tuple(MODELS), steps: int = 5, batch: int = 64, *, context_length: int = 48,
               forecast_length: int = 24, device: str = "cpu", seed: int = 0) -> dict:
    """DP steps per second (Algorithm 2) per model: vmap per-sample gradients vs the naive loop, in one run.

    Returns {"device", "batch", "steps", "threads", "models": {name: {"vmap_steps_per_s",
    "naive_steps_per_s", "speedup"}}}. The issue's goal is a speedup ≥ 20 on CPU.
    """
    dev = torch.device(device)
    generator = torch.Generator(device=dev).manual_seed(seed)
    context = 10 + torch.randn(batch, context_length, generator=generator, device=dev)
    forecast = 10 + torch.randn(batch, forecast_length, generator=generator, device=dev)
    out = {"device": str(dev), "batch": batch, "steps": steps, "threads": torch.get_num_threads(), "models": {}}
    for name in models:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = make_model(name, context_length, forecast_length).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        kw = dict(clip=1.0, sigma=1.0, batch_size=batch, generator=generator)
        fast = _rate(lambda: dp_step(model, opt, context, forecast, **kw), steps)
        slow = _rate(lambda: naive_dp_step(model, opt, context, forecast, **kw), steps)
        out["models"][name] = {"vmap_steps_per_s": fast, "naive_steps_per_s": slow, "speedup": fast / slow}
    return out
