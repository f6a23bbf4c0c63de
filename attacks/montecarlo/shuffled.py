"""How an audit reads the real shuffled loop: the maximum over each epoch's releases (hidden-position epoch).

Under shuffled iteration (``--top shuffle``) the deterministic constructions (T1, T3, T4;
:mod:`attacks.montecarlo.constructions`) run through the real loop with a fresh uniform permutation
each epoch (:class:`tsdp.training.samplers.ShuffleTopLevel`): the changed sequence's step is
random, so every training step of every epoch is simulated (``steps`` training steps per trial, whole
epochs drawn and the steps past ``steps`` never read). Each step's released update is centred with
the number of sequences its batch holds (the last step of an epoch is shorter when N' does not divide
N) and standardised (÷ σ); the audit's observation of an epoch is the **maximum** over its steps, whose
exact law in both worlds is :class:`tsdp.theorems.hidden_position.HiddenPositionEpoch` (the law the
accountant's attained estimate composes). The statistic of a trial is the sum over its epochs of the
max's log density ratio (the Neyman-Pearson test of the max statistic; for one epoch a threshold on the
max itself). Its law in both worlds, from the same exact CDFs, designs the test before sampling
(:func:`attacks.montecarlo.design.epoch_max_law`); the certification itself is the audit's (Clopper-Pearson on counts),
so the bound is a valid lower bound whatever the loop does.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Tuple

import numpy as np
from scipy import stats

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.constructions import CONSTRUCTIONS
from tsdp.theorems.hidden_position import HIDDEN_POSITION_TOP, HiddenPositionEpoch, hidden_position_epoch
from tsdp.theorems.registry import attained_pair, get

from .fit import GoodnessOfFit, combined_fit

if TYPE_CHECKING:
    from .constructions import Construction

Z_BINS = 4096
"""Bins of the first epoch's maximum (the goodness-of-fit histogram)."""


def reads_epoch_maxima(construction: Construction) -> bool:
    """True when the audit of ``construction`` reads epoch maxima (its scheme hides the changed sequence's step).

    Args:
        construction: The built construction.

    Returns:
        Whether its audit reads epoch maxima.
    """
    return construction.config.top in HIDDEN_POSITION_TOP


@dataclass(frozen=True)
class EpochMaxReading:
    """The epoch-max reading of ``steps`` training steps of a shuffled construction (module docstring).

    ``laws``: the hidden-position law of each epoch touched (the last one partial when ``steps`` is not a
    multiple of m); ``corrections``: per position in the epoch, what the construction's constant centring
    leaves in a step with fewer than N' sequences (units of C); ``sigma``: the noise multiplier.

    Attributes:
        laws: The hidden-position law of each epoch touched (lower-bound direction).
        steps: The training steps read.
        steps_per_epoch: m.
        corrections: Per position in the epoch, the centring's remainder in a short step (units of C).
        sigma: The noise multiplier σ.
    """

    laws: Tuple[HiddenPositionEpoch, ...]
    steps: int
    steps_per_epoch: int
    corrections: np.ndarray
    sigma: float

    @property
    def simulated_steps(self) -> int:
        """Training steps a trial draws: the whole epochs its ``steps`` touch (those after ``steps`` are not read)."""
        return len(self.laws) * self.steps_per_epoch

    def maxima(self, y: np.ndarray) -> np.ndarray:
        """Standardised maxima of each epoch's releases.

        Args:
            y: The construction-centred released updates (n, simulated_steps), units of C.

        Returns:
            The maxima (n, epochs), in units of σ, over the steps each epoch ran.
        """
        m = self.steps_per_epoch
        z = (y.reshape(len(y), len(self.laws), m) - self.corrections) / self.sigma
        return np.stack([z[:, e, :law.steps_run].max(axis=1) for e, law in enumerate(self.laws)], axis=1)

    def statistic(self, y: np.ndarray) -> np.ndarray:
        """Σ over epochs of log f_P^max / f_Q^max at each epoch's maximum (the audit's test statistic).

        Args:
            y: The construction-centred released updates (n, simulated_steps).

        Returns:
            The statistic, shape (n,).
        """
        z = self.maxima(y)
        return sum(law.log_density_ratio(z[:, e]) for e, law in enumerate(self.laws))

    def first(self, y: np.ndarray) -> np.ndarray:
        """The first epoch's standardised maximum (the goodness-of-fit observation).

        Args:
            y: The construction-centred released updates (n, simulated_steps).

        Returns:
            The maxima, shape (n,).
        """
        return self.maxima(y)[:, 0]

    def z_edges(self) -> np.ndarray:
        """Histogram edges of the first epoch's maximum.

        Returns:
            :data:`Z_BINS` + 1 increasing edges, standardised.
        """
        lo, hi = self.laws[0].support(reach=8.0)
        return np.linspace(lo, hi, Z_BINS + 1)

    def goodness_of_fit(self, hist_p: np.ndarray, hist_q: np.ndarray, edges: np.ndarray) -> GoodnessOfFit:
        """Binned KS test of the first epoch's maximum against its exact law, both worlds, Bonferroni (as the
        audit's).

        Args:
            hist_p: World P's counts on ``edges`` (len(edges) + 1 bins, the outer ones open).
            hist_q: World Q's counts likewise.
            edges: The histogram's edges (:meth:`z_edges`).

        Returns:
            The combined :class:`GoodnessOfFit`.
        """
        res = {}
        for name, hist, cdf in (("p", hist_p, self.laws[0].cdf(edges)[0]), ("q", hist_q, self.laws[0].cdf(edges)[1])):
            n = int(hist.sum())
            d = float(np.max(np.abs(np.cumsum(hist)[:-1] / n - cdf)))
            res[name] = (d, float(stats.kstwo.sf(d, n)))
        return combined_fit(res, "first epoch's maximum over its steps")


@functools.lru_cache(maxsize=16)
def epoch_max_reading(theorem: str, config: TrainingConfig, steps: int, offset: float) -> EpochMaxReading:
    """The epoch-max reading of ``steps`` training steps of ``theorem``'s construction run shuffled on ``config``.

    Lower-bound direction: the laws are those of a post-processing (the max) of the real mechanism's output.
    ``offset``: the construction's centring (Σ of a step's gradients without the marked window, units of C).

    Args:
        theorem: The construction's theorem.
        config: Its configuration (shuffled top level).
        steps: The training steps.
        offset: The construction's centring.

    Returns:
        The :class:`EpochMaxReading`.
    """
    m = config.steps_per_epoch
    whole, part = divmod(int(steps), m)
    pair = attained_pair(get(CONSTRUCTIONS[theorem].attained), config, numeric=True)
    laws = [hidden_position_epoch(pair, config)] * whole + ([hidden_position_epoch(pair, config, part)] if part else [])
    per_step = config.sequences_per_step
    sizes = np.minimum(per_step, config.N - per_step * np.arange(m))
    corrections = -offset * (1 - sizes / per_step)
    return EpochMaxReading(tuple(laws), int(steps), m, corrections, float(config.sigma))


def reading_of(construction: Construction, steps: int) -> EpochMaxReading:
    """:func:`epoch_max_reading` of a built construction.

    Args:
        construction: The built construction.
        steps: The training steps.

    Returns:
        Its :class:`EpochMaxReading`.
    """
    return epoch_max_reading(construction.theorem, construction.config, int(steps), float(construction.offset))


__all__ = ["EpochMaxReading", "Z_BINS", "epoch_max_reading", "reading_of", "reads_epoch_maxima"]
