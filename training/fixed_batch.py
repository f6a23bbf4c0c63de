"""Fixed-shape batches for a step without host synchronisation: every step's windows in a batch of one capacity.

Algorithm 1's batches have a fixed size under the deterministic, shuffled and WOR top levels
with the WR bottom level (M·λ slots, some masked out in a deterministic epoch's last step),
and a random size under Poisson sampling (Algorithm 6, or a Poisson top level). A step that
compacts its batch to the sampled windows reads the batch's size on the host and gives every
step its own shapes: a compiled or CUDA-graph step would recompile or stall each time.

Here every step of a run gets the same shape, (n_steps, K): the sampled windows first, in
the sampler's order, then padding slots (valid indices, masked out, so they contribute
exactly 0 to the clipped sum: their clip factor is multiplied by 0). K is the number of
slots where that is fixed, and for Poisson sampling the smallest K whose Chernoff bound on
P(size > K) is at most ``tail`` (:func:`poisson_capacity`; :func:`mixture_capacity` under a
Poisson top level with a Poisson bottom level, whose windows are no sum of independent
Bernoulli variables). A step that still overflows is never cut: :func:`fixed_capacity`
reports its size, and the loop runs it as a variable-size step (exact, as before) and counts it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch

from tsdp.theorems.config import Bottom, Top, TrainingConfig

if TYPE_CHECKING:  # pragma: no cover - for the annotation only
    from .samplers import WindowIndex

OVERFLOW_TAIL = 1e-12
"""The default bound on a Poisson step's probability of holding more windows than the capacity."""


def chernoff_log_tail(mean: float, count: int) -> float:
    """log of the Chernoff bound on P(S ≥ count) for S a sum of independent Bernoulli variables with E[S] ≤ ``mean``.

    P(S ≥ a) ≤ exp(a - μ - a ln(a/μ)) for a > μ (Chernoff; Mitzenmacher & Upfal, Thm 4.4), an **upper** bound,
    increasing in μ for a > μ, so a bound on the mean gives a bound on the tail. 0 (the trivial bound 1) for
    a ≤ μ; -inf for μ = 0 < a.

    Args:
        mean: the bound μ on E[S].
        count: the count a.

    Returns:
        The log of the bound (≤ 0).
    """
    if count <= mean:
        return 0.0
    if mean <= 0:
        return -math.inf
    return count - mean - count * math.log(count / mean)


def poisson_capacity(mean: float, slots: int, tail: float = OVERFLOW_TAIL) -> int:
    """The smallest K ≤ ``slots`` with P(S > K) ≤ ``tail`` by :func:`chernoff_log_tail`, S a sum of ``slots``
    independent Bernoulli variables with E[S] ≤ ``mean`` (``slots`` itself when no smaller K is certified: then
    S > K is impossible).

    Args:
        mean: the bound on E[S].
        slots: the number of Bernoulli variables.
        tail: the overflow probability allowed.

    Returns:
        The capacity K.

    Raises:
        ValueError: ``tail`` not in (0, 1), ``mean`` negative or ``slots`` below 1.
    """
    if not 0 < tail < 1 or mean < 0 or slots < 1:
        raise ValueError(f"need 0 < tail < 1, mean >= 0 and slots >= 1 (got tail {tail}, mean {mean}, slots {slots})")
    log_tail = math.log(tail)
    k = max(0, math.floor(mean))
    while k < slots and chernoff_log_tail(mean, k + 1) > log_tail:
        k += 1
    return min(k, slots)


MIXTURE_THETAS = np.geomspace(1e-6, 50.0, 512)
"""The θ at which :func:`mixture_capacity` evaluates its Chernoff bound (each θ > 0 gives an upper bound; the least
is taken)."""


def mixture_capacity(rate: float, n_starts: Sequence[int], instances: int, tail: float = OVERFLOW_TAIL) -> int:
    """The smallest K with P(S > K) ≤ ``tail`` by the Chernoff bound of S = Σ_n B_n X_n, the windows of a step under
    a Poisson top level (B_n ~ Bernoulli(``rate``), sequence n sampled) with a Poisson bottom level (Algorithm 6; X_n ~
    Binomial(T_n, min(λ/T_n, 1)), its windows), independent across n: P(S ≥ a) ≤ exp(-θa) E[e^{θS}] for every
    θ > 0 (an **upper** bound), log E[e^{θS}] = Σ_n log(1 - rate + rate (1 - p_n + p_n e^θ)^{T_n}), the least over
    :data:`MIXTURE_THETAS` taken. S is no sum of independent Bernoulli variables (a sequence's windows enter
    together), so :func:`poisson_capacity`'s bound of its mean does not hold for it: its tail is heavier.

    Args:
        rate: the top level's sampling rate N'/N.
        n_starts: T_n per training series.
        instances: λ, the bottom level's expected windows per sequence.
        tail: the overflow probability allowed.

    Returns:
        The capacity K (at most Σ_n T_n, where S > K is impossible).

    Raises:
        ValueError: ``tail`` not in (0, 1) or ``rate`` not in (0, 1].
    """
    if not 0 < tail < 1 or not 0 < rate <= 1:
        raise ValueError(f"need 0 < tail < 1 and 0 < rate <= 1 (got tail {tail}, rate {rate})")
    t = np.asarray(n_starts, dtype=np.float64)
    p = np.minimum(instances / t, 1.0)
    inner = t * np.log1p(p * np.expm1(MIXTURE_THETAS[:, None]))  # log E[e^{θ X_n}], (θ, n)
    log_mgf = (inner if rate == 1 else np.logaddexp(math.log1p(-rate), math.log(rate) + inner)).sum(axis=1)
    slots, log_tail = int(t.sum()), math.log(tail)
    k = math.floor(rate * float(np.sum(t * p)))
    while k < slots and float(np.min(log_mgf - MIXTURE_THETAS * (k + 1))) > log_tail:
        k += 1
    return min(k, slots)


