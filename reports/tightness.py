"""Section 4 of the report: tightness - theory against the Monte Carlo audits of the real loop.

For each bound with a worst-case construction (T1, T6, T3, T9, T4, T10, T13/T14, and T11's
augmentation construction, which is not proven tight) the theory δ(ε) curve with the
audit's lower-confidence points on H_α; for the upper bounds (T2, T7, T8, T11) the measured
gap between the sound ε and the attained / audited ε; and the gap under composition (sound
vs attained vs audited ε after 1, 10, 100 steps of T6).

Audits run on the audit configuration of issue 6 (N = 320, Λ = 64, L = 4, L_C = L_F = 1,
so r = 0.5, ρ = 0.2) with the configuration's σ, at δ = 1e-3: there the leakage is large
enough for a Monte Carlo lower bound to resolve it with 10^5-10^6 trials. The auditor
(:func:`attacks.auditor.audit`) is imported lazily; when it is missing every audited number
is None and the section says "audit not available".

Directions: ``epsilon_sound`` upper bound (rounded up); ``epsilon_attained`` lower bound
(rounded down); ``epsilon_lower`` / ``h_lower`` lower confidence bounds (Clopper-Pearson).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import get
from tsdp.verify import accounting

AUDIT_DELTA = 1e-3
AUDIT_TARGETS = (  # (audited construction, its sound bound, the attained pair's id or None, λ, σ_F)
    ("T1", "T1", "T1", 1, 0.0),
    ("T6", "T6", "T6", 1, 0.0),
    ("T3", "T2", "T3", 2, 0.0),
    ("T9", "T7", "T9", 2, 0.0),
    ("T4", "T4", "T4", 2, 0.0),
    ("T10", "T8", "T10", 2, 0.0),
    ("T11", "T11", None, 1, 1.0),
    ("T14", "T13", "T14", 1, 0.0),
)
QUICK_TARGETS = ("T6", "T9", "T14")
UPPER_GAPS = (("T2", 2), ("T7", 2), ("T8", 2), ("T11", 1))
COMPOSITION_STEPS = (1, 10, 100)
AUDITED_STEPS = (1, 10)
CURVE_EPS = np.linspace(0.0, 4.0, 81)


def audit_config(config: TrainingConfig) -> TrainingConfig:
    """Issue 6's audit configuration (N = 320, Λ = 64, L = 4, L_C = L_F = 1) with the configuration's σ."""
    return TrainingConfig(N=320, L=4, context_length=1, forecast_length=1, batch_size=64, sigma=config.sigma)


def load_auditor() -> Optional[Callable]:
    """The auditor's ``audit`` (attacks.auditor, issue 6) returning plain dicts, or None if it is missing."""
    try:
        from tsdp.attacks.auditor import audit
    except ImportError:
        return None

    def run(theorem, config, *, trials, steps=1, delta, seed=0):
        d = audit(theorem, config, trials=trials, steps=steps, delta=delta, seed=seed, device="auto").to_dict()
        return {k: d[k] for k in ("theorem", "trials", "steps", "delta", "confidence", "epsilon_lower",
                                   "epsilon_sound", "epsilon_attained", "ratio", "gof_pvalue", "profile",
                                   "sound_theorem", "attained_pair", "device", "seconds") if k in d}

    return run


def _cfg(base: TrainingConfig, theorem: str, lam: int, sigma_f: float) -> TrainingConfig:
    top = {"T1": "deterministic", "T3": "deterministic", "T4": "deterministic", "T2": "deterministic",
           "T13": "pooled", "T14": "pooled"}.get(theorem, "wor")
    bottom = "poisson" if theorem in ("T4", "T10", "T8") else "wr"
    return base.with_(top=top, bottom=bottom, instances=lam, sigma_forecast=sigma_f)


