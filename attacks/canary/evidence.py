"""A one-run audit's evidence (per-canary scores and inclusion bits), pooled over runs and certified by a plug-in certifier.

:class:`Evidence` holds one or more scores per canary, fixed before the run, and whether the canary was included
(a run's evidence may say more of the run: :class:`attacks.canary.gradient.CanaryEvidence`, ...). A *certifier* is any
function ``(scores, included, delta, confidence)`` of one score vector that answers a typed score bound
(:mod:`attacks.canary.certified`) with ``epsilon_lower`` (a **lower** bound on ε at δ, holding with
probability ≥ confidence):
:func:`steinke` (Steinke, Nasr & Jagielski 2023, :mod:`attacks.canary.steinke_bound`) by
default; :func:`fdp` (the f-DP one-run test, every guess set against a trade-off curve, with
Steinke's bound as its declared-share baseline) plugs in the same way and is what audits of
users' training functions use. :func:`certify_evidence` runs it on
every named score at confidence 1 - (1 - confidence) / (number of scores) (Bonferroni), so the
best of them holds at ``confidence``.

Pooling runs (:func:`pool`). R independent runs of the training, each with fresh canaries
(fresh directions or spikes, fresh independent inclusion bits) and its own seed, give R·m
canaries. Their concatenation is the evidence of *one* run of the product mechanism
M(S) = (M_1(S_1), ..., M_R(S_R)), whose input is all R·m inclusion bits, each included
independently with probability 1/2. Changing canary (r, i) changes only M_r's input; the other
runs' outputs are independent of it, so M is (ε, δ)-DP in each canary whenever every M_r is
(ε, δ)-DP in each of its canaries: no composition, the per-canary ε is the one of a single
run (a canary lives in one run only). The one-run theorems assume exactly this (independent
inclusion with probability 1/2, scores a function of the output), so they apply to the pooled
R·m canaries and certify: "the training is not (ε, δ)-DP with respect to one canary
(event level) for ε below ``epsilon_lower``", with m·R in place of m in the bound (in
Steinke et al.'s δ term as well). The order of concatenation is fixed by the run index, never
by completion order, so 1 or N workers give the same certified numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Sequence

import numpy as np

from .audit_result import EvidenceBound
from .certified import FdpScoreBound, ScoreBound, ScoreResult
from .steinke_bound import check_evidence, with_auc
from .steinke_bound import certify as _steinke_certify

Certifier = Callable[[np.ndarray, np.ndarray, float, float], ScoreResult]


@dataclass(frozen=True)
class Evidence:
    """What one audit (or R pooled runs) gives a certifier.

    Attributes:
        scores: each named (m,) score vector, fixed before the run (higher: more likely included).
        included: (m,) whether each canary was included.
    """

    scores: Dict[str, np.ndarray]
    included: np.ndarray


def steinke(scores: np.ndarray, included: np.ndarray, delta: float, confidence: float) -> ScoreBound:
    """Steinke et al. (2023) on one score vector (:func:`attacks.canary.steinke_bound.certify`).

    Args:
        scores: (m,) scores, higher = more likely included.
        included: (m,) inclusion bits.
        delta: The δ of the bound.
        confidence: The probability with which it holds.

    Returns:
        Guesses, AUC and the ε lower bound (a **lower** bound on ε at ``delta``).
    """
    return _steinke_certify({"score": scores}, included, delta, confidence).scores["score"]


def fdp(scores: np.ndarray, included: np.ndarray, delta: float, confidence: float, *,
        claimed: Optional[object] = None) -> FdpScoreBound:
    """The f-DP one-run test (Mahloujifar, Melis & Chaudhuri 2025; :func:`attacks.canary.fdp_bound.certify`) on one
    score vector, with Steinke et al.'s bound as its baseline on the same guess sets, the confidence split between
    them declared before the scores: the (ε, δ) ε lower bound (the larger of the two assumption-free bounds),
    ``epsilon_if_gaussian`` (a lower bound only if the training's curve is Gaussian, at its own confidence, outside
    the verdict), the perfect-guess ``ceiling`` and ``limited_by``; plus the scores' AUC. With
    ``claimed`` (the run's claimed profile, e.g. its sound accountant) the claimed trade-off curve is tested too,
    with its own declared share: ``violation`` when the guesses reject it.

    Args:
        scores: (m,) scores, higher = more likely included.
        included: (m,) inclusion bits.
        delta: The δ of the bounds.
        confidence: The probability with which the verdict holds.
        claimed: The run's claimed profile (None: no curve test).

    Returns:
        The :class:`~attacks.canary.certified.FdpScoreBound` (a **lower** bound on ε at ``delta``).
    """
    from .fdp_bound import certify as fdp_certify

    return with_auc(fdp_certify(scores, included, delta, confidence, claimed=claimed), scores, included)


CERTIFIERS: Dict[str, Certifier] = {"fdp": fdp, "steinke": steinke}
"""The one-run analyses by name (`tsdp audit-fn --analysis`)."""


def pool(evidences: Sequence[Evidence]) -> Evidence:
    """The concatenation of runs' evidence in the given order (module docstring): same score names in every run.

    Each run's arrays are checked as the certifiers check them (ValueError for NaN scores, inclusion bits that are
    not 0/1, ...); what else a run's evidence says of its run stays with the run.

    Args:
        evidences: The runs' evidence, in run order.

    Returns:
        The pooled :class:`Evidence` of m·R canaries.

    Raises:
        ValueError: No evidence, no score, runs with different score names, or bad arrays.
    """
    if not evidences:
        raise ValueError("no evidence to pool")
    names = list(evidences[0].scores)
    if not names:
        raise ValueError("no scores to pool: every run needs at least one named score vector")
    if any(list(e.scores) != names for e in evidences):
        raise ValueError("every run must give the same scores")
    checked = [{n: check_evidence(e.scores[n], e.included) for n in names} for e in evidences]
    return Evidence(scores={n: np.concatenate([c[n][0] for c in checked]) for n in names},
                    included=np.concatenate([next(iter(c.values()))[1] for c in checked]))


def certify_evidence(evidence: Evidence, delta: float, confidence: float, *, certifier: Certifier = steinke,
                     claimed: Optional[float] = None, profile: Optional[object] = None) -> EvidenceBound:
    """Certify ``evidence`` (Bonferroni over its scores; module docstring), with ``violation`` against the claim.

    ``epsilon_lower`` is the best score's bound (a **lower** bound on ε at ``delta`` with
    probability ≥ ``confidence``). ``violation``: ``epsilon_lower > claimed`` for a finite
    ``claimed`` ε (``above_claim``), or, with ``profile`` (the run's claimed profile; the :func:`fdp` certifier
    only), a score whose guesses reject the claimed trade-off curve; both hold together at
    ``confidence`` (the curve test has its declared share of each score's level).

    Args:
        evidence: The audit's (or the pooled runs') evidence.
        delta: The δ of the bound.
        confidence: The probability with which the bound and the curve test hold together.
        certifier: The one-run analysis of one score (:data:`CERTIFIERS`).
        claimed: The ε the training claims at ``delta`` (None: none).
        profile: The run's claimed profile (the :func:`fdp` certifier only).

    Returns:
        The :class:`~attacks.canary.audit_result.EvidenceBound`.

    Raises:
        ValueError: No score, bad arrays, or a profile with a certifier other than :func:`fdp`.
    """
    scores = evidence.scores
    if not scores:
        raise ValueError("no scores to certify: the evidence needs at least one named score vector")
    checked = {name: check_evidence(s, evidence.included) for name, s in scores.items()}
    included = next(iter(checked.values()))[1]
    each = 1 - (1 - confidence) / len(scores)
    if profile is not None and certifier is not fdp:
        raise ValueError("a claimed profile is tested by the f-DP certifier only")
    extra = {} if profile is None else {"claimed": profile}
    out = {name: certifier(s, included, delta, each, **extra) for name, (s, _) in checked.items()}
    lower = max(r.epsilon_lower for r in out.values())
    above = claimed is not None and math.isfinite(claimed) and lower > claimed
    curve = profile is not None and any(r.violation for r in out.values())
    return EvidenceBound(canaries=int(included.size), included=int(included.sum()), delta=delta,
                         confidence=confidence, epsilon_lower=lower, epsilon_claimed=claimed,
                         violation=bool(above or curve), above_claim=bool(above),
                         curve_rejected=curve if profile is not None else None, scores=out)


__all__ = ["CERTIFIERS", "Certifier", "Evidence", "certify_evidence", "fdp", "pool", "steinke"]
