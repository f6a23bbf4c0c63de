"""The law of the audit statistic in both worlds under the claimed pair, for choosing tests before sampling.

For a proof's construction the released update follows a known pair (P, Q) in every step
(:mod:`attacks.montecarlo.constructions`), so the Neyman-Pearson statistic L = Σ_s log p(y_s)/q(y_s) of
``steps`` steps has a known law in world P and in world Q: the one-step law is the image of
the mixtures under the log-likelihood ratio (integrated on a fine grid of y), the S-step law
its S-fold convolution (FFT); under shuffled iteration, the law of the sum of each epoch's maximum's
log density ratio (:mod:`attacks.montecarlo.shuffled`). :mod:`attacks.montecarlo.design` chooses the tests from it.

The law computed here is a numerical approximation (grid spacing ``h`` on L) used for choosing,
never for certifying.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np
from scipy import stats

from tsdp.theorems.hidden_position import HiddenPositionEpoch

from .statistics import log_likelihood_ratio, mixture_cdf

Y_CELLS_MAX = 1 << 22   # cells of the y grid of the one-step law
LAW_BINS_MAX = 1 << 21  # grid points of the composed law (the spacing grows beyond)
TAIL = 1e-15            # mass ignored beyond the y range, per world


@dataclass(frozen=True)
class StatisticLaw:
    """Law of the audit statistic L on a uniform grid: ``p[i]`` = P(L ≈ grid[i]), ``q[i]`` = Q(L ≈ grid[i]).

    Thresholds are the midpoints ``grid[i] - h/2``: P(L ≥ grid[i] - h/2) = Σ_{j ≥ i} p[j].

    Attributes:
        grid: The grid's points.
        p: The mass of each point under P.
        q: Its mass under Q.
        h: The grid's step.
    """

    grid: np.ndarray
    p: np.ndarray
    q: np.ndarray
    h: float

    @property
    def thresholds(self) -> np.ndarray:
        """The midpoint thresholds ``grid - h/2``."""
        return self.grid - self.h / 2

    def tails(self) -> Tuple[np.ndarray, np.ndarray]:
        """The tails of the law at every midpoint threshold t.

        Returns:
            (P(L ≥ t), Q(L ≥ t)) per threshold.
        """
        return np.cumsum(self.p[::-1])[::-1], np.cumsum(self.q[::-1])[::-1]


def one_step_law(pair_numeric: Tuple, h: float) -> StatisticLaw:
    """Law of log p(y)/q(y) for y ~ P and y ~ Q (one step), binned to multiples of ``h`` (exact cell masses).

    Args:
        pair_numeric: The construction's numeric pair.
        h: The grid spacing.

    Returns:
        The one-step law in both worlds.
    """
    a, p, b, q, sigma = pair_numeric
    means = np.concatenate([a, b])
    reach = sigma * stats.norm.isf(TAIL) + 1.0
    lo, hi = means.min() - reach, means.max() + reach
    slope = max(1e-9, float(means.max() - means.min())) / sigma ** 2  # |d llr / dy| ≤ spread / σ²
    cells = int(min(Y_CELLS_MAX, max(4096, np.ceil((hi - lo) * slope / (h / 2)))))
    edges = np.linspace(lo, hi, cells + 1)
    mass_p = np.diff(mixture_cdf(edges, a, p, sigma))
    mass_q = np.diff(mixture_cdf(edges, b, q, sigma))
    mid = (edges[:-1] + edges[1:]) / 2
    llr = log_likelihood_ratio(mid[:, None], pair_numeric)
    k = np.rint(llr / h).astype(np.int64)
    k0 = int(k.min())
    size = int(k.max()) - k0 + 1
    law_p = np.bincount(k - k0, weights=mass_p, minlength=size)
    law_q = np.bincount(k - k0, weights=mass_q, minlength=size)
    return StatisticLaw((k0 + np.arange(size)) * h, law_p / law_p.sum(), law_q / law_q.sum(), h)


def _power(x: np.ndarray, steps: int) -> np.ndarray:
    """``steps``-fold self-convolution of a probability vector (FFT), negatives from rounding clipped."""
    n_out = steps * (len(x) - 1) + 1
    nfft = 1 << int(np.ceil(np.log2(n_out)))
    out = np.fft.irfft(np.fft.rfft(x, nfft) ** steps, nfft)[:n_out]
    out = np.clip(out, 0.0, None)
    return out / out.sum()


def statistic_law(pair_numeric: Tuple, steps: int, h: float = 1e-3) -> StatisticLaw:
    """Law of L = Σ_{s ≤ steps} log p(y_s)/q(y_s) in world P and in world Q (i.i.d. steps of the pair).

    The grid spacing grows beyond ``h`` when the composed support would exceed ``LAW_BINS_MAX`` points.
    A design aid (see the module docstring), not a certified quantity.

    Args:
        pair_numeric: The construction's numeric pair.
        steps: The compositions.
        h: The one-step grid spacing.

    Returns:
        The law in both worlds.
    """
    one = one_step_law(pair_numeric, h)
    h_needed = law_spacing(one, steps)
    if h_needed > h:
        one = one_step_law(pair_numeric, h_needed)
    return composed_law(one, steps)


def law_spacing(one: StatisticLaw, steps: int) -> float:
    """The spacing at which ``steps`` convolutions of ``one`` hold at most ``LAW_BINS_MAX`` grid points.

    Args:
        one: The one-step law.
        steps: The compositions.

    Returns:
        The spacing.
    """
    return float(one.grid[-1] - one.grid[0]) * steps / LAW_BINS_MAX


def composed_law(one: StatisticLaw, steps: int) -> StatisticLaw:
    """Law of the sum of ``steps`` i.i.d. copies of a statistic with law ``one`` in both worlds (FFT).

    Args:
        one: The one-step law.
        steps: The compositions.

    Returns:
        The composed law.
    """
    if steps == 1:
        return one
    grid = steps * one.grid[0] + one.h * np.arange(steps * (len(one.grid) - 1) + 1)
    return StatisticLaw(grid, _power(one.p, steps), _power(one.q, steps), one.h)


def summed_law(a: StatisticLaw, b: StatisticLaw) -> StatisticLaw:
    """Law of the sum of two independent statistics on grids of the same spacing (FFT convolution).

    Args:
        a: One law.
        b: The other, on a grid of the same spacing.

    Returns:
        The law of the sum.
    """
    n_out = len(a.grid) + len(b.grid) - 1
    nfft = 1 << int(np.ceil(np.log2(n_out)))

    def conv(x, y):
        out = np.clip(np.fft.irfft(np.fft.rfft(x, nfft) * np.fft.rfft(y, nfft), nfft)[:n_out], 0.0, None)
        return out / out.sum()

    return StatisticLaw(a.grid[0] + b.grid[0] + a.h * np.arange(n_out), conv(a.p, b.p), conv(a.q, b.q), a.h)


EPOCH_MAX_CELL = 5e-4
"""Cell width (standardised units) of an epoch's maximum when the law of its log density ratio is tabulated."""


