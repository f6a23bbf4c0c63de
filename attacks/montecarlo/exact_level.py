"""The exact level of an audit's test: a certified ε lower bound from both worlds' counts jointly.

A test S has counts TP ~ Bin(n_pos, p) in the positive world and FP ~ Bin(n_neg, q) in the
negative one, p = P(S), q = Q(S). If the mechanism is (ε, δ)-DP then p ≤ δ + e^ε q (Kairouz et
al. 2015's hypothesis-testing view, as used by Nasr et al. 2021), so rejecting

    H0(ε): p ≤ δ + e^ε q

at level 1 - confidence certifies that the mechanism is not (ε, δ)-DP. The union bound (a
Clopper-Pearson lower bound on p and an upper bound on q at errors a_pos + a_neg = 1 - confidence)
rejects when both rates are extreme at once; the probability of its rejection region under H0 is
far below its nominal 1 - confidence, because the two deviations rarely coincide. Here the same
statistic is kept and its level is computed exactly, so the whole error is spent (T6, 1e6 trials
per world: the certified ratio rises by 0.017-0.023 on every count). It can fall below the union
bound only by what the nuisance share γ and the verification's back-off cost (≤ ~1e-3 in ε), where
one rate's noise dominates the other's so much that the union bound is nearly exact already.

Construction (lower-bound direction, exact):

* RegionStatistic T(x, y), non-decreasing in x and non-increasing in y (the union bound's ε, for one).
  Then {T ≥ t} = {x ≥ x*(y)} with x* non-decreasing: an up-set in x and a down-set in y, so
  P_{p,q}(T ≥ t) increases in p and decreases in q (binomial coupling).
* p-value of H0(ε) at the observed t (Berger & Boos 1994): γ plus the sup, over q in the two-sided
  1 - γ Clopper-Pearson interval of q and p ≤ δ + e^ε q, of P_{p,q}(T ≥ t); the sup over p sits on
  p = min(1, δ + e^ε q). Over q it is bounded rigorously on cells [a, b] by P at (p(b), a),
  cells refined where undecided; undecided at the finest cells counts as not rejected.
* H0(ε) grows with ε and T does not depend on ε, so the p-value is non-decreasing in ε: rejecting
  H0(ε) rejects H0(ε') for every ε' < ε. The reported ε is one where rejection was verified; if the
  mechanism is (ε_0, δ)-DP, P(reported > ε_0) ≤ P(H0(ε_0) rejected) ≤ 1 - confidence.

All probabilities are exact binomial sums (scipy.stats.binom), with the false-positive count's
omitted tails (≤ Y_TAIL per side) added to the bound.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np
from scipy import stats

NUISANCE_SHARE = 0.02   # γ / (1 - confidence): the error spent on the interval of q (Berger & Boos)
CELL_RATIO = 1.02       # q cells (geometric), each split in SUBCELLS where undecided, REFINE_DEPTH times at most
SUBCELLS = 16
REFINE_DEPTH = 3
Y_TAIL = 1e-13          # binomial mass of the false-positive count left out of the sum, per side (added to the bound)
EPS_TOL = 1e-4          # width of the bisections on ε
BACKOFF = (1e-3, 4e-3, 1.6e-2, 6.4e-2)  # distances below the estimated rejection edge where rejection is verified
EPS_MAX = 700.0         # search ceiling on ε (e^ε stays finite)
CHUNK_CELLS = 1 << 20   # (pair, y) terms summed at once
ZERO_CELL = 1e-9        # a cell [0, b] keeps [0, b·ZERO_CELL] whole and splits the rest geometrically

RegionStatistic = Callable[[np.ndarray, np.ndarray], np.ndarray]


class _Region:
    """{T ≥ t} = {x ≥ x*(y)} over the false-positive counts that matter, and its exact probability."""

    def __init__(self, statistic: RegionStatistic, t: float, q_range, n_pos: int, n_neg: int):
        lo = int(stats.binom.ppf(Y_TAIL, n_neg, q_range[0])) if q_range[0] > 0 else 0
        hi = int(stats.binom.isf(Y_TAIL, n_neg, q_range[1])) + 1
        self.ys = np.arange(max(0, lo), min(n_neg, hi) + 1)
        self.n_pos, self.n_neg = n_pos, n_neg
        below = np.full(len(self.ys), -1, dtype=np.int64)       # T < t there (or -1)
        self.xs = np.full(len(self.ys), n_pos + 1, dtype=np.int64)  # T ≥ t there (or n_pos + 1: no x)
        while (open_ := self.xs - below > 1).any():
            mid = (below + self.xs) // 2
            up = np.asarray(statistic(mid, self.ys)) >= t
            self.xs = np.where(open_ & up, mid, self.xs)
            below = np.where(open_ & ~up, mid, below)

    def probability(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        """P_{p,q}(X ≥ x*(Y)) per (p, q) pair, from above: the y sum plus the omitted tails of Y (in chunks of
        at most CHUNK_CELLS (pair, y) terms, so memory stays bounded however far the cells are refined)."""
        step = max(1, CHUNK_CELLS // len(self.ys))
        inside = np.concatenate([
            (stats.binom.pmf(self.ys[None, :], self.n_neg, q[i:i + step, None])
             * stats.binom.sf(self.xs[None, :] - 1, self.n_pos, p[i:i + step, None])).sum(axis=1)
            for i in range(0, len(p), step)])
        tails = stats.binom.cdf(self.ys[0] - 1, self.n_neg, q) + stats.binom.sf(self.ys[-1], self.n_neg, q)
        return np.minimum(1.0, inside + tails)


def _boundary(eps: float, q: np.ndarray, delta: float) -> np.ndarray:
    return np.minimum(1.0, delta + math.exp(eps) * q)


def _rejects(region: _Region, eps: float, cells: np.ndarray, delta: float, level: float) -> bool:
    """Whether sup over the cells' q of P_{p(q), q}(T ≥ t) is ≤ ``level``, decided rigorously.

    Cell [a, b]: P ≤ P(p(b), a). A cell whose bound exceeds the level is split; a boundary point
    whose probability exceeds it decides 'no' at once."""
    a, b = cells[:-1], cells[1:]
    for depth in range(REFINE_DEPTH + 1):
        if (region.probability(_boundary(eps, a, delta), a) > level).any():
            return False
        open_ = region.probability(_boundary(eps, b, delta), a) > level
        if not open_.any():
            return True
        if depth == REFINE_DEPTH:
            return False
        fine = [_cells(lo, hi, SUBCELLS) for lo, hi in zip(a[open_], b[open_])]
        a = np.concatenate([f[:-1] for f in fine])
        b = np.concatenate([f[1:] for f in fine])
    return False


def _cells(q_lo: float, q_hi: float, count: Optional[int] = None) -> np.ndarray:
    """Geometric cell edges covering [q_lo, q_hi]: ``count`` cells, or as many as CELL_RATIO asks (a first cell
    [0, q_hi·ZERO_CELL] when q_lo = 0)."""
    start = q_lo if q_lo > 0 else q_hi * ZERO_CELL
    if count is None:
        count = max(1, int(math.ceil(math.log(q_hi / start) / math.log(CELL_RATIO))))
    edges = np.geomspace(start, q_hi, count + 1)
    return np.concatenate([[0.0], edges]) if q_lo == 0 else edges


def _edge_estimate(region: _Region, cells: np.ndarray, delta: float, level: float, hi: float) -> float:
    """The ε where the p-value's point values (cell edges and midpoints) first exceed ``level``: an optimistic
    estimate of the rejection edge (point values are ≤ the sup), used only to place the rigorous checks."""
    q = np.unique(np.concatenate([cells, np.sqrt(cells[1:] * np.maximum(cells[:-1], cells[1] * 1e-3))]))
    exceeds = lambda eps: bool((region.probability(_boundary(eps, q, delta), q) > level).any())
    lo = 0.0
    while not exceeds(hi) and hi < EPS_MAX:
        lo, hi = hi, min(2 * hi, EPS_MAX)
    while hi - lo > EPS_TOL:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if exceeds(mid) else (mid, hi)
    return lo


def certified_epsilon(statistic: RegionStatistic, tp: int, fp: int, n_pos: int, n_neg: int, delta: float,
                      confidence: float = 0.95) -> float:
    """Certified ε lower bound at δ from one test's counts at the exact level of ``statistic``'s rejection region.

    Lower-bound direction, probability ≥ ``confidence`` (module docstring). ``statistic(x, y)``
    (vectorised over integer arrays) must be non-decreasing in the true-positive count x and
    non-increasing in the false-positive count y; it shapes the region only. Rejection is located
    on point values, then verified with the rigorous cell bounds BACKOFF below it (bisection below
    the last try if all fail). 0 when H0(0) is not rejected.

    Args:
        statistic: The region's statistic T(x, y), vectorised over integer arrays.
        tp: True positives (trials of the positive world in the test's region).
        fp: False positives (trials of the negative world in it).
        n_pos: Trials of the positive world.
        n_neg: Trials of the negative world.
        delta: The δ of the ε bound.
        confidence: The probability with which the bound holds.

    Returns:
        The certified ε (a **lower** bound), 0 when nothing is certified.

    Raises:
        ValueError: Counts out of range.
    """
    tp, fp, n_pos, n_neg = int(tp), int(fp), int(n_pos), int(n_neg)
    if not (0 <= tp <= n_pos and 0 <= fp <= n_neg and n_pos > 0 and n_neg > 0):
        raise ValueError(f"counts out of range: TP {tp} of {n_pos}, FP {fp} of {n_neg}")
    t = float(np.asarray(statistic(np.array([tp]), np.array([fp])))[0])
    if not t > 0:
        return 0.0
    gamma = NUISANCE_SHARE * (1 - confidence)
    level = (1 - confidence) - gamma
    q_lo = 0.0 if fp == 0 else float(stats.beta.ppf(gamma / 2, fp, n_neg - fp + 1))
    q_hi = 1.0 if fp == n_neg else float(stats.beta.ppf(1 - gamma / 2, fp + 1, n_neg - fp))
    region = _Region(statistic, t, (q_lo, q_hi), n_pos, n_neg)
    cells = _cells(q_lo, q_hi)
    if not _rejects(region, 0.0, cells, delta, level):
        return 0.0
    edge = _edge_estimate(region, cells, delta, level, min(t + 0.5, EPS_MAX))
    for back in BACKOFF:
        if edge - back > 0 and _rejects(region, edge - back, cells, delta, level):
            return edge - back
    lo, hi = 0.0, max(0.0, edge - BACKOFF[-1])
    while hi - lo > EPS_TOL:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _rejects(region, mid, cells, delta, level) else (lo, mid)
    return lo


__all__ = ["certified_epsilon"]
