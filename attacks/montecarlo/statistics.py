"""Statistics of the Monte Carlo auditor: Neyman-Pearson statistic, Clopper-Pearson bounds, ε and H_α lower bounds, GOF.

Soundness direction: every number returned here is a **lower** confidence bound on the
mechanism's ε (or H_α): thresholds are fixed before sampling (:mod:`attacks.montecarlo.design`) or
chosen on a selection split, and only trials not used to choose the test bound its rates. The
H_α bounds use exact one-sided Clopper-Pearson intervals on both rates (at levels 1 - a_pos and
1 - a_neg with a_pos + a_neg = 1 - confidence, jointly by the union bound; :func:`error_split`).
The ε bound keeps that union bound as its statistic and certifies at the exact level of its
rejection region (:func:`certified_test_epsilon`, :mod:`attacks.montecarlo.exact_level`).
The sharded engine (:mod:`attacks.montecarlo.shards`) hands these functions histograms (exact
integer counts on fixed edges) instead of raw samples. A test S between neighbouring worlds P, Q gives
H_α(P ‖ Q) ≥ P(S) - α Q(S) and, if the mechanism is (ε, δ)-DP, ε ≥ log((P(S) - δ) / Q(S))
(Kairouz et al. 2015's hypothesis-testing view, as used by Nasr et al. 2021).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from tsdp.verify.json_data import Record

from .exact_level import certified_epsilon
from .fit import GoodnessOfFit, combined_fit


def log_mixture_density(y: np.ndarray, means: np.ndarray, weights: np.ndarray, sigma: float) -> np.ndarray:
    """log Σ_i w_i N(y; μ_i, σ²), stable (logsumexp), vectorised over y.

    Args:
        y: Points (any shape).
        means: The mixture's means μ_i.
        weights: Its weights w_i.
        sigma: The common σ.

    Returns:
        The log density at each point.
    """
    z = (y[..., None] - means) / sigma
    return special.logsumexp(-0.5 * z * z, b=weights, axis=-1) - np.log(sigma * np.sqrt(2 * np.pi))


def log_likelihood_ratio(y: np.ndarray, pair_numeric: Tuple) -> np.ndarray:
    """Σ over steps (last axis) of log p(y_s)/q(y_s) of the construction's known mixtures (Neyman-Pearson statistic).

    Args:
        y: Updates, steps on the last axis.
        pair_numeric: The construction's numeric pair (means and weights of P and Q, σ).

    Returns:
        The statistic per trial.
    """
    a, p, b, q, sigma = pair_numeric
    llr = log_mixture_density(y, a, p, sigma) - log_mixture_density(y, b, q, sigma)
    return llr.sum(axis=-1)


def mixture_cdf(y: np.ndarray, means: np.ndarray, weights: np.ndarray, sigma: float) -> np.ndarray:
    """CDF of Σ_i w_i N(μ_i, σ²) at y.

    Args:
        y: Points.
        means: The mixture's means.
        weights: Its weights.
        sigma: The common σ.

    Returns:
        The CDF at each point.
    """
    return (weights * stats.norm.cdf((np.asarray(y)[..., None] - means) / sigma)).sum(axis=-1)


def cp_upper(k: ArrayLike, n: ArrayLike, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound on a binomial rate at level 1 - alpha (1 when k = n).

    Args:
        k: Successes.
        n: Trials.
        alpha: The error probability.

    Returns:
        The bound (an **upper** bound on the rate with probability ≥ 1 - alpha).
    """
    k = np.asarray(k, dtype=float)
    out = stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1e-300))
    return np.where(k >= n, 1.0, out)


