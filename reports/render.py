"""The report as one list of blocks built only from results.json's data, so every number shown is in results.json
(:mod:`reports.page` writes them as report.md and index.html). Blocks: (Block.HEADING, level, text), (Block.PARAGRAPH, text),
(Block.ALERT, ok, text), (Block.TABLE, header, rows), (Block.IMAGE, file name, caption), (Block.DETAILS, summary, [blocks]) - the
last folds long grids (HTML ``<details>``, which GitHub's Markdown renders too).

The first screen (section 0, "Summary") answers the user's questions: is there a privacy
violation, the configuration's ε (sound and attained) and its theorem, each claim's verdict
with the cells it rests on, and the audit ratios. Numbers to 4 significant digits; a lower
bound (kind "lower": T3, T9, T10, T14) is never shown in a "sound" column.
"""
from __future__ import annotations

import math
from typing import Callable, List

from tsdp.attacks.montecarlo.verdict import percent_text, verdict_confidence_text
from tsdp.theorems.bounds.base import Kind
from tsdp.verify.rounded import DIGITS, rounded_down, rounded_nearest, rounded_up

from .blocks import Block
from .claim_base import REPRODUCED
from .render_claims_extra import TABLES
from .schema import AuditStatus

SECTIONS = ("accounting", "claims", "consistency", "tightness", "errata", "inference")


def fmt(x, digits: int = DIGITS, rounding: Callable[[float, int], str] = rounded_nearest) -> str:
    """A number for the tables: None → 'n/a', floats to ``digits`` significant digits.

    Args:
        x (float | None): The number.
        digits: Significant digits.
        rounding: How a finite float is printed to ``digits`` digits (:mod:`tsdp.verify.rounded`: to nearest, or on
            a bound's safe side as :func:`upper` and :func:`lower` do).

    Returns:
        The text.
    """
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        return rounding(x, digits)
    return str(x)


def upper(x, digits: int = DIGITS) -> str:
    """An upper bound (a sound ε or δ) for the tables, rounded up (:func:`tsdp.verify.rounded.rounded_up`): the text
    reads back as at least the computed number. None → 'n/a'.

    Args:
        x (float | None): The number.
        digits: Significant digits.

    Returns:
        The text.
    """
    return fmt(x, digits, rounded_up)


def lower(x, digits: int = DIGITS) -> str:
    """A lower bound (an attained or audited ε) for the tables, rounded down
    (:func:`tsdp.verify.rounded.rounded_down`): the text reads back as at most the computed number. None → 'n/a'.

    Args:
        x (float | None): The number.
        digits: Significant digits.

    Returns:
        The text.
    """
    return fmt(x, digits, rounded_down)


def _schedule(r: dict) -> str:
    n, unit = (r["steps"], "step") if r["steps"] else (r["epochs"], "epoch")
    return f"{n} {unit}" + ("s" if n != 1 else "")


def _bound_columns(acc: dict) -> tuple:
    """Column names for the accounting's two ε values: an upper/tight bound has a sound (upper) value naming its
    theorem; a lower bound is labelled as one, never as 'sound'; the attained (lower) value names the construction
    pair that reaches it and the sampling scheme it runs on."""
    theorem, c = acc["theorem"], acc["config"]
    constructions = sorted({r["construction"] for r in acc["rows"] if r["construction"]})
    attained = (f"ε attained (lower; {', '.join(constructions)} construction, {c['top']}/{c['bottom']}, "
                f"λ = {c['instances']})" if constructions else "ε attained (lower; no construction)")
    if acc["kind"] == Kind.LOWER:
        return f"ε of the lower bound {theorem} (pessimistic evaluation)", attained
    return f"ε sound ({theorem}, upper)", attained