def _epoch_max_law(law: HiddenPositionEpoch, h: float) -> StatisticLaw:
    """Law of one shuffled epoch's log f_P^max / f_Q^max (cells of the max, exact masses) on multiples of ``h``."""
    lo, hi = law.support()
    edges = np.linspace(lo, hi, int(np.ceil((hi - lo) / EPOCH_MAX_CELL)) + 1)
    mass_p, mass_q = law.bin_masses(edges)
    points = np.concatenate([[lo], (edges[:-1] + edges[1:]) / 2, [hi]])
    k = np.rint(law.log_density_ratio(points) / h).astype(np.int64)
    k0 = int(k.min())
    size = int(k.max()) - k0 + 1
    p = np.bincount(k - k0, weights=mass_p, minlength=size)
    q = np.bincount(k - k0, weights=mass_q, minlength=size)
    return StatisticLaw((k0 + np.arange(size)) * h, p / p.sum(), q / q.sum(), h)


def epoch_max_law(laws: Sequence[HiddenPositionEpoch], h: float = 1e-3) -> StatisticLaw:
    """Law of Σ_e log f_P^max / f_Q^max (epoch e's maximum; :mod:`attacks.montecarlo.shuffled`) in world P and Q.

    ``laws``: the hidden-position law of each epoch (whole ones, then at most one partial one). A design aid
    (module docstring), never certified; the spacing grows beyond ``h`` as in :func:`statistic_law`.

    Args:
        laws: Each epoch's hidden-position law.
        h: The grid spacing.

    Returns:
        The law in both worlds.
    """
    whole = [law for law in laws if not law.partial]
    partial = [law for law in laws if law.partial]
    spacing = max(h, law_spacing(_epoch_max_law(laws[0], h), len(laws)))
    out = composed_law(_epoch_max_law(whole[0], spacing), len(whole)) if whole else None
    if partial:
        last = _epoch_max_law(partial[0], spacing)
        out = last if out is None else summed_law(out, last)
    return out


__all__ = ["EPOCH_MAX_CELL", "StatisticLaw", "composed_law", "epoch_max_law", "law_spacing", "one_step_law", "statistic_law",
           "summed_law"]
