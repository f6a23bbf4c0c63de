"""The documented schema of results.json (`tsdp report`) (the tests check a report against it:
tests/reports/schema_check.py).

Top level (``SCHEMA_VERSION`` 8: claims C1-C12, errata 1-10 and 13-17; 8: C10 and C12 judged under the paper's
protocol, their numbers' ``paper``, ``capped`` and ``equal_epochs`` measurements; 7: claim C12; 6: audit records
versioned, composed rows keep their audit record, soundness_violations lists every case the exit code counts)::

  schema_version  int
  meta            {name, mode: "default"|"quick", version, status: "complete"|"interrupted",
                   elapsed_s, timings_s: {section: seconds}, trials: {tightness, composed, c6},
                   audit_status: "ran"|"audit not available", audits_checked: int,
                   audit_confidence: the smallest per-test confidence of the audits checked (null: none, or
                   one not recorded; each verdict holds at 1 - 2 (1 - it), union bound),
                   audit_family_confidence: the confidence of the report's verdict over all the audits checked,
                   1 - Σ 2 (1 - each one's), at least 0 (union bound; null as audit_confidence),
                   notes: [{category, message, count}] (the warnings raised while computing)}
  violation       bool: an audit certified ε above a sound upper bound of its relation (`tsdp report` exits 1); null when not computed
  violations      [{theorem, bound, steps, epsilon_lower, epsilon_sound, confidence, trials,
                   estimate_above: the estimate itself above the sound ε (false: the violation test alone)}]
  accounting      {config (TrainingConfig.as_dict), derived {T, k, r, rho, phi, q, ...},
                   theorem, kind, reason, attained_law (what the attained ε composes; the hidden-position
                   epoch for shuffled iteration),
                   rows: [{delta, steps|epochs, compositions, epsilon_sound (upper),
                           epsilon_attained (lower or null), construction, discretization}]}
  claims          [{id: "C1".."C12", statement,
                    verdict: "confirmed"|"refuted"|"qualified"|"not evaluated", or on data other than the
                    paper's (C7, C10, C12 on M1 yearly) "reproduced"|"not reproduced",
                    verdict_text: the verdict with its data and the cells it rests on ("confirmed on the
                    quick grid, 3 of 15 cells", "not reproduced on M1 yearly (the quick grid, 2 of 4
                    cells)"), reason,
                    other_verdicts: [{source, verdict, verdict_text, reason}] (the claim on other
                    evidence by the same rule; C7: the paper's own reported tables; C10, C12: the epochs cap's
                    last iterate, and the paper's empty figure),
                    cells {grid: cells of the full grid, quick, evaluated: [labels],
                           not_evaluated: [{cell, reason, cells: how many grid cells it stands for}],
                           configuration (C1-C6, computed on it): {N, L, context_length, forecast_length,
                           batch_size, sigma, r, rho}},
                    numbers {...claim-specific, see reports.claim_c1 ... claim_c7, reports.non_private (C10,
                             C12: {seeds, tops, factor, levels, levels_full, fixed, family_alpha,
                             effect_relative, equal_epochs_full (C10's epochs, else null), paper, capped and
                             (C10, full report) equal_epochs: {steps, epochs, validate_every, selected,
                             crps: [{top, batch_size, instances, steps, epochs, crps: [per seed],
                             selected_steps (selected)}], tests: [FactorTest] or null, convergence (selected):
                             {runs, late, tail, limit, converged}, steps_full (paper)}})}, figure {curves drawn},
                    figures: [png file names]}]
  consistency     {mode, seed, elapsed_s, summary {pass, fail, finding, total}, theorems_covered,
                   failures_and_findings: [{name, theorems, status, explanation, measured}],
                   checks: [{name, status, explanation}]}
  tightness       {audit_status, delta, audit_config, trials, composed_trials,
                   bounds: [{theorem, sound_theorem, kind, audited_kind, sound_role, covers_audit, note,
                             attained_theorem, instances, sigma_forecast,
                             config, eps, delta_sound, delta_attained, audit: null | {epsilon_lower,
                             confidence, epsilon_sound, epsilon_attained, ratio, gof_pvalue,
                             profile: [{alpha, h_lower, h_theory}] (pointwise 95% per α),
                             simultaneous_profile: [{alpha, h_lower, h_sound}] (95% for all α at once),
                             trials, steps, violation, test_violation (the violation test's verdict alone),
                             record_version (the violation rule it was written under:
                             tsdp.attacks.montecarlo.verdict.AUDIT_RECORD_VERSION), ...}}],
                   upper_gaps: [{upper, construction, instances, epsilon_sound, epsilon_attained,
                                 attained_over_sound, epsilon_audited_lower, audited_over_sound}],
                   composition: [{steps, epsilon_sound, epsilon_attained, epsilon_audited_lower,
                                  audit_trials, confidence, audit: the audit record (audited rows)}],
                   brackets: [{pair, sound_theorem, discretization, steps, delta, epsilon_sound, lower, upper,
                               rounding, composition_gap}],
                   shuffle: {rows: [{steps, delta, sound_theorem, epsilon_sound, attained_construction,
                                     epsilon_attained, sound_over_attained}],
                             audit: null | the shuffled T1 construction's audit, one epoch},
                   soundness_violations: [labels: the audited construction, "(S steps)" when composed; one per
                                          case of ``violations``, the same check], figures: [png]}
  errata          [{erratum: 1..10, 13..17 (THEOREMS.md's numbers; 13-17: misprints of the utility experiments' text
                    and tables), paper, reading, measured,
                    status: "reproduced"|"not reproduced"|"not distinguishable here", source, numbers}]
  inference       {synthetic: {rows: [{epsilon, r, sigma, crps, crps_std}], best_r, settings},
                   grunfeld: same (the panel shipped with tsdp), grunfeld_status: "ran"}

Non-finite floats are written as null. A section not computed (interrupted run) is null.
"""
from __future__ import annotations

from tsdp.theorems.config import Choice


class RunStatus(Choice):
    """``meta.status``: where the run is (``running`` only while it computes; a run that stops says why)."""

    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class AuditStatus(Choice):
    """``meta.audit_status``, ``tightness.audit_status``, C6's ``audit_status`` and the inference section's
    ``grunfeld_status``: whether the audits (the real panel) ran."""

    RAN = "ran"
    NOT_AVAILABLE = "audit not available"

SCHEMA_VERSION = 8