def blocks(results: dict) -> List[tuple]:
    """The report as blocks: the summary screen, then the sections (configuration, claims,
    consistency, tightness, errata).

    Args:
        results: results.json's data.

    Returns:
        The blocks, each (kind, ...): h, p, alert, table, img, details.
    """
    b: List[tuple] = []
    meta = results["meta"]
    b.append((Block.HEADING, 1, f"tsdp tightness report: {meta['name']}"))
    missing = [k for k in SECTIONS if results.get(k) is None]
    if missing:
        b.append((Block.ALERT, False, f"Not computed ({meta['status']}): " + ", ".join(missing) + "."))
    b.append((Block.PARAGRAPH, f"Mode: {meta['mode']}; generated in {fmt(meta['elapsed_s'])} s; tsdp {meta['version']}; "
                   f"status: {meta['status']}. Sound numbers are upper bounds (rounded up), attained numbers lower "
                   "bounds reached by a construction (rounded down), audited numbers lower confidence bounds (LCB)."))
    b.extend(_summary(results))
    sections = (("1. Configuration and accounting", _accounting), ("2. Claims C1-C12", _claims),
                ("3. Consistency (`tsdp verify --quick`)", _consistency), ("4. Tightness", _tightness),
                ("5. Errata of THEOREMS.md and what the toolkit measured", _errata),
                ("6. Inference-time privacy (T15)", _inference))
    for key, (heading, section) in zip(SECTIONS, sections):  # a section not computed keeps its heading
        b.append((Block.HEADING, 2, heading))
        if results.get(key) is not None:
            b.extend(section(results[key]))
    return b


# ----------------------------------------------------------------------------- summary screen


def _summary(results: dict) -> List[tuple]:
    b: List[tuple] = []
    b.extend(_violation(results))
    acc = results.get("accounting")
    if acc is not None:
        c = acc["config"]
        b.append((Block.PARAGRAPH, f"**Configuration**: N = {c['N']}, L = {c['L']}, L_C = {c['context_length']}, "
                       f"L_F = {c['forecast_length']}, Λ = {c['batch_size']}, λ = {c['instances']}, σ = {fmt(c['sigma'])}, "
                       f"top level {c['top']}, bottom level {c['bottom']}. **Theorem**: {acc['theorem']} ({acc['kind']}) - "
                       f"{acc['reason']}."))
        b.append((Block.PARAGRAPH, f"**ε of this configuration** (theorem {acc['theorem']}; 'compositions' counts the composed "
                       "one-step, or one-epoch for deterministic/shuffled iteration, events):"))
        b.append(_epsilon_table(acc))
    if results.get("claims") is not None:
        b.append((Block.PARAGRAPH, f"**Claims C1-C{len(results['claims'])} of the paper** (details in section 2):"))
        b.append((Block.TABLE, ["claim", "verdict (data and cells it rests on)", "statement"],
                  [row for c in results["claims"] for row in
                   [[c["id"], c["verdict_text"], c["statement"]]] + [[f"{c['id']} ({o['source']})", o["verdict_text"],
                                                                       c["statement"]]
                                                                      for o in c.get("other_verdicts", [])]]))
    t = results.get("tightness")
    if t is not None:
        if t["audit_status"] == AuditStatus.RAN:
            ac = t["audit_config"]
            b.append((Block.PARAGRAPH, f"**Audits of the real loop** (section 4; audit configuration N = {ac['N']}, "
                           f"Λ = {ac['batch_size']}, L = {ac['L']}, δ = {fmt(t['delta'])}, one step):"))
            b.append((Block.TABLE, ["audited construction", "compared bound", "ε bound", "ε attained (lower)",
                                "ε audited (LCB)", "audited / attained"],
                      [[f"{x['theorem']} ({x['audited_kind']})", _compared(x),
                        upper(x["audit"]["epsilon_sound"]), lower(x["audit"]["epsilon_attained"]),
                        lower(x["audit"]["epsilon_lower"]), fmt(x["audit"]["ratio"])] for x in t["bounds"]]))
        else:
            b.append((Block.PARAGRAPH, f"Audits: {t['audit_status']}."))
    return b


