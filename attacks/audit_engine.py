"""The auditor's statistics pipeline: design the test, run the shards, merge, certify (lower bounds).

:func:`audit_statistics` is what :func:`attacks.auditor.audit` runs between building the
construction and reporting: the law of the statistic under the claimed pair
(:mod:`attacks.audit_design`), the shards (:mod:`attacks.distributed`), and the bounds
(:mod:`attacks.auditor_stats`, :mod:`attacks.sequential`). ``threshold="theory"`` fixes the test
before sampling and spends every trial on the estimate; ``threshold="split"`` chooses it on a
selection share of the shards (the first ones) and certifies on the rest, for when the claimed
pair is not trusted to be the law (it is what an audit of unknown statistics needs).
"""
from __future__ import annotations

import functools
import math
from typing import Optional, Sequence, Tuple

import numpy as np

from .audit_design import design_test, histogram_edges, profile_thresholds, statistic_law, tail_thresholds
from .auditor_stats import (binned_goodness_of_fit, choose_profile_tests, fixed_test_bound, profile_lower_bounds,
                            split_test_bound)
from .distributed import DEFAULT_SHARD_SIZE, merge, plan_shards, run_shard, run_shards
from .sequential import SequentialTest
from .worst_case import Construction, pair_numeric

THRESHOLDS = ("theory", "split")
Y_BINS = 4096


def y_edges_of(pair_num) -> np.ndarray:
    """Histogram edges of the one-step update: the pair's means ± 8σ in ``Y_BINS`` bins (plus under/overflow)."""
    a, _, b, _, sigma = pair_num
    means = np.concatenate([a, b])
    return np.linspace(means.min() - 8 * sigma, means.max() + 8 * sigma, Y_BINS + 1)


def audit_statistics(construction: Construction, *, trials: int, steps: int, delta: float, confidence: float,
                     alphas: Sequence[float], seed: int, device: str, workers: int = 1, cluster: Optional[str] = None,
                     shard_size: int = DEFAULT_SHARD_SIZE, threshold: str = "theory", select_fraction: float = 0.5,
                     epsilon_sound: Optional[float] = None, sound_profile: Sequence[Tuple[float, float]] = (),
                     sequential: bool = False,
                     loop: str = "correct", sampler=None, progress: bool = False, shard_fn=run_shard) -> dict:
    """Run the audit's trials in shards and certify: {"test", "h_lower", "gof", "violation_test", "run", "design"}.

    ``test``: the ε lower bound at δ (a :class:`auditor_stats.TestBound`; probability ≥ ``confidence``);
    ``h_lower``: lower bounds on H_α per α (pointwise confidence); ``violation_test`` (when
    ``epsilon_sound`` is given): the violation test of ε_sound at δ and of the sound profile's
    points ``sound_profile`` [(α, H_α)] on all trials, or with ``sequential`` the anytime-valid
    one at geometric checkpoints, which may stop the run early (``test`` is then its certified
    value at the stopping checkpoint). ``shard_fn``: the unit of work (fault-injection
    tests wrap it, :class:`attacks.distributed.FailOnce`). Lower-bound direction.
    """
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold must be one of {', '.join(THRESHOLDS)}, got {threshold!r}")
    num = pair_numeric(construction.pair)
    if threshold == "split":  # shards small enough for a selection share in steps of 5%
        shard_size = min(shard_size, max(1, math.ceil(trials / 20)))
    n_shards = math.ceil(trials / shard_size)
    key = tuple(tuple(np.atleast_1d(x).tolist()) for x in num)
    seq_logs = None if epsilon_sound is None else tuple(math.log(x) for x, _ in sound_profile)
    if seq_logs is not None and threshold == "theory":
        seq_logs = seq_logs + (None,)  # the violation test's family includes the estimate's test
    design, profile_tests, seq_tests, edges = plan_tests(key, steps, trials, float(delta), float(confidence),
                                                         tuple(alphas), threshold == "theory", seq_logs)
    y_edges = y_edges_of(num)
    specs = plan_shards(construction.theorem, construction.config, trials, steps, seed, edges, y_edges,
                        shard_size=shard_size, device=device, loop=loop, sampler=sampler,
                        threads=None if (workers == 1 and cluster is None) else _threads(workers, cluster))
    seq = None
    if epsilon_sound is not None:
        seq = SequentialTest(n_shards, edges, seq_tests, float(epsilon_sound), delta, confidence,
                             [(float(x), float(h)) for x, h in sound_profile] + [(math.exp(epsilon_sound), delta)],
                             sequential=sequential)
    results, run = run_shards(specs, workers=workers, cluster=cluster, progress=progress,
                              stop=seq if sequential else None, shard_fn=shard_fn)
    if seq is not None and not sequential:
        seq(results)  # one checkpoint: all shards, level 1 - confidence
    stopped = seq is not None and sequential and seq.violation
    used = seq.history[-1]["shards"] if stopped else n_shards
    p, q = merge(results, "p", used), merge(results, "q", used)
    if stopped:
        test = {"value": seq.history[-1]["epsilon_lower"], "threshold": None, "side": "sequential",
                "union_value": None, "true_positives": None, "false_positives": None, "n_positive": p.trials, "n_negative": q.trials}
        h_lower = np.maximum(0.0, 1.0 - np.asarray(alphas))
    elif threshold == "theory":
        test = fixed_test_bound(p.counts, q.counts, edges, design.threshold, design.side, delta, confidence,
                                design.fp_share).__dict__
        h_lower = profile_lower_bounds(p.counts, q.counts, edges, profile_tests, alphas, confidence)
    else:
        n_sel = min(n_shards - 1, max(1, round(select_fraction * n_shards)))
        sel = (merge(results, "p", n_sel).counts, merge(results, "q", n_sel).counts)
        out = (p.counts - sel[0], q.counts - sel[1])
        test = split_test_bound(sel, out, edges, delta, confidence).__dict__
        h_lower = profile_lower_bounds(*out, edges, choose_profile_tests(*sel, edges, alphas, confidence), alphas,
                                       confidence)
    gof = binned_goodness_of_fit(p.y_counts, q.y_counts, y_edges, num)
    run.update(shard_size=shard_size, trials_run=p.trials, edges=len(edges))
    return {"test": dict(test), "h_lower": h_lower, "gof": gof, "run": run,
            "violation_test": seq.summary() if seq is not None else None,
            "design": None if design is None else {**design.__dict__, "source": "theory"}}


@functools.lru_cache(maxsize=32)
def plan_tests(pair_key: tuple, steps: int, trials: int, delta: float, confidence: float, alphas: tuple,
               theory: bool, sequential_logs: Optional[tuple]):
    """(design, H_α tests, sequential tests, histogram edges) of an audit, all fixed before sampling.

    ``pair_key``: the pair's numeric arrays as tuples (cached: repeated audits of one construction
    design once). ``theory``: design the ε and H_α tests from the statistic's law (else None: split mode).
    ``sequential_logs``: log α of the sound profile's points the violation test checks (None: no test; an
    entry None adds the designed test to the violation test's family).
    """
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


def _threads(workers: int, cluster: Optional[str]) -> Optional[int]:
    """torch threads per worker: the local cores shared out (None on a remote cluster: its own setting)."""
    if cluster not in (None, "auto"):
        return None
    import os

    return max(1, (os.cpu_count() or 1) // workers)


__all__ = ["THRESHOLDS", "audit_statistics", "plan_tests", "y_edges_of"]