def tightness_section(config: TrainingConfig, *, audit_fn: Optional[Callable], trials: int, composed_trials: int,
                      quick: bool = False, seed: int = 0, tick: Optional[Callable[[str], None]] = None) -> dict:
    """Theory curves, audited lower-confidence points, upper-bound gaps and composition gaps.

    ``audit_fn`` (from :func:`load_auditor`) or None (then ``audit_status`` is "audit not
    available" and no audited number is reported); ``trials`` per world for one-step audits,
    ``composed_trials`` for the 10-step audit. ``tick(label)`` after each audit (progress).
    """
    base = audit_config(config)
    status = "ran" if audit_fn is not None else "audit not available"
    targets = [t for t in AUDIT_TARGETS if not quick or t[0] in QUICK_TARGETS]
    audited = {}
    bounds = []
    for theorem, sound_id, attained_id, lam, sf in targets:
        cfg = _cfg(base, theorem, lam, sf)
        theory = np.asarray(get(sound_id).profile(cfg, np.exp(CURVE_EPS)))
        attained = (np.asarray(get(attained_id).profile(cfg, np.exp(CURVE_EPS), check=False))
                    if attained_id and attained_id != sound_id else None)
        res = None
        if audit_fn is not None:
            res = audit_fn(theorem, cfg, trials=trials, steps=1, delta=AUDIT_DELTA, seed=seed)
            audited[theorem] = res
        if tick is not None:
            tick(theorem)
        bounds.append({"theorem": theorem, "sound_theorem": sound_id, "kind": get(sound_id).kind,
                       "attained_theorem": attained_id, "instances": lam, "sigma_forecast": sf,
                       "config": cfg.as_dict(), "eps": [float(e) for e in CURVE_EPS],
                       "delta_sound": [float(x) for x in theory],
                       "delta_attained": None if attained is None else [float(x) for x in attained],
                       "audit": res})
    gaps = []
    for upper, lam in UPPER_GAPS:
        cfg = _cfg(base, upper, lam, 1.0 if upper == "T11" else 0.0)
        acc = accounting.epsilon(cfg, AUDIT_DELTA, steps=1, theorem=upper)
        construction = {"T2": "T3", "T7": "T9", "T8": "T10", "T11": "T11"}[upper]
        aud = audited.get(construction)
        gaps.append({"upper": upper, "construction": acc.construction or construction, "instances": lam,
                     "epsilon_sound": acc.epsilon, "epsilon_attained": acc.epsilon_attained,
                     "attained_over_sound": (acc.epsilon_attained / acc.epsilon
                                             if acc.epsilon_attained is not None and acc.epsilon > 0 else None),
                     "epsilon_audited_lower": None if aud is None else aud["epsilon_lower"],
                     "audited_over_sound": (None if aud is None or acc.epsilon <= 0
                                            else aud["epsilon_lower"] / acc.epsilon)})
    t6 = _cfg(base, "T6", 1, 0.0)
    comp = []
    for s in COMPOSITION_STEPS:
        acc = accounting.epsilon(t6, AUDIT_DELTA, steps=s, theorem="T6")
        row = {"steps": s, "epsilon_sound": acc.epsilon, "epsilon_attained": acc.epsilon_attained,
               "epsilon_audited_lower": None, "audit_trials": None}
        if audit_fn is not None and s in AUDITED_STEPS and not (quick and s > 1):
            if s == 1 and "T6" in audited:
                res = audited["T6"]
            else:
                res = audit_fn("T6", t6, trials=composed_trials, steps=s, delta=AUDIT_DELTA, seed=seed + s)
                if tick is not None:
                    tick(f"T6 x{s}")
            row.update(epsilon_audited_lower=res["epsilon_lower"], audit_trials=res["trials"])
        comp.append(row)
    return {"audit_status": status, "delta": AUDIT_DELTA, "audit_config": base.as_dict(), "trials": trials,
            "composed_trials": composed_trials, "bounds": bounds, "upper_gaps": gaps, "composition": comp,
            "soundness_violations": [b["theorem"] for b in bounds
                                     if b["audit"] is not None and b["audit"]["epsilon_lower"] > b["audit"]["epsilon_sound"]
                                     and b["sound_theorem"] != "T13"]}

