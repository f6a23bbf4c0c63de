"""The ideal audit: what the same gradient canaries certify on the claimed mechanism itself, its power at the claim.

:func:`ideal_evidence` simulates the canaries' observations under the claimed DP-SGD step (the scheme's participation
law, the declared σ, the cross-talk of more canaries than parameters, the dimensions a run takes off);
:func:`ideal_epsilon` certifies it as a run is certified, to print beside a run's certified ε; :func:`best_canaries`
picks the number of canaries per run that certifies most. None of these is a bound on a training: a certified 0 on a
real run is an answer only when the ideal is clearly above 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import torch

from tsdp.theorems.config import TrainingConfig

from .evidence import Evidence
from .gradient import (MAX_DIRECTION_ENTRIES, SCORES, Participation, canary_directions, mixture_scores,
                       participation_rate)


@dataclass(frozen=True)
class IdealEvidence(Evidence):
    """The evidence of canaries on the claimed mechanism itself (:func:`ideal_evidence`).

    Attributes:
        participations: (m,) the steps each canary took part in, included or not.
    """

    participations: np.ndarray


def ideal_evidence(config: TrainingConfig, m: int, steps: int, seed: int = 0, *, parameters: Optional[int] = None,
                   per_run: Optional[int] = None, removed: float = 0.0) -> IdealEvidence:
    """The evidence the same m canaries give on the claimed mechanism itself: the **power** of the audit at the claim.

    The canaries take part with the law of :class:`Participation` (the scheme's sampler), and
    the step releases V_t = Σ_j [j included] K_{t,j} u_j + σ ξ_t (in units of C times the
    gradient's scale, ξ_t ~ N(0, I_d), no data); canary i observes z_{t,i} = ⟨V_t, u_i⟩ / σ. With
    orthonormal directions (m ≤ d, or ``parameters`` not given) that is [i included] K_{t,i} / σ +
    N(0, 1), simulated directly; with more canaries per run (``per_run``, default m) than
    ``parameters`` d, the directions are i.i.d. and fresh at every step (:func:`canary_directions`) and each
    canary's observation holds the others' projections: the cross-talk that costs more canaries power once m
    nears d (each run's canaries share the d dimensions; runs are independent). A run
    that takes ``removed`` of the d dimensions off per step (the data's span or the windows a
    pursuit found, :mod:`attacks.canary.data_span`) keeps the share 1 - removed / d of each
    canary's signal and noise: its signal-to-noise ratio is scaled by √(1 - removed / d). Scored
    as a run is: the ``sum``, and the ``mixture`` of :func:`mixture_scores` (the median-centred
    subsampled-Gaussian likelihood ratio; the centring costs power when the noise dominates, in
    the ideal as in the run). Certified like a run, it says how
    much ε an audit of this size, participation and dimension can see when the training is
    exactly what it claims: a certified 0 on the real run is an answer only when this is clearly
    above 0.

    Args:
        config: The claimed configuration (σ and the batching).
        m: The canaries.
        steps: The steps of the run.
        seed: The seed of the simulated run.
        parameters: d, the parameters the canaries share (None: orthonormal directions, no cross-talk).
        per_run: The canaries of one run (None: all m in one run).
        removed: The data windows taken off per step (their dimensions leave the canaries' scores).

    Returns:
        The :class:`IdealEvidence` of the claimed mechanism.
    """
    seeds = np.random.SeedSequence(seed) if isinstance(seed, int) else seed
    inclusion, placement, steps_seed, noise = seeds.spawn(4)
    included = np.random.default_rng(inclusion).random(m) < 0.5
    part = Participation(config, m, np.random.default_rng(placement),
                         torch.Generator().manual_seed(int(steps_seed.generate_state(1)[0] >> np.uint32(1))))
    counts = torch.stack([part.next() for _ in range(steps)]).double().numpy() if steps else np.zeros((0, m))
    sigma = max(float(config.sigma), 1e-3)
    rng = np.random.default_rng(noise)
    block = m if per_run is None else per_run
    kept = np.sqrt(max(1.0 - removed / parameters, 0.0)) if parameters else 1.0
    if parameters is None or block <= parameters:
        z = kept * counts * included / sigma + rng.standard_normal(counts.shape)
    else:
        z = np.empty(counts.shape)
        for lo in range(0, m, block):
            seed_of_run = int(rng.integers(2 ** 62))
            for t in range(steps):
                u = canary_directions(min(block, m - lo), parameters, seed_of_run, t).numpy()
                released = kept * (counts[t, lo:lo + block] * included[lo:lo + block]) @ u / sigma
                z[t, lo:lo + block] = (released + rng.standard_normal(parameters)) @ u.T
    return IdealEvidence(scores=dict(zip(SCORES, (z.sum(axis=0), mixture_scores(z, sigma, participation_rate(config))))),
                         included=included, participations=counts.sum(axis=0))


def ideal_epsilon(config: TrainingConfig, m: int, steps: int, delta: float, confidence: float, *, certifier: Optional[Callable] = None,
                  seed: int = 0, parameters: Optional[int] = None, per_run: Optional[int] = None,
                  removed: float = 0.0) -> float:
    """The ε certified on :func:`ideal_evidence` (``certifier`` default: the f-DP test): a **lower** bound's power at
    the claim, to print beside a run's certified ε (``parameters``, ``per_run``: the cross-talk of more canaries
    per run than parameters; ``removed``: the dimensions a run takes off per step).

    Args:
        config: The claimed batching and σ.
        m: The canaries, all runs together.
        steps: The training steps of a run.
        delta: The δ of the bound.
        confidence: The audit's confidence.
        certifier: The one-run analysis (default: the f-DP test).
        seed: The seed of the simulated evidence.
        parameters: The trainable parameters d (None: orthonormal directions, no cross-talk).
        per_run: The canaries of one run (default m).
        removed: The dimensions a run takes off per step.

    Returns:
        The certified ε on the claimed mechanism itself (the audit's power at the claim).
    """
    from .evidence import certify_evidence, fdp

    evidence = ideal_evidence(config, m, steps, seed, parameters=parameters, per_run=per_run, removed=removed)
    return float(certify_evidence(evidence, delta, confidence, certifier=certifier or fdp).epsilon_lower)


IDEAL_SEEDS = 3
"""Independent ideal audits averaged per candidate by :func:`best_canaries` (one is noisy: ±0.3 in ε measured)."""


def best_canaries(config: TrainingConfig, steps: int, parameters: int, delta: float, confidence: float, *,
                  runs: int = 1, certifier: Optional[Callable] = None, seed: int = 0, candidates: Optional[Sequence[int]] = None) -> dict:
    """The number of canaries per run whose :func:`ideal_epsilon` (cross-talk included, mean of :data:`IDEAL_SEEDS`
    audits) is largest: more canaries certify more only while they do not drown each other. ``candidates``
    default: d / 8, d / 4, d / 2, d, 2d, 4d (at least 2, at most what :data:`MAX_DIRECTION_ENTRIES` holds).
    Returns {"canaries": best m per run, "epsilon_ideal": its mean, "table": {m: mean}} (a plan of the audit's
    power, not a bound).

    Args:
        config: The claimed batching and σ.
        steps: The training steps of a run.
        parameters: The trainable parameters d.
        delta: δ.
        confidence: The audit's confidence.
        runs: The runs R.
        certifier: The one-run analysis (default the f-DP test).
        seed: The seed of the ideal audits.
        candidates: The canaries per run tried.

    Returns:
        ``{"canaries", "epsilon_ideal", "table"}``.
    """
    d = parameters
    if candidates is None:
        candidates = [d // 8, d // 4, d // 2, d, 2 * d, 4 * d]
    cap = max(2, MAX_DIRECTION_ENTRIES // max(d, 1))
    table = {}
    for m in sorted({min(max(2, int(c)), cap) for c in candidates}):
        values = [ideal_epsilon(config, m * runs, steps, delta, confidence, certifier=certifier, parameters=d,
                                per_run=m, seed=np.random.SeedSequence([seed, m, i])) for i in range(IDEAL_SEEDS)]
        table[m] = float(np.mean(values))
    best = max(table, key=lambda m: (table[m], -m))
    return {"canaries": best, "epsilon_ideal": table[best], "table": table}


__all__ = ["IDEAL_SEEDS", "IdealEvidence", "best_canaries", "ideal_epsilon", "ideal_evidence"]
