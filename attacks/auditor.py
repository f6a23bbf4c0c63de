"""The Monte Carlo privacy auditor: a proof's worst case through the real loop, an ε lower bound with confidence.

:func:`audit` builds the construction of the audited theorem (:mod:`attacks.worst_case`),
runs ``trials`` independent trials of ``steps`` DP-SGD steps in each neighbouring world
through the real loop (:mod:`attacks.auditor_run`), and reports

* ``epsilon_lower``: a lower confidence bound on the mechanism's ε at δ (Neyman-Pearson
  statistic = Σ_s log p(y_s)/q(y_s) of the construction's known mixtures; threshold chosen
  on a selection split; Clopper-Pearson on the held-out split; :mod:`attacks.auditor_stats`);
* ``epsilon_sound``: the composed ε the sound bound claims (an upper bound; pessimistic PLD);
* ``epsilon_attained``: the composed ε of the construction's exact pair (what a perfect
  attack reaches; optimistic PLD); ``ratio`` = epsilon_lower / epsilon_attained;
* ``profile``: lower confidence bounds on H_α next to the sound bound's H_α;
* ``gof_pvalue``: KS test of the observed one-step updates against the construction's mixture.

A violation epsilon_lower > epsilon_sound (beyond the confidence level) is a privacy bug in
the theory or in the loop. For the pooled-window loop (``audit("T13" | "T14", ...)``, claim
C6) ``epsilon_sound`` is what T13, the standard one-record guarantee, claims; the loop's
element-level leakage attains T14 and may exceed it.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import List, Sequence

import numpy as np
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.registry import get
from tsdp.verify.pld import DEFAULT_DISCRETIZATION, compose, pair_pld, sound_pld

from .auditor_run import released_update_chunks, resolve_device
from .auditor_stats import epsilon_lower_bound, goodness_of_fit, hockey_stick_lower_bounds, log_likelihood_ratio
from .worst_case import Construction, build, pair_numeric

DEFAULT_ALPHAS = tuple(float(math.exp(e)) for e in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0))


@dataclass
class AuditResult:
    """One audit. ``to_dict()`` gives the JSON keys of `tsdp audit --json` (and the report's input)."""

    theorem: str
    config: dict
    trials: int
    steps: int
    delta: float
    confidence: float
    epsilon_lower: float
    epsilon_sound: float
    epsilon_attained: float
    ratio: float
    gof_pvalue: float
    profile: List[dict]
    sound_theorem: str
    attained_pair: str
    gof: dict = field(default_factory=dict)
    test: dict = field(default_factory=dict)
    device: str = "cpu"
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _check(trials, steps, delta, confidence, alphas) -> List[float]:
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 20:
        raise ConfigError("trials", "must be an integer >= 20 (trials per world)", trials)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ConfigError("steps", "must be an integer >= 1", steps)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0 < float(delta) < 1):
        raise ConfigError("delta", "must be in (0, 1)", delta)
    if not (0 < confidence < 1):
        raise ConfigError("confidence", "must be in (0, 1)", confidence)
    alphas = list(DEFAULT_ALPHAS if alphas is None else alphas)
    for a in alphas:
        if not (isinstance(a, (int, float)) and math.isfinite(a) and a >= 1):
            raise ConfigError("alphas", "every α must be finite and >= 1", a)
    return [float(a) for a in alphas]


def theory(construction: Construction, steps: int, delta: float, alphas: Sequence[float],
           discretization: float = DEFAULT_DISCRETIZATION) -> dict:
    """Sound ε (upper bound: the sound bound's pessimistic PLD composed), attained ε (the construction's pair,
    optimistic PLD, both directions, composed: what a perfect attack reaches) and the sound H_α, after ``steps``
    compositions (PLD value discretisation ``discretization``; coarser keeps both directions of rounding)."""
    cfg = construction.config
    bound = get(construction.sound_theorem)
    sound = compose(sound_pld(bound, cfg, discretization), steps)
    attained = compose(pair_pld(construction.pair, discretization, pessimistic=False), steps)
    if steps == 1:
        h = bound.profile(cfg, np.asarray(alphas), check=False)
    else:
        h = np.array([float(sound.get_delta_for_epsilon(math.log(a))) for a in alphas])
    return {"epsilon_sound": float(sound.get_epsilon_for_delta(delta)),
            "epsilon_attained": float(attained.get_epsilon_for_delta(delta)), "h_theory": h}


