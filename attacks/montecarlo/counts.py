"""A shard's sufficient statistics and their exact merge (integer histogram counts, added in index order), and how the
executor ran the shards (:class:`ExecutorRun`).

Shards (:mod:`attacks.montecarlo.shards`) return these; the violation test
(:mod:`attacks.montecarlo.sequential`) and the audit (:mod:`attacks.montecarlo.audit`) merge
prefixes of them. Counts are integers, so a merge is exact and independent of the order in
which workers finished.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np

from tsdp.verify.json_data import Record


@dataclass
class ShardStats:
    """A shard's sufficient statistics: histogram ``counts`` of the statistic, ``y_counts`` of the first update."""

    world: str
    index: int
    trials: int
    counts: np.ndarray
    y_counts: np.ndarray
    seconds: float

    @property
    def key(self) -> Tuple[str, int]:
        return self.world, self.index


def merge(results: Dict[Tuple[str, int], ShardStats], world: str, shards: Optional[int] = None) -> ShardStats:
    """Sum of the first ``shards`` shards of ``world`` (all when None): exact integer addition, in index order.

    Every shard of the prefix must be present (a missing one is an error, never skipped).
    """
    indices = sorted(i for w, i in results if w == world)
    n = len(indices) if shards is None else shards
    if indices[:n] != list(range(n)):
        raise KeyError(f"shards of world {world!r} missing from the prefix of {n}")
    parts = [results[(world, i)] for i in range(n)]
    return ShardStats(world, -1, sum(p.trials for p in parts), np.sum([p.counts for p in parts], axis=0),
                      np.sum([p.y_counts for p in parts], axis=0), sum(p.seconds for p in parts))


@dataclass(frozen=True)
class ExecutorRun(Record):
    """How :func:`run_shards` ran (its ``info``, as a dict, is this record's JSON form).

    Attributes:
        executor: ``in-process``, ``processes`` or ``dask``.
        workers: the local worker processes asked for.
        cluster: the Dask scheduler's address (None: none).
        shards_planned: the shards planned.
        shards_run: the shards that finished.
        retries: shards re-run after a failure.
        stopped_early: the stop rule ended the run before every shard.
        seconds: the engine's wall-clock seconds.
    """

    executor: str
    workers: int
    cluster: Optional[str]
    shards_planned: int
    shards_run: int
    retries: int
    stopped_early: bool
    seconds: float


__all__ = ["ExecutorRun", "ShardStats", "merge"]