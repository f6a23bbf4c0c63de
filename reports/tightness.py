"""Section 4 of the report: tightness - theory against the Monte Carlo audits of the real loop.

For each bound with a worst-case construction (T1, T6, T3, T9, T4, T10, T13/T14, and T11's
augmentation construction, which is not proven tight) the theory δ(ε) curve with the
audit's lower-confidence points on H_α; for the upper bounds (T2, T7, T8, T11) the measured
gap between the sound ε and the attained / audited ε; and the gap under composition (sound
vs attained vs audited ε after 1, 10, 100 steps of T6).

Audits run on the audit configuration (N = 320, Λ = 64, L = 4, L_C = L_F = 1,
so r = 0.5, ρ = 0.2) with the configuration's σ, at δ = 1e-3: there the leakage is large
enough for a Monte Carlo lower bound to resolve it with 10^5-10^6 trials. The auditor
(:func:`attacks.montecarlo.audit.audit`) is imported lazily; when it is missing every audited number
is None and the section says "audit not available".

Directions: ``epsilon_sound`` upper bound (rounded up); ``epsilon_attained`` lower bound
(rounded down); ``epsilon_lower`` / ``h_lower`` lower confidence bounds (the Clopper-Pearson union test at its
exact level / Clopper-Pearson).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.constructions import CONSTRUCTIONS
from tsdp.theorems.registry import get
from tsdp.verify.pld import PldSettings

from .claim_c6 import WHY_BELOW
from .report_accounting import ReportAccounting
from .schema import AuditStatus

AUDIT_DELTA = 1e-3
AUDIT_TARGETS = (  # (audited construction of tsdp.theorems.constructions, λ, σ_F) shown in the report
    ("T1", 1, 0.0), ("T6", 1, 0.0), ("T3", 2, 0.0), ("T9", 2, 0.0), ("T4", 2, 0.0), ("T10", 2, 0.0),
    ("T11", 1, 1.0), ("T14", 1, 0.0),
)
QUICK_TARGETS = ("T6", "T9", "T14")
UPPER_GAPS = (("T2", 2), ("T7", 2), ("T8", 2), ("T11", 1))
COMPOSITION_STEPS = (1, 10, 100)
AUDITED_STEPS = (1, 10)
CURVE_EPS = np.linspace(0.0, 4.0, 81)


def audit_config(config: TrainingConfig) -> TrainingConfig:
    """The audit configuration (N = 320, Λ = 64, L = 4, L_C = L_F = 1) with the configuration's σ.

    Args:
        config: The report's configuration.

    Returns:
        The audit configuration.
    """
    return TrainingConfig(N=320, L=4, context_length=1, forecast_length=1, batch_size=64, sigma=config.sigma)


def load_auditor(workers: int = 1) -> Optional[Callable]:
    """The auditor's ``audit`` (attacks.montecarlo.audit) on ``workers`` local processes (the sharded engine:
    the same counts on any number), returning plain dicts, or None if it is missing.

    Args:
        workers: Worker processes.

    Returns:
        The auditor, or None.
    """
    try:
        from tsdp.attacks.montecarlo.audit import audit
        from tsdp.attacks.montecarlo.options import TrialPlan
        from tsdp.attacks.montecarlo.verdict import AUDIT_RECORD_VERSION
    except ImportError:
        return None

    def run(theorem, config, *, trials, steps=1, delta, seed=0):
        d = audit(theorem, config, delta=delta, steps=steps,
                  trials=TrialPlan(trials, seed=seed, workers=workers, device="auto")).to_dict()
        out = {k: d[k] for k in ("theorem", "trials", "steps", "delta", "confidence", "epsilon_lower",
                                  "epsilon_sound", "epsilon_attained", "ratio", "gof_pvalue", "profile",
                                  "sound_theorem", "attained_pair", "device", "seconds", "violation",
                                  "attained_bracket") if k in d}
        # the violation test's certified lower profile: H_α on its ε grid, all at once at the confidence
        out["simultaneous_profile"] = (d.get("violation_test") or {}).get("profile", [])
        # the record's rule, and the test's own verdict: a reader recomputes the violation from these numbers
        out["record_version"] = AUDIT_RECORD_VERSION
        out["test_violation"] = bool((d.get("violation_test") or {}).get("violation", False))
        return out

    return run


def _cfg(base: TrainingConfig, theorem: str, lam: int, sigma_f: float) -> TrainingConfig:
    """``base`` with the scheme of ``theorem``'s construction row (or, for a sound bound, of the row it is the
    sound claim of; :data:`tsdp.theorems.constructions.CONSTRUCTIONS`), λ and σ_F."""
    row = CONSTRUCTIONS.get(theorem) or next(c for c in CONSTRUCTIONS.values() if c.sound == theorem)
    return base.with_(top=row.top, bottom=row.bottom, instances=lam, sigma_forecast=sigma_f)


def audit_targets(quick: bool) -> list:
    """The audited constructions the report shows: :data:`AUDIT_TARGETS`, the quick report's :data:`QUICK_TARGETS`.

    Args:
        quick: The quick report.

    Returns:
        The (construction, λ, σ_F) rows.
    """
    return [t for t in AUDIT_TARGETS if not quick or t[0] in QUICK_TARGETS]


def composed_audits(quick: bool) -> list:
    """The steps of the T6 audits of :data:`COMPOSITION_STEPS` that run an audit of their own: :data:`AUDITED_STEPS`
    (only one step in the quick report), less one step where the one-step T6 audit of :func:`audit_targets` serves.

    Args:
        quick: The quick report.

    Returns:
        The steps.
    """
    t6_audited = any(t[0] == "T6" for t in audit_targets(quick))
    return [s for s in AUDITED_STEPS if not (quick and s > 1) and not (s == 1 and t6_audited)]


def shuffle_audited(quick: bool) -> bool:
    """Whether the silent shuffled construction runs through the shuffled loop (one epoch; the full report only).

    Args:
        quick: The quick report.

    Returns:
        Whether it runs (given an auditor).
    """
    return not quick


def tightness_ticks(*, quick: bool, audits: bool) -> int:
    """How many times :func:`tightness_section` calls its ``tick``: once a shown construction, once an audit of its
    own (the report's progress bar counts them in its total).

    Args:
        quick: The quick report.
        audits: Whether an auditor runs (``audit_fn`` is not None).

    Returns:
        The count.
    """
    return len(audit_targets(quick)) + (len(composed_audits(quick)) + shuffle_audited(quick) if audits else 0)


def tightness_section(config: TrainingConfig, *, audit_fn: Optional[Callable], trials: int, composed_trials: int,
                      quick: bool = False, seed: int = 0, tick: Optional[Callable[[str], None]] = None,
                      step: Callable[[str], None] = lambda what: None,
                      answers: Optional[ReportAccounting] = None) -> dict:
    """Theory curves, audited lower-confidence points, upper-bound gaps and composition gaps.

    ``audit_fn`` (from :func:`load_auditor`) or None (then ``audit_status`` is "audit not
    available" and no audited number is reported); ``trials`` per world for one-step audits,
    ``composed_trials`` for the 10-step audit. ``tick(label)`` after each audit, ``step(what)`` as each
    sub-step starts (progress).

    Args:
        config: The report's configuration.
        audit_fn: The auditor (None: "audit not available").
        trials: Trials per world of the one-step audits.
        composed_trials: Trials per world of the 10-step audit.
        quick: The quick run.
        seed: The seed.
        tick: Called with a label after each audit (None: nothing).
        step: Called with what starts, as each sub-step starts.
        answers: The report's accounting (None: one of this section's own).

    Returns:
        The section's JSON data.
    """
    answers = ReportAccounting() if answers is None else answers
    base = audit_config(config)
    status = AuditStatus.RAN if audit_fn is not None else AuditStatus.NOT_AVAILABLE
    targets = audit_targets(quick)
    audited = {}
    bounds = []
    for theorem, lam, sf in targets:
        row = CONSTRUCTIONS[theorem]
        # the attained curve is a registry bound's profile, unless the pair is the construction's own (T11)
        sound_id, attained_id = row.sound, (row.attained if get(row.attained).attained_build is None else None)
        cfg = _cfg(base, theorem, lam, sf)
        theory = np.asarray(get(sound_id).profile(cfg, np.exp(CURVE_EPS)))
        attained = (np.asarray(get(attained_id).profile(cfg, np.exp(CURVE_EPS), check=False))
                    if attained_id and attained_id != sound_id else None)
        res = None
        if audit_fn is not None:
            step(f"audit of {theorem}")
            res = audit_fn(theorem, cfg, trials=trials, steps=1, delta=AUDIT_DELTA, seed=seed)
            audited[theorem] = res
        if tick is not None:
            tick(theorem)
        other = not row.same_relation
        bounds.append({"theorem": theorem, "sound_theorem": sound_id, "kind": get(sound_id).kind,
                       "audited_kind": get(theorem).kind,
                       "sound_role": "one record, other relation" if other else f"{get(sound_id).kind} bound",
                       "covers_audit": not other, "note": WHY_BELOW.format(k=cfg.k) if other else None,
                       "attained_theorem": attained_id, "instances": lam, "sigma_forecast": sf,
                       "config": cfg.as_dict(), "eps": [float(e) for e in CURVE_EPS],
                       "delta_sound": [float(x) for x in theory],
                       "delta_attained": None if attained is None else [float(x) for x in attained],
                       "audit": res})
    gaps = []
    for upper, lam in UPPER_GAPS:
        cfg = _cfg(base, upper, lam, 1.0 if upper == "T11" else 0.0)
        acc = answers.epsilon(cfg, AUDIT_DELTA, steps=1, theorem=upper)
        construction = get(upper).construction
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
        acc = answers.epsilon(t6, AUDIT_DELTA, steps=s, theorem="T6")
        row = {"steps": s, "epsilon_sound": acc.epsilon, "epsilon_attained": acc.epsilon_attained,
               "epsilon_audited_lower": None, "audit_trials": None, "confidence": None}
        res = audited.get("T6") if s == 1 else None  # the one-step audit of the shown constructions serves
        if audit_fn is not None and s in composed_audits(quick):
            step(f"audit of T6 x{s}")
            res = audit_fn("T6", t6, trials=composed_trials, steps=s, delta=AUDIT_DELTA, seed=seed + s)
            if tick is not None:
                tick(f"T6 x{s}")
        if res is not None:
            row.update(epsilon_audited_lower=res["epsilon_lower"], audit_trials=res["trials"],
                       confidence=res.get("confidence"), audit=res)
        comp.append(row)
    step("shuffled iteration")
    shuffle = {"rows": shuffle_rows(config, answers), "audit": None}
    if audit_fn is not None and shuffle_audited(quick):  # the silent construction through the shuffled loop
        shuffled = base.with_(top="shuffle")
        step("audit of T1 shuffled")
        shuffle["audit"] = audit_fn("T1", shuffled, trials=trials, steps=shuffled.steps_per_epoch,
                                    delta=AUDIT_DELTA, seed=seed)
        if tick is not None:
            tick("T1 shuffled")
    step(f"attained brackets, {BRACKET_STEPS} steps")
    section = {"audit_status": status, "delta": AUDIT_DELTA, "audit_config": base.as_dict(), "trials": trials,
               "composed_trials": composed_trials, "bounds": bounds, "upper_gaps": gaps, "composition": comp,
               "brackets": brackets(config, quick=quick, answers=answers), "shuffle": shuffle}
    section["soundness_violations"] = soundness_violations(section)
    return section


SHUFFLE_EPOCHS = (1, 10)
SHUFFLE_DELTAS = (1e-5, 1e-3)


def shuffle_rows(config: TrainingConfig, answers: Optional[ReportAccounting] = None) -> list:
    """Sound against attained ε under shuffled iteration, the report's configuration, 1 and 10 epochs.

    The sound ε is the deterministic order's bound (T1 for a WR bottom level; an upper bound, rounded up), the
    attained one the silent hidden-position epoch's max statistic (a lower bound, rounded down); no sound bound
    below T1 is proved for fixed-size shuffling (THEOREMS.md, "What the other sequences can signal under fixed-size
    shuffling"), so ``sound_over_attained`` is the gap that remains.

    Args:
        config: The report's configuration (its top level is replaced by shuffled iteration).
        answers: The report's accounting (None: one of its own).

    Returns:
        One row per (steps, δ): steps, delta, sound_theorem, epsilon_sound, attained_construction, epsilon_attained,
        sound_over_attained (None without an attained ε).
    """
    answers = ReportAccounting() if answers is None else answers
    cfg = config.with_(top="shuffle")
    rows = []
    for epochs in SHUFFLE_EPOCHS:
        for delta in SHUFFLE_DELTAS:
            acc = answers.epsilon(cfg, delta, steps=epochs * cfg.steps_per_epoch)
            ratio = (acc.epsilon / acc.epsilon_attained
                     if acc.epsilon is not None and acc.epsilon_attained else None)
            rows.append({"steps": epochs * cfg.steps_per_epoch, "delta": delta, "sound_theorem": acc.theorem,
                         "epsilon_sound": acc.epsilon, "attained_construction": acc.attained_law,
                         "epsilon_attained": acc.epsilon_attained, "sound_over_attained": ratio})
    return rows


BRACKET_STEPS = 1000
BRACKET_DELTA = 1e-5


def brackets(config: TrainingConfig, *, quick: bool = False, answers: Optional[ReportAccounting] = None) -> list:
    """The attained bracket and the true composition gap of T6 and T10 after 1000 steps.

    On the report's configuration with the scheme of each construction (T6: WOR/WR; T10: WOR/Poisson,
    λ = 2), δ = 1e-5, at discretisation 1e-3 and 1e-4 (quick: 1e-3 only): the construction pair's
    composed ε with the optimistic (lower) and pessimistic (upper) discretisation, the rounding
    (upper - lower) and the composition gap (sound ε of the scheme's sound bound - upper), from
    :func:`tsdp.attacks.montecarlo.bracket.attained_bracket` (the accountant).

    Args:
        config: The report's configuration.
        quick: Discretisation 1e-3 only.
        answers: The report's accounting, for the sound ε (None: one of its own).

    Returns:
        One row per construction and discretisation.
    """
    from tsdp.attacks.montecarlo.bracket import attained_bracket

    answers = ReportAccounting() if answers is None else answers
    rows = []
    for theorem, lam in (("T6", 1), ("T10", 2)):
        row_cfg = _cfg(config, theorem, lam, 0.0).with_(batch_size=config.batch_size * lam)
        sound_id = CONSTRUCTIONS[theorem].sound
        for d in ((1e-3,) if quick else (1e-3, 1e-4)):
            sound = answers.epsilon(row_cfg, BRACKET_DELTA, steps=BRACKET_STEPS, theorem=sound_id,
                                    settings=PldSettings(d)).epsilon
            rows.append(dict(attained_bracket(row_cfg, BRACKET_STEPS, BRACKET_DELTA, theorem, epsilon_sound=sound,
                                              discretization=d).as_dict(), sound_theorem=sound_id,
                             epsilon_sound=sound))
    return rows


def violation_summary(section: dict) -> dict:
    """The violation check over the section's audits, for a bound that covers the audited relation, one step,
    composed or shuffled: a case wherever an audit record exceeds its sound claim, recomputed from the record's own
    numbers by the auditor's one rule (:func:`tsdp.attacks.montecarlo.verdict.record_sound_exceeded`: the violation
    test rejects the sound profile, or the certified lower bound on ε exceeds the sound ε, an upper bound; a record
    written before that rule is upgraded, one of a newer rule refused). A composed row without its record (an
    earlier report's) is judged on its estimate alone.

    Args:
        section: The tightness section's JSON data.

    Returns:
        ``{"violation": bool, "violations": [{theorem, bound, steps, epsilon_lower, epsilon_sound, confidence,
        trials, estimate_above (the estimate itself above the sound ε; else the violation test alone)}],
        "checked": number of audits compared, "confidence": the smallest per-test confidence among them (None: none
        compared, or a record without its confidence), "family_confidence": the confidence of the report's verdict
        over all of them, 1 - Σ (1 - verdict confidence) (union bound over the audits, at least 0; None as
        "confidence")}``: each audit's verdict holds at :func:`tsdp.attacks.montecarlo.verdict.verdict_confidence`
        of its level, the report's (a violation if any audit flags one) only at ``family_confidence``.

    Raises:
        ValueError: An audit record of a newer rule than this tsdp knows.
    """
    from tsdp.attacks.montecarlo.verdict import record_sound_exceeded, verdict_confidence

    audits = [(b["theorem"], b["sound_theorem"], b["audit"]) for b in section["bounds"]
              if b["audit"] is not None and b["covers_audit"]]
    shuffled = (section.get("shuffle") or {}).get("audit")
    if shuffled is not None:  # the shuffled construction against T1, sound for shuffled iteration
        audits.append(("T1 (shuffled)", shuffled["sound_theorem"], shuffled))
    for r in section["composition"]:
        if r["epsilon_audited_lower"] is None or r["steps"] == 1:  # one step: the T6 audit above
            continue
        audits.append(("T6", "T6", r.get("audit") or {
            "epsilon_lower": r["epsilon_audited_lower"], "epsilon_sound": r["epsilon_sound"], "steps": r["steps"],
            "confidence": r.get("confidence"), "trials": r["audit_trials"]}))
    cases = [{"theorem": theorem, "bound": bound, "steps": a.get("steps", 1), "epsilon_lower": a["epsilon_lower"],
              "epsilon_sound": a["epsilon_sound"], "confidence": a.get("confidence"), "trials": a.get("trials"),
              "estimate_above": a["epsilon_lower"] > a["epsilon_sound"]}
             for theorem, bound, a in audits if record_sound_exceeded(a)]
    levels = [a.get("confidence") for _, _, a in audits]
    recorded = bool(levels) and None not in levels
    confidence = min(levels) if recorded else None
    # the report's verdict is any of the audits': it errs when one of them does (union bound over the audits)
    family = max(0.0, 1 - sum(1 - verdict_confidence(c) for c in levels)) if recorded else None
    return {"violation": bool(cases), "violations": cases, "checked": len(audits), "confidence": confidence,
            "family_confidence": family}


def soundness_violations(section: dict) -> list:
    """The section's listing of its violations (its alert): one label per case of :func:`violation_summary`, the
    check `tsdp report`'s exit code follows: the audited construction, with its steps when composed.

    Args:
        section: The tightness section's JSON data.

    Returns:
        The labels, e.g. ``["T6", "T6 (10 steps)", "T1 (shuffled)"]``.
    """
    return [c["theorem"] + (f" ({c['steps']} steps)" if c["steps"] != 1 and "shuffled" not in c["theorem"] else "")
            for c in violation_summary(section)["violations"]]
