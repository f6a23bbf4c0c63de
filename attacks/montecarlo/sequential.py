"""An anytime-valid sequential test for privacy violations: stop as soon as ε_lower > ε_sound is certain.

Checkpoints at geometric numbers of shards per world, m_k = 1, 2, 4, ... (the last one: all
shards). At checkpoint k the merged counts of the first m_k shards of each world are tested
with a fixed family of G tests (thresholds and sides on the audit statistic, chosen before
sampling from the claimed pair: :func:`attacks.montecarlo.design.tail_thresholds`), each rate by a
one-sided Clopper-Pearson bound at level α_k / (2G), α_k = α / 2^(k+1), α = 1 - confidence.
By the union bound over tests, rates and checkpoints (Σ_k α_k < α), with probability
≥ confidence every rate bound at every checkpoint holds, hence so does every derived
H_α(P ‖ Q) ≥ CP_lower(P(S)) - α CP_upper(Q(S)) for all α at once (and ε ≥ log((CP_lower(P(S))
- δ) / CP_upper(Q(S)))). The sound claim is a profile: H_α ≤ h_α at the points (α, h_α) of
``profile`` (the sound bound's composed profile on an ε grid, plus (e^{ε_sound}, δ)); a
violation is a certified H_α above h_α at some point. Stopping at the first violating
checkpoint is valid whenever it happens (optional stopping included). Testing the whole
profile rather than the one point (ε_sound, δ) is what makes small bugs visible in few trials
(a doubled sampling rate doubles the total variation H_1 but adds only ~log 2 to ε at small δ). The checkpoints are shard prefixes, so
the outcome does not depend on the number of workers or on the order shards finish in.
Lower-bound direction.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from tsdp.verify.json_data import Record

from .counts import merge
from .statistics import cp_lower, cp_upper, edge_index, epsilon_at_levels, side_counts


def checkpoints(n_shards: int) -> List[int]:
    """Shards per world at each checkpoint: 1, 2, 4, ... and finally ``n_shards``.

    Args:
        n_shards: Shards per world.

    Returns:
        The checkpoints.
    """
    out, m = [], 1
    while m < n_shards:
        out.append(m)
        m *= 2
    return out + [n_shards]


def certified_epsilon(hist_p: np.ndarray, hist_q: np.ndarray, edges: np.ndarray, tests: Sequence[Tuple[float, str]],
                      delta: float, level: float) -> float:
    """max over ``tests`` of the ε lower bound log((CP_lower(P(S)) - δ) / CP_upper(Q(S))), every rate at
    ``level`` / (2 len(tests)): a lower bound on ε at δ with probability ≥ 1 - ``level`` (union bound).

    Args:
        hist_p: World P's histogram.
        hist_q: World Q's.
        edges: The histograms' edges.
        tests: (threshold, side) of the family.
        delta: The δ of the bound.
        level: The error probability.

    Returns:
        The ε lower bound.
    """
    a = level / (2 * len(tests))
    best = 0.0
    for threshold, side in tests:
        tp, fp, n_pos, n_neg = side_counts(hist_p, hist_q, side)
        j = edge_index(edges, threshold)
        best = max(best, float(epsilon_at_levels(tp[j], fp[j], n_pos, n_neg, delta, a, a)))
    return best


def certified_profile(hist_p: np.ndarray, hist_q: np.ndarray, edges: np.ndarray, tests: Sequence[Tuple[float, str]],
                      alphas: Sequence[float], level: float) -> np.ndarray:
    """Lower bounds on H_α(P ‖ Q) (a certified lower privacy profile δ(ε = log α)), one per α, holding for every α
    at once with probability ≥ 1 - ``level``: max over ``tests`` of CP_lower(P(S)) - α CP_upper(Q(S)), every rate at
    ``level`` / (2 len(tests)) (union bound over the tests only: the α-dependence is deterministic). Never below 0.

    Args:
        hist_p: World P's histogram.
        hist_q: World Q's.
        edges: The histograms' edges.
        tests: (threshold, side) of the family.
        alphas: The α grid.
        level: The error probability.

    Returns:
        The H_α lower bounds, all α at once.
    """
    alphas = np.asarray(alphas, dtype=float)
    a = level / (2 * len(tests))
    best = np.zeros(len(alphas))
    for threshold, side in tests:
        tp, fp, n_pos, n_neg = side_counts(hist_p, hist_q, side)
        j = edge_index(edges, threshold)
        best = np.maximum(best, float(cp_lower(tp[j], n_pos, a)) - alphas * float(cp_upper(fp[j], n_neg, a)))
    return best


@dataclass(frozen=True)
class Checkpoint(Record):
    """The violation test at one checkpoint.

    Attributes:
        trials: trials per world merged so far.
        shards: shards per world merged so far.
        level: the checkpoint's level α_k.
        epsilon_lower: the certified ε lower bound at δ there (a **lower** bound).
        profile_excess: the largest certified H_α lower bound minus the sound profile's H_α (-inf: no profile).
        h_lower: the certified H_α lower bounds at the profile's points.
        violation: a certified excess (of ε_sound or of the profile).
    """

    trials: int
    shards: int
    level: float
    epsilon_lower: float
    profile_excess: float
    h_lower: List[float]
    violation: bool


@dataclass(frozen=True)
class ProfileCheck(Record):
    """One point of the sound profile next to its certified lower bound at the deciding checkpoint.

    Attributes:
        alpha: α (= e^ε).
        h_sound: the sound bound's H_α (an upper bound).
        h_lower: the certified H_α lower bound.
    """

    alpha: float
    h_sound: float
    h_lower: float


@dataclass(frozen=True)
class SequentialSummary(Record):
    """The violation test's verdict (what ``violation_test`` of an audit holds).

    Attributes:
        violation: the test certified H_α above the sound profile, or ε above ε_sound.
        sequential: checkpoints were geometric (the run may have stopped early); False: one checkpoint.
        trials: trials per world at the decision.
        epsilon_lower: the certified ε lower bound there.
        profile_excess: the largest certified excess there (None before any checkpoint).
        profile: the sound profile's points with their certified lower bounds there.
        epsilon_sound: the sound ε (an upper bound) the test checked.
        confidence: the probability with which every checkpoint's bounds hold together.
        tests: the tests in the family.
        checkpoints: every checkpoint reached.
    """

    violation: bool
    sequential: bool
    trials: int
    epsilon_lower: float
    profile_excess: Optional[float]
    profile: List[ProfileCheck]
    epsilon_sound: float
    confidence: float
    tests: int
    checkpoints: List[Checkpoint]


@dataclass
class SequentialTest:
    """The stop rule of :func:`executor.run.run_shards`: True at the first violating checkpoint.

    Attributes:
        n_shards: The shards per world of the audit.
        edges: The statistic histogram's edges.
        tests: The family of tests the violation test checks (:func:`attacks.montecarlo.design.plan_tests`).
        epsilon_sound: The sound ε (an **upper** bound) at ``delta``.
        delta: The δ of ``epsilon_sound``.
        confidence: 1 - the violation test's total level.
        profile: The sound profile's points (α, H_α) checked.
        sequential: Checkpoints at 1, 2, 4, ... shards (level α/2^(k+1) at the k-th); False: one checkpoint (all
            shards) at level 1 - confidence, the fixed-sample version.
        history: One :class:`Checkpoint` per checkpoint reached.
        violation: A checkpoint certified a violation.
    """

    n_shards: int
    edges: np.ndarray
    tests: List[Tuple[float, str]]
    epsilon_sound: float
    delta: float
    confidence: float
    profile: List[Tuple[float, float]] = field(default_factory=list)
    sequential: bool = True
    history: List[Checkpoint] = field(default_factory=list)
    violation: bool = False

    def __post_init__(self):
        self.points = checkpoints(self.n_shards) if self.sequential else [self.n_shards]

    def __call__(self, results: dict) -> bool:
        while len(self.history) < len(self.points) and not self.violation:
            k = len(self.history)
            m = self.points[k]
            if not all((w, i) in results for w in "pq" for i in range(m)):
                break
            p, q = merge(results, "p", m), merge(results, "q", m)
            level = (1 - self.confidence) / (2 ** (k + 1) if self.sequential else 1)
            value = certified_epsilon(p.counts, q.counts, self.edges, self.tests, self.delta, level)
            lower = certified_profile(p.counts, q.counts, self.edges, self.tests, [x for x, _ in self.profile], level)
            excess = float(np.max(lower - np.array([h for _, h in self.profile]))) if self.profile else -np.inf
            self.violation = value > self.epsilon_sound or excess > 0
            self.history.append(Checkpoint(p.trials, m, level, value, excess, lower.tolist(), self.violation))
        return self.violation

    def summary(self) -> SequentialSummary:
        """The verdict: violation, trials per world at the decision, the certified value there, the history.

        Returns:
            The :class:`SequentialSummary` (its JSON form is an audit's ``violation_test``).
        """
        last = self.history[-1] if self.history else None
        return SequentialSummary(
            violation=self.violation, sequential=self.sequential, trials=0 if last is None else last.trials,
            epsilon_lower=0.0 if last is None else last.epsilon_lower,
            profile_excess=None if last is None else last.profile_excess,
            profile=[ProfileCheck(x, h, lo) for (x, h), lo in zip(self.profile, [] if last is None else last.h_lower)],
            epsilon_sound=self.epsilon_sound, confidence=self.confidence, tests=len(self.tests),
            checkpoints=list(self.history))


__all__ = ["Checkpoint", "ProfileCheck", "SequentialSummary", "SequentialTest", "certified_epsilon", "certified_profile", "checkpoints"]
