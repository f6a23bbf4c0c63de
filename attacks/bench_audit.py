"""`tsdp bench audit`: one-step audit trials per second through the real loop, batched vs a naive per-trial loop.

Both paths run the same construction (T6 on the issue's audit configuration N = 320, Λ = 64,
L = 4, L_C = L_F = 1, σ = 1) through the same loop code (WOR/WR samplers, window cropping,
torch.func per-sample gradients, clipping, noise); the batched path puts trials in a tensor
dimension (:func:`attacks.auditor_run.released_update_chunks`), the naive path runs one trial
per Python iteration (:func:`attacks.auditor_run.naive_released_update`). Measured in one run.
Goals (issue 6): ≥ 10^6 one-step trials per minute per world on 2 CPU cores, ≥ 100x naive.

Measured on the shared 2-core machine: batched ~62-66k trials/s (3.7e6-3.9e6 per minute), naive
~1.5k/s, speedup 42-44x: the first goal is met, the second is not. (A run whose naive phase
meets contention from other jobs reads higher, e.g. 114x at 0.58k naive trials/s: compare runs.) The top-level WOR draw (float32 keys,
topk) takes ~37% of the batched time; with no WOR cost at all the batched path reaches ~98k/s
(~67x), so no WOR sampler alone reaches 100x: the rest is per-window work (64 windows per
trial: WR starts, cropping, vmapped per-sample gradients, clipping). Faster exact draws tried:
int32 keys + unsorted topk (~15% faster end to end, but slot order no longer uniform), argsort
(slower), kthvalue threshold (slower), vectorised Fisher-Yates / Floyd (Python loop over the 64
slots, slower), first-k-distinct of i.i.d. draws (slower: scatter into an (n, N) table).
"""
from __future__ import annotations

import time

import torch

from tsdp.theorems.config import TrainingConfig

from .loop.samplers import make_sampler
from .auditor_run import naive_released_update, released_update_chunks, resolve_device
from .worst_case import build

AUDIT_CONFIG = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)


def bench_audit(trials: int = 400_000, naive_trials: int = 300, device: str = "auto") -> dict:
    """Trials/s (one step, one world) batched and naive, their ratio and the per-minute figure; JSON-ready.

    Benchmark, not a test; the numbers are wall-clock on the current machine.
    """
    dev = resolve_device(device)
    construction = build("T6", AUDIT_CONFIG, device=dev)
    generator = torch.Generator(device=dev).manual_seed(0)
    for _ in released_update_chunks(construction, "p", 20_000, 1, generator):  # warm-up (torch.func tracing)
        pass
    started = time.perf_counter()
    for _ in released_update_chunks(construction, "p", trials, 1, generator):
        pass
    batched = trials / (time.perf_counter() - started)
    sampler = make_sampler(construction.config)
    naive_released_update(construction, "p", generator, sampler)  # warm-up
    started = time.perf_counter()
    for _ in range(naive_trials):
        naive_released_update(construction, "p", generator, sampler)
    naive = naive_trials / (time.perf_counter() - started)
    return {
        "construction": "T6",
        "config": {"N": 320, "batch_size": 64, "L": 4, "context_length": 1, "forecast_length": 1, "sigma": 1.0},
        "device": str(dev),
        "threads": torch.get_num_threads(),
        "trials_batched": trials,
        "trials_naive": naive_trials,
        "batched_trials_per_second": batched,
        "batched_trials_per_minute_per_world": 60 * batched,
        "naive_trials_per_second": naive,
        "speedup": batched / naive,
        "goal_trials_per_minute_per_world": 1e6,
        "goal_speedup": 100.0,
        "meets_goals": bool(60 * batched >= 1e6 and batched / naive >= 100),
    }
