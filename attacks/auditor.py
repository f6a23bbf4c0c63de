"""The Monte Carlo privacy auditor: a proof's worst case through the real loop, an ε lower bound with confidence.

:func:`audit` builds the construction of the audited theorem (:mod:`attacks.worst_case`),
runs ``trials`` independent trials of ``steps`` DP-SGD steps in each neighbouring world
through the real loop (:mod:`attacks.auditor_run`), and reports

* ``epsilon_lower``: a lower confidence bound on the mechanism's ε at δ (Neyman-Pearson
  statistic = Σ_s log p(y_s)/q(y_s) of the construction's known mixtures; threshold fixed
  before sampling from the pair's law, :mod:`attacks.audit_design`, or chosen on a selection
  split; the union of Clopper-Pearson bounds on the trials that were not used to choose, certified at its
  exact level; :mod:`attacks.auditor_stats`, :mod:`attacks.exact_level`);
* ``epsilon_sound``: the composed ε the sound bound claims (an upper bound; the sound
  ``PldAccountant`` of :mod:`tsdp.verify.accountant`, which alone composes PLDs);
* ``epsilon_attained``: the composed ε of the construction's exact pair (what a perfect
  attack reaches; the accountant's attained estimate); ``ratio`` = epsilon_lower / epsilon_attained;
* ``violation``: a certified (at ``confidence``) privacy bug in the theory or the loop: the
  violation test (:mod:`attacks.sequential`) finds H_α above the sound profile at some point of
  an ε grid, or ε above epsilon_sound at δ; `tsdp audit` then exits 1;
* ``attained_bracket``: the pair's composed ε with the optimistic and the pessimistic
  discretisation, and the composition gap sound ε - upper (:mod:`attacks.composition_gap`);
* ``profile``: lower confidence bounds on H_α next to the sound bound's H_α;
* ``gof_pvalue``: KS test of the observed one-step updates against the construction's mixture.

A violation epsilon_lower > epsilon_sound (beyond the confidence level) is a privacy bug in
the theory or in the loop. For the pooled-window loop (``audit("T13" | "T14", ...)``, claim
C6) ``epsilon_sound`` is what T13, the standard one-record guarantee, claims; the loop's
element-level leakage attains T14 and may exceed it.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import List, Optional, Sequence

import numpy as np

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.registry import get
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import compositions, training_event
from tsdp.verify.pld import DEFAULT_DISCRETIZATION

from .audit_engine import audit_statistics
from .auditor_run import resolve_device
from .composition_gap import attained_bracket
from .distributed import DEFAULT_SHARD_SIZE
from .worst_case import Construction, build

PROFILE_EPSILONS = tuple(0.5 * i for i in range(41))  # ε grid (≤ ε_sound used) of the sound profile the violation test checks
DEFAULT_ALPHAS = tuple(float(math.exp(e)) for e in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0))


@dataclass
class AuditResult:
    """One audit. ``to_dict()`` gives the JSON keys of `tsdp audit --json` (and the report's input)."""

    theorem: str
    config: dict
    trials: int
    steps: int
    compositions: int
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
    violation: bool
    gof: dict = field(default_factory=dict)
    test: dict = field(default_factory=dict)
    device: str = "cpu"
    seconds: float = 0.0
    design: Optional[dict] = None
    violation_test: Optional[dict] = None
    run: dict = field(default_factory=dict)
    attained_bracket: dict = field(default_factory=dict)

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
    """Sound ε (upper bound), attained ε (lower bound) and the sound H_α after ``steps`` training steps.

    Both from the accountant over :func:`tsdp.verify.events.training_event` of the
    construction's scheme: "sound" for the sound theorem, "attained" for the pair the
    construction realises (the audited theorem's, or the sound bound's own construction pair
    for T11). ``discretization`` is the PLD grid (sound rounds up, attained down).
    """
    cfg = construction.config
    attained_id = construction.attained_theorem or construction.sound_theorem
    sound = PldAccountant("sound", discretization=discretization).compose(
        training_event(cfg, steps=steps, theorem=construction.sound_theorem))
    attained = PldAccountant("attained", discretization=discretization).compose(
        training_event(cfg, steps=steps, theorem=attained_id))
    if compositions(cfg, steps=steps) == 1:
        h = get(construction.sound_theorem).profile(cfg, np.asarray(alphas), check=False)
    else:
        h = np.array([sound.get_delta(math.log(a)) for a in alphas])
    return {"epsilon_sound": sound.get_epsilon(delta), "epsilon_attained": attained.get_epsilon(delta), "h_theory": h}


def audit(theorem: str, config: TrainingConfig, *, trials: int, steps: int = 1, delta: float, seed: int = 0,
          device: str = "auto", alphas=None, progress: bool = False, confidence: float = 0.95,
          sampler=None, discretization: float = DEFAULT_DISCRETIZATION, select_fraction: float = 0.5,
          threshold: str = "theory", workers: int = 1, cluster: Optional[str] = None,
          shard_size: int = DEFAULT_SHARD_SIZE, sequential: bool = False, loop: str = "correct") -> AuditResult:
    """Audit ``theorem``'s worst case on ``config``'s sizes: ``trials`` trials of ``steps`` steps per world.

    The theorem fixes the scheme (T1/T3/T4 deterministic top level, T6/T9/T10/T11 WOR, T13/T14
    pooled windows; WR bottom level except T4/T10 Poisson); the configuration gives N, L, L_C,
    L_F, Λ, λ, σ and σ_C, σ_F (T11). ``epsilon_lower`` is a **lower** bound on the true ε at δ
    with probability ≥ ``confidence``; ``sampler`` replaces the scheme's sampler (tests);
    ``discretization`` is the PLD grid of the theory numbers (sound rounds up, attained down);
    ``threshold="theory"`` fixes the test before sampling from the construction's pair (all trials
    certify, :mod:`attacks.audit_design`); ``"split"``: ``select_fraction`` of the trials choose the
    test, the rest bound its error rates (held out). Trials run in shards (:mod:`attacks.distributed`)
    on ``workers`` local processes or a Dask ``cluster``; the same seed gives the same result on any
    number of workers. ``violation`` is the verdict of the violation test (:mod:`attacks.sequential`:
    the sound profile on an ε grid and (ε_sound, δ), certified exceeded at ``confidence``); with
    ``sequential`` it runs at geometric checkpoints and stops the audit at the first violation.
    ``loop`` plants a bug in the loop (:mod:`attacks.planted`).

    ``steps`` counts training steps, as everywhere in tsdp. The trials run the compositions
    those steps are (:func:`tsdp.verify.events.compositions`): one per step for the
    step-scoped schemes (WOR top level, pooled), one per epoch touched for the epoch-scoped
    ones (deterministic top level: T1, T3, T4; 10 steps at N = 320, N' = 64 touch 2 epochs),
    whose other steps release the same law in both worlds (:mod:`tsdp.attacks.auditor_run`).
    """
    alphas = _check(trials, steps, delta, confidence, alphas)
    dev = resolve_device(device)
    construction = build(theorem, config, device=dev)
    n = compositions(construction.config, steps=steps)
    started = time.perf_counter()
    if not (0 < select_fraction < 1):
        raise ConfigError("select_fraction", "must be in (0, 1)", select_fraction)
    grid = [float(math.exp(e)) for e in PROFILE_EPSILONS]
    th = theory(construction, steps, delta, list(alphas) + grid, discretization)
    h_user, h_grid = th["h_theory"][:len(alphas)], th["h_theory"][len(alphas):]
    # the sound profile on the ε grid up to ε_sound: the claim the violation test checks (with (ε_sound, δ))
    sound_profile = [(a, float(h)) for a, h, e in zip(grid, h_grid, PROFILE_EPSILONS) if e <= th["epsilon_sound"]]
    stats = audit_statistics(construction, trials=trials, steps=n, delta=delta, confidence=confidence, alphas=alphas,
                             seed=seed, device=device, workers=workers, cluster=cluster, shard_size=shard_size,
                             threshold=threshold, select_fraction=select_fraction, loop=loop, sampler=sampler,
                             epsilon_sound=th["epsilon_sound"], sound_profile=sound_profile, sequential=sequential,
                             progress=progress)
    test, h_lower, gof = SimpleNamespace(**stats["test"]), stats["h_lower"], stats["gof"]
    attained = th["epsilon_attained"]
    return AuditResult(
        theorem=construction.theorem, config=construction.config.as_dict(), trials=trials, steps=steps,
        compositions=n, delta=float(delta), confidence=confidence, epsilon_lower=test.value, epsilon_sound=th["epsilon_sound"],
        epsilon_attained=attained, ratio=test.value / attained if attained > 0 else float("nan"),
        gof_pvalue=gof["pvalue"],
        profile=[{"alpha": a, "h_lower": float(h), "h_theory": float(t)}
                 for a, h, t in zip(alphas, h_lower, h_user)],
        sound_theorem=construction.sound_theorem,
        attained_pair=construction.attained_theorem or f"{construction.sound_theorem} construction pair",
        violation=bool(stats["violation_test"]["violation"]),
        gof=gof, test=stats["test"], device=str(dev), seconds=time.perf_counter() - started,
        design=stats["design"], violation_test=stats["violation_test"], run=stats["run"],
        attained_bracket=attained_bracket(construction.config, steps, delta,
                                          construction.attained_theorem or construction.sound_theorem,
                                          epsilon_sound=th["epsilon_sound"], discretization=discretization),
    )


__all__ = ["AuditResult", "audit", "theory", "DEFAULT_ALPHAS"]
