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
from typing import List, Sequence, Tuple

import numpy as np

from .counts import merge
from .statistics import _eps_of, cp_lower, cp_upper, edge_index, side_counts


def checkpoints(n_shards: int) -> List[int]:
    """Shards per world at each checkpoint: 1, 2, 4, ... and finally ``n_shards``."""
    out, m = [], 1
    while m < n_shards:
        out.append(m)
        m *= 2
    return out + [n_shards]


def certified_epsilon(hist_p: np.ndarray, hist_q: np.ndarray, edges: np.ndarray, tests: Sequence[Tuple[float, str]],
                      delta: float, level: float) -> float:
    """max over ``tests`` of the ε lower bound log((CP_lower(P(S)) - δ) / CP_upper(Q(S))), every rate at
    ``level`` / (2 len(tests)): a lower bound on ε at δ with probability ≥ 1 - ``level`` (union bound)."""
    a = level / (2 * len(tests))
    best = 0.0
    for threshold, side in tests:
        tp, fp, n_pos, n_neg = side_counts(hist_p, hist_q, side)
        j = edge_index(edges, threshold)
        best = max(best, float(_eps_of(tp[j], fp[j], n_pos, n_neg, delta, a, a)))
    return best


def certified_profile(hist_p: np.ndarray, hist_q: np.ndarray, edges: np.ndarray, tests: Sequence[Tuple[float, str]],
                      alphas: Sequence[float], level: float) -> np.ndarray:
    """Lower bounds on H_α(P ‖ Q) (a certified lower privacy profile δ(ε = log α)), one per α, holding for every α
    at once with probability ≥ 1 - ``level``: max over ``tests`` of CP_lower(P(S)) - α CP_upper(Q(S)), every rate at
    ``level`` / (2 len(tests)) (union bound over the tests only: the α-dependence is deterministic). Never below 0."""
    alphas = np.asarray(alphas, dtype=float)
    a = level / (2 * len(tests))
    best = np.zeros(len(alphas))
    for threshold, side in tests:
        tp, fp, n_pos, n_neg = side_counts(hist_p, hist_q, side)
        j = edge_index(edges, threshold)
        best = np.maximum(best, float(cp_lower(tp[j], n_pos, a)) - alphas * float(cp_upper(fp[j], n_neg, a)))
    return best


@dataclass
class SequentialTest:
    """The stop rule of :func:`attacks.montecarlo.shards.run_shards`: True at the first violating checkpoint.

    ``sequential=False``: one checkpoint (all shards) at level 1 - confidence, the fixed-sample version.

    ``history``: one entry per checkpoint reached (trials per world, level α_k, certified ε lower bound).
    """

    n_shards: int
    edges: np.ndarray
    tests: List[Tuple[float, str]]
    epsilon_sound: float
    delta: float
    confidence: float
    profile: List[Tuple[float, float]] = field(default_factory=list)
    sequential: bool = True
    history: List[dict] = field(default_factory=list)
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
            self.history.append({"trials": p.trials, "shards": m, "level": level, "epsilon_lower": value,
                                 "profile_excess": excess, "h_lower": lower.tolist(), "violation": self.violation})
        return self.violation

    def summary(self) -> dict:
        """JSON-ready: violation, trials per world at the decision, the certified value there, the history."""
        last = self.history[-1] if self.history else {"trials": 0, "epsilon_lower": 0.0}
        return {"violation": self.violation, "sequential": self.sequential, "trials": last["trials"], "epsilon_lower": last["epsilon_lower"],
                "profile_excess": last.get("profile_excess"),
                "profile": [{"alpha": x, "h_sound": h, "h_lower": lo}
                            for (x, h), lo in zip(self.profile, last.get("h_lower", []))],
                "epsilon_sound": self.epsilon_sound, "confidence": self.confidence, "tests": len(self.tests),
                "checkpoints": self.history}


__all__ = ["SequentialTest", "certified_epsilon", "certified_profile", "checkpoints"]
