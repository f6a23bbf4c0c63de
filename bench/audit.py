"""`tsdp bench audit`: one-step audit trials per second through the real loop, batched vs a naive per-trial loop.

Both paths run the same construction (T6 on the audit configuration N = 320, Λ = 64,
L = 4, L_C = L_F = 1, σ = 1) through the same loop code (WOR/WR samplers, window cropping,
torch.func per-sample gradients, clipping, noise); the batched path puts trials in a tensor
dimension (:func:`attacks.montecarlo.trials.released_update_chunks`), the naive path runs one trial
per Python iteration (:func:`attacks.montecarlo.trials.naive_released_update`). Measured in one run.
Goals: ≥ 10^6 one-step trials per minute per world on 2 CPU cores, ≥ 100x naive; the
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
from tsdp.bench import rounds as bench_rounds
from tsdp.bench.rounds import MIN_ROUNDS

from tsdp.training.samplers import make_sampler

from tsdp.attacks.montecarlo.audit import plan_tests, y_edges_of
from tsdp.attacks.montecarlo.constructions import build, pair_numeric
from tsdp.attacks.montecarlo.counts import merge
from tsdp.attacks.montecarlo.shards import SHARD_IMPORTS, plan_shards, run_shard
from tsdp.executor.local import worker_pool
from tsdp.executor.run import run_shards
from tsdp.attacks.montecarlo.trials import naive_released_update, released_update_chunks, resolve_device

AUDIT_CONFIG = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)


def bench_scaling(trials: int = 1 << 17, shard_size: int = 1 << 14, workers: int = 2, rounds: int = MIN_ROUNDS,
                  device: str = "auto", progress: Optional[Callable[[str], None]] = None) -> dict:
    """Sharded one-step trials (both worlds, T6 on AUDIT_CONFIG) on 1 and ``workers`` local workers, interleaved.

    Each round runs the same shards in this process (one torch thread) and on a warm pool of
    ``workers`` processes (one thread each, :func:`executor.local.worker_pool`, started
    and warmed before the first round: start-up is off the critical path, as in an audit that
    starts its pool before designing its test), in the same order every round
    (:func:`tsdp.bench.rounds.interleave`). Per round: trials per minute per world on each
    side and the scaling efficiency = (throughput on ``workers``) / (``workers`` × throughput on 1);
    reported as median and range over the rounds, with the threads and the load average.
    ``identical``: every round's merged counts equal the first's (the same seed gives the same
    counts on any number of workers). The merge cost per shard and the pickled size a shard
    sends back are what a driver pays per shard on any cluster. Benchmark, not a test.
    """
    dev = str(resolve_device(device))
    construction = build("T6", AUDIT_CONFIG)
    num = pair_numeric(construction.pair)
    key = tuple(tuple(np.atleast_1d(x).tolist()) for x in num)
    _, _, _, edges = plan_tests(key, 1, trials, 1e-3, 0.95, (1.0,), True, None)
    specs = plan_shards("T6", AUDIT_CONFIG, trials, 1, 0, edges, y_edges_of(num), shard_size=shard_size, device=dev,
                        threads=1)
    threads = torch.get_num_threads()
    merged, identical, results = None, True, None

    def side(w):
        def run():
            nonlocal merged, identical, results
            results, _ = run_shards(specs, run_shard, workers=w)
            counts = (merge(results, "p").counts, merge(results, "q").counts)
            merged = counts if merged is None else merged
            identical = identical and all(np.array_equal(a, b) for a, b in zip(merged, counts))
        return run

    try:
        worker_pool(workers, warm=SHARD_IMPORTS)
        run_shards(specs[:workers], run_shard, workers=workers)  # the pool's processes are up and have run a shard
        timed = bench_rounds.interleave({"1": side(1), str(workers): side(workers)}, rounds, progress=progress,
                                        label=f"sharded engine, 1 vs {workers} workers")
    finally:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    for world in "pq":
        merge(results, world)
    per_shard = (time.perf_counter() - started) / len(results)
    rate = {w: [60 * trials / t for t in timed["seconds"][w]] for w in timed["seconds"]}
    efficiency = [many / (workers * one) for one, many in zip(rate["1"], rate[str(workers)])]
    return {"trials_per_world": trials, "shard_size": shard_size, "shards": len(specs), "device": dev,
            "workers": workers, "rounds": rounds, "torch_threads_per_worker": 1,
            "trials_per_minute_per_world": {w: bench_rounds.spread(r) for w, r in rate.items()},
            "scaling_efficiency": bench_rounds.spread(efficiency), "identical": identical,
            "merge_seconds_per_shard": per_shard, "environment": timed["environment"],
            "shard_payload_bytes": len(pickle.dumps(next(iter(results.values()))))}


def bench_audit(trials: int = 100_000, naive_trials: int = 100, device: str = "auto", scaling: bool = True,
                rounds: int = MIN_ROUNDS, progress: Optional[Callable[[str], None]] = None) -> dict:
    """Trials/s (one step, one world) batched and naive, interleaved over ``rounds`` (per-round rates, their
    ratio: median and range), and the sharded engine's scaling on 1 and 2 local workers
    (:func:`bench_scaling`); JSON-ready. ``progress(message)`` after each round.

    Benchmark, not a test; the numbers are wall-clock on the current machine.
    """
    dev = resolve_device(device)
    construction = build("T6", AUDIT_CONFIG, device=dev)
    generator = torch.Generator(device=dev).manual_seed(0)
    sampler = make_sampler(construction.config)

    def batched():
        for _ in released_update_chunks(construction, "p", trials, 1, generator):
            pass

    def naive():
        for _ in range(naive_trials):
            naive_released_update(construction, "p", generator, sampler)

    timed = bench_rounds.interleave({"batched": batched, "naive": naive}, rounds, progress=progress,
                                    label="batched vs naive trials")
    batched_rate = bench_rounds.spread([trials / t for t in timed["seconds"]["batched"]])
    naive_rate = bench_rounds.spread([naive_trials / t for t in timed["seconds"]["naive"]])
    speedup = bench_rounds.spread([(trials / b) / (naive_trials / n)
                                   for b, n in zip(timed["seconds"]["batched"], timed["seconds"]["naive"])])
    return {
        "construction": "T6",
        "config": {"N": 320, "batch_size": 64, "L": 4, "context_length": 1, "forecast_length": 1, "sigma": 1.0},
        "device": str(dev),
        "threads": torch.get_num_threads(),
        "rounds": rounds,
        "trials_batched": trials,
        "trials_naive": naive_trials,
        "batched_trials_per_second": batched_rate["median"],
        "batched_trials_per_minute_per_world": 60 * batched_rate["median"],
        "naive_trials_per_second": naive_rate["median"],
        "speedup": speedup["median"],
        "speedup_range": [speedup["min"], speedup["max"]],
        "environment": timed["environment"],
        "goal_trials_per_minute_per_world": 1e6,
        "goal_speedup": 100.0,
        "meets_goals": bool(60 * batched_rate["median"] >= 1e6 and speedup["median"] >= 100),
        "scaling": bench_scaling(device=device, rounds=rounds, progress=progress) if scaling else None,
    }


def format_bench(result: dict) -> str:
    """Human-readable summary of :func:`bench_audit`'s result (``--json`` prints the dict itself)."""
    lines = [f"one-step audit trials of T6 (N = 320, Λ = 64, L = 4, σ = 1), {result['device']} with "
             f"{result['threads']} threads",
             f"  batched {result['batched_trials_per_minute_per_world'] / 1e6:.2f} M trials/min per world, naive "
             f"{result['naive_trials_per_second']:.0f}/s: {result['speedup']:.0f}x "
             f"(median of {result['rounds']} interleaved rounds, range {result['speedup_range'][0]:.0f}-"
             f"{result['speedup_range'][1]:.0f}x)",
             f"  goals ≥ {result['goal_trials_per_minute_per_world'] / 1e6:.0f} M/min and ≥ "
             f"{result['goal_speedup']:.0f}x: {'met' if result['meets_goals'] else 'NOT met'}"]
    scaling = result.get("scaling")
    if scaling:
        w = str(scaling["workers"])
        rates = scaling["trials_per_minute_per_world"]
        lines.append(f"sharded engine, {scaling['trials_per_world']} trials per world in {scaling['shards']} shards, "
                     f"one torch thread per worker, {scaling['rounds']} interleaved rounds (median, range):")
        lines.append(f"  1 worker {bench_rounds.format_spread({k: v / 1e6 for k, v in rates['1'].items()}, ' M/min', 2)}, "
                     f"{w} workers {bench_rounds.format_spread({k: v / 1e6 for k, v in rates[w].items()}, ' M/min', 2)}, "
                     f"efficiency {bench_rounds.format_spread(scaling['scaling_efficiency'], '', 2)}, "
                     f"identical counts: {scaling['identical']}")
        lines.append(f"  merge {scaling['merge_seconds_per_shard'] * 1e6:.0f} µs per shard, "
                     f"{scaling['shard_payload_bytes'] / 1e3:.0f} kB sent back per shard")
        lines.append("  " + bench_rounds.format_environment(scaling["environment"]))
    return "\n".join(lines)

