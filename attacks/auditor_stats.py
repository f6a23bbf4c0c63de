"""Statistics of the Monte Carlo auditor: Neyman-Pearson statistic, Clopper-Pearson bounds, ε and H_α lower bounds, GOF.

Soundness direction: every number returned here is a **lower** confidence bound on the
mechanism's ε (or H_α): thresholds are chosen on a selection split, and the false
positive / false negative rates of the chosen test are bounded with exact one-sided
Clopper-Pearson intervals on a held-out split (each at level 1 - (1 - confidence)/2, so both
hold jointly with probability ≥ confidence). A test S between neighbouring worlds P, Q gives
H_α(P ‖ Q) ≥ P(S) - α Q(S) and, if the mechanism is (ε, δ)-DP, ε ≥ log((P(S) - δ) / Q(S))
(Kairouz et al. 2015's hypothesis-testing view, as used by Nasr et al. 2021).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Tuple

import numpy as np
from scipy import special, stats


def log_mixture_density(y: np.ndarray, means: np.ndarray, weights: np.ndarray, sigma: float) -> np.ndarray:
    """log Σ_i w_i N(y; μ_i, σ²), stable (logsumexp), vectorised over y."""
    z = (y[..., None] - means) / sigma
    return special.logsumexp(-0.5 * z * z, b=weights, axis=-1) - np.log(sigma * np.sqrt(2 * np.pi))


def log_likelihood_ratio(y: np.ndarray, pair_numeric: Tuple) -> np.ndarray:
    """Σ over steps (last axis) of log p(y_s)/q(y_s) of the construction's known mixtures (Neyman-Pearson statistic)."""
    a, p, b, q, sigma = pair_numeric
    llr = log_mixture_density(y, a, p, sigma) - log_mixture_density(y, b, q, sigma)
    return llr.sum(axis=-1)


def mixture_cdf(y: np.ndarray, means: np.ndarray, weights: np.ndarray, sigma: float) -> np.ndarray:
    """CDF of Σ_i w_i N(μ_i, σ²) at y."""
    return (weights * stats.norm.cdf((np.asarray(y)[..., None] - means) / sigma)).sum(axis=-1)


def cp_upper(k, n, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound on a binomial rate at level 1 - alpha (1 when k = n)."""
    k = np.asarray(k, dtype=float)
    out = stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1e-300))
    return np.where(k >= n, 1.0, out)


def cp_lower(k, n, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound on a binomial rate at level 1 - alpha (0 when k = 0)."""
    k = np.asarray(k, dtype=float)
    out = stats.beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1)
    return np.where(k <= 0, 0.0, out)


def split(x: np.ndarray, select_fraction: float) -> Tuple[np.ndarray, np.ndarray]:
    """(selection, held-out) halves of a sample, by position (trials are i.i.d.)."""
    m = int(round(len(x) * select_fraction))
    return x[:m], x[m:]


def _candidates(sel_p: np.ndarray, sel_q: np.ndarray, n_grid: int = 4000) -> np.ndarray:
    """Thresholds: quantiles of the pooled selection sample plus geometric order statistics of both tails."""
    pooled = np.concatenate([sel_p, sel_q])
    qs = np.quantile(pooled, np.linspace(0, 1, n_grid))
    tails = []
    for x in (np.sort(sel_p), np.sort(sel_q)):
        ranks = np.unique(np.geomspace(1, len(x), 400).astype(int)) - 1
        tails += [x[ranks], x[::-1][ranks]]
    return np.unique(np.concatenate([qs, *tails]))


def _rates(pos: np.ndarray, neg: np.ndarray, t: np.ndarray, upper_side: bool):
    """Counts of S = {s > t} (upper_side) or {s ≤ t} in the 'positive' and 'negative' samples."""
    sp, sn = np.sort(pos), np.sort(neg)
    if upper_side:
        return len(sp) - np.searchsorted(sp, t, "right"), len(sn) - np.searchsorted(sn, t, "right")
    return np.searchsorted(sp, t, "right"), np.searchsorted(sn, t, "right")


