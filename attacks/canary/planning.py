"""Planning an f-DP one-run audit before any training: what m canaries can certify and how many a claim needs.

:func:`plan` says what an audit of m canaries can see (the ε each analysis certifies when
every guess is right, and the m needed to reach a claimed ε); :func:`attacks.canary.fdp_bound.certify` reports it
with the result and classifies the result as limited by the audit's size or by the training.
The ceilings and shares are :mod:`attacks.canary.one_run`'s; every ε here is what :func:`attacks.canary.fdp_bound.certify`
would report (a **lower** bound on the training's ε) on the scores described.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Dict, Optional, Sequence

import numpy as np
from scipy import stats

from tsdp.verify.json_data import Record, record_dict

from . import steinke_bound
from .tradeoff import _inverse
from .one_run import _family_bound, ceilings, guess_grid, rejects, significance_shares
from .steinke_bound import EPS_MAX


def _ranked_families(analyses: Sequence[str]) -> tuple:
    """The families a perfect ranking's ε is computed from: "dp" alone where the analyses run it, else "steinke".

    The certified ε is the larger of the two, so one of them is a **lower** bound on it. On a perfect ranking the
    f-DP test's "dp" bound was never below Steinke et al.'s (m = 20 to 20000, the default guess grid:
    tests/attacks/test_fdp_bound.py checks it), and it costs a fraction: Steinke et al.'s p-value sums a binomial
    window of up to 4096 terms per (k, correct) pair, thousands of pairs at m = 10^7 (minutes for a plan)."""
    return ("dp",) if "dp" in analyses else tuple(a for a in ("steinke",) if a in analyses)


def _ranked_counts(m: int, n: np.ndarray, sets: np.ndarray, missed: int = 0) -> np.ndarray:
    """Correct guesses of each set, shaped (len(n), len(sets)), with n included, ranked first but for at most
    ``missed`` of them (which may rank anywhere below): at least min(k_in, n - missed) "in" and
    min(k_out - missed, m - n) "out" guesses are right (each at least 0); with ``missed`` = 0 exactly the perfect
    ranking's min(k_in, n) + min(k_out, m - n) (:func:`perfect_ranking`)."""
    return (np.minimum(sets[:, 0], np.maximum(n[:, None] - missed, 0))
            + np.maximum(np.minimum(sets[:, 1] - missed, m - n[:, None]), 0))


def _ranked_pairs(counts: np.ndarray, sets: np.ndarray) -> tuple:
    """The distinct (k, correct) pairs of ``counts`` (rows of correct counts per set), and the index of each cell's
    pair, shaped like ``counts``."""
    pairs, inverse = np.unique(np.stack([np.broadcast_to(sets.sum(axis=1), counts.shape).ravel(), counts.ravel()], 1),
                               axis=0, return_inverse=True)
    return pairs, inverse.reshape(counts.shape)


def _ranked_epsilon(m: int, n: np.ndarray, sets: np.ndarray, delta: float, share: dict,
                    analyses: Sequence[str], families: Optional[Sequence[str]] = None) -> np.ndarray:
    """ε(n) of a perfect ranking with n included (:func:`perfect_ranking`): the largest bound of ``families``
    (default :func:`_ranked_families`; ("dp", "steinke") is the certified ε itself) over ``sets``, a **lower** bound
    on what :func:`attacks.canary.fdp_bound.certify` reports, each bound computed once per distinct (k, correct) pair (they depend on nothing
    else)."""
    pairs, cell = _ranked_pairs(_ranked_counts(m, n, sets), sets)
    best = np.zeros(len(pairs))
    for a in (_ranked_families(analyses) if families is None else families):
        if a in ("dp", "steinke") and a in analyses:
            best = np.maximum(best, _family_bound(a, m, pairs[:, 0], pairs[:, 1], share[a] / len(sets), delta))
    return best[cell].max(axis=1)


BISECTION_TOL = 1e-4
"""The bisection tolerance of the reported bounds (:func:`attacks.canary.one_run.largest_rejected`, Steinke et al.'s): a bound reported above
θ implies a rejection at θ + this, and a rejection there implies a reported bound above θ."""