def _violation(results: dict) -> List[tuple]:
    t = results.get("tightness")
    if results.get("violation") is None or t is None:
        return []
    if results["violation"]:
        cases = "; ".join(_violation_case(v) for v in results["violations"])
        return [(Block.ALERT, False, f"PRIVACY VIOLATION DETECTED: {cases}. The loop leaks more than its proven bound; "
                                 "`tsdp report` exits 1." + _family_text(results["meta"]))]
    if t["audit_status"] != AuditStatus.RAN:
        return [(Block.ALERT, None, "No violation check: the audits did not run (" + t["audit_status"] + ").")]
    n = results["meta"].get("audits_checked")
    if not n:  # nothing compared: a check that could not have seen a violation prints no pass
        return [(Block.ALERT, None, "No violation check: no audit was compared with a sound bound that covers its "
                                    "relation.")]
    return [(Block.ALERT, True, f"No privacy violation: none of the {n} audits compared with a sound upper bound "
                            "certified its sound claim exceeded ("
                            + verdict_confidence_text(results["meta"].get("audit_confidence")) + ").")]


def _family_text(meta: dict) -> str:
    """What the report's violation verdict, any of its audits', holds at: the union bound over the audits checked
    (``audit_family_confidence``), nothing for an earlier report that did not record it."""
    family, n = meta.get("audit_family_confidence"), meta.get("audits_checked")
    if family is None or not n or n < 2:
        return ""
    return (f" Any of the {n} audits checked could flag it: this verdict holds at confidence {percent_text(family)} "
            "(union bound over them), each case at its own.")


def _violation_case(v: dict) -> str:
    """One violation in words: the certified ε above the sound ε, or the violation test rejecting the sound profile
    (an earlier report's case, without ``estimate_above``, is the former)."""
    head = (f"audit of {v['theorem']} ({v['steps']} step{'s' if v['steps'] != 1 else ''}) certifies "
            f"ε ≥ {lower(v['epsilon_lower'])} ({verdict_confidence_text(v['confidence'])}; {fmt(v['trials'])} "
            "trials per world)")
    if v.get("estimate_above", True):
        return f"{head}, above the sound ε = {upper(v['epsilon_sound'])} of {v['bound']}"
    return (f"{head}, and its violation test rejects the sound profile of {v['bound']} (sound ε = "
            f"{upper(v['epsilon_sound'])})")


def _epsilon_table(acc: dict) -> tuple:
    deltas = list(dict.fromkeys(r["delta"] for r in acc["rows"]))
    sound, attained = _bound_columns(acc)
    header = ["schedule", "compositions"] + [f"{name} at δ = {fmt(d)}" for d in deltas for name in (sound, attained)]
    rows = []
    for sched in dict.fromkeys(_schedule(r) for r in acc["rows"]):
        rs = {r["delta"]: r for r in acc["rows"] if _schedule(r) == sched}
        first = rs[deltas[0]]
        rows.append([sched, first["compositions"]] + [side(rs[d][k]) for d in deltas
                                                      for k, side in (("epsilon_sound", upper),
                                                                      ("epsilon_attained", lower))])
    return (Block.TABLE, header, rows)


def _compared(x: dict) -> str:
    if not x["covers_audit"]:
        return f"{x['sound_theorem']} (one record: another relation, see C6)"
    return f"{x['sound_theorem']} ({x['kind']})"


# ----------------------------------------------------------------------------- sections


