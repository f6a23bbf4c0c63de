"""`tsdp bench audit`: one-step audit trials per second through the real loop, batched vs a naive per-trial loop.

Both paths run the same construction (T6 on the issue's audit configuration N = 320, Λ = 64,
L = 4, L_C = L_F = 1, σ = 1) through the same loop code (WOR/WR samplers, window cropping,
torch.func per-sample gradients, clipping, noise); the batched path puts trials in a tensor
dimension (:func:`attacks.montecarlo.trials.released_update_chunks`), the naive path runs one trial
per Python iteration (:func:`attacks.montecarlo.trials.naive_released_update`). Measured in one run.
Goals (issue 6): ≥ 10^6 one-step trials per minute per world on 2 CPU cores, ≥ 100x naive; the
figures of a run are its output (`tsdp bench audit`), not written here.

Where the batched time goes: the top-level WOR draw (float32 keys, topk) is the largest single
part; the rest is per-window work (64 windows per trial: WR starts, cropping, vmapped
per-sample gradients, clipping). Exact WOR draws tried and rejected: int32 keys + unsorted topk
(faster, but slot order no longer uniform), argsort, kthvalue threshold, vectorised
Fisher-Yates / Floyd (a Python loop over the 64 slots), first-k-distinct of i.i.d. draws
(scatter into an (n, N) table): all slower or not uniform.
"""
from __future__ import annotations

import pickle
import time
from typing import Callable, Optional

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig

from tsdp.attacks.loop.samplers import make_sampler

from .audit import plan_tests, y_edges_of
from .constructions import build, pair_numeric
from .counts import merge
from .shards import plan_shards, run_shards
from .trials import naive_released_update, released_update_chunks, resolve_device

AUDIT_CONFIG = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)


def bench_scaling(trials: int = 1 << 18, shard_size: int = 1 << 15, workers=(1, 2), device: str = "auto",
                  progress: Optional[Callable[[str], None]] = None) -> dict:
    """Sharded one-step trials (both worlds, T6 on AUDIT_CONFIG) on 1 and 2 local workers: trials per minute per
    world, scaling efficiency, per-shard merge overhead and payload; JSON-ready. Benchmark, not a test.

    Every worker runs one torch thread (the in-process run too), so the efficiency compares like with like.
    ``steady_trials_per_minute_per_world`` counts each worker's busy time only (the shards' own run
    times, summed and shared over the workers): the throughput once processes are up, which is what
    scales to more machines. ``overhead_seconds`` is the rest of the wall time (spawning processes and
    importing torch in them, shipping shards, waiting on the last one); ``trials_per_minute_per_world``
    counts the wall time. ``identical`` checks that the merged counts agree.
    The merge cost per shard (summing two int64 histograms, and the pickled size a shard sends back) is
    what a driver pays per shard on any cluster, so it projects the scaling to many machines.
    """
    dev = str(resolve_device(device))
    construction = build("T6", AUDIT_CONFIG)
    num = pair_numeric(construction.pair)
    key = tuple(tuple(np.atleast_1d(x).tolist()) for x in num)
    _, _, _, edges = plan_tests(key, 1, trials, 1e-3, 0.95, (1.0,), True, None)
    plan = dict(shard_size=shard_size, device=dev, threads=1)
    specs = plan_shards("T6", AUDIT_CONFIG, trials, 1, 0, edges, y_edges_of(num), **plan)
    threads = torch.get_num_threads()
    rows, merged = [], None
    try:
        run_shards(plan_shards("T6", AUDIT_CONFIG, 64, 1, 1, edges, y_edges_of(num), **plan))  # warm this process
        for w in workers:
            if progress is not None:
                progress(f"sharded engine: {trials} trials per world on {w} worker(s)")
            started = time.perf_counter()
            results, _ = run_shards(specs, workers=w)
            wall = time.perf_counter() - started
            busy = sum(r.seconds for r in results.values()) / w
            counts = (merge(results, "p").counts, merge(results, "q").counts)
            merged = counts if merged is None else merged
            rows.append({"workers": w, "seconds": wall, "busy_seconds_per_worker": busy, "overhead_seconds": wall - busy,
                         "trials_per_minute_per_world": 60 * trials / wall,
                         "steady_trials_per_minute_per_world": 60 * trials / max(busy, 1e-9),
                         "identical": all(np.array_equal(a, b) for a, b in zip(merged, counts))})
    finally:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    for world in "pq":
        merge(results, world)
    per_shard = (time.perf_counter() - started) / len(results)
    base = rows[0]["steady_trials_per_minute_per_world"] / rows[0]["workers"]
    for row in rows:
        row["scaling_efficiency"] = row["steady_trials_per_minute_per_world"] / (row["workers"] * base)
        row["scaling_efficiency_wall"] = row["trials_per_minute_per_world"] / (
            row["workers"] * rows[0]["trials_per_minute_per_world"] / rows[0]["workers"])
    return {"trials_per_world": trials, "shard_size": shard_size, "shards": len(specs), "device": dev,
            "workers": rows, "merge_seconds_per_shard": per_shard,
            "shard_payload_bytes": len(pickle.dumps(next(iter(results.values()))))}