def _beyond(m: int, k: np.ndarray, c: np.ndarray, tau: dict, delta: float, theta: float,
            analyses: Sequence[str]) -> np.ndarray:
    """Per (k, c): whether a bound of :func:`_ranked_families` (at its level ``tau[family]``) that :func:`attacks.canary.fdp_bound.certify`
    reports (its bisection's lower end) is above θ, decided by one test at θ + :data:`BISECTION_TOL` instead of a
    bisection: the bisection keeps a rejected lower end and an accepted upper end within the tolerance, so a
    rejection at θ + tol leaves the lower end above θ (only "no" can err, towards fewer flags: a **lower** bound on
    what is flagged)."""
    out = np.zeros(np.shape(k), dtype=bool)
    if theta + BISECTION_TOL > EPS_MAX:  # no bound is searched above EPS_MAX
        return out
    for a in _ranked_families(analyses):
        if a == "steinke":
            out |= (k > 0) & (steinke_bound.p_value(m, k, c, theta + BISECTION_TOL, delta) < tau[a])
        else:
            out |= rejects(_inverse(a, delta), theta + BISECTION_TOL, m, k, c, tau[a])
    return out


def flag_rate(m: int, claimed_epsilon: float, delta: float, confidence: float = 0.95, *,
              participation: float = 1.0, quantile: float = 0.1,
              analyses: Sequence[str] = ("dp", "gdp", "steinke"), sets: Optional[np.ndarray] = None) -> float:
    """A **lower** bound on the probability that an audit of m canaries of a training without noise reports an ε
    lower bound above ``claimed_epsilon`` (:func:`attacks.canary.fdp_bound.certify`'s sets and shares at ``confidence``).

    The model of a training without noise: each canary is included with probability 1/2 and takes part in at least
    one step with probability ``participation`` (q), independently; the included canaries that took part score
    above every other canary (a canary that took part in no step left no mark: it scores like an excluded one, in
    an order independent of its inclusion). So A, the number of included canaries that took part, is
    Binomial(m, q/2), and every "included"-only guess set (k, 0) with k ≤ A is all right: the rate is at least
    P[A ≥ k*], k* the least such k whose all-right bound is above the claim. Second, the near-balanced sets: B, the
    included canaries without a mark, is Binomial(m, (1 - q)/2), at most b with probability ≥ 1 - ``quantile`` / 10
    (b = 0 when q = 1: the perfect ranking of :func:`perfect_ranking`); with n included and B ≤ b each set's right
    guesses are at least :func:`_ranked_counts`' (b wrong at most on each side), and the rate is at least
    1 - ``quantile`` where every n of the narrowest band of mass 1 - ``quantile`` (less the share of B's tail;
    :func:`perfect_ranking_quantile`'s band when q = 1) is flagged at those counts (a union bound). The larger of the
    two is returned. Guesses among the canaries without a mark are right about half the time; counting them as wrong
    makes the rate a lower bound (measured on the hand-written loop without noise, and on this model with the real
    certifier: tests/attacks/test_plan_calibration.py).

    Args:
        m: The canaries.
        claimed_epsilon: The claim at ``delta``.
        delta: The δ of the bounds.
        confidence: The audit's confidence.
        participation: q, the probability a canary takes part in some step.
        quantile: The share of audits the near-balanced sets' count bound may miss, over 10.
        analyses: The certifier's analyses.
        sets: Guess sets (rows (k_in, k_out); default the f-DP grid).

    Returns:
        The lower bound on the flag rate.
    """
    if not 0 <= participation <= 1:
        raise ValueError(f"participation must be in [0, 1] (got {participation})")
    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    tau = {a: s / len(sets) for a, s in significance_shares(list(analyses), confidence).items()}
    k = sets.sum(axis=1)
    if not _beyond(m, k, k, tau, delta, claimed_epsilon, analyses).any():  # the ceiling: not even all right flags
        return 0.0
    ks = np.unique(sets[sets[:, 1] == 0, 0])
    flagged = ks[_beyond(m, ks, ks, tau, delta, claimed_epsilon, analyses)]
    rate = float(stats.binom.sf(flagged.min() - 1, m, participation / 2)) if flagged.size else 0.0
    if rate < 1 - quantile:  # the band: n included near m / 2, at most `missed` of them without a mark
        spill = 0.0 if participation == 1 else quantile / 10
        missed = 0 if participation == 1 else int(stats.binom.isf(spill, m, (1 - participation) / 2))
        reach = band_reach(m, quantile - spill)
        counts = _ranked_counts(m, np.arange((m - reach) // 2, (m + reach) // 2 + 1), sets, missed)
        pairs, cell = _ranked_pairs(counts, sets)
        if _beyond(m, pairs[:, 0], pairs[:, 1], tau, delta, claimed_epsilon, analyses)[cell].any(axis=1).all():
            rate = 1 - quantile
    return rate


def perfect_ranking(m: int, delta: float, confidence: float = 0.95, *,
                    analyses: Sequence[str] = ("dp", "gdp", "steinke"), sets: Optional[np.ndarray] = None) -> dict:
    """What a perfectly ranked audit certifies: every included canary scored above every excluded one.

    That is what a training without noise shows when every canary leaves its mark (AUC 1);
    unlike :func:`plan`'s ceiling it cannot choose the number of canaries included, which is
    Binomial(m, 1/2). Given n included, guess set (k_in, k_out) has min(k_in, n) + min(k_out,
    m - n) correct guesses, so :func:`attacks.canary.fdp_bound.certify`'s ``epsilon_lower`` (the larger of "dp" and
    "steinke", same sets and shares) is a function ε(n). Returns {"n": n's with probability
    mass above 1e-12, "epsilon": ε(n), "probability": Binomial(m, 1/2) mass} (no sampling).

    Args:
        m: The canaries.
        delta: The δ of the bounds.
        confidence: The audit's confidence.
        analyses: The certifier's analyses.
        sets: Guess sets (default the f-DP grid).

    Returns:
        ``{"n": included counts, "epsilon": ε per n, "probability": Binomial(m, 1/2) weights}``.
    """
    from scipy.stats import binom

    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    lo, hi = int(binom.ppf(1e-12, m, 0.5)), int(binom.isf(1e-12, m, 0.5))
    n = np.arange(lo, hi + 1)
    return {"n": n, "epsilon": _ranked_epsilon(m, n, sets, delta, significance_shares(list(analyses), confidence), analyses),
            "probability": binom.pmf(n, m, 0.5)}


def band_reach(m: int, quantile: float) -> int:
    """The smallest D (of the parity of m, at most m) with P[|2N - m| <= D] >= 1 - ``quantile``, N ~ Binomial(m, 1/2),
    by bisection over D (the probability grows with D): two binomial CDFs a step, not one per D.

    Args:
        m: The canaries (each included with probability 1/2, so N of them are).
        quantile: The mass allowed outside the band.

    Returns:
        D: the band |2N - m| ≤ D holds at least 1 - ``quantile`` of N's mass (m when no narrower band does).
    """
    from scipy.stats import binom

    def covered(distance: int) -> bool:
        return binom.cdf((m + distance) // 2, m, 0.5) - binom.cdf((m - distance) // 2 - 1, m, 0.5) >= 1 - quantile

    lo, hi = 0, m // 2  # D = m % 2 + 2 * index
    if not covered(m % 2 + 2 * hi):
        return m % 2 + 2 * hi
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if covered(m % 2 + 2 * mid) else (mid + 1, hi)
    return m % 2 + 2 * lo


def perfect_ranking_quantile(m: int, delta: float, confidence: float = 0.95, quantile: float = 0.1, *,
                             analyses: Sequence[str] = ("dp", "gdp", "steinke"),
                             sets: Optional[np.ndarray] = None) -> float:
    """An ε that a perfectly ranked audit of m canaries certifies in at least 1 - ``quantile`` of runs: the smallest
    :func:`perfect_ranking` ε(n) over the narrowest band |2n - m| ≤ D of numbers included whose Binomial(m, 1/2)
    mass is at least 1 - ``quantile`` (at most the ``quantile`` of ε(N), never above it; equal to it when ε(n) does
    not increase with |2n - m|, as for guess sets with k_in = k_out only).

    Args:
        m: The canaries.
        delta: The δ of the bounds.
        confidence: The audit's confidence.
        quantile: The share of runs allowed below.
        analyses: The certifier's analyses.
        sets: Guess sets (default the f-DP grid).

    Returns:
        The ε (a **lower** bound on what a perfect ranking certifies in 1 - ``quantile`` of runs).
    """
    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    reach = band_reach(m, quantile)
    n = np.arange((m - reach) // 2, (m + reach) // 2 + 1)
    return float(_ranked_epsilon(m, n, sets, delta, significance_shares(list(analyses), confidence), analyses).min())


@dataclass(frozen=True)
class PlanSearch:
    """How :func:`plan` finds the canaries needed against a claim.

    Attributes:
        quantile: The share of audits allowed to fall short.
        m_max: The most canaries searched.
        participation: The probability a canary takes part in some step.
    """

    quantile: float = 0.1
    m_max: int = 10 ** 6
    participation: float = 1.0


@dataclass(frozen=True)
class AuditPlan(Record):
    """What an audit with m canaries can see, before any training (:func:`plan`).

    Attributes:
        canaries: m.
        delta: The δ of the bounds.
        confidence: The audit's confidence.
        scores: The score vectors certified (Bonferroni).
        ceiling: Per analysis, the ε certified when every guess is right.
        perfect_ranking: The ε a perfectly ranked audit certifies in 1 - ``quantile`` of runs.
        quantile: The share of audits allowed to fall short.
        claimed_epsilon: The claim the canaries needed were found for (None: none; then this and the two below are
            absent from the JSON form).
        participation: The probability a canary takes part in some step (with a claim).
        canaries_needed: The smallest m flagged against the claim in 1 - ``quantile`` of audits (None: above the
            search's most).
    """

    canaries: int
    delta: float
    confidence: float
    scores: int
    ceiling: Dict[str, float]
    perfect_ranking: float
    quantile: float
    claimed_epsilon: Optional[float] = None
    participation: Optional[float] = None
    canaries_needed: Optional[int] = None

    def as_dict(self) -> dict:
        """The JSON form: the fields by name, the claim's three only with a claim.

        Returns:
            The JSON-ready dict.
        """
        out = record_dict(self)
        if self.claimed_epsilon is None:
            for key in ("claimed_epsilon", "participation", "canaries_needed"):
                del out[key]
        return out


def plan(m: int, delta: float, confidence: float = 0.95, claimed_epsilon: Optional[float] = None, *,
         analyses: Sequence[str] = ("dp", "gdp", "steinke"), sets: Optional[np.ndarray] = None,
         scores: int = 1, grid: Callable[[int], np.ndarray] = guess_grid,
         search: PlanSearch = PlanSearch()) -> AuditPlan:
    """What an audit with m canaries can see, before any training: its ceiling, and what a perfect ranking certifies.

    Same guess sets (:func:`attacks.canary.one_run.guess_grid` unless ``sets``) and significance shares as
    :func:`attacks.canary.fdp_bound.certify` with the same ``analyses`` ("claimed" takes its share but has no
    ceiling), each of ``scores`` score vectors at confidence 1 - (1 - confidence) / scores (the
    Bonferroni of :func:`attacks.canary.evidence.certify_evidence`). ``ceiling``: per analysis,
    the ε if every guess is right. ``perfect_ranking``: the ε that a perfectly ranked audit
    (:func:`perfect_ranking`, what a training without noise shows) certifies in
    1 - ``search.quantile`` of runs. With ``claimed_epsilon``: ``canaries_needed``, the smallest m
    whose audit of a training without noise, each canary taking part in a step with probability
    ``search.participation`` (gradient canaries: :func:`attacks.canary.gradient.participation_probability`
    of the batching and steps; 1: every canary, a perfect ranking), is flagged against the claim in at least
    1 - ``search.quantile`` of audits by :func:`flag_rate`'s lower bound (doubling, then bisection over m, where it
    grows with m; None above ``search.m_max``), and ``participation``. ``grid(m)``: the certifier's guess sets of m canaries (default
    :func:`attacks.canary.one_run.guess_grid`; Steinke et al.'s alone: :func:`attacks.canary.steinke_bound.guess_sets`).

    Args:
        m: The canaries.
        delta: The δ of the bounds.
        confidence: The audit's confidence.
        claimed_epsilon: A claimed ε to find the canaries needed for (None: none).
        analyses: The certifier's analyses.
        sets: Guess sets (rows (k_in, k_out)) instead of ``grid(m)``.
        scores: The score vectors certified (Bonferroni).
        grid: The certifier's guess sets of m canaries.
        search: The share of audits allowed to fall short, the most canaries searched and the probability a
            canary takes part in some step (:class:`PlanSearch`).

    Returns:
        The :class:`AuditPlan` (``as_dict()``: its JSON): ``ceiling`` per analysis, ``perfect_ranking``, and with
        ``claimed_epsilon`` ``canaries_needed`` and ``participation``.
    """
    each = 1 - (1 - confidence) / scores
    quantile, m_max, participation = search.quantile, search.m_max, search.participation

    def ranked(n: int) -> float:
        return perfect_ranking_quantile(n, delta, each, quantile, analyses=analyses,
                                        sets=sets if (sets is not None and n == m) else grid(n))

    out = AuditPlan(m, delta, confidence, scores,
                    ceilings(m, delta, each, analyses=analyses, sets=grid(m) if sets is None else sets), ranked(m),
                    quantile)
    if claimed_epsilon is not None:
        def reaches(n: int) -> bool:  # one rejection test per (k, correct) at the claim, no bisection
            return flag_rate(n, claimed_epsilon, delta, each, participation=participation, quantile=quantile,
                             analyses=analyses, sets=grid(n)) >= 1 - quantile

        lo, hi = 1, 2
        while hi <= m_max and not reaches(hi):
            lo, hi = hi, hi * 2
        if hi > m_max and reaches(m_max):
            lo, hi = hi // 2, m_max
        if hi > m_max:
            needed = None
        else:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
            needed = hi
        out = replace(out, claimed_epsilon=claimed_epsilon, participation=participation, canaries_needed=needed)
    return out


__all__ = ["BISECTION_TOL", "AuditPlan", "PlanSearch", "band_reach", "flag_rate", "perfect_ranking",
           "perfect_ranking_quantile", "plan"]
