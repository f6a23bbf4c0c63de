"""Certification of one score vector by the f-DP one-run audit (Mahloujifar, Melis & Chaudhuri 2025): every analysis
on the same guess sets (:mod:`attacks.canary.one_run`: the test, its theorem and proof), the confidence split
before the scores.

What is reported (soundness direction: every number is a LOWER bound, rounded down)
-----------------------------------------------------------------------------------
* ``dp``: the largest ε such that the (ε, δ)-DP curve f_{ε,δ}(α) = max(0, 1 - δ - e^ε α,
  e^{-ε} (1 - δ - α)) is rejected: the training is not (ε, δ)-DP, with probability
  ≥ confidence, for any ε below it. No assumption on the mechanism's curve.
* ``gdp``: the largest μ such that G_μ(α) = Φ(Φ⁻¹(1 - α) - μ) is rejected (the training
  is not μ-GDP, no assumption), and ε_μ(δ) from the exact GDP curve
  δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2), reported as ``epsilon_if_gaussian``: a lower
  bound on ε at δ **only if the training's trade-off curve is Gaussian** (as for the Gaussian
  mechanism and, approximately, for DP-SGD with many steps; under other curves, e.g.
  randomized response, it can exceed the true ε): the "empirical ε" of the f-DP audit
  literature. It is a separate statement at its own confidence, outside the verdict, so it
  takes no share of the error of the reported bound.
* ``claimed``: a claimed privacy profile δ(ε) (tsdp's accountant after ``compose``, a
  dp-accounting PLD, a function, or arrays) turned into its trade-off curve
  f(α) = sup_ε max(0, 1 - δ(ε) - e^ε α, e^{-ε} (1 - δ(ε) - α)) over a finite ε grid (a
  sup over fewer ε is a lower curve: a weaker hypothesis, so the test stays sound) and
  tested: ``violation`` means the claim is rejected at the stated confidence.
* ``steinke``: Steinke, Nasr & Jagielski (2023)'s (ε, δ) bound on the same guess sets
  (P[W ≥ c] ≤ P[Binom(k, e^ε/(1+e^ε)) ≥ c] + 2 m δ max_i P[c > Binom ≥ c - i]/i), the
  baseline. :func:`certify` splits 1 - confidence between the analyses that feed the
  reported bound and the verdict ("dp", "steinke", "claimed") in shares fixed by its
  arguments (:data:`SHARES`), never after seeing the scores, so the maximum of the
  assumption-free bounds and the curve test hold together at the stated confidence.

:func:`attacks.canary.planning.plan` says what an audit of m canaries can see (the ε each analysis certifies when
every guess is right, and the m needed to reach a claimed ε); :func:`certify` reports it with the result and
classifies the result as limited by the audit's size or by the training. This module also gives the names of the
curves (:mod:`attacks.canary.tradeoff`), the test and the plan under their former home.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from . import steinke_bound
from .certified import CurveTest, FdpAnalyses, FdpCertificate, GaussianBound, GuessSetBound
from .tradeoff import (MU_MAX, claimed_curve, dp_tradeoff, gdp_delta, gdp_epsilon, profile_deltas,
                         profile_tradeoff)
from .planning import BISECTION_TOL, flag_rate, perfect_ranking, perfect_ranking_quantile, plan
from .one_run import (MARGIN, ON_ITS_OWN, SHARES, SPLITS, _check_sets, ceilings, claim_rejected, correct_counts,
                       fdp_bounds, guess_grid, largest_rejected, rejects, significance_shares)


def certify(scores: np.ndarray, included: np.ndarray, delta: float, confidence: float = 0.95, *,
            analyses: Sequence[str] = ("dp", "gdp", "steinke"), claimed: Optional[object] = None,
            sets: Optional[np.ndarray] = None, seed: int = 0) -> FdpCertificate:
    """One-run audit of one score vector: every analysis in ``analyses`` on the same guess sets.

    The significance 1 - confidence is split between the analyses that feed the verdict in the fixed shares
    :data:`SHARES` (decided by the arguments, before the scores), so ``epsilon_lower`` (the larger of the
    assumption-free "dp" and "steinke" ε, a **lower** bound) and ``violation`` hold together at ``confidence``;
    ``epsilon_if_gaussian`` (the "gdp" analysis) is a statement of its own at ``confidence``, true only if the
    training's trade-off curve is Gaussian, and takes nothing from the verdict's error.

    Args:
        scores: (m,) scores, higher = more likely included.
        included: (m,) whether each canary was included.
        delta: The δ of the bounds, in (0, 1).
        confidence: The probability the verdict holds with, in (0, 1).
        analyses: The analyses to run ("dp", "gdp", "steinke").
        claimed: A claimed profile (callable δ(ε), a PLD, or (ε_grid, δ_grid)); adds the "claimed" analysis
            (``violation``).
        sets: Rows (k_in, k_out) of the guess sets (default :func:`attacks.canary.one_run.guess_grid`), fixed before the scores are
            seen: each row a guess set tested at the analysis's full share.
        seed: The seed of the permutation that breaks ties in the scores.

    Returns:
        The analyses' bounds, the verdict, ``ceiling`` (:func:`attacks.canary.planning.plan`'s perfect-guess ε per analysis for this m and
        these shares) and ``limited_by`` (:func:`limited_by`: which of the audit's size and the training limits the
        result).

    Raises:
        ValueError: Bad arrays (NaN scores, ``included`` not boolean-valued, lengths that differ, fewer than 2
            canaries, no guess sets), ``delta`` or ``confidence`` outside (0, 1), an unknown analysis.
    """
    scores, included = steinke_bound.check_evidence(scores, included)
    if scores.size < 2:
        raise ValueError("need at least 2 canaries")
    if not (0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1) (got {confidence})")
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) (got {delta})")
    m = scores.size
    names = [a for a in analyses if a != "claimed"] + (["claimed"] if claimed is not None else [])
    share = significance_shares(names, confidence)
    sets = guess_grid(m) if sets is None else _check_sets(sets, m)
    counts = correct_counts(scores, included, sets, np.random.default_rng(seed))
    ran = {}
    for a in names:
        if a == "claimed":
            ran[a] = CurveTest(violation=bool(claim_rejected(counts, sets, m, share[a], claimed_curve(claimed))))
            continue
        b = fdp_bounds(counts, sets, m, delta, share[a], a)
        best = int(b["best"])
        k_in, k_out, correct = int(sets[best, 0]), int(sets[best, 1]), int(counts[best])
        if a == "gdp":  # holds only under its assumption: named so, never "epsilon_lower"
            ran[a] = GaussianBound(float(b["epsilon"]), float(b["value"]), k_in, k_out, correct)
        else:
            ran[a] = GuessSetBound(float(b["epsilon"]), k_in, k_out, correct)
    found = FdpAnalyses(**ran)
    free = [bound.epsilon_lower for bound in found.bounds().values()]
    ceiling = ceilings(m, delta, confidence, analyses=names, sets=sets)
    return FdpCertificate(canaries=m, delta=delta, confidence=confidence, guess_sets=len(sets), significance=share,
                          analyses=found, epsilon_lower=max(free) if free else None,
                          epsilon_if_gaussian=None if found.gdp is None else found.gdp.epsilon_if_gaussian,
                          violation=found.claimed is not None and found.claimed.violation, ceiling=ceiling,
                          limited_by=limited_by(found, ceiling))


def limited_by(analyses: FdpAnalyses, ceiling: dict) -> str:
    """Which of the audit's size and the training limits an f-DP certificate.

    Args:
        analyses: The certificate's analyses.
        ceiling: The perfect-guess ε per analysis.

    Returns:
        "audit size" when some assumption-free analysis reaches its ceiling in the sense of
        :func:`attacks.canary.steinke_bound.limited_by`, else "training".
    """
    sizes = [steinke_bound.limited_by(bound.epsilon_lower, ceiling[a])
             for a, bound in analyses.bounds().items() if a in ceiling]
    return "audit size" if "audit size" in sizes else "training"


__all__ = ["BISECTION_TOL", "MARGIN", "MU_MAX", "ON_ITS_OWN", "SHARES", "SPLITS", "ceilings", "certify",
           "claim_rejected", "claimed_curve", "correct_counts", "dp_tradeoff", "fdp_bounds", "flag_rate", "gdp_delta",
           "gdp_epsilon", "guess_grid", "largest_rejected", "limited_by", "perfect_ranking", "perfect_ranking_quantile",
           "plan", "profile_deltas", "profile_tradeoff", "rejects"]