def run_worlds(construction: Construction, trials: int, steps: int, generator: torch.Generator, *,
               sampler=None, progress: bool = False):
    """(LLR sums in P, LLR sums in Q, first-step updates in P, in Q): the auditor's raw material, as numpy arrays.

    Trials run through the real loop in chunks; only the Neyman-Pearson statistic and the
    first step's update are kept, so 10^7 trials × S steps fit in memory.
    """
    from tqdm.auto import tqdm

    num = pair_numeric(construction.pair)
    bar = tqdm(total=2 * trials, disable=not progress, desc=f"audit {construction.theorem}", unit="trial",
               file=sys.stderr, unit_scale=True)
    out = []
    for world in ("p", "q"):
        llr, first = [], []
        for chunk in released_update_chunks(construction, world, trials, steps, generator, sampler=sampler):
            y = chunk.numpy()
            llr.append(log_likelihood_ratio(y, num))
            first.append(y[:, 0].copy())
            bar.update(len(y))
        out.append((np.concatenate(llr), np.concatenate(first)))
    bar.close()
    (llr_p, y_p), (llr_q, y_q) = out
    return llr_p, llr_q, y_p, y_q


def audit(theorem: str, config: TrainingConfig, *, trials: int, steps: int = 1, delta: float, seed: int = 0,
          device: str = "auto", alphas=None, progress: bool = False, confidence: float = 0.95,
          sampler=None, discretization: float = DEFAULT_DISCRETIZATION, select_fraction: float = 0.5) -> AuditResult:
    """Audit ``theorem``'s worst case on ``config``'s sizes: ``trials`` trials of ``steps`` steps per world.

    The theorem fixes the scheme (T1/T3/T4 deterministic top level, T6/T9/T10/T11 WOR, T13/T14
    pooled windows; WR bottom level except T4/T10 Poisson); the configuration gives N, L, L_C,
    L_F, Λ, λ, σ and σ_C, σ_F (T11). ``epsilon_lower`` is a **lower** bound on the true ε at δ
    with probability ≥ ``confidence``; ``sampler`` replaces the scheme's sampler (tests);
    ``discretization`` is the PLD grid of the theory numbers (sound rounds up, attained down);
    ``select_fraction`` of the trials choose the test, the rest bound its error rates (held out).

    ``steps`` counts compositions: for the step-scoped schemes (WOR top level, pooled) one
    composition is one step; for the epoch-scoped ones (deterministic top level: T1, T3, T4)
    one composition is one epoch of ceil(N / N') steps, and ``epsilon_sound`` /
    ``epsilon_attained`` are composed as often. "S training steps" of a deterministic scheme
    are therefore ``steps = ceil(S / steps_per_epoch)`` here (10 steps at N = 320, N' = 64: 2).
    """
    alphas = _check(trials, steps, delta, confidence, alphas)
    dev = resolve_device(device)
    construction = build(theorem, config, device=dev)
    generator = torch.Generator(device=dev).manual_seed(seed)
    started = time.perf_counter()
    llr_p, llr_q, y_p, y_q = run_worlds(construction, trials, steps, generator, sampler=sampler, progress=progress)
    if not (0 < select_fraction < 1):
        raise ConfigError("select_fraction", "must be in (0, 1)", select_fraction)
    test = epsilon_lower_bound(llr_p, llr_q, delta, confidence, select_fraction)
    h_lower = hockey_stick_lower_bounds(llr_p, llr_q, alphas, confidence, select_fraction)
    gof = goodness_of_fit(y_p, y_q, pair_numeric(construction.pair))
    th = theory(construction, steps, delta, alphas, discretization)
    attained = th["epsilon_attained"]
    return AuditResult(
        theorem=construction.theorem, config=construction.config.as_dict(), trials=trials, steps=steps,
        delta=float(delta), confidence=confidence, epsilon_lower=test.value, epsilon_sound=th["epsilon_sound"],
        epsilon_attained=attained, ratio=test.value / attained if attained > 0 else float("nan"),
        gof_pvalue=gof["pvalue"],
        profile=[{"alpha": a, "h_lower": float(h), "h_theory": float(t)}
                 for a, h, t in zip(alphas, h_lower, th["h_theory"])],
        sound_theorem=construction.sound_theorem,
        attained_pair=construction.attained_theorem or "T11 construction (augmentation_pair)",
        gof=gof, test=asdict(test), device=str(dev), seconds=time.perf_counter() - started,
    )


__all__ = ["AuditResult", "audit", "run_worlds", "theory", "DEFAULT_ALPHAS"]
