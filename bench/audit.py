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
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple, Union

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig
from tsdp.bench import rounds as bench_rounds
from tsdp.bench.rounds import MIN_ROUNDS, Conditions, Spread

from tsdp.training.samplers import make_sampler

from tsdp.attacks.montecarlo.audit import plan_tests, y_edges_of
from tsdp.attacks.montecarlo.constructions import build, pair_numeric
from tsdp.attacks.montecarlo.counts import merge
from tsdp.attacks.montecarlo.shards import SHARD_IMPORTS, plan_shards, run_shard
from tsdp.executor.local import worker_pool
from tsdp.executor.run import run_shards
from tsdp.attacks.montecarlo.trials import naive_released_update, released_update_chunks, resolve_device
from tsdp.verify.json_data import Record

AUDIT_CONFIG = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)


@dataclass(frozen=True)
class ScalingBench(Record):
    """The sharded engine's scaling (:func:`bench_scaling`); spreads (:class:`~tsdp.bench.rounds.Spread`) over rounds.

    Attributes:
        trials_per_world: Trials per world.
        shard_size: Trials per shard.
        shards: The shards.
        device: The torch device.
        workers: The local workers of the many-worker side.
        rounds: Interleaved rounds.
        torch_threads_per_worker: Torch threads of each worker.
        trials_per_minute_per_world: Per side (``"1"``, the workers), its spread of trials per minute per world.
        scaling_efficiency: The spread of (throughput on ``workers``) / (``workers`` × throughput on 1).
        identical: Every round's merged counts equal the first's.
        merge_seconds_per_shard: The merge's seconds per shard.
        environment: The machine and its load before and after.
        shard_payload_bytes: The pickled size a shard sends back.
    """

    trials_per_world: int
    shard_size: int
    shards: int
    device: str
    workers: int
    rounds: int
    torch_threads_per_worker: int
    trials_per_minute_per_world: Dict[str, Spread]
    scaling_efficiency: Spread
    identical: bool
    merge_seconds_per_shard: float
    environment: Conditions
    shard_payload_bytes: int


@dataclass(frozen=True)
class CanaryRunsBench(Record):
    """A canary audit's runs of tsdp's loop trained together against one at a time (:func:`bench_canary_runs`).

    Attributes:
        model: The model.
        runs: The runs of a round.
        canaries: m, the gradient canaries of a run.
        epochs: The epochs of a run.
        steps: The steps of a run.
        torch_threads: The torch threads.
        rounds: Interleaved rounds.
        runs_per_second: Per side (``alone``, ``together``), its spread of runs per second.
        speedup: The spread of the per-round ratios, together against alone.
        max_score_difference: The largest difference of a run's scores between the two.
        environment: The machine and its load before and after.
    """

    model: str
    runs: int
    canaries: int
    epochs: int
    steps: int
    torch_threads: int
    rounds: int
    runs_per_second: Dict[str, Spread]
    speedup: Spread
    max_score_difference: float
    environment: Conditions


@dataclass(frozen=True)
class AuditBench(Record):
    """What :func:`bench_audit` measured: batched against naive trials, and the parts it ran.

    Attributes:
        construction: The construction's theorem.
        config: Its configuration's sizes.
        device: The torch device.
        threads: The torch threads.
        rounds: Interleaved rounds.
        trials_batched: Batched trials per round.
        trials_naive: Naive trials per round.
        batched_trials_per_second: The median batched rate.
        batched_trials_per_minute_per_world: The same per minute.
        naive_trials_per_second: The median naive rate.
        speedup: The median per-round ratio of the rates.
        speedup_range: Its (min, max).
        environment: The machine and its load before and after.
        goal_trials_per_minute_per_world: The batched rate's goal.
        goal_speedup: The speed-up's goal.
        meets_goals: Both goals met.
        scaling: The engine's scaling (None: not measured).
        canary_runs: The canary runs together (None: not measured).
    """

    construction: str
    config: Dict[str, float]
    device: str
    threads: int
    rounds: int
    trials_batched: int
    trials_naive: int
    batched_trials_per_second: float
    batched_trials_per_minute_per_world: float
    naive_trials_per_second: float
    speedup: float
    speedup_range: Tuple[float, float]
    environment: Conditions
    goal_trials_per_minute_per_world: float
    goal_speedup: float
    meets_goals: bool
    scaling: Optional[ScalingBench]
    canary_runs: Optional[CanaryRunsBench]


def bench_scaling(trials: int = 1 << 17, shard_size: int = 1 << 14, workers: int = 2, rounds: int = MIN_ROUNDS,
                  device: str = "auto", progress: Optional[Callable[[str], None]] = None) -> ScalingBench:
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

    Args:
        trials: Trials per world.
        shard_size: Trials per shard.
        workers: The local workers of the many-worker side.
        rounds: Interleaved rounds.
        device: The torch device ("auto": cuda when available).
        progress: Called with a line after each round.

    Returns:
        The :class:`ScalingBench`.
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
    rate = {w: [60 * trials / t for t in timed.seconds[w]] for w in timed.seconds}
    efficiency = [many / (workers * one) for one, many in zip(rate["1"], rate[str(workers)])]
    return ScalingBench(trials, shard_size, len(specs), dev, workers, rounds, 1,
                        {w: bench_rounds.spread(r) for w, r in rate.items()}, bench_rounds.spread(efficiency),
                        identical, per_shard, timed.environment, len(pickle.dumps(next(iter(results.values())))))


