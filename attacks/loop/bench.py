"""`tsdp bench loop`: DP steps per second (Algorithm 2) of both engines against a naive per-example loop.

The baseline is Algorithm 2 written literally: one forward and backward pass per window,
clip, sum, noise, update. The engines are :mod:`attacks.loop.step`'s ``factored`` (the
training loop's; per-sample gradients never materialised) and ``vmap`` (torch.func
per-sample gradients, materialised). All three run the same model, batch and optimizer.

Wall-clock on a shared machine drifts, so the measurement runs in rounds: each round
times every engine and the baseline back to back, gives one ratio per engine, and the
figure reported is the median over rounds (with the range). The issue's goal is a
speedup ≥ 20 on CPU for every model.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Optional, Sequence

import torch

from .clipping import clip_gradients
from .models import MODELS, make_model
from .step import ENGINES as STEP_ENGINES
from .step import apply_gradient, dp_step, noisy_mean

ENGINES = tuple(e for e in STEP_ENGINES if e != "auto")  # timed: factored, vmap
GOAL = 20.0


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


def _seconds_per_step(step: Callable[[], object], n_steps: int) -> float:
    started = time.perf_counter()
    for _ in range(n_steps):
        step()
    return (time.perf_counter() - started) / n_steps


def bench_loop(
    models: Sequence[str] = tuple(MODELS),
    *,
    rounds: int = 5,
    steps: int = 10,
    naive_steps: int = 2,
    batch: int = 64,
    context_length: int = 48,
    forecast_length: int = 24,
    device: str = "cpu",
    seed: int = 0,
    progress: Optional[Callable[[str], None]] = None,
) -> dict:
    """Per model: steps/s of each engine and of the naive loop, speedup = median over rounds of naive/engine time.

    Benchmark of the training step (paper Algorithm 2), not a test: the numbers are
    wall-clock on the current machine. Returns a JSON-ready dict {"device", "threads",
    "batch", "rounds", "steps", "naive_steps", "goal", "goal_met", "models": {name:
    {"naive_steps_per_s", "engines": {engine: {"steps_per_s", "speedup", "speedup_min",
    "speedup_max"}}}}}; ``goal_met`` asks the factored engine (the loop's) for ≥ 20x on every model.
    """
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(f"unknown model {unknown[0]!r}; choose from {', '.join(MODELS)}")
    if rounds < 1 or steps < 1 or naive_steps < 1 or batch < 1:
        raise ValueError("rounds, steps, naive_steps and batch must be >= 1")
    dev = torch.device(device)
    generator = torch.Generator(device=dev).manual_seed(seed)
    context = 10 + torch.randn(batch, context_length, generator=generator, device=dev)
    forecast = 10 + torch.randn(batch, forecast_length, generator=generator, device=dev)
    out = {"device": str(dev), "threads": torch.get_num_threads(), "batch": batch, "rounds": rounds, "steps": steps,
           "naive_steps": naive_steps, "context_length": context_length, "forecast_length": forecast_length,
           "goal": GOAL, "models": {}}
    for name in models:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = make_model(name, context_length, forecast_length).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        kw = dict(clip=1.0, sigma=1.0, batch_size=batch, generator=generator)
        runs = {e: (lambda e=e: dp_step(model, opt, context, forecast, engine=e, **kw)) for e in ENGINES}
        runs["naive"] = lambda: naive_dp_step(model, opt, context, forecast, **kw)
        for run in runs.values():  # warm-up (torch.func tracing, allocator)
            run()
        times = {k: [] for k in runs}
        for r in range(rounds):
            for k, run in runs.items():
                times[k].append(_seconds_per_step(run, naive_steps if k == "naive" else steps))
            if progress is not None:
                progress(f"bench loop: {name} round {r + 1}/{rounds}: "
                         + ", ".join(f"{e} {times['naive'][-1] / times[e][-1]:.1f}x" for e in ENGINES))
        entry = {"naive_steps_per_s": 1 / statistics.median(times["naive"]), "engines": {}}
        for e in ENGINES:
            ratios = [n / t for n, t in zip(times["naive"], times[e])]
            entry["engines"][e] = {"steps_per_s": 1 / statistics.median(times[e]), "speedup": statistics.median(ratios),
                                   "speedup_min": min(ratios), "speedup_max": max(ratios)}
        out["models"][name] = entry
    out["goal_met"] = all(m["engines"]["factored"]["speedup"] >= GOAL for m in out["models"].values())
    return out


def format_bench(result: dict) -> str:
    """Human-readable table of :func:`bench_loop`'s result."""
    lines = [f"DP steps (Algorithm 2) per second, batch {result['batch']}, L_C = {result['context_length']}, "
             f"L_F = {result['forecast_length']}, {result['device']} with {result['threads']} threads; "
             f"speedup = median over {result['rounds']} rounds of naive time / engine time (range)"]
    lines.append(f"{'model':<13} {'naive/s':>8}" + "".join(f" {e + '/s':>11} {'speedup (range)':>22}" for e in ENGINES))
    for name, m in result["models"].items():
        row = f"{name:<13} {m['naive_steps_per_s']:>8.2f}"
        for e in ENGINES:
            x = m["engines"][e]
            spread = f"{x['speedup']:.1f}x ({x['speedup_min']:.1f}-{x['speedup_max']:.1f})"
            row += f" {x['steps_per_s']:>11.1f} {spread:>22}"
        lines.append(row)
    verdict = "met" if result["goal_met"] else "NOT met"
    lines.append(f"goal: factored engine ≥ {result['goal']:.0f}x the naive loop on every model: {verdict}")
    return "\n".join(lines)
