"""The Monte Carlo audit's unit of work: trials in shards of one world, and what a shard counts.

The trials of an audit are cut into shards of a fixed size (``shard_size`` trials of one
world), so the shards depend on the seed and the number of trials only, never on the number
of workers. Shard seeds come from one ``numpy.random.SeedSequence(seed).spawn`` (one child per
world, one grandchild per shard). A shard runs its trials through the real loop
(:func:`attacks.montecarlo.trials.released_update_chunks`) and returns only sufficient statistics:
the histogram of the audit statistic on fixed edges and the histogram of the first step's
update (for the goodness of fit); integer counts, merged by addition, so the same seed gives
the same counts, hence the same certified bound, on 1, 2 or 8 workers (:mod:`attacks.montecarlo.counts`).
The shards run on the executor (:func:`executor.run.run_shards`: this process, local processes or Dask);
:data:`SHARD_IMPORTS` is what a worker imports before its first shard.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig

from .constructions import build, pair_numeric
from .counts import ShardStats
from .options import DEFAULT_SHARD_SIZE, check_plan
from .planted import planted_loop
from .shuffled import reading_of, reads_epoch_maxima
from .statistics import bin_counts, log_likelihood_ratio
from .trials import released_update_chunks, resolve_device

SHARD_IMPORTS = ("tsdp.attacks.montecarlo.trials",)
"""The modules a worker imports before its first shard (torch, the loop): :func:`executor.local.worker_pool`'s
``warm``."""


@dataclass(frozen=True)
class ShardSpec:
    """One shard: ``trials`` trials of ``steps`` steps of ``theorem``'s construction in ``world``.

    Attributes:
        theorem: The audited construction's theorem.
        config: Its configuration.
        world: ``"p"`` or ``"q"``.
        index: The shard's place among its world's shards.
        trials: Trials of this shard.
        steps: Compositions (one release each), or training steps for a shuffled construction, whose trials draw
            whole epochs and read each epoch's maximum (:mod:`attacks.montecarlo.shuffled`).
        seed: The shard's SeedSequence.
        edges: The statistic histogram's edges.
        y_edges: The first-step update histogram's edges.
        device: The torch device.
        loop: A variant of :mod:`attacks.montecarlo.planted` ("correct": the loop itself).
        sampler: An injected sampler (None: the scheme's; in-process only unless picklable).
        threads: torch's intra-op threads in the worker (None: leave as is).
    """

    theorem: str
    config: TrainingConfig
    world: str
    index: int
    trials: int
    steps: int
    seed: np.random.SeedSequence
    edges: np.ndarray = field(repr=False)
    y_edges: np.ndarray = field(repr=False)
    device: str = "cpu"
    loop: str = "correct"
    sampler: object = None
    threads: Optional[int] = None

    @property
    def key(self) -> Tuple[str, int]:
        """(world, index): the shard's name in the executor's results."""
        return self.world, self.index


def plan_shards(theorem: str, config: TrainingConfig, trials: int, steps: int, seed: int, edges: np.ndarray,
                y_edges: np.ndarray, *, shard_size: int = DEFAULT_SHARD_SIZE, **spec: Any) -> List[ShardSpec]:
    """The shards of ``trials`` trials per world, interleaved P0, Q0, P1, Q1, ... (``spec``: ShardSpec's options).

    Shard i of a world holds trials [i·shard_size, (i+1)·shard_size): the plan of fewer trials is a
    prefix of the plan of more (same seed), whatever the number of workers.

    Args:
        theorem: The audited construction's theorem.
        config: Its configuration.
        trials: Trials per world.
        steps: Compositions per trial.
        seed: The seed every shard's stream is spawned from.
        edges: The statistic histogram's edges.
        y_edges: The one-step update histogram's edges.
        shard_size: Trials of one world per shard.
        **spec: :class:`ShardSpec`'s options (device, loop, sampler, threads).

    Returns:
        The shard specs in run order.
    """
    n_shards = check_plan(trials, shard_size)
    world_seeds = np.random.SeedSequence(seed).spawn(2)
    seeds = {w: s.spawn(n_shards) for w, s in zip("pq", world_seeds)}
    return [ShardSpec(theorem, config, w, i, min(shard_size, trials - i * shard_size), steps, seeds[w][i],
                      edges, y_edges, **spec)
            for i in range(n_shards) for w in "pq"]


def torch_seed(seed: np.random.SeedSequence, stream: int = 0) -> int:
    """A 63-bit torch seed from a SeedSequence: word ``stream`` of its state (independent streams).

    Args:
        seed: The SeedSequence.
        stream: 0 for the loop's generator, 1 for a user's sampler's.

    Returns:
        The seed.
    """
    return int(seed.generate_state(stream + 1, np.uint64)[stream] >> np.uint64(1))


@functools.lru_cache(maxsize=8)
def _loop(theorem: str, config: TrainingConfig, device: str, variant: str):
    """The construction and loop overrides of a worker (built once per process and key)."""
    return planted_loop(build(theorem, config, device=torch.device(device)), variant)


def run_shard(spec: ShardSpec) -> ShardStats:
    """Run one shard through the real loop and count its statistic (the unit of work of every executor).

    Soundness: none of its own; the certified bounds are computed from the merged counts
    (:mod:`attacks.montecarlo.statistics`). The result depends on ``spec`` alone (and the device kind).

    Args:
        spec: The shard.

    Returns:
        Its histograms of the statistic and of the one-step update.
    """
    started = time.perf_counter()
    if spec.threads:
        torch.set_num_threads(spec.threads)
    dev = resolve_device(spec.device)
    construction, overrides = _loop(spec.theorem, spec.config, str(dev), spec.loop)
    if spec.sampler is not None:  # a user's sampler draws on the CPU (torch.randint(..., generator=g) needs no
        # device argument there), the same draws on every device; its windows move to the loop's device
        overrides = {**overrides, "sampler": spec.sampler,
                     "sampler_generator": torch.Generator().manual_seed(torch_seed(spec.seed, stream=1))}
    generator = torch.Generator(device=dev).manual_seed(torch_seed(spec.seed))
    if reads_epoch_maxima(construction):  # shuffled: every step of the epochs, read through each epoch's max
        reading = reading_of(construction, spec.steps)
        steps, statistic, first = reading.simulated_steps, reading.statistic, reading.first
    else:
        num = pair_numeric(construction.pair)
        steps, statistic, first = spec.steps, (lambda y: log_likelihood_ratio(y, num)), (lambda y: y[:, 0])
    counts = np.zeros(len(spec.edges) + 1, dtype=np.int64)
    y_counts = np.zeros(len(spec.y_edges) + 1, dtype=np.int64)
    for chunk in released_update_chunks(construction, spec.world, spec.trials, steps, generator, **overrides):
        y = chunk.numpy()
        counts += bin_counts(statistic(y), spec.edges)
        y_counts += bin_counts(first(y), spec.y_edges)
    return ShardStats(spec.world, spec.index, spec.trials, counts, y_counts, time.perf_counter() - started)


__all__ = ["SHARD_IMPORTS", "ShardSpec", "plan_shards", "run_shard", "torch_seed"]