def cp_lower(k: ArrayLike, n: ArrayLike, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound on a binomial rate at level 1 - alpha (0 when k = 0).

    Args:
        k: Successes.
        n: Trials.
        alpha: The error probability.

    Returns:
        The bound (a **lower** bound on the rate with probability ≥ 1 - alpha).
    """
    k = np.asarray(k, dtype=float)
    out = stats.beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1)
    return np.where(k <= 0, 0.0, out)


EQUAL_SPLIT = 0.5  # the error split when nothing is known about the rates (selection split, H_α bounds)


def error_split(confidence: float, fp_share: float = EQUAL_SPLIT) -> Tuple[float, float]:
    """(a_pos, a_neg): the error probability 1 - ``confidence`` shared between the positive world's rate
    (lower bound) and the negative world's rate (upper bound), ``fp_share`` of it to the latter (union bound).

    A rare false-positive count is the noisier factor of the ε bound, so a test fixed before sampling may
    give it more than half (:func:`attacks.montecarlo.design.design_test` chooses the share before sampling).

    Args:
        confidence: The test's confidence.
        fp_share: The share of 1 - confidence given to the false-positive rate, in (0, 1).

    Returns:
        (a_pos, a_neg).

    Raises:
        ValueError: ``fp_share`` outside (0, 1).
    """
    if not (0 < fp_share < 1):
        raise ValueError(f"fp_share must be in (0, 1), got {fp_share!r}")
    a = 1 - confidence
    return a * (1 - fp_share), a * fp_share


def epsilon_at_levels(tp, fp, n_pos, n_neg, delta, a_pos, a_neg):
    """The ε one test certifies from its counts, each side at its own one-sided level (a **lower** bound on ε).

    log((CP_lower(TP / n_pos) - δ) / CP_upper(FP / n_neg)), the Clopper-Pearson bounds at levels 1 - ``a_pos`` and
    1 - ``a_neg``: the union-bound form :func:`certified_test_epsilon` and the sequential test build on.
    Broadcasts over arrays of counts.

    Args:
        tp: True positives (counts, or an array of them).
        fp: False positives.
        n_pos: Trials in the positive world.
        n_neg: Trials in the negative world.
        delta: The δ the ε is read at.
        a_pos: The true positives' one-sided error.
        a_neg: The false positives' one-sided error.

    Returns:
        The certified ε (an array of the counts' shape); 0 where undefined (CP_lower ≤ δ or CP_upper = 0).
    """
    hi_fp = cp_upper(fp, n_neg, a_neg)
    lo_tp = cp_lower(tp, n_pos, a_pos)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((lo_tp - delta) / hi_fp)
    return np.where((lo_tp > delta) & (hi_fp > 0), eps, 0.0)


def certified_test_epsilon(tp: int, fp: int, n_pos: int, n_neg: int, delta: float, confidence: float = 0.95,
                           fp_share: float = EQUAL_SPLIT) -> float:
    """Certified ε lower bound at δ of one test from its counts (lower-bound direction, probability ≥ ``confidence``).

    The union bound log((CP_lower(TP/n_pos) - δ) / CP_upper(FP/n_neg)) at the split ``fp_share`` is the
    statistic; :func:`attacks.montecarlo.exact_level.certified_epsilon` certifies at its rejection region's exact level
    under H0(ε): P(S) ≤ δ + e^ε Q(S), which the union bound only bounds by 1 - confidence.

    Args:
        tp: True positives of the positive world.
        fp: False positives of the negative world.
        n_pos: Trials of the positive world.
        n_neg: Trials of the negative world.
        delta: The δ of the bound.
        confidence: The probability with which it holds.
        fp_share: The union statistic's split (:func:`error_split`), fixed before sampling.

    Returns:
        The certified ε lower bound (0 when nothing is certified).
    """
    a_pos, a_neg = error_split(confidence, fp_share)
    union = lambda x, y: epsilon_at_levels(x, y, n_pos, n_neg, delta, a_pos, a_neg)
    return certified_epsilon(union, tp, fp, n_pos, n_neg, delta, confidence)


@dataclass(frozen=True)
class TestBound(Record):
    """A chosen test and its held-out bound (every ε a **lower** bound).

    Attributes:
        value: The certified ε lower bound (:func:`certified_test_epsilon`, at the union statistic's exact level).
        union_value: The union bound of the same counts it calibrates (for comparison).
        threshold: The test's threshold on the statistic.
        side: ``upper`` (P positive) or ``lower`` (Q positive).
        true_positives: Held-out trials of the positive world in the rejection region.
        false_positives: Held-out trials of the negative world in it.
        n_positive: Held-out trials of the positive world.
        n_negative: Held-out trials of the negative world.
        fp_share: The share of the error probability the union statistic gives the false-positive rate
            (:func:`error_split`).
    """

    value: float
    union_value: float
    threshold: float
    side: str
    true_positives: int
    false_positives: int
    n_positive: int
    n_negative: int
    fp_share: float


def counts_bound(tp: int, fp: int, n_pos: int, n_neg: int, threshold: float, side: str, delta: float,
                 confidence: float, fp_share: float) -> TestBound:
    """The :class:`TestBound` of one test's held-out counts: its certified ε (:func:`certified_test_epsilon`, a
    **lower** bound) beside the union bound it improves on (:func:`epsilon_at_levels`).

    Args:
        tp: True positives among the held-out positive trials.
        fp: False positives among the held-out negative trials.
        n_pos: Held-out trials in the positive world.
        n_neg: Held-out trials in the negative world.
        threshold: The test's threshold, fixed before these counts.
        side: ``upper`` (P positive) or ``lower`` (Q positive), as in :class:`TestBound`.
        delta: The δ the ε is read at.
        confidence: The confidence of the bound.
        fp_share: The share of the error given to the false positives.

    Returns:
        The test and its bound.
    """
    union = float(epsilon_at_levels(tp, fp, n_pos, n_neg, delta, *error_split(confidence, fp_share)))
    value = certified_test_epsilon(tp, fp, n_pos, n_neg, delta, confidence, fp_share)
    return TestBound(value, max(0.0, union), float(threshold), side, tp, fp, n_pos, n_neg, float(fp_share))


# --- the same bounds from histograms (the sharded engine's sufficient statistics, attacks.montecarlo.shards) ---

def bin_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of ``x`` in the bins of sorted ``edges``: bin k holds edges[k-1] ≤ x < edges[k] (k = 0 and
    k = len(edges): under- and overflow). int64, len(edges) + 1 bins; shards merge by adding them.

    Args:
        x: The values.
        edges: Sorted edges.

    Returns:
        The counts.
    """
    return np.bincount(np.searchsorted(edges, x, "right"), minlength=len(edges) + 1).astype(np.int64)


def side_counts(hist_p: np.ndarray, hist_q: np.ndarray, side: str) -> Tuple[np.ndarray, np.ndarray, int, int]:
    """Per edge e_j, (TP, FP, n_pos, n_neg) of S = {x ≥ e_j} with P positive (``upper``) or S = {x < e_j}
    with Q positive (``lower``), from the two worlds' histograms (:func:`bin_counts`).

    Args:
        hist_p: World P's histogram.
        hist_q: World Q's.
        side: ``upper`` or ``lower``.

    Returns:
        (TP per edge, FP per edge, n_pos, n_neg).
    """
    at_least_p = np.cumsum(hist_p[::-1])[::-1][1:]  # count {x ≥ e_j}
    at_least_q = np.cumsum(hist_q[::-1])[::-1][1:]
    n_p, n_q = int(hist_p.sum()), int(hist_q.sum())
    if side == "upper":
        return at_least_p, at_least_q, n_p, n_q
    return n_q - at_least_q, n_p - at_least_p, n_q, n_p


def edge_index(edges: np.ndarray, threshold: float) -> int:
    """Index of ``threshold`` among the histogram edges (it must be one of them).

    Args:
        edges: The histogram's edges.
        threshold: One of them.

    Returns:
        Its index.

    Raises:
        ValueError: ``threshold`` is not an edge.
    """
    j = int(np.searchsorted(edges, threshold))
    if j >= len(edges) or edges[j] != threshold:
        raise ValueError(f"threshold {threshold!r} is not a histogram edge")
    return j


def fixed_test_bound(hist_p: np.ndarray, hist_q: np.ndarray, edges: np.ndarray, threshold: float, side: str,
                     delta: float, confidence: float = 0.95, fp_share: float = EQUAL_SPLIT) -> TestBound:
    """ε lower bound at δ of a test fixed before sampling (lower-bound direction, probability ≥ ``confidence``).

    No selection split: every trial goes to :func:`certified_test_epsilon` (the union statistic's split
    ``fp_share`` must also be fixed before sampling).

    Args:
        hist_p: World P's histogram of the statistic.
        hist_q: World Q's.
        edges: The histogram's edges.
        threshold: The test's threshold (an edge).
        side: ``upper`` or ``lower``.
        delta: The δ of the bound.
        confidence: The probability with which it holds.
        fp_share: The union statistic's split, fixed before sampling.

    Returns:
        The :class:`TestBound`.
    """
    tp, fp, n_pos, n_neg = side_counts(hist_p, hist_q, side)
    j = edge_index(edges, threshold)
    return counts_bound(int(tp[j]), int(fp[j]), n_pos, n_neg, threshold, side, delta, confidence, fp_share)


def split_test_bound(selection: Tuple[np.ndarray, np.ndarray], held_out: Tuple[np.ndarray, np.ndarray],
                     edges: np.ndarray, delta: float, confidence: float = 0.95) -> TestBound:
    """ε lower bound at δ of a test chosen on a selection split (lower-bound direction, probability ≥ ``confidence``):
    edge and side chosen on the selection histograms (P, Q) by the union bound, the bound computed on the held-out
    ones (for statistics whose law is not known in advance).

    Args:
        selection: The selection histograms (P, Q).
        held_out: The held-out histograms (P, Q).
        edges: The histograms' edges.
        delta: The δ of the bound.
        confidence: The probability with which it holds.

    Returns:
        The :class:`TestBound` of the chosen test on the held-out histograms.
    """
    a = error_split(confidence)
    best = (-1.0, float(edges[0]), "upper")
    for side in ("upper", "lower"):
        tp, fp, n_pos, n_neg = side_counts(*selection, side)
        eps = epsilon_at_levels(tp, fp, n_pos, n_neg, delta, *a)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(edges[i]), side)
    return fixed_test_bound(*held_out, edges, best[1], best[2], delta, confidence)


def profile_lower_bounds(hist_p: np.ndarray, hist_q: np.ndarray, edges: np.ndarray, tests: Sequence[Tuple[float, str]],
                         alphas: Sequence[float], confidence: float = 0.95) -> np.ndarray:
    """Lower confidence bounds on H_α, one per α, each from its test (threshold, side) fixed before sampling.

    H_α ≥ CP_lower(P(S)) - α CP_upper(Q(S)) at pointwise confidence ``confidence`` per α; never below the
    trivial max(0, 1 - α).

    Args:
        hist_p: World P's histogram.
        hist_q: World Q's.
        edges: The histograms' edges.
        tests: (threshold, side) per α.
        alphas: The α grid.
        confidence: The pointwise confidence.

    Returns:
        The H_α lower bounds.
    """
    a_pos, a_neg = error_split(confidence)
    out = []
    for alpha, (threshold, side) in zip(alphas, tests):
        tp, fp, n_pos, n_neg = side_counts(hist_p, hist_q, side)
        j = edge_index(edges, threshold)
        h = float(cp_lower(tp[j], n_pos, a_pos) - alpha * cp_upper(fp[j], n_neg, a_neg))
        out.append(max(h, 0.0, 1.0 - alpha))
    return np.array(out)


def binned_goodness_of_fit(y_hist_p: np.ndarray, y_hist_q: np.ndarray, y_edges: np.ndarray,
                           pair_numeric: Tuple) -> GoodnessOfFit:
    """Kolmogorov-Smirnov tests of the one-step updates' histograms (:func:`bin_counts` on ``y_edges``) against the
    construction's mixtures, world P against P's CDF and Q against Q's, combined by Bonferroni
    (min(1, 2 min(p_P, p_Q))): a small value says the loop's output law is not the theorem's mixture (a sampler bug).

    The KS distance is taken over the bin edges, D_binned ≤ D, so the p-value (Kolmogorov's
    exact law at n) is conservative: a small value still says the loop's law is not the pair's.

    Args:
        y_hist_p: World P's histogram of the one-step update.
        y_hist_q: World Q's.
        y_edges: The histograms' edges.
        pair_numeric: The construction's numeric pair.

    Returns:
        The :class:`GoodnessOfFit`.
    """
    a, p, b, q, sigma = pair_numeric
    res = {}
    for name, hist, means, weights in (("p", y_hist_p, a, p), ("q", y_hist_q, b, q)):
        n = int(hist.sum())
        below = np.cumsum(hist)[:-1] / n  # empirical P(y < e_j)
        d = float(np.max(np.abs(below - mixture_cdf(y_edges, means, weights, sigma))))
        res[name] = (d, float(stats.kstwo.sf(d, n)))
    return combined_fit(res)



def best_profile_tests(sides: Sequence[tuple], alphas: Sequence[float], confidence: float) -> list:
    """Per α, the (threshold, side) maximising the H_α lower bound CP_lower(TP) - α CP_upper(FP) over both sides'
    thresholds (the first side's first threshold when no test is above -∞).

    Args:
        sides: Per side, (side, thresholds, TP per threshold, FP per threshold, n_pos, n_neg): counts (or rates
            times the trials), as :func:`side_counts` gives them.
        alphas: The α grid.
        confidence: The pointwise confidence.

    Returns:
        (threshold, side) per α.
    """
    a_pos, a_neg = error_split(confidence)
    out = []
    for alpha in alphas:
        best = (-np.inf, float(sides[0][1][0]), sides[0][0])
        for side, thresholds, tp, fp, n_pos, n_neg in sides:
            h = cp_lower(tp, n_pos, a_pos) - alpha * cp_upper(fp, n_neg, a_neg)
            i = int(np.argmax(h))
            if h[i] > best[0]:
                best = (float(h[i]), float(thresholds[i]), side)
        out.append((best[1], best[2]))
    return out


def choose_profile_tests(sel_p: np.ndarray, sel_q: np.ndarray, edges: np.ndarray, alphas: Sequence[float],
                         confidence: float = 0.95) -> list:
    """Per α, the (edge, side) maximising CP_lower(P(S)) - α CP_upper(Q(S)) on selection histograms (split mode):
    :func:`best_profile_tests` of their counts.

    Args:
        sel_p: World P's selection histogram.
        sel_q: World Q's.
        edges: The histograms' edges.
        alphas: The α grid.
        confidence: The pointwise confidence.

    Returns:
        (edge, side) per α.
    """
    return best_profile_tests([(side, edges, *side_counts(sel_p, sel_q, side)) for side in ("upper", "lower")],
                              alphas, confidence)