def batch_capacity(config: TrainingConfig, n_starts: Sequence[int], tail: float = OVERFLOW_TAIL) -> int:
    """The capacity K of every step's batch under ``config``'s sampler (:func:`training.samplers.make_sampler`).

    Fixed-size schemes: their slots (Λ pooled windows; M·λ for a WR bottom level under a deterministic, shuffled
    or WOR top level). Poisson sampling: :func:`poisson_capacity` of the step's expected size. Each sampled
    sequence contributes min(λ, T_n) ≤ λ expected windows under Algorithm 6, so every step's mean is at most
    N'·λ; a Poisson top level with a WR bottom level takes λ windows per sampled sequence, K = λ · (capacity
    of the N' expected sequences among N). A Poisson top level with a Poisson bottom level is no sum of
    independent Bernoulli variables (a sequence's windows enter together, with it): :func:`mixture_capacity`, the
    Chernoff bound of its own law.

    Args:
        config: the training configuration.
        n_starts: T_n per training series.
        tail: the overflow probability allowed per step (Poisson sampling).

    Returns:
        The capacity K.
    """
    lam, per_step = config.instances, config.sequences_per_step
    if config.top == Top.POOLED:
        return config.batch_size
    t_max = max(int(t) for t in n_starts)
    if config.top == Top.POISSON:
        if config.bottom == Bottom.WR:
            return lam * poisson_capacity(per_step, config.N, tail)
        return mixture_capacity(per_step / config.N, n_starts, lam, tail)
    if config.bottom == Bottom.WR:
        return per_step * lam
    return poisson_capacity(per_step * lam, per_step * t_max, tail)


@dataclass(frozen=True)
class FixedBatches:
    """Many steps' windows in batches of one capacity K (:func:`fixed_capacity`).

    Attributes:
        seq, start, mask: (n_steps, K); slot j < size of step s holds its j-th sampled window, the rest are
            masked-out padding (valid indices).
        sizes: (n_steps,) the windows each step sampled (may exceed K: :attr:`overflow`).
    """

    seq: torch.Tensor
    start: torch.Tensor
    mask: torch.Tensor
    sizes: torch.Tensor

    @property
    def overflow(self) -> torch.Tensor:
        """(n_steps,) bool: the steps whose sampled windows do not fit the capacity (run them another way)."""
        return self.sizes > self.mask.shape[1]


def fixed_capacity(index: WindowIndex, capacity: int) -> FixedBatches:
    """``index`` (:class:`training.samplers.WindowIndex`, (n_steps, slots)) in batches of ``capacity`` slots, on
    its device without a host synchronisation: one cumulative sum and one scatter for all steps.

    Each step's sampled windows keep their order (as :meth:`WindowIndex.step` compacts them), so the first
    min(size, K) slots are the windows a variable-size step would see; a step with more than K is reported
    through :attr:`FixedBatches.overflow`, its extra windows not in the batch.

    Args:
        index: the sampled windows of many steps, (n_steps, slots).
        capacity: the batch capacity K.

    Returns:
        The steps' batches of ``capacity`` slots.

    Raises:
        ValueError: ``capacity`` below 1.
    """
    if capacity < 1:
        raise ValueError(f"capacity must be >= 1, got {capacity}")
    n_steps, slots = index.mask.shape
    device = index.mask.device
    position = index.mask.cumsum(dim=1) - 1  # each sampled window's place in its step's batch
    target = torch.where(index.mask & (position < capacity), position, capacity)  # the rest to a discarded column
    source = torch.arange(slots, device=device).expand(n_steps, slots)
    order = torch.zeros(n_steps, capacity + 1, dtype=torch.long, device=device).scatter_(1, target, source)
    order = order[:, :capacity]
    sizes = index.mask.sum(dim=1)
    mask = torch.arange(capacity, device=device) < sizes[:, None]
    return FixedBatches(index.seq.gather(1, order), index.start.gather(1, order), mask, sizes)


__all__ = ["MIXTURE_THETAS", "OVERFLOW_TAIL", "FixedBatches", "batch_capacity", "chernoff_log_tail",
           "fixed_capacity", "mixture_capacity", "poisson_capacity"]