def _accounting(acc: dict) -> List[tuple]:
    cfg = {k: v for k, v in acc["config"].items() if k != "derived"}
    sound, attained = _bound_columns(acc)
    law = f" Attained: {acc['attained_law']}." if acc.get("attained_law") else ""
    return [(Block.PARAGRAPH, f"Theorem used: {acc['theorem']} ({acc['kind']}) - {acc['reason']}.{law} The summary's ε table "
                  "above is this section's accounting (discretisation 1e-4)."),
            (Block.DETAILS, "all configuration fields and derived quantities",
             [(Block.TABLE, ["field", "value"], [[k, fmt(v)] for k, v in cfg.items()] +
               [[f"derived {k}", fmt(v)] for k, v in acc["derived"].items()])]),
            (Block.DETAILS, f"the accounting, one row per (δ, schedule) ({len(acc['rows'])} rows)",
             [(Block.TABLE, ["δ", "schedule", "compositions", sound, attained],
               [[fmt(r["delta"]), _schedule(r), r["compositions"], upper(r["epsilon_sound"]),
                 lower(r["epsilon_attained"])] for r in acc["rows"]])]),
            (Block.DETAILS, "every bound of the catalogue at this configuration (one composition, δ = 1e-5)",
             [(Block.TABLE, ["theorem", "reference", "kind", "ε upper bound (sound)", "ε lower bound (attained)",
                         "applies"],
               [[r["theorem"], r["reference"], r["kind"], upper(r["epsilon_sound"]), lower(r["epsilon_attained"]),
                 "yes" if r["applies"] else f"no: {r['why_not']}"] for r in acc.get("catalogue", [])])])]


def _claims(claims: List[dict]) -> List[tuple]:
    b: List[tuple] = []
    for c in claims:
        b.append((Block.HEADING, 3, f"{c['id']}: {c['verdict_text']}"))
        b.append((Block.PARAGRAPH, f"Claim: {c['statement']}."))
        b.append((Block.PARAGRAPH, f"Verdict: **{c['verdict']}** - {c['reason']}."))
        for o in c.get("other_verdicts", []):
            b.append((Block.PARAGRAPH, f"On {o['source']}: **{o['verdict']}** - {o['reason']}."))
        cells = c["cells"]
        skipped = sum(x["cells"] for x in cells["not_evaluated"])
        b.append((Block.DETAILS, f"cells: {len(cells['evaluated'])} evaluated, {skipped} not evaluable, "
                             f"{cells['grid']} in the full grid", _cells(cells)))
        table = _claim_table(c)
        if table:
            rows = sum(len(t[2]) for t in table if t[0] == Block.TABLE)
            b.append((Block.DETAILS, f"{c['id']} numbers ({rows} rows)", table))
        for name in c.get("figures", []):
            b.append((Block.IMAGE, name, f"{c['id']} figure"))
    return b


def _cells(cells: dict) -> List[tuple]:
    out = [(Block.PARAGRAPH, "Evaluated: " + ("; ".join(cells["evaluated"]) or "none") + ".")]
    if "configuration" in cells:
        k = cells["configuration"]
        out.append((Block.PARAGRAPH, f"On the configuration N = {k['N']}, L = {k['L']}, L_C = {k['context_length']}, "
                    f"L_F = {k['forecast_length']}, Λ = {k['batch_size']}, σ = {fmt(k['sigma'])} (WOR top, WR bottom, "
                    f"λ = 1: r = {fmt(k['r'])}, ρ = {fmt(k['rho'])}); each cell names what it changes."))
    if cells["not_evaluated"]:
        out.append((Block.TABLE, ["not evaluated", "cells", "why"],
                    [[x["cell"], x["cells"], x["reason"]] for x in cells["not_evaluated"]]))
    if cells["quick"]:
        out.append((Block.PARAGRAPH, "Quick mode: the remaining cells of the full grid were not computed (run without --quick)."))
    return out


def _consistency(con: dict) -> List[tuple]:
    b: List[tuple] = []
    s = con["summary"]
    b.append((Block.PARAGRAPH, f"{s['total']} checks in {fmt(con['elapsed_s'])} s: {s['pass']} pass, {s['fail']} fail, "
                   f"{s['finding']} finding (a documented erratum of the paper as printed). Theorems covered: "
                   f"{', '.join(con['theorems_covered'])}."))
    if con["failures_and_findings"]:
        b.append((Block.DETAILS, f"failures and findings ({len(con['failures_and_findings'])})",
                  [(Block.TABLE, ["check", "status", "theorems", "explanation"],
                    [[c["name"], c["status"], ", ".join(c["theorems"]), c["explanation"]]
                     for c in con["failures_and_findings"]])]))
    return b


