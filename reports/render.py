"""Render results.json into report.md and a self-contained index.html (PNG figures base64-embedded).

Both documents come from one list of blocks built only from the results dict, so every number
shown is in results.json. Blocks: ("h", level, text), ("p", text), ("table", header, rows),
("img", file name, caption).
"""
from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import List


def fmt(x, digits: int = 4) -> str:
    """A number for the tables: None → 'n/a', floats to ``digits`` significant digits."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        return f"{x:.{digits}g}"
    return str(x)


def blocks(results: dict) -> List[tuple]:
    """The report as blocks, in section order (configuration, claims, consistency, tightness, errata)."""
    b: List[tuple] = []
    meta = results["meta"]
    b.append(("h", 1, f"tsdp tightness report: {meta['name']}"))
    b.append(("p", f"Mode: {meta['mode']}; generated in {fmt(meta['elapsed_s'], 3)} s; tsdp {meta['version']}; "
                   f"status: {meta['status']}. Sound numbers are upper bounds (rounded up), attained numbers lower "
                   "bounds reached by a construction (rounded down), audited numbers lower confidence bounds."))
    missing = [k for k in SECTIONS if results.get(k) is None]
    if missing:
        b.append(("p", "**Not computed** (" + meta["status"] + "): " + ", ".join(missing) + "."))
    # 1. configuration and accounting
    acc = results.get("accounting")
    b.append(("h", 2, "1. Configuration and accounting"))
    if acc is not None:
        b.extend(_accounting(acc))
    b.append(("h", 2, "2. Claims C1-C6"))
    if results.get("claims") is not None:
        b.extend(_claims(results["claims"]))
    b.append(("h", 2, "3. Consistency (`tsdp verify --quick`)"))
    if results.get("consistency") is not None:
        b.extend(_consistency(results["consistency"]))
    b.append(("h", 2, "4. Tightness"))
    if results.get("tightness") is not None:
        b.extend(_tightness(results["tightness"]))
    b.append(("h", 2, "5. Errata of THEOREMS.md and what the toolkit measured"))
    if results.get("errata") is not None:
        b.extend(_errata(results["errata"]))
    return b


SECTIONS = ("accounting", "claims", "consistency", "tightness", "errata")


def _accounting(acc: dict) -> List[tuple]:
    b: List[tuple] = []
    cfg = {k: v for k, v in acc["config"].items() if k != "derived"}
    b.append(("table", ["field", "value"], [[k, fmt(v)] for k, v in cfg.items()] +
              [[f"derived {k}", fmt(v)] for k, v in acc["derived"].items()]))
    b.append(("p", f"Theorem used: {acc['theorem']} ({acc['kind']}) - {acc['reason']}."))
    b.append(("table", ["δ", "schedule", "compositions", "ε sound (upper)", "ε attained (lower)"],
              [[fmt(r["delta"]), f"{r['steps']} steps" if r["steps"] else f"{r['epochs']} epochs", r["compositions"],
                fmt(r["epsilon_sound"]), fmt(r["epsilon_attained"])] for r in acc["rows"]]))
    return b


def _claims(claims: List[dict]) -> List[tuple]:
    b: List[tuple] = [("table", ["claim", "verdict", "reason"], [[c["id"], c["verdict"], c["reason"]] for c in claims])]
    for c in claims:
        b.append(("h", 3, f"{c['id']}: {c['verdict']}"))
        b.append(("p", f"Claim: {c['statement']}."))
        b.append(("p", f"Verdict: **{c['verdict']}** - {c['reason']}."))
        b.extend(_claim_table(c))
        for name in c.get("figures", []):
            b.append(("img", name, f"{c['id']} figure"))
    return b


def _consistency(con: dict) -> List[tuple]:
    b: List[tuple] = []
    s = con["summary"]
    b.append(("p", f"{s['total']} checks in {fmt(con['elapsed_s'], 3)} s: {s['pass']} pass, {s['fail']} fail, "
                   f"{s['finding']} finding. Theorems covered: {', '.join(con['theorems_covered'])}."))
    if con["failures_and_findings"]:
        b.append(("table", ["check", "status", "theorems", "explanation"],
                  [[c["name"], c["status"], ", ".join(c["theorems"]), c["explanation"]]
                   for c in con["failures_and_findings"]]))
    return b


def _tightness(t: dict) -> List[tuple]:
    b: List[tuple] = []
    ac = t["audit_config"]
    b.append(("p", f"Audit status: {t['audit_status']}. Audit configuration N = {ac['N']}, Λ = {ac['batch_size']}, "
                   f"L = {ac['L']}, L_C = {ac['context_length']}, L_F = {ac['forecast_length']}, σ = {ac['sigma']}, "
                   f"δ = {fmt(t['delta'])}, {t['trials']} trials per world (one step), {t['composed_trials']} "
                   "(10 steps)."))
    if t["soundness_violations"]:
        b.append(("p", "**SOUNDNESS VIOLATION**: audited ε lower bound above the sound ε for " +
                  ", ".join(t["soundness_violations"])))
    b.append(("table", ["audited", "sound bound", "kind", "ε sound", "ε attained", "ε audited (LCB)", "audited/attained",
                        "GOF p"],
              [[x["theorem"], x["sound_theorem"], x["kind"],
                fmt(x["audit"]["epsilon_sound"]) if x["audit"] else "n/a",
                fmt(x["audit"]["epsilon_attained"]) if x["audit"] else "n/a",
                fmt(x["audit"]["epsilon_lower"]) if x["audit"] else "audit not available",
                fmt(x["audit"]["ratio"]) if x["audit"] else "n/a",
                fmt(x["audit"]["gof_pvalue"]) if x["audit"] else "n/a"] for x in t["bounds"]]))
    b.append(("p", "Upper bounds: measured gap (one step)."))
    b.append(("table", ["upper bound", "construction", "λ", "ε sound", "ε attained", "attained/sound",
                        "ε audited (LCB)", "audited/sound"],
              [[g["upper"], g["construction"], g["instances"], fmt(g["epsilon_sound"]), fmt(g["epsilon_attained"]),
                fmt(g["attained_over_sound"]), fmt(g["epsilon_audited_lower"]) if t["audit_status"] == "ran"
                else "audit not available", fmt(g["audited_over_sound"])] for g in t["upper_gaps"]]))
    b.append(("p", "Composition gap of T6 on the audit configuration (ε at δ = 1e-3)."))
    b.append(("table", ["steps", "ε sound", "ε attained", "ε audited (LCB)", "audit trials"],
              [[r["steps"], fmt(r["epsilon_sound"]), fmt(r["epsilon_attained"]), fmt(r["epsilon_audited_lower"]),
                fmt(r["audit_trials"])] for r in t["composition"]]))
    for name in t.get("figures", []):
        b.append(("img", name, "tightness figure"))
    return b


def _errata(errata: List[dict]) -> List[tuple]:
    return [("table", ["#", "paper", "reading", "measured", "status", "source"],
             [[e["erratum"], e["paper"], e["reading"], e["measured"], e["status"], e["source"] or ""] for e in errata])]


def _claim_table(c: dict) -> List[tuple]:
    n = c["numbers"]
    cid = c["id"]
    if cid == "C1":
        rows = [[r["cell"], r["instances"], r["steps"], fmt(r["sound_wins_from_eps"]), fmt(r["attained_wins_from_eps"]),
                 fmt(r["robust_wins_from_eps"])] for r in n["rows"]]
        return [("table", ["cell", "λ", "steps", "λ=1 wins from ε (sound vs sound)", "(attained vs attained)",
                           "(T6 sound vs T9 attained)"], rows)]
    if cid == "C2":
        return [("table", ["cell", "schedule", "T6 comp.", "T1 comp.", "WOR ≤ det. everywhere (sound)", "(attained)",
                           "(T6 sound vs T1 attained)", "ε(1e-5) T6 sound (grid)", "ε(1e-5) T1 sound (grid)"],
                 [[r["cell"], r["schedule"], r["compositions_T6"], r["compositions_T1"],
                   fmt(r["sound_wor_wins_everywhere"]), fmt(r["attained_wor_wins_everywhere"]),
                   fmt(r["robust_wor_wins_everywhere"]), fmt(r["eps_at_delta_1e-5_T6_sound"]),
                   fmt(r["eps_at_delta_1e-5_T1_sound"])] for r in n["rows"]])]
    if cid == "C3":
        return [("table", ["σ_F", "T11 weight"], [[fmt(w["sigma_F"]), fmt(w["weight"], 6)] for w in n["weights"]] +
                 [["L_F → 0 limit ρ L_C / T", fmt(n["w_limit_LF_to_0"], 6)],
                  ["printed 'L_C → 0' reading ρ L_F / T", fmt(n["w_limit_LC_to_0_printed_reading"], 6)]])]
    if cid == "C4":
        out = [("table", ["r", "λ", "step", "epochs", "ε", "δ T1 sound", "δ T1 attained", "δ T3 sound", "δ T3 attained",
                          "δ T2 sound", "T1 ≤ T3 (like for like)", "robust", "T1 ≤ T2"],
                [[fmt(r["r"]), r["instances"], r["step"], r["epochs"], fmt(r["epsilon"]), fmt(r["delta_T1_sound"]),
                  fmt(r["delta_T1_attained"]), fmt(r["delta_T3_sound"]), fmt(r["delta_T3_attained"]),
                  fmt(r["delta_T2_sound"]), fmt(r["like_for_like_vs_T3"]), fmt(r["robust_vs_T3"]),
                  fmt(r["sound_vs_T2"])] for r in n["rows"]])]
        if n["skipped"]:
            out.append(("table", ["r", "λ", "not computable"], [[fmt(x["r"]), x["instances"], x["error"]]
                                                                 for x in n["skipped"]]))
        return out
    if cid == "C5":
        return [("table", ["cell", "L_C+L_F", "k", "T6 weight", "max(T14 - T6)", "at ε", "T14 ≥ T6 from ε",
                           "max T14/T6"],
                 [[r["cell"], r["window_length"], r["k"], fmt(r["weight_T6"]), fmt(r["max_excess_T14_minus_T6"]),
                   fmt(r["at_eps"]), fmt(r["T14_ge_T6_from_eps"]), fmt(r["max_ratio_T14_over_T6"])] for r in n["rows"]])]
    if cid == "C6":
        a = n["audit"]
        rows = [["pooled N_tot, Λ, k", f"{n['N_tot']}, {n['batch_size']}, {n['k']}"], ["δ", fmt(n["delta"])],
                ["ε T13 (sound, one record)", fmt(n["epsilon_T13_sound"])],
                ["ε T14 (attained, element level)", fmt(n["epsilon_T14_attained"])],
                ["audit", n["audit_status"]]]
        if a is not None:
            rows += [["ε audited (LCB, pooled loop)", fmt(a["epsilon_lower"])], ["confidence", fmt(a["confidence"])],
                     ["trials per world", fmt(a["trials"])], ["GOF p-value", fmt(a["gof_pvalue"])]]
        return [("table", ["quantity", "value"], rows)]
    return []


def to_markdown(results: dict) -> str:
    """report.md: the blocks as GitHub-flavoured Markdown, figures linked by file name."""
    out = []
    for blk in blocks(results):
        if blk[0] == "h":
            out.append("#" * blk[1] + " " + blk[2])
        elif blk[0] == "p":
            out.append(blk[1])
        elif blk[0] == "table":
            header, rows = blk[1], blk[2]
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "---|" * len(header))
            out.extend("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows)
        elif blk[0] == "img":
            out.append(f"![{blk[2]}]({blk[1]})")
        out.append("")
    return "\n".join(out)


_CSS = ("body{font-family:sans-serif;max-width:1300px;margin:2em auto;line-height:1.4}"
        "table{border-collapse:collapse;margin:0.5em 0;font-size:0.85em}"
        "td,th{border:1px solid #bbb;padding:2px 6px;vertical-align:top}th{background:#eee}"
        "img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}")


def to_html(results: dict, figure_dir: Path) -> str:
    """index.html: the blocks as one self-contained page, PNGs embedded as base64 data URIs."""
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>tsdp report</title>",
           f"<style>{_CSS}</style></head><body>"]
    for blk in blocks(results):
        if blk[0] == "h":
            out.append(f"<h{blk[1]}>{html.escape(blk[2])}</h{blk[1]}>")
        elif blk[0] == "p":
            text = html.escape(blk[1])
            parts = text.split("**")
            text = "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))
            out.append(f"<p>{text}</p>")
        elif blk[0] == "table":
            out.append("<table><tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in blk[1]) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in blk[2])
            out.append("</table>")
        elif blk[0] == "img":
            data = base64.b64encode((figure_dir / blk[1]).read_bytes()).decode("ascii")
            out.append(f"<img alt='{html.escape(blk[2])}' src='data:image/png;base64,{data}'>")
    out.append("</body></html>")
    return "\n".join(out)