def bench_audit(trials: int = 400_000, naive_trials: int = 300, device: str = "auto", scaling: bool = True,
                progress: Optional[Callable[[str], None]] = None) -> dict:
    """Trials/s (one step, one world) batched and naive, their ratio and the per-minute figure, and the sharded
    engine's scaling on 1 and 2 local workers (:func:`bench_scaling`); JSON-ready. ``progress(message)``
    before each phase.

    Benchmark, not a test; the numbers are wall-clock on the current machine.
    """
    dev = resolve_device(device)
    construction = build("T6", AUDIT_CONFIG, device=dev)
    generator = torch.Generator(device=dev).manual_seed(0)
    for _ in released_update_chunks(construction, "p", 20_000, 1, generator):  # warm-up (torch.func tracing)
        pass
    if progress is not None:
        progress(f"batched: {trials} one-step trials")
    started = time.perf_counter()
    for _ in released_update_chunks(construction, "p", trials, 1, generator):
        pass
    batched = trials / (time.perf_counter() - started)
    if progress is not None:
        progress(f"naive: {naive_trials} trials, one per iteration")
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
        "scaling": bench_scaling(device=device, progress=progress) if scaling else None,
    }


def format_bench(result: dict) -> str:
    """Human-readable summary of :func:`bench_audit`'s result (``--json`` prints the dict itself)."""
    lines = [f"one-step audit trials of T6 (N = 320, Λ = 64, L = 4, σ = 1), {result['device']} with "
             f"{result['threads']} threads",
             f"  batched {result['batched_trials_per_minute_per_world'] / 1e6:.2f} M trials/min per world, naive "
             f"{result['naive_trials_per_second']:.0f}/s: {result['speedup']:.0f}x",
             f"  goals ≥ {result['goal_trials_per_minute_per_world'] / 1e6:.0f} M/min and ≥ "
             f"{result['goal_speedup']:.0f}x: {'met' if result['meets_goals'] else 'NOT met'}"]
    scaling = result.get("scaling")
    if scaling:
        lines.append(f"sharded engine, {scaling['trials_per_world']} trials per world in {scaling['shards']} shards, "
                     "one torch thread per worker:")
        lines.append(f"  {'workers':>7} {'M trials/min (wall)':>20} {'efficiency':>10} {'M/min (busy)':>13} "
                     f"{'efficiency':>10} {'overhead s':>10} {'identical':>9}")
        for row in scaling["workers"]:
            lines.append(f"  {row['workers']:>7} {row['trials_per_minute_per_world'] / 1e6:>20.2f} "
                         f"{row['scaling_efficiency_wall']:>10.2f} {row['steady_trials_per_minute_per_world'] / 1e6:>13.2f} "
                         f"{row['scaling_efficiency']:>10.2f} {row['overhead_seconds']:>10.1f} {str(row['identical']):>9}")
        lines.append(f"  merge {scaling['merge_seconds_per_shard'] * 1e6:.0f} µs per shard, "
                     f"{scaling['shard_payload_bytes'] / 1e3:.0f} kB sent back per shard")
    return "\n".join(lines)