def _tightness(t: dict) -> List[tuple]:
    b: List[tuple] = []
    ac = t["audit_config"]
    b.append((Block.PARAGRAPH, f"Audit status: {t['audit_status']}. Audit configuration N = {ac['N']}, Λ = {ac['batch_size']}, "
                   f"L = {ac['L']}, L_C = {ac['context_length']}, L_F = {ac['forecast_length']}, σ = {fmt(ac['sigma'])}, "
                   f"δ = {fmt(t['delta'])}, {t['trials']} trials per world (one step), {t['composed_trials']} "
                   "(10 steps). Each audited construction is set against the upper bound that covers it; the "
                   "constructions of the lower bounds T3, T9, T10, T14 are what an attack reaches, not budgets."))
    if t["soundness_violations"]:
        b.append((Block.ALERT, False, "SOUNDNESS VIOLATION: an audit certifies its sound bound exceeded (its ε lower "
                  "bound above the sound ε, or its violation test rejecting the sound profile) for " +
                  ", ".join(t["soundness_violations"])))
    notes = [x for x in t["bounds"] if x["note"]]
    b.append((Block.TABLE, ["audited construction", "compared bound", "ε bound", "ε attained (lower)", "ε audited (LCB)",
                        "audited/attained", "GOF p"],
              [[f"{x['theorem']} ({x['audited_kind']})", _compared(x),
                upper(x["audit"]["epsilon_sound"]) if x["audit"] else "n/a",
                lower(x["audit"]["epsilon_attained"]) if x["audit"] else "n/a",
                lower(x["audit"]["epsilon_lower"]) if x["audit"] else AuditStatus.NOT_AVAILABLE.value,
                fmt(x["audit"]["ratio"]) if x["audit"] else "n/a",
                fmt(x["audit"]["gof_pvalue"]) if x["audit"] else "n/a"] for x in t["bounds"]]))
    for x in notes:
        b.append((Block.PARAGRAPH, f"Why {x['sound_theorem']} sits below the audit of {x['theorem']}: {x['note']}."))
    b.append((Block.PARAGRAPH, "Upper bounds: measured gap (one step)."))
    b.append((Block.TABLE, ["upper bound", "construction", "λ", "ε sound (upper)", "ε attained (lower)", "attained/sound",
                        "ε audited (LCB)", "audited/sound"],
              [[g["upper"], g["construction"], g["instances"], upper(g["epsilon_sound"]), lower(g["epsilon_attained"]),
                fmt(g["attained_over_sound"]), lower(g["epsilon_audited_lower"]) if t["audit_status"] == AuditStatus.RAN
                else AuditStatus.NOT_AVAILABLE.value, fmt(g["audited_over_sound"])] for g in t["upper_gaps"]]))
    b.append((Block.PARAGRAPH, f"Composition gap of T6 on the audit configuration (ε at δ = {fmt(t['delta'])})."))
    b.append((Block.TABLE, ["steps", "ε sound (upper)", "ε attained (lower)", "ε audited (LCB)", "audit trials"],
              [[r["steps"], upper(r["epsilon_sound"]), lower(r["epsilon_attained"]), lower(r["epsilon_audited_lower"]),
                fmt(r["audit_trials"])] for r in t["composition"]]))
    if t.get("brackets"):
        b.append((Block.PARAGRAPH, f"Attained bracket after {t['brackets'][0]['steps']} steps (δ = {fmt(t['brackets'][0]['delta'])}, "
                       "the report's configuration): the construction pair composed with the optimistic (lower) and "
                       "pessimistic (upper) discretisation. Their distance is rounding; sound ε minus the upper end "
                       "is the true composition gap."))
        b.append((Block.TABLE, ["construction", "sound bound", "discretisation", "ε sound (upper)", "ε attained lower",
                            "ε attained upper", "rounding", "composition gap"],
                  [[r["pair"], r["sound_theorem"], fmt(r["discretization"]), upper(r["epsilon_sound"]), lower(r["lower"]),
                    upper(r["upper"]), fmt(r["rounding"]), fmt(r["composition_gap"])] for r in t["brackets"]]))
    if t.get("shuffle"):
        b.extend(_shuffle_rows(t["shuffle"]))
    for name in t.get("figures", []):
        b.append((Block.IMAGE, name, "tightness figure"))
    return b


