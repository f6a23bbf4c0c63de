"""A shard's sufficient statistics and their exact merge (integer histogram counts, added in index order).

Shards (:mod:`attacks.montecarlo.shards`) return these; the violation test
(:mod:`attacks.montecarlo.sequential`) and the audit (:mod:`attacks.montecarlo.audit`) merge
prefixes of them. Counts are integers, so a merge is exact and independent of the order in
which workers finished.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

import numpy as np


@dataclass
class ShardStats:
    """A shard's sufficient statistics.

    Attributes:
        world: ``"p"`` or ``"q"``.
        index: The shard's place among its world's shards (-1: a merge of several).
        trials: Trials counted.
        counts: The histogram of the audit statistic.
        y_counts: The histogram of the first step's update.
        seconds: Wall-clock seconds the shard ran (a merge: their sum).
    """

    world: str
    index: int
    trials: int
    counts: np.ndarray
    y_counts: np.ndarray
    seconds: float

    @property
    def key(self) -> Tuple[str, int]:
        """(world, index): the shard's name in the executor's results."""
        return self.world, self.index


def merge(results: Dict[Tuple[str, int], ShardStats], world: str, shards: Optional[int] = None) -> ShardStats:
    """Sum of the first ``shards`` shards of ``world`` (all when None): exact integer addition, in index order.

    Every shard of the prefix must be present (a missing one is an error, never skipped).

    Args:
        results: Shard results by (world, index).
        world: ``"p"`` or ``"q"``.
        shards: The prefix's length (None: every shard of the world).

    Returns:
        The merged statistics (index -1).

    Raises:
        KeyError: A shard of the prefix is missing.
    """
    indices = sorted(i for w, i in results if w == world)
    n = len(indices) if shards is None else shards
    if indices[:n] != list(range(n)):
        raise KeyError(f"shards of world {world!r} missing from the prefix of {n}")
    parts = [results[(world, i)] for i in range(n)]
    return ShardStats(world, -1, sum(p.trials for p in parts), np.sum([p.counts for p in parts], axis=0),
                      np.sum([p.y_counts for p in parts], axis=0), sum(p.seconds for p in parts))


__all__ = ["ShardStats", "merge"]