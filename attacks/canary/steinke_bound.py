"""Steinke, Nasr & Jagielski (2023), "Privacy auditing with one (1) training run": ε lower bounds from canary guesses.

m canaries are each inserted independently with probability 1/2 and the model is trained
once; the auditor guesses on the extreme scores and abstains on the rest. The guess sets
(both ends, the top only "in", the bottom only "out", each at the fixed fractions
:data:`GUESS_FRACTIONS` of m) and the scores are fixed in advance and Bonferroni-corrected.
With v correct of r guesses, Steinke et al.'s Theorem (one-run audit with abstention, (ε, δ)
version: P[W ≥ v] ≤ P[Binom(r, e^ε/(1+e^ε)) ≥ v] + 2 m δ max_i P[v > Binom ≥ v-i]/i) holds
for any guessing rule, so the reported ε is a **lower** bound on the ε of the training at
element (event) level with probability ≥ confidence.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy import special, stats

from .certified import AUC_NOTE, AUC_UNDEFINED, GuessBound, SteinkeCertificate

GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.2)  # k / m for the fixed guess sets
GUESS_SIDES = ("both", "in", "out")  # guess on both ends (2k guesses), only "in" on the top k, only "out" on the bottom k
EPS_MAX = 60.0  # search ceiling on ε (e^ε stays finite)
WINDOW = 4096  # the max over i in the δ term runs exactly up to here (then an upper bound over cells)
CELL_RATIO = 1.01  # the cells' geometric ratio beyond WINDOW: the bound there exceeds the max by at most 1%
AUDIT_SIZE_RATIO = 0.8  # certified / ceiling at or above this: the audit's size, not the training, limits it


def p_value(m: int, k, c, epsilon, delta: float) -> np.ndarray:
    """P[≥ c correct of k guesses] under (ε, δ)-DP with m canaries (Steinke et al. 2023, Theorem with δ), vectorised over k, c, ε.

    β = P[Binom(k, q) ≥ c], q = e^ε/(1+e^ε), plus 2 m δ max_{1≤i≤c} P[c > Binom(k, q) ≥ c - i] / i.
    The max runs exactly over i ≤ :data:`WINDOW`; beyond, over geometric cells [a, b] of ratio
    :data:`CELL_RATIO`, each term of a cell is at most P[c > Binom ≥ c - b] / a (the numerator grows
    with i, the denominator is at least a), which is used instead: the p-value only rounds up, by at
    most the cell ratio on that part, whatever c (a flat bound P[Binom < c] / (WINDOW + 1) made the
    p-value of a perfect audit with c > WINDOW useless).

    Args:
        m: The canaries.
        k: The guesses.
        c: The correct guesses.
        epsilon: ε values.
        delta: δ.

    Returns:
        The p-value bound, broadcast over k, c, ε.
    """
    k, c, epsilon = np.broadcast_arrays(np.asarray(k), np.asarray(c), np.asarray(epsilon, dtype=float))
    q = special.expit(epsilon)
    beta = stats.binom.sf(c - 1, k, q)
    if not (delta > 0 and c.size):
        return np.minimum(1.0, beta)
    below = stats.binom.cdf(c - 1, k, q)  # P[Binom <= c - 1]

    def mass(width):  # P[c > Binom >= c - width], width broadcast on a last axis
        return below[..., None] - stats.binom.cdf(c[..., None] - width - 1, k[..., None], q[..., None])

    i = np.arange(1, min(int(c.max()), WINDOW) + 1)
    alpha = np.where(i <= c[..., None], mass(i) / i, 0.0).max(axis=-1, initial=0.0)
    if c.max() > WINDOW:
        edges = np.unique(np.ceil(WINDOW * CELL_RATIO ** np.arange(
            int(np.ceil(np.log(c.max() / WINDOW) / np.log(CELL_RATIO))) + 2)).astype(np.int64))
        lo, hi = edges[:-1], np.minimum(edges[1:], c[..., None])  # cells [lo, hi] within (WINDOW, c]
        cells = np.where(lo < c[..., None], mass(hi) / lo, 0.0)
        alpha = np.maximum(alpha, cells.max(axis=-1, initial=0.0))
    return np.minimum(1.0, beta + alpha * delta * 2 * m)


def largest_rejected(rejects: Callable[[np.ndarray, np.ndarray], np.ndarray], shape, hi: float,
                     tol: float = 1e-4) -> np.ndarray:
    """Per element: the largest θ in [0, ``hi``] that ``rejects(θ, where)`` rejects, by bisection (the lower end,
    so a **lower** bound on the largest rejected value), 0 where θ = 0 is not rejected.

    ``rejects(theta, where)`` gets the θ of the elements ``where`` (a boolean mask of ``shape``; θ as a flat
    array in the mask's order) and says which are rejected; rejection must be monotone (the rejected θ form an
    interval from 0).

    Args:
        rejects: ``rejects(θ, where)`` per element.
        shape: The elements' shape.
        hi: The search ceiling.
        tol: The bisection tolerance.

    Returns:
        The largest rejected θ per element (a **lower** bound on it).
    """
    everywhere = np.ones(shape, dtype=bool)
    ok = np.zeros(shape, dtype=bool)
    ok[everywhere] = rejects(np.zeros(everywhere.sum()), everywhere)
    lo, up = np.zeros(shape), np.full(shape, float(hi))
    top = np.zeros(shape, dtype=bool)
    top[ok] = rejects(up[ok], ok)
    lo = np.where(top, up, lo)
    live = ok & ~top
    while np.any(live & (up - lo > tol)):
        mid = (lo + up) / 2
        sel = live & (up - lo > tol)
        rej = np.zeros(shape, dtype=bool)
        rej[sel] = rejects(mid[sel], sel)
        lo = np.where(sel & rej, mid, lo)
        up = np.where(sel & ~rej, mid, up)
    return np.where(ok, lo, 0.0)


def epsilon_lower_bound(m: int, k, c, delta: float, tau, tol: float = 1e-4) -> np.ndarray:
    """Largest ε (bisection, lower end) whose p-value is below τ, per (k, c); 0 if none: a **lower** bound on ε.

    Args:
        m: The canaries.
        k: The guesses.
        c: The correct guesses.
        delta: δ.
        tau: The level.
        tol: The bisection tolerance.

    Returns:
        The ε lower bound per element.
    """
    k, c, tau = np.broadcast_arrays(np.asarray(k), np.asarray(c), np.asarray(tau, dtype=float))
    return largest_rejected(lambda eps, at: (k[at] > 0) & (p_value(m, k[at], c[at], eps, delta) < tau[at]),
                            k.shape, EPS_MAX, tol)


def limited_by(certified: float, ceiling: float) -> str:
    """"audit size" when ``certified`` reaches :data:`AUDIT_SIZE_RATIO` of the perfect-guess ``ceiling`` (more
    canaries could certify more), else "training" (the scores, not the audit's size, hold the answer down).

    Args:
        certified: The certified ε.
        ceiling: The perfect-guess ε.

    Returns:
        "audit size" or "training".
    """
    return "audit size" if ceiling > 0 and certified >= AUDIT_SIZE_RATIO * ceiling else "training"


def check_evidence(scores, included) -> tuple:
    """(scores as float64, included as bool) of one audit, or ValueError saying what is wrong: 1-D arrays of one
    length m ≥ 1, no NaN score (±inf ranks first or last), ``included`` boolean-valued (bool, or numbers that are
    exactly 0 or 1: NaN or 2 are not an inclusion bit). Every certifier's public entry checks its arrays here.

    Args:
        scores: (m,) scores.
        included: (m,) inclusion bits.

    Returns:
        (scores as float64, included as bool).

    Raises:
        ValueError: Saying what is wrong.
    """
    scores = np.asarray(scores)
    raw = np.asarray(included)
    if scores.ndim != 1 or raw.ndim != 1 or scores.shape != raw.shape:
        raise ValueError(f"scores and included must be 1-D arrays of one length (got shapes {scores.shape} and "
                         f"{raw.shape})")
    if scores.size == 0:
        raise ValueError("no canaries: scores and included are empty")
    try:
        scores = scores.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"scores must be real numbers ({exc})") from None
    if np.isnan(scores).any():
        raise ValueError(f"{int(np.isnan(scores).sum())} of {scores.size} scores are NaN: score every canary")
    if raw.dtype != bool:
        try:
            values = raw.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"included must be boolean (got dtype {raw.dtype})") from None
        if not np.all((values == 0) | (values == 1)):
            bad = values[(values != 0) & (values != 1)]
            raise ValueError(f"included must be boolean-valued (0/1 or False/True): {bad.size} value(s) are "
                             f"neither, e.g. {float(bad[0])!r}")
    return scores, raw.astype(bool)


def ranked(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The canaries' indices from the highest score to the lowest, ties broken by an independent random permutation
    (``rng``): the guesses are then a function of the scores only, whatever order the canaries are listed in.

    Args:
        scores: (m,) scores.
        rng: The generator of the tie-breaking permutation.

    Returns:
        The indices from the highest score to the lowest.
    """
    perm = rng.permutation(len(scores))
    return perm[np.argsort(-scores[perm], kind="stable")]


def guess_sets(m: int, fractions: Sequence[float] = GUESS_FRACTIONS, sides: Sequence[str] = GUESS_SIDES) -> np.ndarray:
    """The fixed guess sets of m canaries as rows (k_in, k_out): for every side and fraction f, f m guesses in all
    (rounded, at least 1 per guessing end): "both" guesses "in" on the f m / 2 highest and "out" on the f m / 2 lowest
    scores, "in" / "out" only one of the two, on the f m highest / lowest. A function of m only (what a plan of this
    certifier uses).

    Args:
        m: The canaries.
        fractions: k / m of the sets.
        sides: The sets' sides.

    Returns:
        Rows (k_in, k_out).
    """
    if not fractions or not sides:
        raise ValueError("no guess sets: give at least one fraction and one side")
    if set(sides) - set(GUESS_SIDES):
        raise ValueError(f"sides must be among {GUESS_SIDES} (got {sides})")
    rows = []
    for side in sides:
        for f in fractions:
            k = max(1, int(round(f * m / (2 if side == "both" else 1))))
            rows.append({"both": (k, k), "in": (k, 0), "out": (0, k)}[side])
    return np.array(rows, dtype=np.int64)


def guess_bound(scores: np.ndarray, included: np.ndarray, delta: float, significance: float,
                fractions: Sequence[float] = GUESS_FRACTIONS, sides: Sequence[str] = GUESS_SIDES,
                seed: int = 0) -> GuessBound:
    """ε lower bound from fixed guess sets on the extreme scores (:func:`guess_sets`), Bonferroni over them
    (lower-bound direction): the best bound over the sets is valid at ``significance`` (each tested at
    significance / their number).

    Ties in the scores are broken by an independent random permutation (``seed``, :func:`ranked`).

    Args:
        scores: (m,) canary scores, higher = more likely included.
        included: (m,) whether each canary was included.
        delta: The δ of the bound.
        significance: The level 1 - confidence the best set's bound holds at.
        fractions: The guess sets' sizes as fractions of m.
        sides: The guess sets' sides (``both``, ``in``, ``out``).
        seed: The seed of the tie-breaking permutation.

    Returns:
        The best set's bound, its ``ceiling`` (what the same sets certify if every guess is right: the audit's
        power at this m) and :func:`limited_by` of the two.

    Raises:
        ValueError: Bad evidence (:func:`check_evidence`) or no guess set.
    """
    scores, included = check_evidence(scores, included)
    m = len(scores)
    order = ranked(scores, np.random.default_rng(seed))
    sets = guess_sets(m, fractions, sides)
    per = significance / len(sets)
    best = (0.0, 0, 0, None)  # epsilon_lower, guesses, correct, side
    ceiling = 0.0
    for (k_in, k_out), side in zip(sets, [s for s in sides for _ in fractions]):
        v = int(included[order[:k_in]].sum() + (~included[order[m - k_out:]]).sum())
        r = int(k_in + k_out)
        eps = float(epsilon_lower_bound(m, r, v, delta, per))
        ceiling = max(ceiling, float(epsilon_lower_bound(m, r, r, delta, per)))
        if eps > best[0] or best[1] == 0:
            best = (eps, r, v, side)
    return GuessBound(*best, ceiling=ceiling, limited_by=limited_by(best[0], ceiling))


def with_auc(bound, scores: np.ndarray, included: np.ndarray):
    """``bound`` with the AUC (:func:`auc`) of the score it was certified from.

    Args:
        bound (GuessBound | FdpCertificate): A bound of :func:`guess_bound` or of
            :func:`attacks.canary.fdp_bound.certify`.
        scores: The (m,) scores.
        included: The (m,) inclusion bits.

    Returns:
        Its scored form (:class:`~tsdp.attacks.canary.certified.ScoreBound` or
        :class:`~tsdp.attacks.canary.certified.FdpScoreBound`); an undefined AUC is NaN, null with ``auc_note`` in
        JSON.
    """
    return bound.scored(auc(scores, included))


def auc(scores: np.ndarray, included: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for "inserted" (Mann-Whitney, ties averaged): 0.5 is chance.

    Args:
        scores: (m,) scores.
        included: (m,) inclusion bits.

    Returns:
        The AUC (NaN when every canary is on one side).
    """
    ranks = stats.rankdata(scores)
    n_in = int(included.sum())
    n_out = len(scores) - n_in
    if n_in == 0 or n_out == 0:
        return float("nan")
    return float((ranks[included].sum() - n_in * (n_in + 1) / 2) / (n_in * n_out))


def certify(scores: dict, included: np.ndarray, delta: float, confidence: float) -> SteinkeCertificate:
    """ε lower bounds (Steinke et al. 2023, lower-bound direction) for several named canary scores at once.

    Each score is tested at significance (1 - confidence) / len(scores) (Bonferroni), so the
    returned ``epsilon_lower`` (the best over the scores) holds with probability ≥ ``confidence``.

    Args:
        scores: Named (m,) score vectors, each fixed before the run.
        included: (m,) whether each canary was included.
        delta: The δ of the bounds.
        confidence: The probability with which the best bound holds.

    Returns:
        Each score's :func:`guess_bound` with its AUC, and the best ``epsilon_lower``.

    Raises:
        ValueError: No score, or bad evidence (:func:`check_evidence`).
    """
    if not scores:
        raise ValueError("no scores to certify: give at least one named score vector")
    significance = (1 - confidence) / len(scores)
    checked = {name: check_evidence(s, included) for name, s in scores.items()}
    out = {name: with_auc(guess_bound(s, inc, delta, significance), s, inc) for name, (s, inc) in checked.items()}
    return SteinkeCertificate(scores=out, epsilon_lower=max(s.epsilon_lower for s in out.values()))


__all__ = ["AUC_NOTE", "AUC_UNDEFINED", "AUDIT_SIZE_RATIO",
           "largest_rejected", "limited_by", "GUESS_FRACTIONS", "GUESS_SIDES", "auc",
           "certify", "with_auc", "check_evidence", "epsilon_lower_bound", "guess_bound", "guess_sets", "p_value", "ranked"]