def _shuffle_rows(sh: dict) -> List[tuple]:
    b: List[tuple] = [(Block.PARAGRAPH, "Shuffled iteration (the report's configuration): the sound ε is the deterministic order's "
                            "bound, the attained ε the silent hidden-position epoch's max statistic; no tighter sound "
                            "bound is proved for fixed-size shuffling (THEOREMS.md), so sound / attained is the gap "
                            "that remains.")]
    b.append((Block.TABLE, ["steps", "δ", "sound bound", "ε sound (upper)", "ε attained (lower)", "sound / attained",
                        "attained by"],
              [[r["steps"], fmt(r["delta"]), r["sound_theorem"], upper(r["epsilon_sound"]), lower(r["epsilon_attained"]),
                fmt(r["sound_over_attained"]), r["attained_construction"]] for r in sh["rows"]]))
    a = sh.get("audit")
    if a is not None:
        b.append((Block.PARAGRAPH, f"Through the real shuffled loop (audit configuration, {a['steps']} steps, one epoch, "
                       f"δ = {fmt(a['delta'])}, {a['trials']} trials per world): ε audited (LCB) "
                       f"{lower(a['epsilon_lower'])}, attained {lower(a['epsilon_attained'])}, sound "
                       f"{upper(a['epsilon_sound'])} ({a['sound_theorem']}), sound / attained "
                       f"{fmt(a['epsilon_sound'] / a['epsilon_attained']) if a['epsilon_attained'] else 'n/a'}; "
                       f"{a['attained_pair']}."))
    return b


def _inference(inf: dict) -> List[tuple]:
    b: List[tuple] = [(Block.PARAGRAPH, "Private forecasts of a private series (paper Appendix H): each context step kept with "
                            "probability r, N(0, σ²) noise on kept values, mean imputation; σ calibrated per cell so "
                            "one release is (ε, δ)-DP for (w, v)-event neighbours under T15's sound accounting, given the "
                            "model. The model is trained without DP-SGD on these series, released contexts included, as "
                            "in the paper: the ε covers the release, not the model's training. Test CRPS (mean ± std over releases); "
                            "ε = ∞ is the noiseless reference. Claim C11 (section 2) judges the tables below: does "
                            "r < 1 beat r = 1 at small ε (Welch test over the releases)?")]
    real = inf.get("grunfeld")
    tables = [("synthetic", inf.get("synthetic")), (real["settings"]["data"] if real else "Grunfeld", real)]
    for name, table in tables:
        if table is None:
            b.append((Block.PARAGRAPH, f"{name}: {inf.get('grunfeld_status', 'not run')}."))
            continue
        rates = list(dict.fromkeys(r["r"] for r in table["rows"] if r["epsilon"] != float("inf")))
        epsilons = list(dict.fromkeys(r["epsilon"] for r in table["rows"]))
        cell = {(r["epsilon"], r["r"]): r for r in table["rows"]}
        st = table["settings"]
        b.append((Block.PARAGRAPH, f"{name}: N = {st['N']} series, L_C = {st['context_length']}, L_F = {st['forecast_length']}, "
                       f"δ = {fmt(st['delta'])}, v = {fmt(st['v'])}, w = {st['w']}, {st['repeats']} releases per cell."))
        rows = []
        for e in epsilons:
            row = ["∞ (no noise)" if e == float("inf") else fmt(e)]
            for r in rates:
                c = cell.get((e, r)) or (cell.get((e, 1.0)) if e == float("inf") and r == rates[0] else None)
                row.append("" if c is None else f"{fmt(c['crps'])} ± {fmt(c['crps_std'], 2)} (σ = {fmt(c['sigma'])})")
            rows.append(row)
        b.append((Block.TABLE, ["ε"] + [f"r = {fmt(r)}" for r in rates], rows))
    return b