def bench_canary_runs(runs: int = 16, canaries: int = 100, epochs: int = 5, rounds: int = MIN_ROUNDS,
                      progress: Optional[Callable[[str], None]] = None) -> CanaryRunsBench:
    """A white-box audit's training runs of tsdp's loop (:class:`attacks.canary.whitebox.LoopTask`: simple-ff,
    DP-SGD at σ = 8 on 40 short series, N = 40, L = 9, Λ = 10, ``canaries`` gradient canaries, ``epochs`` epochs)
    trained together as one stacked program (:meth:`~attacks.canary.whitebox.LoopTask.together`) against one at a
    time, interleaved over ``rounds`` at one torch thread: runs per second of each side and their per-round ratio
    (median and range), and the largest difference of a run's scores between the two (float rounding).

    Args:
        runs: The runs of a round (each side trains the same runs, from the same seeds).
        canaries: m, the gradient canaries of a run.
        epochs: The epochs of a run (4 steps each).
        rounds: Interleaved rounds.
        progress: Called with a line after each round.

    Returns:
        The :class:`CanaryRunsBench`.
    """
    from tsdp.attacks.canary.whitebox import LoopTask
    from tsdp.datasets.series import synthetic

    data = synthetic(40, 10, seed=0, noise=2.0)
    config = TrainingConfig(N=40, L=9, context_length=8, forecast_length=1, batch_size=10, sigma=8.0)
    task = LoopTask("simple-ff", config, data, canaries, epochs=epochs, delta=1e-5)
    out = {}

    def seeds():
        return np.random.SeedSequence(0).spawn(runs)

    def alone():
        out["alone"] = [task(s) for s in seeds()]

    def together():
        out["together"] = task.together(seeds())

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        timed = bench_rounds.interleave({"alone": alone, "together": together}, rounds, progress=progress,
                                        label=f"{runs} canary runs of tsdp's loop, together vs one at a time")
    finally:
        torch.set_num_threads(threads)
    rate = {side: bench_rounds.spread([runs / t for t in timed.seconds[side]]) for side in timed.seconds}
    difference = max(float(np.max(np.abs(a.scores[n] - b.scores[n])))
                     for a, b in zip(out["alone"], out["together"]) for n in a.scores)
    return CanaryRunsBench("simple-ff", runs, canaries, epochs, out["alone"][0].steps, 1, rounds, rate,
                           bench_rounds.ratio(timed, "alone", "together"), difference, timed.environment)


def bench_audit(trials: int = 100_000, naive_trials: int = 100, device: str = "auto", scaling: bool = True,
                rounds: int = MIN_ROUNDS, progress: Optional[Callable[[str], None]] = None,
                canary_runs: bool = True) -> AuditBench:
    """Trials/s (one step, one world) batched and naive, interleaved over ``rounds`` (per-round rates, their
    ratio: median and range), the sharded engine's scaling on 1 and 2 local workers
    (:func:`bench_scaling`) and a canary audit's runs of tsdp's loop trained together against one at a time
    (:func:`bench_canary_runs`). Benchmark, not a test; the numbers are wall-clock on the current machine.

    Args:
        trials: Batched trials per round.
        naive_trials: Naive trials per round.
        device: The torch device of the trials ("auto": cuda when available).
        scaling: Measure the engine's scaling too.
        rounds: Interleaved rounds of each part.
        progress: Called with a line after each round.
        canary_runs: Measure the canary runs trained together too.

    Returns:
        The :class:`AuditBench`.
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
    batched_rate = bench_rounds.spread([trials / t for t in timed.seconds["batched"]])
    naive_rate = bench_rounds.spread([naive_trials / t for t in timed.seconds["naive"]])
    speedup = bench_rounds.spread([(trials / b) / (naive_trials / n)
                                   for b, n in zip(timed.seconds["batched"], timed.seconds["naive"])])
    return AuditBench(
        construction="T6",
        config={"N": 320, "batch_size": 64, "L": 4, "context_length": 1, "forecast_length": 1, "sigma": 1.0},
        device=str(dev),
        threads=torch.get_num_threads(),
        rounds=rounds,
        trials_batched=trials,
        trials_naive=naive_trials,
        batched_trials_per_second=batched_rate.median,
        batched_trials_per_minute_per_world=60 * batched_rate.median,
        naive_trials_per_second=naive_rate.median,
        speedup=speedup.median,
        speedup_range=(speedup.min, speedup.max),
        environment=timed.environment,
        goal_trials_per_minute_per_world=1e6,
        goal_speedup=100.0,
        meets_goals=bool(60 * batched_rate.median >= 1e6 and speedup.median >= 100),
        scaling=bench_scaling(device=device, rounds=rounds, progress=progress) if scaling else None,
        canary_runs=bench_canary_runs(rounds=rounds, progress=progress) if canary_runs else None,
    )


def format_bench(result: Union[AuditBench, dict]) -> str:
    """Human-readable summary of :func:`bench_audit`'s result (``--json`` prints its ``as_dict()``).

    Args:
        result: What :func:`bench_audit` returned, or its ``as_dict()`` (the benchmark page's).

    Returns:
        The summary.
    """
    if isinstance(result, AuditBench):
        result = result.as_dict()
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
    runs = result.get("canary_runs")
    if runs:
        rate = runs["runs_per_second"]
        lines.append(f"canary audit runs of tsdp's loop ({runs['model']}, {runs['canaries']} canaries, {runs['steps']} "
                     f"steps), {runs['runs']} a round at {runs['torch_threads']} torch thread, {runs['rounds']} "
                     f"interleaved rounds (median, range):")
        lines.append(f"  one at a time {bench_rounds.format_spread(rate['alone'], ' runs/s', 2)}, together "
                     f"{bench_rounds.format_spread(rate['together'], ' runs/s', 2)}: "
                     f"{bench_rounds.format_spread(runs['speedup'])}; largest score difference "
                     f"{runs['max_score_difference']:.1e}")
        lines.append("  " + bench_rounds.format_environment(runs["environment"]))
    return "\n".join(lines)

