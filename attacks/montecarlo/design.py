"""Test design before sampling: the thresholds the law of the audit statistic implies, and the audit's plan.

For a proof's construction the Neyman-Pearson statistic L = Σ_s log p(y_s)/q(y_s) has a known law in
world P and in world Q (:mod:`attacks.montecarlo.laws`). From it, **before any trial is drawn**:

* :func:`design_test`: the threshold and side of the test S = {L ≥ t} (P positive) or
  S = {L < t} (Q positive) that maximise the expected union bound at the planned number of
  trials (Clopper-Pearson on both rates, as in :mod:`attacks.montecarlo.statistics`; the certified
  value, that statistic at its exact level, follows it a little above); all trials then go to
  the estimate, none to a selection split;
* :func:`profile_thresholds`: the same for each H_α lower bound (P(S) - α Q(S));
* :func:`tail_thresholds`: a geometric grid of tail thresholds (the sequential test's tests);
* :func:`histogram_edges`: the fixed bin edges every shard counts the statistic on (all the
  thresholds above are edges, so counts above them are exact sums of bins).

Soundness: the design only picks *which* test is run; it never sees the audit's trials, so
each certified bound stays a valid lower bound whatever the law really is (a buggy loop
only makes the chosen test less than optimal). The law is a numerical approximation used for choosing,
never for certifying.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np
from scipy import stats

from tsdp.verify.json_data import Record

from .laws import StatisticLaw, epoch_max_law, statistic_law
from .shuffled import epoch_max_reading
from .statistics import EQUAL_SPLIT, best_profile_tests, cp_lower, cp_upper, error_split

FP_SHARES = (EQUAL_SPLIT, 0.7, 0.9)  # shares of the error probability the design may give the false-positive rate


@dataclass(frozen=True)
class Design(Record):
    """A test fixed before sampling: S = {L ≥ threshold} (side ``upper``, P positive) or {L < threshold}
    (side ``lower``, Q positive).

    Attributes:
        threshold: The threshold on the statistic L.
        side: ``upper`` or ``lower``.
        expected_union: The design's expected union bound at ``trials`` (the certified value calibrates that
            statistic to its exact level and lies a little above it,
            :func:`attacks.montecarlo.statistics.certified_test_epsilon`).
        tp_rate: The law's rate of S in the positive world.
        fp_rate: Its rate in the negative world.
        trials: Trials per world the design is for.
        fp_share: The share of the error probability the false-positive rate's bound gets
            (:func:`attacks.montecarlo.statistics.error_split`).
        source: How it was fixed (``theory``: from the claimed pair's law, before sampling).
    """

    threshold: float
    side: str
    expected_union: float
    tp_rate: float
    fp_rate: float
    trials: int
    fp_share: float
    source: str = "theory"


def _sides(law: StatisticLaw):
    """(side, threshold, rate of the positive world, rate of the negative world) arrays for both sides."""
    tail_p, tail_q = law.tails()
    t = law.thresholds
    yield "upper", t, tail_p, tail_q
    yield "lower", t, np.clip(1 - tail_q, 0, 1), np.clip(1 - tail_p, 0, 1)


def _fp_range(fp: float, n: int) -> np.ndarray:
    """False-positive counts within 6 sd of the mean n·fp (all the binomial mass that matters)."""
    mean, sd = n * fp, np.sqrt(n * fp * (1 - fp))
    return np.arange(max(0, int(mean - 6 * sd) - 2), min(n, int(mean + 6 * sd) + 3) + 1)


def _expected_epsilon(lo: float, fp: float, n: int, fp_upper) -> float:
    """E[max(0, log(lo / CP_upper(FP)))] over FP ~ Bin(n, fp); ``lo`` = CP_lower(TP) - δ with TP at its mean n·tp.

    ``fp_upper`` = (counts k, CP_upper(k, n) at the false-positive rate's level), sorted, covering :func:`_fp_range`."""
    if lo <= 0:
        return 0.0
    k = _fp_range(fp, n)
    w = stats.binom.pmf(k, n, fp)
    eps = np.maximum(0.0, np.log(lo / fp_upper[1][np.searchsorted(fp_upper[0], k)]))
    return float((w * eps).sum() / max(w.sum(), 1e-300))


def design_test(law: StatisticLaw, trials: int, delta: float, confidence: float, refine: int = 24,
                shares: Sequence[float] = FP_SHARES) -> Design:
    """The threshold, side and error split maximising the expected union bound at ``trials`` trials per world.

    Lower-bound direction (the design never touches the audit's trials). For each share of the
    error probability 1 - confidence given to the false-positive rate (``shares``, union bound,
    :func:`auditor_stats.error_split`): the plug-in value on every midpoint threshold of both
    sides, then the expectation over the false-positive count for the ``refine`` best. The rare
    false-positive count is the noisy factor, so a share above 1/2 usually wins (T6 at 1e6 trials:
    0.9, expected ratio 0.907 against 0.903 at 1/2). The union bound is the statistic the audit
    certifies at its exact level, whose value follows it a little above (T6 at 1e6: +0.018 of the ratio).

    Args:
        law: The statistic's law under the claimed pair.
        trials: Trials per world.
        delta: The δ of the ε test.
        confidence: The test's confidence.
        refine: How many of the best plug-in thresholds get the expectation over the false-positive count.
        shares: The error splits tried (each fixed before sampling).

    Returns:
        The :class:`Design`.
    """
    n = int(trials)
    best = Design(float(law.thresholds[0]), "upper", 0.0, 1.0, 1.0, n, EQUAL_SPLIT)
    for share in shares:
        a_pos, a_neg = error_split(confidence, share)
        for side, t, tp, fp in _sides(law):
            ok = (n * tp >= 1) & (fp > 0) & (fp < tp)  # fp ≥ tp certifies nothing
            if not ok.any():
                continue
            idx = np.flatnonzero(ok)
            lo = cp_lower(n * tp[idx], n, a_pos) - delta
            with np.errstate(divide="ignore", invalid="ignore"):
                plug = np.log(lo / cp_upper(n * fp[idx], n, a_neg))
            plug = np.where(np.isfinite(plug), plug, -np.inf)
            order = np.argsort(plug)[::-1][:refine]
            top, lo_top = idx[order], lo[order]
            ks = np.unique(np.concatenate([_fp_range(float(fp[i]), n) for i in top]))  # ranges overlap: one CP call
            fp_upper = (ks, cp_upper(ks, n, a_neg))
            for i, lo_i in zip(top, lo_top):
                value = _expected_epsilon(float(lo_i), float(fp[i]), n, fp_upper)
                if value > best.expected_union:
                    best = Design(float(t[i]), side, value, float(tp[i]), float(fp[i]), n, share)
    return best


def profile_thresholds(law: StatisticLaw, alphas: Sequence[float], trials: int, confidence: float) -> list:
    """Per α, the (threshold, side) maximising the plug-in H_α lower bound CP_lower(P(S)) - α CP_upper(Q(S)):
    :func:`best_profile_tests` of the law's tails at ``trials`` trials per world.

    Args:
        law: The statistic's law.
        alphas: The α grid.
        trials: Trials per world.
        confidence: The pointwise confidence.

    Returns:
        (threshold, side) per α.
    """
    return best_profile_tests([(side, t, trials * tp, trials * fp, trials, trials) for side, t, tp, fp in _sides(law)],
                              alphas, confidence)


def tail_thresholds(law: StatisticLaw, per_side: int = 24, smallest: float = 1e-7) -> list:
    """(threshold, side) pairs whose positive-world tail mass runs geometrically from 1/2 down to ``smallest``.

    Args:
        law: The statistic's law.
        per_side: Thresholds per side.
        smallest: The smallest tail mass.

    Returns:
        (threshold, side) pairs.
    """
    out = []
    levels = np.geomspace(0.5, smallest, per_side)
    for side, t, tp, _ in _sides(law):
        order = tp[::-1] if side == "upper" else tp  # increasing along the array
        ts = t[::-1] if side == "upper" else t
        idx = np.clip(np.searchsorted(order, levels), 0, len(ts) - 1)
        out += [(float(ts[i]), side) for i in np.unique(idx)]
    return out


def histogram_edges(law: StatisticLaw, extra: Sequence[float] = (), n_edges: int = 2048) -> np.ndarray:
    """Sorted bin edges of the statistic: tail-geometric quantiles of the law in both worlds plus ``extra``.

    Every shard counts its statistic on these edges (under- and overflow bins included), so a
    count {L ≥ e} for an edge e is an exact sum of bins and shards merge by addition.

    Args:
        law: The statistic's law.
        extra: Thresholds that must be edges.
        n_edges: About how many quantile edges.

    Returns:
        The sorted edges.
    """
    tail_p, tail_q = law.tails()
    levels = np.geomspace(1e-13, 0.5, n_edges // 4)
    picks = []
    for tail in (tail_p, tail_q):
        rising = tail[::-1]  # P(L ≥ t) along decreasing t: increasing
        picks.append(law.thresholds[::-1][np.clip(np.searchsorted(rising, levels), 0, len(rising) - 1)])
        below = 1 - tail
        picks.append(law.thresholds[np.clip(np.searchsorted(below, levels), 0, len(below) - 1)])
    return np.unique(np.concatenate([*picks, np.asarray(list(extra), dtype=float)]))


EPOCH_MAX = "epoch-max"
"""First entry of a :func:`plan_tests` key whose statistic is read through epoch maxima (shuffled iteration)."""

Y_BINS = 4096


def y_edges_of(pair_num: tuple) -> np.ndarray:
    """Histogram edges of the one-step update: the pair's means ± 8σ in ``Y_BINS`` bins (plus under/overflow).

    Args:
        pair_num: The construction's numeric pair (means and weights of both worlds, σ).

    Returns:
        The ``Y_BINS + 1`` edges.
    """
    a, _, b, _, sigma = pair_num
    means = np.concatenate([a, b])
    return np.linspace(means.min() - 8 * sigma, means.max() + 8 * sigma, Y_BINS + 1)


@functools.lru_cache(maxsize=32)
def plan_tests(pair_key: tuple, steps: int, trials: int, delta: float, confidence: float, alphas: tuple,
               theory: bool, sequential_logs: Optional[tuple]) -> Tuple[Optional[Design], Optional[list], list,
                                                                        np.ndarray]:
    """(design, H_α tests, sequential tests, histogram edges) of an audit, all fixed before sampling.

    ``pair_key``: the pair's numeric arrays as tuples (cached: repeated audits of one construction
    design once), or ``(EPOCH_MAX, theorem, config, steps, offset)`` for a shuffled construction read
    through its epoch maxima (:mod:`attacks.montecarlo.shuffled`). ``theory``: design the ε and H_α tests from
    the statistic's law (else None: split mode).
    ``sequential_logs``: log α of the sound profile's points the violation test checks (None: no test; an
    entry None adds the designed test to the violation test's family).

    Args:
        pair_key: The pair's numeric arrays as tuples, or the epoch-max key.
        steps: Compositions per trial (epoch-max: training steps).
        trials: Trials per world.
        delta: The δ of the ε test.
        confidence: The audit's confidence.
        alphas: The α grid of the H_α tests.
        theory: Design the tests from the statistic's law (else split mode).
        sequential_logs: log α of the violation test's profile points (None: no violation test).

    Returns:
        (design, H_α tests, sequential tests, histogram edges).
    """
    if pair_key[0] == EPOCH_MAX:
        law = epoch_max_law(epoch_max_reading(*pair_key[1:]).laws)
    else:
        num = tuple(np.asarray(x, dtype=float) for x in pair_key[:4]) + (float(pair_key[4][0]),)
        law = statistic_law(num, steps)
    design, profile_tests, extra = None, None, []
    if theory:
        design = design_test(law, trials, delta, confidence)
        profile_tests = profile_thresholds(law, alphas, trials, confidence)
        extra = [design.threshold] + [t for t, _ in profile_tests]
    seq_tests = []
    if sequential_logs is not None:  # tail thresholds, the pair's likelihood-ratio tests at each α, the estimate's
        logs = [x for x in sequential_logs if x is not None]
        seq_tests = tail_thresholds(law) + [(float(t), s) for t in _snap(law, logs) for s in ("upper", "lower")]
        if design is not None and None in sequential_logs:
            seq_tests.append((design.threshold, design.side))
    return design, profile_tests, seq_tests, histogram_edges(law, extra + [t for t, _ in seq_tests])


def _snap(law, values) -> np.ndarray:
    """The law's midpoint thresholds nearest to ``values`` (unique)."""
    t = law.thresholds
    return np.unique(t[np.clip(np.searchsorted(t, values), 0, len(t) - 1)])


__all__ = ["EPOCH_MAX", "FP_SHARES", "Y_BINS", "Design", "design_test", "histogram_edges", "plan_tests",
           "profile_thresholds", "tail_thresholds", "trials_to_certify", "y_edges_of"]


def trials_to_certify(law: StatisticLaw, target: float, delta: float, confidence: float, *, start: int = 1000,
                      cap: int = 10**7, rel: float = 0.1) -> Optional[int]:
    """The fewest trials per world at which the designed test (:func:`design_test`) expects to certify an ε above
    ``target`` at ``confidence``: the upper end of a geometric bracket of relative width ``rel`` (the expected union
    bound grows with the trials); None when it does not by ``cap`` trials (the search's limit: the design's cost
    grows with the trials). Lower-bound direction: what an audit can show, not what the mechanism leaks.

    Args:
        law: The statistic's law under the construction's pair (:func:`statistic_law`).
        target: The ε to certify (claim C6: ε_T13).
        delta: The δ of the ε.
        confidence: The audit's confidence.
        start: The first trial count tried.
        cap: The largest trial count tried.
        rel: The bracket's relative width at which the search stops.

    Returns:
        The trial count, or None beyond ``cap``.
    """
    def reaches(n: int) -> bool:
        return design_test(law, n, delta, confidence).expected_union > target

    lo, hi = None, max(20, int(start))
    while not reaches(hi):
        if hi >= cap:
            return None
        lo, hi = hi, min(int(cap), hi * 10)
    if lo is None:
        lo = hi
        while lo > 20 and reaches(lo):
            hi, lo = lo, max(20, lo // 10)
        if reaches(lo):
            return lo
    while hi > lo * (1 + rel):
        mid = int(round(math.sqrt(lo * hi)))
        if mid in (lo, hi):
            break
        lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
    return hi
