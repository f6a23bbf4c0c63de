"""Top- and bottom-level batch samplers (paper Algorithms 3-6, plus shuffling, Poisson and pooled).

Every sampler draws many independent training steps at once: ``sample(n_steps, generator)``
returns index tensors with the step as the leading dimension, so Monte Carlo auditors can
push 10^5-10^7 trials through the real sampling code without a Python loop per trial.

Index conventions (0-based, THEOREMS.md notation otherwise):

* a *top-level batch* is a :class:`TopBatch`: ``seq`` (n_steps, M) sequence indices and
  ``mask`` (n_steps, M) telling which of the M slots hold a sampled sequence;
* a *window batch* is a :class:`WindowIndex`: ``seq``, ``start`` and ``mask``, all
  (n_steps, M'); slot j of step s is the window ``x'_{seq}[start : start + L_C + L_F]`` of
  the front-zero-padded series x' (Algorithm 4), with start in {0, ..., T_n - 1} and
  T_n = L_n - L_F + 1 for a series of length L_n.

Masked-out slots hold valid (in-range) indices so that gathers never fail; they must be
ignored through ``mask``. Epoch-structured samplers (deterministic, shuffle) return
``n_steps`` consecutive steps that start at an epoch boundary; the other samplers return
independent steps.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Sequence, Union

import torch

from tsdp.theorems.config import Bottom, Top, TrainingConfig, window_starts

# Rows of at most this many random keys are drawn at once (bounds peak memory of WOR draws: 128 MiB of float64 keys).
_KEYS_PER_CHUNK = 1 << 24
# Every sampling draw is a float64 uniform (53 random bits). float32's 24 bits tie keys (two of 2^16 tie almost surely,
# and the top-k cut then favours one index: ~N / 2^24 relative excess inclusion, 6 % at N = 1e6, Λ = 1) and round a
# Poisson rate up to a multiple of 2^-24 (a rate of 2^-25 drawn as 2^-24): either would charge less than is spent.
_KEY_DTYPE = torch.float64
_KEY_BITS = 53  # a float64 uniform is a multiple of 2^-53


def drawable_rate(rate: Fraction) -> float:
    """The Bernoulli threshold that draws inclusion with probability at most ``rate`` (Poisson levels, Algorithm 6 and
    the top level's ρ): floor(rate 2^53) / 2^53, exact in float64. ``u < threshold`` for u uniform on the 2^-53 grid
    has probability exactly the threshold; float64(rate) itself can round up, and a threshold off the grid is drawn
    as the next grid point up (ρ = 1/10 as 1/10 + 8.9e-17), above the rate the accountant charges. Sound direction:
    the drawn rate is below the accounted one by less than 2^-53.

    Args:
        rate: The accounted rate, in [0, 1].

    Returns:
        The threshold.
    """
    return math.floor(Fraction(rate) * 2**_KEY_BITS) / 2**_KEY_BITS


@dataclass(frozen=True)
class TopBatch:
    """Top-level sample of many steps.

    Attributes:
        seq: Sequence indices (n_steps, M) (a masked-out slot holds a valid index).
        mask: Which slots hold a sampled sequence (n_steps, M).
    """

    seq: torch.Tensor
    mask: torch.Tensor


@dataclass(frozen=True)
class WindowIndex:
    """Windows of many steps, all (n_steps, M).

    Attributes:
        seq: The windows' sequence indices.
        start: Their 0-based starts in the front-padded series.
        mask: Which slots hold a sampled window (a masked-out slot holds valid indices).
    """

    seq: torch.Tensor
    start: torch.Tensor
    mask: torch.Tensor

    @property
    def n_steps(self) -> int:
        return self.seq.shape[0]

    def sizes(self) -> torch.Tensor:
        """Number of windows in each step, shape (n_steps,)."""
        return self.mask.sum(dim=1)

    def to(self, device: Union[str, torch.device]) -> "WindowIndex":
        """The same windows on ``device``.

        Args:
            device: A torch device (or its name).

        Returns:
            The windows there (itself when already there).
        """
        if self.seq.device == torch.device(device):
            return self
        return WindowIndex(self.seq.to(device), self.start.to(device), self.mask.to(device))

    @classmethod
    def of_sequences(cls, top: TopBatch, start: torch.Tensor, mask: torch.Tensor) -> "WindowIndex":
        """The windows a bottom level drew in every sequence of ``top``: slot (s, m, j) holds the j-th window of
        sequence ``top.seq[s, m]``, flattened to shape (n_steps, M J).

        Args:
            top: The top-level sample, shape (n_steps, M).
            start: The windows' starts, shape (n_steps, M, J).
            mask: Which slots hold a sampled window, shape (n_steps, M, J).

        Returns:
            The windows, shape (n_steps, M J).
        """
        n_steps, per = top.seq.shape[0], start.shape[-1]
        seq = top.seq[..., None].expand(-1, -1, per)
        return cls(seq.reshape(n_steps, -1), start.reshape(n_steps, -1), mask.reshape(n_steps, -1))

    def step(self, i: int) -> "WindowIndex":
        """The windows of one step alone, compacted to its valid slots.

        Args:
            i: The step (0-based).

        Returns:
            Its windows, shape (1, size).
        """
        keep = self.mask[i]
        return WindowIndex(self.seq[i][keep][None], self.start[i][keep][None], keep[keep][None])


def _uniform_subsets(n_steps: int, population: int, size: int, generator: torch.Generator) -> torch.Tensor:
    """(n_steps, size) indices: per row a uniformly random ordered ``size``-subset of range(population).

    The ``size`` largest of ``population`` i.i.d. uniform keys form a uniform subset, and their
    order (by key) is a uniform random order: a vectorised random_permutation(N)[:size]. The keys are float64
    (:data:`_KEY_DTYPE`): ties, which would break the uniformity, have probability about population² / 2^54.
    """
    device = generator.device
    rows = max(1, _KEYS_PER_CHUNK // max(1, population))
    parts = []
    for first in range(0, n_steps, rows):
        n = min(rows, n_steps - first)
        keys = torch.rand(n, population, generator=generator, device=device, dtype=_KEY_DTYPE)
        parts.append(keys.topk(size, dim=1).indices)
    if not parts:
        return torch.empty(0, size, dtype=torch.long, device=device)
    return torch.cat(parts, dim=0)


class DeterministicTopLevel:
    """Algorithm 3 (top-level deterministic "sampling").

    Step b of an epoch yields sequences b N', ..., (b + 1) N' - 1 with N' = floor(Λ/λ); an
    epoch has ceil(N / N') steps (the last one shorter when N' does not divide N), so every
    sequence is touched exactly once per epoch. No randomness.

    Args:
        n_sequences: N.
        per_step: N' = floor(Λ/λ), the sequences of a step.
    """

    def __init__(self, n_sequences: int, per_step: int):
        self.n_sequences = n_sequences
        self.per_step = per_step
        self.steps_per_epoch = math.ceil(n_sequences / per_step)

    def sample(self, n_steps: int, generator: torch.Generator) -> TopBatch:
        """Consecutive steps from an epoch start (Algorithm 3).

        Args:
            n_steps: Steps to draw.
            generator: Only fixes the device.

        Returns:
            The steps' sequences.
        """
        device = generator.device
        b = torch.arange(n_steps, device=device) % self.steps_per_epoch
        seq = b[:, None] * self.per_step + torch.arange(self.per_step, device=device)
        mask = seq < self.n_sequences
        return TopBatch(torch.where(mask, seq, 0), mask)


class ShuffleTopLevel:
    """Shuffled iteration: Algorithm 3 applied to a fresh uniform permutation of the sequences each epoch.

    Like Algorithm 3 it touches every sequence exactly once per epoch (ceil(N / N') steps); with
    ``steps_per_epoch`` fewer (``TrainingConfig.drop_last``: floor(N λ / Λ)) an epoch is that many full steps
    and the rest of the permutation is unused, so every sequence is in at most one step per epoch.

    Args:
        n_sequences: N.
        per_step: N', the sequences of a step.
        steps_per_epoch: Steps per epoch (None: ceil(N / N')).
    """

    def __init__(self, n_sequences: int, per_step: int, steps_per_epoch: Optional[int] = None):
        self.n_sequences = n_sequences
        self.per_step = per_step
        self.steps_per_epoch = math.ceil(n_sequences / per_step) if steps_per_epoch is None else steps_per_epoch

    def sample(self, n_steps: int, generator: torch.Generator) -> TopBatch:
        """Consecutive steps from an epoch start, one independent permutation per epoch.

        Args:
            n_steps: Steps to draw.
            generator: The source of the permutations.

        Returns:
            The steps' sequences.
        """
        device = generator.device
        n_epochs = math.ceil(n_steps / self.steps_per_epoch)
        perms = _uniform_subsets(n_epochs, self.n_sequences, self.n_sequences, generator)
        slots = self.steps_per_epoch * self.per_step
        padded = torch.full((n_epochs, max(slots, self.n_sequences)), -1, dtype=torch.long, device=device)
        padded[:, : self.n_sequences] = perms
        padded = padded[:, :slots].contiguous()
        seq = padded.view(n_epochs * self.steps_per_epoch, self.per_step)[:n_steps]
        mask = seq >= 0
        return TopBatch(torch.where(mask, seq, 0), mask)


class WORTopLevel:
    """Algorithm 5 (top-level sampling without replacement): each step the first N' of a random permutation.

    Steps are independent; a given sequence is in a step with probability ρ = N'/N and no
    sequence appears twice in one step.

    Args:
        n_sequences: N.
        per_step: N', the sequences of a step.
        steps_per_epoch: Steps per epoch (compositions per epoch).
    """

    def __init__(self, n_sequences: int, per_step: int, steps_per_epoch: int):
        self.n_sequences = n_sequences
        self.per_step = per_step
        self.steps_per_epoch = steps_per_epoch

    def sample(self, n_steps: int, generator: torch.Generator) -> TopBatch:
        """Independent WOR draws of N' sequences (Algorithm 5).

        Args:
            n_steps: Steps to draw.
            generator: The source of the draws.

        Returns:
            The steps' sequences (every slot valid).
        """
        seq = _uniform_subsets(n_steps, self.n_sequences, self.per_step, generator)
        return TopBatch(seq, torch.ones_like(seq, dtype=torch.bool))


class PoissonTopLevel:
    """Top-level Poisson sampling: each sequence enters a step independently with probability ρ = N'/N (drawn at
    :func:`drawable_rate`, never above it).

    Args:
        n_sequences: N.
        per_step: N', the expected sequences of a step.
        steps_per_epoch: Steps per epoch (compositions per epoch).
    """

    def __init__(self, n_sequences: int, per_step: int, steps_per_epoch: int):
        self.n_sequences = n_sequences
        self.rate = drawable_rate(Fraction(per_step) / n_sequences)
        self.steps_per_epoch = steps_per_epoch

    def sample(self, n_steps: int, generator: torch.Generator) -> TopBatch:
        """Independent Poisson draws.

        Args:
            n_steps: Steps to draw.
            generator: The source of the draws.

        Returns:
            The steps' sequences: mask[s, n] says whether sequence n is in step s.
        """
        device = generator.device
        mask = torch.rand(n_steps, self.n_sequences, generator=generator, device=device, dtype=_KEY_DTYPE) < self.rate
        seq = torch.arange(self.n_sequences, device=device).expand(n_steps, -1)
        return TopBatch(seq, mask)


class WRBottomLevel:
    """Algorithm 4 (bottom-level sampling with replacement): λ uniform starts in {0, ..., T_n - 1} per sequence.

    With the L_C-zero front padding, start t covers original elements t - L_C + 1, ..., t + L_F
    (1-based), so element j lies in min(T_n, j + L_C) - max(1, j - L_F + 1) + 1 windows.

    Args:
        n_starts: T_n per sequence (:func:`n_starts_of`).
        instances: λ, windows per sampled sequence.
    """

    def __init__(self, n_starts: torch.Tensor, instances: int):
        self.n_starts = n_starts
        self.instances = instances

    def sample(self, top: TopBatch, generator: torch.Generator) -> WindowIndex:
        """λ i.i.d. uniform windows of every sequence in ``top`` (Algorithm 4).

        Args:
            top: The top-level sample.
            generator: The source of the starts.

        Returns:
            The windows, shape (n_steps, M λ).
        """
        n_steps, m = top.seq.shape
        t = self.n_starts.to(top.seq.device)[top.seq].to(torch.float64)
        u = torch.rand(n_steps, m, self.instances, generator=generator, device=top.seq.device, dtype=torch.float64)
        start = torch.floor(u * t[..., None]).long()
        return WindowIndex.of_sequences(top, start, top.mask[..., None].expand(-1, -1, self.instances))


class PoissonBottomLevel:
    """Algorithm 6 (bottom-level Poisson sampling): each start t < T_n enters with rate q_n = min(1, λ / T_n) (drawn
    at :func:`drawable_rate`, never above it).

    Args:
        n_starts: T_n per sequence (:func:`n_starts_of`).
        instances: λ, the expected windows per sampled sequence.
    """

    def __init__(self, n_starts: torch.Tensor, instances: int):
        self.n_starts = n_starts
        distinct, where = torch.unique(n_starts, return_inverse=True)
        self.rates = torch.tensor([drawable_rate(min(Fraction(1), Fraction(instances, int(t)))) for t in distinct],
                                  dtype=torch.float64)[where]
        self.max_starts = int(n_starts.max())

    def sample(self, top: TopBatch, generator: torch.Generator) -> WindowIndex:
        """Independent Bernoulli(q_n) inclusion of every start of every sequence in ``top``.

        Args:
            top: The top-level sample.
            generator: The source of the inclusions.

        Returns:
            The windows, shape (n_steps, M T_max).
        """
        n_steps, m = top.seq.shape
        device = top.seq.device
        t_max = self.max_starts
        starts = torch.arange(t_max, device=device)
        rates = self.rates.to(device)[top.seq]
        valid = starts < self.n_starts.to(device)[top.seq][..., None]
        u = torch.rand(n_steps, m, t_max, generator=generator, device=device, dtype=torch.float64)
        mask = (u < rates[..., None]) & valid & top.mask[..., None]
        return WindowIndex.of_sequences(top, starts.expand(n_steps, m, t_max), mask)


class PooledSampler:
    """Pooled-window baseline (THEOREMS.md T13/T14): all N_tot = Σ_n T_n windows pooled, Λ drawn WOR per step.

    A given window is in a step with probability Λ / N_tot and no window repeats within a step.

    Args:
        n_starts: T_n per sequence (:func:`n_starts_of`).
        batch_size: Λ, the windows of a step.
        steps_per_epoch: Steps per epoch.

    Raises:
        ValueError: Λ exceeds N_tot.
    """

    def __init__(self, n_starts: torch.Tensor, batch_size: int, steps_per_epoch: int):
        self.n_starts = n_starts
        self.offsets = torch.cumsum(n_starts, 0) - n_starts
        self.total = int(n_starts.sum())
        self.batch_size = batch_size
        self.steps_per_epoch = steps_per_epoch
        if batch_size > self.total:
            raise ValueError(f"batch size Λ = {batch_size} exceeds the number of pooled windows N_tot = {self.total}")

    def sample(self, n_steps: int, generator: torch.Generator) -> WindowIndex:
        """Independent WOR draws of Λ windows from the pool.

        Args:
            n_steps: Steps to draw.
            generator: The source of the draws.

        Returns:
            The windows, shape (n_steps, Λ).
        """
        flat = _uniform_subsets(n_steps, self.total, self.batch_size, generator)
        offsets = self.offsets.to(flat.device)
        seq = torch.searchsorted(offsets, flat, right=True) - 1
        start = flat - offsets[seq]
        return WindowIndex(seq, start, torch.ones_like(seq, dtype=torch.bool))


class BiLevelSampler:
    """Algorithm 1's batching: a top-level sampler (Algorithms 3/5, shuffle, Poisson) then a bottom-level one (4/6).

    ``sample(n_steps, generator)`` gives the windows of ``n_steps`` steps; ``steps_per_epoch``
    is ceil(N/N') for deterministic/shuffled iteration and floor(N λ / Λ) otherwise.

    Args:
        top: The top-level sampler (``sample(n_steps, generator) -> TopBatch``, ``steps_per_epoch``).
        bottom: The bottom-level sampler (``sample(top, generator) -> WindowIndex``).
    """

    def __init__(self, top: Union["DeterministicTopLevel", "ShuffleTopLevel", "WORTopLevel", "PoissonTopLevel"],
                 bottom: Union["WRBottomLevel", "PoissonBottomLevel"]):
        self.top = top
        self.bottom = bottom
        self.steps_per_epoch = top.steps_per_epoch

    def sample(self, n_steps: int, generator: torch.Generator) -> WindowIndex:
        """Windows of many steps (Algorithm 1's inner loop, vectorised over steps).

        Args:
            n_steps: Steps to draw.
            generator: The source of both levels' draws.

        Returns:
            The steps' windows.
        """
        return self.bottom.sample(self.top.sample(n_steps, generator), generator)


def n_starts_of(config: TrainingConfig, lengths: Optional[Sequence[int]] = None) -> torch.Tensor:
    """T_n = L_n - L_F + 1 per sequence (Algorithm 4's T) of series the configuration's accounting covers.

    Args:
        config: The configuration (N, L_F; its lengths by default).
        lengths: The series' lengths (None: ``config.lengths``, or L each).

    Returns:
        T_n per sequence, a long tensor.

    Raises:
        ValueError: Not N lengths, or a length below L_F; ConfigError (a ValueError) for lengths the accountant of
            ``config`` does not cover (:meth:`TrainingConfig.check_covers`: a series shorter than L, whose windows
            hold an element with a larger share r = k/T than the accounted one; for a Poisson bottom level or pooled
            windows a longer series than the configuration's, or another pool).
    """
    if lengths is None:
        lengths = config.lengths if config.lengths is not None else [config.L] * config.N
    lengths_t = torch.as_tensor(list(lengths), dtype=torch.long)
    if lengths_t.numel() != config.N:
        raise ValueError(f"got {lengths_t.numel()} sequence lengths for N = {config.N} sequences")
    if int(lengths_t.min()) < config.forecast_length:
        raise ValueError(f"every sequence needs length >= L_F = {config.forecast_length}")
    config.check_covers(lengths_t.tolist())
    return window_starts(lengths_t, config.forecast_length)


def make_sampler(config: TrainingConfig, lengths: Optional[Sequence[int]] = None):
    """The sampler of ``config`` (top ∈ deterministic | shuffle | wor | poisson | pooled, bottom ∈ wr | poisson).

    Implements Algorithm 1's batching with Algorithms 3/5 (top) and 4/6 (bottom), or the pooled
    baseline.

    Args:
        config: The configuration whose batching is drawn.
        lengths: The training series' lengths (default: config.lengths or L each).

    Returns:
        sampler (BiLevelSampler | PooledSampler): ``sample(n_steps, generator) -> WindowIndex`` and
            ``steps_per_epoch``.

    Raises:
        ValueError: ``lengths`` does not hold N lengths, or a length is below L_F.
    """
    n_starts = n_starts_of(config, lengths)
    per_step = config.sequences_per_step
    if config.top == Top.POOLED:
        return PooledSampler(n_starts, config.batch_size, max(1, int(n_starts.sum()) // config.batch_size))
    if config.top == Top.DETERMINISTIC:
        top = DeterministicTopLevel(config.N, per_step)
    elif config.top == Top.SHUFFLE:
        top = ShuffleTopLevel(config.N, per_step, config.steps_per_epoch)
    elif config.top == Top.WOR:
        top = WORTopLevel(config.N, per_step, config.compositions_per_epoch)
    else:
        top = PoissonTopLevel(config.N, per_step, config.compositions_per_epoch)
    if config.bottom == Bottom.WR:
        bottom = WRBottomLevel(n_starts, config.instances)
    else:
        bottom = PoissonBottomLevel(n_starts, config.instances)
    return BiLevelSampler(top, bottom)