def _eps_of(tp, fp, n_pos, n_neg, delta, a):
    hi_fp = cp_upper(fp, n_neg, a)
    lo_tp = cp_lower(tp, n_pos, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((lo_tp - delta) / hi_fp)
    return np.where((lo_tp > delta) & (hi_fp > 0), eps, 0.0)


@dataclass(frozen=True)
class TestBound:
    """A chosen test and its held-out bound: threshold, side (P-positive ``upper`` or Q-positive ``lower``),
    held-out counts and the resulting lower bound value."""

    value: float
    threshold: float
    side: str
    true_positives: int
    false_positives: int
    n_positive: int
    n_negative: int


def epsilon_lower_bound(stat_p: np.ndarray, stat_q: np.ndarray, delta: float, confidence: float = 0.95,
                        select_fraction: float = 0.5) -> TestBound:
    """ε lower bound at δ, holding with probability ≥ ``confidence`` (lower-bound direction).

    Both adjacency directions: S = {stat > t} with P positive (ε ≥ log((P(S) - δ)/Q(S))) and
    S = {stat ≤ t} with Q positive. The side and threshold maximise the bound computed the same
    way on the selection split; the held-out split then gives the reported value. ``stat`` is
    the log-likelihood ratio log p/q (or any statistic larger under P).
    """
    a = (1 - confidence) / 2
    sel_p, out_p = split(stat_p, select_fraction)
    sel_q, out_q = split(stat_q, select_fraction)
    t = _candidates(sel_p, sel_q)
    best = (-1.0, None, None)
    for side, pos, neg in (("upper", sel_p, sel_q), ("lower", sel_q, sel_p)):
        tp, fp = _rates(pos, neg, t, side == "upper")
        eps = _eps_of(tp, fp, len(pos), len(neg), delta, a)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(t[i]), side)
    _, thr, side = best
    pos, neg = (out_p, out_q) if side == "upper" else (out_q, out_p)
    tp, fp = _rates(pos, neg, np.array([thr]), side == "upper")
    value = float(_eps_of(tp, fp, len(pos), len(neg), delta, a)[0])
    return TestBound(max(0.0, value), thr, side, int(tp[0]), int(fp[0]), len(pos), len(neg))


def hockey_stick_lower_bounds(stat_p: np.ndarray, stat_q: np.ndarray, alphas: Sequence[float],
                              confidence: float = 0.95, select_fraction: float = 0.5) -> np.ndarray:
    """Lower confidence bounds on the profile H_α (sup over the two adjacency directions), one per α.

    H_α ≥ P(S) - α Q(S) for any S; the threshold (and direction) per α is chosen on the
    selection split, the held-out split gives P(S) by its CP lower bound and Q(S) by its CP
    upper bound (each at 1 - (1-confidence)/2: pointwise confidence per α). Never below the
    trivial max(0, 1 - α).
    """
    a = (1 - confidence) / 2
    sel_p, out_p = split(stat_p, select_fraction)
    sel_q, out_q = split(stat_q, select_fraction)
    t = _candidates(sel_p, sel_q)
    out = []
    for alpha in alphas:
        best = (-np.inf, None, None)
        for side, pos, neg in (("upper", sel_p, sel_q), ("lower", sel_q, sel_p)):
            tp, fp = _rates(pos, neg, t, side == "upper")
            h = cp_lower(tp, len(pos), a) - alpha * cp_upper(fp, len(neg), a)
            i = int(np.argmax(h))
            if h[i] > best[0]:
                best = (float(h[i]), float(t[i]), side)
        _, thr, side = best
        pos, neg = (out_p, out_q) if side == "upper" else (out_q, out_p)
        tp, fp = _rates(pos, neg, np.array([thr]), side == "upper")
        h = float(cp_lower(tp, len(pos), a)[0] - alpha * cp_upper(fp, len(neg), a)[0])
        out.append(max(h, 0.0, 1.0 - alpha))
    return np.array(out)


def goodness_of_fit(y_p: np.ndarray, y_q: np.ndarray, pair_numeric: Tuple) -> dict:
    """Kolmogorov-Smirnov tests of the observed one-step updates against the construction's mixtures.

    World P against P's CDF, world Q against Q's CDF; the combined p-value is the Bonferroni
    min(1, 2 min(p_P, p_Q)). A small value says the loop's output law is not the theorem's
    mixture (e.g. a sampler bug: padding off by one, WOR drawing with replacement).
    """
    a, p, b, q, sigma = pair_numeric
    res_p = stats.kstest(y_p, lambda x: mixture_cdf(x, a, p, sigma))
    res_q = stats.kstest(y_q, lambda x: mixture_cdf(x, b, q, sigma))
    combined = min(1.0, 2 * min(res_p.pvalue, res_q.pvalue))
    return {"pvalue": float(combined), "pvalue_p": float(res_p.pvalue), "pvalue_q": float(res_q.pvalue),
            "statistic_p": float(res_p.statistic), "statistic_q": float(res_q.statistic)}