def _errata(errata: List[dict]) -> List[tuple]:
    n = sum(e["status"] == REPRODUCED for e in errata)
    same = sum(e["status"] == "not distinguishable here" for e in errata)
    return [(Block.DETAILS, f"{len(errata)} errata, {n} reproduced" + (f", {same} not distinguishable here" if same else ""),
             [(Block.TABLE, ["#", "paper", "reading", "measured", "status", "source"],
               [[e["erratum"], e["paper"], e["reading"], e["measured"], e["status"], e["source"] or ""]
                for e in errata])])]


def _claim_table(c: dict) -> List[tuple]:
    n = c["numbers"]
    cid = c["id"]
    if cid == "C1":
        rows = [[r["cell"], r["instances"], r["steps"], fmt(r["judged"]), fmt(r["upper_wins_from_eps"]),
                 fmt(r["attained_wins_from_eps"]), fmt(r["robust_wins_from_eps"])] for r in n["rows"]]
        return [(Block.TABLE, ["cell", "λ", "steps", "judged", "λ=1 wins from ε (upper vs upper)",
                           "(attained vs attained)", "(T6 upper vs T9 attained)"], rows)]
    if cid == "C2":
        return [(Block.TABLE, ["cell", "schedule", "T6 comp.", "T1 comp.", "WOR ≤ det. everywhere (sound)", "(attained)",
                           "(T6 sound vs T1 attained)", "ε(1e-5) T6 sound (grid)", "ε(1e-5) T1 sound (grid)"],
                 [[r["cell"], r["schedule"], r["compositions_T6"], r["compositions_T1"],
                   fmt(r["sound_wor_wins_everywhere"]), fmt(r["attained_wor_wins_everywhere"]),
                   fmt(r["robust_wor_wins_everywhere"]), upper(r["eps_at_delta_1e-5_T6_sound"]),
                   upper(r["eps_at_delta_1e-5_T1_sound"])] for r in n["rows"]])]
    if cid == "C3":
        return [(Block.TABLE, ["σ_F", "T11 weight"], [[fmt(w["sigma_F"]), fmt(w["weight"])] for w in n["weights"]] +
                 [["L_F → 0 limit ρ L_C / T", fmt(n["w_limit_LF_to_0"])],
                  ["printed 'L_C → 0' reading ρ L_F / T", fmt(n["w_limit_LC_to_0_printed_reading"])]])]
    if cid == "C4":
        return [(Block.TABLE, ["r", "λ", "step", "epochs", "ε", "δ T1 sound", "δ T1 pair, upper", "δ T1 attained",
                           "δ T3 (lower bound) pair, upper", "δ T3 (lower bound), attained", "δ T2 sound",
                           "T1 ≤ T3 (like for like)", "robust", "T1 ≤ T2"],
                 [[fmt(r["r"]), r["instances"], r["step"], r["epochs"], fmt(r["epsilon"]), upper(r["delta_T1_sound"]),
                   upper(r["delta_T1_upper"]), lower(r["delta_T1_attained"]), upper(r["delta_T3_upper"]),
                   lower(r["delta_T3_attained"]),
                   upper(r["delta_T2_sound"]), fmt(r["like_for_like_vs_T3"]), fmt(r["robust_vs_T3"]),
                   fmt(r["sound_vs_T2"])] for r in n["rows"]])]
    if cid == "C5":
        return [(Block.TABLE, ["cell", "L_C+L_F", "k", "T6 weight", "max(T14 - T6)", "at ε", "T14 ≥ T6 from ε",
                           "max T14/T6"],
                 [[r["cell"], r["window_length"], r["k"], fmt(r["weight_T6"]), fmt(r["max_excess_T14_minus_T6"]),
                   fmt(r["at_eps"]), fmt(r["T14_ge_T6_from_eps"]), fmt(r["max_ratio_T14_over_T6"])] for r in n["rows"]])]
    if cid == "C6":
        a = n["audit"]
        rows = [["pooled N_tot, Λ, k", f"{n['N_tot']}, {n['batch_size']}, {n['k']}"], ["δ", fmt(n["delta"])],
                ["ε T13 (sound, one record: another relation)", upper(n["epsilon_T13_sound"])],
                ["ε T14 (attained, element level; T14 is a lower bound)", lower(n["epsilon_T14_attained"])],
                ["audit", n["audit_status"]]]
        if a is not None:
            rows += [["ε audited (LCB, pooled loop)", lower(a["epsilon_lower"])], ["confidence", fmt(a["confidence"])],
                     ["trials per world", fmt(a["trials"])], ["GOF p-value", fmt(a["gof_pvalue"])]]
        p = n.get("power")
        if p:
            rows += [["ε the designed test expects to certify at these trials (ideal)", lower(p["ideal"])],
                     ["trials per world to certify ε T13", "cannot (ε T14 ≤ ε T13)" if p["cannot"] else
                      f"> {p['search_cap']:.0e}" if p["trials_needed"] is None else fmt(p["trials_needed"])]]
        return [(Block.TABLE, ["quantity", "value"], rows), (Block.PARAGRAPH, f"Why T13 sits below: {n['why_T13_below']}.")]
    if cid == "C7":
        return _privacy_utility(n)
    if cid in TABLES:
        return TABLES[cid](n)
    return []


