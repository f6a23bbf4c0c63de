"""A Monte Carlo audit's options, one frozen object per concern, each checked when it is made.

:class:`TrialPlan`: how many trials, their seed and shards, and where they run; :class:`Statistic`: the test
statistic's threshold and the α grid of the profile bounds; :class:`Confidence`: the probability of the lower
bounds and how the violation test spends it. A bad value is one :class:`ConfigError` naming the keyword (and so,
through the CLI, the flag: ``trials`` is ``--trials``, ``alphas`` is ``--alpha``), raised before any work.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from tsdp.executor.cluster import check_address
from tsdp.theorems.config import SEED_MAX, Choice, ConfigError, check_confidence, check_int, check_real
from tsdp.verify.cpus import check_workers

DEFAULT_ALPHAS = tuple(float(math.exp(e)) for e in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0))
"""The α grid of the profile bounds H_α when none is given: e^0, e^0.5, ..., e^2, e^3."""

MIN_TRIALS = 20
"""The fewest trials per world an audit runs."""

DEFAULT_SHARD_SIZE = 1 << 16
"""Trials of one world per shard unless the plan says otherwise (:mod:`attacks.montecarlo.shards`)."""

MAX_SHARDS = 2**20
"""The most shards of one world a plan holds (each a spec with its seed, in memory before the first runs): at the
default shard size, 6.9e10 trials per world, past a day of sampling on any one machine."""


SPLIT_STEPS = 20
"""A split-threshold audit's selection share moves in steps of 1/SPLIT_STEPS of the trials: its shards hold at most
ceil(trials / SPLIT_STEPS) trials (:func:`split_shard_size`)."""


def split_shard_size(trials: int, shard_size: int) -> int:
    """The shard size a split-threshold audit runs: ``shard_size``, lowered to ceil(trials / SPLIT_STEPS) (at least 1)
    so that the selection share moves in steps of 5%. `tsdp audit` refuses a typed --shard-size this would lower.

    Args:
        trials: Trials per world.
        shard_size: The shard size asked for.

    Returns:
        The shard size used.
    """
    return min(shard_size, max(1, math.ceil(trials / SPLIT_STEPS)))


def check_plan(trials: int, shard_size: int) -> int:
    """The number of shards per world of ``trials`` trials in shards of ``shard_size``.

    Args:
        trials: Trials per world.
        shard_size: Trials of one world per shard.

    Returns:
        The shards per world.

    Raises:
        ConfigError: Naming ``shard_size`` or ``trials`` when the plan would hold more than :data:`MAX_SHARDS`.
    """
    shard_size = check_int("shard_size", shard_size, 1)
    n_shards = math.ceil(check_int("trials", trials, 1) / shard_size)
    if n_shards > MAX_SHARDS:
        raise ConfigError("trials", f"must be <= {MAX_SHARDS * shard_size:.3g} ({MAX_SHARDS} shards of {shard_size} "
                                    "trials per world): a larger audit cannot finish", trials)
    return n_shards


class Threshold(Choice):
    """How the test's threshold is chosen: fixed from the construction's pair before sampling (every trial
    certifies, :mod:`attacks.montecarlo.design`), or on a selection share of the trials (the rest certify)."""

    THEORY = "theory"
    SPLIT = "split"


THRESHOLDS = Threshold.values()


def _set(obj, name: str, value) -> None:
    """Store a checked (normalised) value on a frozen dataclass while it is made."""
    object.__setattr__(obj, name, value)


@dataclass(frozen=True)
class TrialPlan:
    """The trials of an audit: how many, their seed and shards, and where they run.

    The seed and the shard size define the sample: the same seed and shard size give the same counts, hence the
    same certified bound, on any number of workers, in processes or on a cluster.

    Attributes:
        trials: Trials per world (at least :data:`MIN_TRIALS`).
        seed: The seed of the shard plan, in [0, 2^63).
        shard_size: Trials of one world per shard.
        workers: Local processes the shards run on (1: this process); with ``cluster="auto"``, the local Dask
            cluster's processes.
        cluster: A Dask scheduler's address ``[tcp|tls://]HOST:PORT``, or ``"auto"`` for a local Dask cluster (None:
            local); whether it answers is checked when the audit starts.
        device: The torch device (``"auto"``: cuda when available, else cpu).

    Raises:
        ConfigError: A bad value, naming its field (``trials`` also when the plan would hold too many shards).
    """

    trials: int
    seed: int = 0
    shard_size: int = DEFAULT_SHARD_SIZE
    workers: int = 1
    cluster: Optional[str] = None
    device: str = "auto"

    def __post_init__(self):
        _set(self, "trials", check_int("trials", self.trials, MIN_TRIALS))
        _set(self, "shard_size", check_int("shard_size", self.shard_size, 1))
        check_plan(self.trials, self.shard_size)
        _set(self, "seed", check_int("seed", self.seed, 0, SEED_MAX))
        _set(self, "workers", check_workers("workers", self.workers))
        check_address(self.cluster)
        if not isinstance(self.device, str):
            raise ConfigError("device", "must be a torch device name ('auto', 'cpu', 'cuda', ...)", self.device)


@dataclass(frozen=True)
class Statistic:
    """How the audit's test is chosen, and the α grid of its profile bounds.

    Attributes:
        threshold: ``"theory"`` fixes the test before sampling from the construction's pair (every trial
            certifies); ``"split"``: ``select_fraction`` of the trials choose it, the rest bound its error rates.
        select_fraction: With ``"split"``: the share of the trials that choose the test, in (0, 1).
        alphas: The α grid of the lower bounds on H_α (each finite and >= 1).

    Raises:
        ConfigError: A bad value, naming its field.
    """

    threshold: Threshold = Threshold.THEORY
    select_fraction: float = 0.5
    alphas: Tuple[float, ...] = DEFAULT_ALPHAS

    def __post_init__(self):
        _set(self, "threshold", Threshold.of("threshold", self.threshold))
        if not (isinstance(self.select_fraction, (int, float)) and 0 < self.select_fraction < 1):
            raise ConfigError("select_fraction", "must be in (0, 1)", self.select_fraction)
        _set(self, "select_fraction", float(self.select_fraction))
        _set(self, "alphas", _alphas(self.alphas))


def _alphas(alphas: Sequence[float]) -> Tuple[float, ...]:
    """The α grid as floats, or ConfigError naming ``alphas``."""
    if isinstance(alphas, (str, bytes)) or not hasattr(alphas, "__iter__"):
        raise ConfigError("alphas", "must be a sequence of α values", alphas)
    alphas = tuple(alphas)
    if not alphas:
        raise ConfigError("alphas", "must hold at least one α", alphas)
    for a in alphas:
        if isinstance(a, bool) or not (isinstance(a, (int, float)) and math.isfinite(a) and a >= 1):
            raise ConfigError("alphas", "every α must be finite and >= 1", a)
    return tuple(float(a) for a in alphas)


@dataclass(frozen=True)
class Confidence:
    """The probability with which the audit's lower bounds hold, and how the violation test spends it.

    Attributes:
        level: The confidence, in (0.5, 1): ``epsilon_lower`` is a lower bound on the true ε with at least this
            probability, each H_α bound pointwise, the violation test at level 1 - ``level`` (the verdict, that
            test or ``epsilon_lower`` above the sound ε, errs on a correct loop with at most twice that).
        sequential: Run the violation test at geometric checkpoints (1, 2, 4, ... shards, level α/2^(k+1) at the
            k-th) and stop the audit at the first certified violation (anytime-valid). ``epsilon_lower`` is then
            the violation test's value where the audit stopped and the estimate's where it ran on, so it holds with
            probability ≥ 1 - 2(1 - ``level``) (union bound over the two).

    Raises:
        ConfigError: A bad value, naming it (``confidence`` for the level,
            :func:`tsdp.theorems.validate.check_confidence`: at most 0.5 the verdict would hold with probability 0).
    """

    level: float = 0.95
    sequential: bool = False

    def __post_init__(self):
        _set(self, "level", check_confidence(self.level))
        if not isinstance(self.sequential, bool):
            raise ConfigError("sequential", "must be True or False", self.sequential)


__all__ = ["DEFAULT_ALPHAS", "DEFAULT_SHARD_SIZE", "MAX_SHARDS", "MIN_TRIALS", "SPLIT_STEPS", "THRESHOLDS", "Confidence",
           "Statistic", "Threshold", "TrialPlan", "check_plan", "split_shard_size"]
