"""The numbers tables of the claims judged on the paper's appendix tables (C8, C9, C11) and of C10, C12 (non-private
utility), as blocks of :mod:`reports.render` (:mod:`reports.blocks`: tables and paragraphs)."""
from __future__ import annotations

from typing import List

from .blocks import Block
from .non_private import SYMBOL, detectable_text, f_text, p_text, power_text


def _f(x) -> str:
    return "-" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def w_user_table(n: dict) -> List[tuple]:
    """Per w-user table and w: the best DP model, the better baseline, a win, the paper's bold row.

    Args:
        n: Claim C8's numbers.

    Returns:
        The table's rows.
    """
    return [(Block.TABLE, ["dataset", "w", "best DP model", "CRPS", "better baseline", "CRPS", "DP wins", "bold in paper"],
             [[r["dataset"], r["w"], r["best_model"], _f(r["best_crps"]), r["baseline"], _f(r["baseline_crps"]),
               "yes" if r["wins"] else "no", r["bold"] or "-"] for r in n["paper"]["rows"]])]


def label_table(n: dict) -> List[tuple]:
    """Per label-perturbation row: CRPS by σ_F, the lowest σ_F (ties all), the paper's bold σ_F, gain over σ_F = 0.

    Args:
        n: Claim C9's numbers.

    Returns:
        The table's rows.
    """
    rows = n["paper"]["rows"]
    sigmas = list(rows[0]["by_sigma_f"]) if rows else []
    return [(Block.TABLE, ["dataset", "model"] + [f"σ_F = {s}" for s in sigmas] + ["lowest at σ_F", "bold in paper",
                                                                              "gain over σ_F = 0", "std at σ_F = 0"],
             [[r["dataset"], r["model"]] + [_f(r["by_sigma_f"][s]) for s in sigmas]
              + [", ".join(f"{x:g}" for x in r["best_sigma_f"]), ", ".join(f"{x:g}" for x in r["bold_sigma_f"]),
                 _f(r["gain_over_0"]), _f(r["std_at_0"])] for r in rows])]


def inference_table(n: dict) -> List[tuple]:
    """Per inference table, model and small ε: r = 1 against the best r < 1, and whether that matches the claim.

    Args:
        n: Claim C11's numbers.

    Returns:
        The table's rows.
    """
    return [(Block.TABLE, ["dataset", "model", "ε", "CRPS r = 1", "best r < 1", "CRPS", "r < 1 helps", "claim expects"],
             [[r["dataset"], r["model"], f"{r['epsilon']:g}", _f(r["crps_r1"]), f"{r['best_r_below_1']:g}",
               _f(r["crps_best_r_below_1"]), "yes" if r["helps"] else "no", "yes" if r["expected"] else "no"]
              for r in n["paper"]["rows"]])]


def non_private_table(n: dict) -> List[tuple]:
    """C10, C12: per measurement (the paper's protocol, C10's equal-epochs design in the full report, then the
    epochs cap), the judged test CRPS per (top level, level of the claim's factor Λ or λ) over seeds with the steps
    and epochs trained (a selected checkpoint: each seed's step too); then the two F-tests of each measurement.

    Args:
        n: Claim C10's or C12's numbers.

    Returns:
        The table's rows.
    """
    field, sym = n["factor"], SYMBOL[n["factor"]]
    out, tests = [], []
    measurements = [("paper's protocol", n["paper"])]
    if n.get("equal_epochs"):
        measurements.append((f"paper's protocol, {n['equal_epochs']['epochs']} epochs a cell", n["equal_epochs"]))
    measurements.append((f"{n['capped']['epochs']}-epoch cap", n["capped"]))
    for name, m in measurements:
        judged = "lowest-validation checkpoint" if m["selected"] else "last iterate"
        header = ["top level", sym, "steps", "epochs", f"test CRPS per seed ({name}, {judged})"]
        if m["selected"]:
            header.append("its step per seed")
        out.append((Block.TABLE, header,
                    [[c["top"], c[field], c["steps"], f"{c['epochs']:.4g}", ", ".join(f"{v:.4f}" for v in c["crps"])]
                     + ([", ".join(str(s) for s in c["selected_steps"])] if m["selected"] else [])
                     for c in m["crps"]]))
        tests += [[name, t["factor"], f_text(t), f"{t['df']}, {t['df_error']}", p_text(t), f"{t['alpha']:g}",
                   power_text(t["power"]), f"{t['effect']:.3g}", detectable_text(t)] for t in m.get("tests") or []]
    if tests:
        out.append((Block.TABLE, ["measurement", "factor", "F", "df", "p", "α", "power vs Δ", "Δ",
                                  "Δ detected with power 0.8"], tests))
    return out


TABLES = {"C8": w_user_table, "C9": label_table, "C10": non_private_table, "C11": inference_table,
          "C12": non_private_table}
"""The numbers table of each claim this module renders, by id."""