def _privacy_utility(n: dict) -> List[tuple]:
    """The privacy-utility section: test CRPS (mean ± std over seeds) per model and ε, last iterate (covered by ε)
    and the lowest-validation checkpoint (not covered), with the steps and sound ε spent (a seed stopped at the
    epochs cap before its budget says so), and the baselines."""
    if not n.get("rows"):
        return [(Block.PARAGRAPH, "Not evaluated: " + "; ".join(c["reason"] for c in n["cells"]["not_evaluated"]))]
    rows = [[r["model"], "∞" if r["epsilon"] is None else fmt(r["epsilon"]),
             ("last (no DP)" if r["epsilon"] is None else "last (covered by ε)") if r["covered"]
             else "lowest validation (not covered)",
             f"{r['crps_mean']:.4f} ± {r['crps_std']:.4f}", r["seeds"], ", ".join(map(str, r["steps"])),
             ", ".join("-" if e is None else upper(e) + (" (epochs cap: < ε)" if capped else "")
                       for e, capped in zip(r["epsilon_spent"], r["capped"]))] for r in n["rows"]]
    rows += [[name, "-", "baseline (statsforecast)", f"{value:.4f}", "-", "-", "-"]
             for name, value in n["baselines"].items()]
    return [(Block.PARAGRAPH, f"Privacy-utility on the shipped {n['dataset']} series (1-event level, δ = 1e-7, WOR top level, "
                  f"at most {n['epochs']} epochs; `tsdp experiment` runs the paper's whole grid):"),
            (Block.TABLE, ["model", "ε", "checkpoint", "test CRPS", "seeds", "steps", "sound ε spent"], rows)] + [
        (Block.PARAGRAPH, f"ε = {fmt(x['column'])} is the same training runs as ε = {fmt(x['same_as'])} (same seeds and steps: "
              + ", ".join(f"{m} {'/'.join(map(str, steps))}" for m, steps in x["steps"]) + ").")
        for x in n.get("same_runs", [])]
