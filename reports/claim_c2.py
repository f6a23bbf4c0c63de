"""Claim C2 (paper Section 5, Fig. 3; Appendix C.1.2 grid): WOR top level (T6) beats deterministic
iteration (T1).

λ = 1. T6 composes floor(N/Λ) times per epoch, T1 once per epoch; schedules 1 step (one T1
epoch), 1 epoch, 10 epochs. Both bounds are tight; compared like for like, ``sound``
(connect-the-dots PLDs of the profiles, upper estimates, the paper's method) and ``attained``
(construction pairs, lower estimates), and ``robust`` (T6 sound, an upper bound, against T1
attained, a lower bound). Cells: (grid cell, schedule).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from tsdp.theorems.config import Top, TrainingConfig
from tsdp.verify.estimate import Estimate

from .claim_base import (CONFIG_CELL, CONFIRMED, NOT_EVALUATED, QUALIFIED, REFUTED, Cells, Claim, ClaimContext,
                         Computed, cell_info, floats, fmt4, grid_cells)
from .curves import delta_curves, eps_grid, first_win_epsilon, losing_range

SCHEDULES = ("1 step", "1 epoch", "10 epochs")


def eps_at(eps: np.ndarray, delta: np.ndarray, target: float) -> Optional[float]:
    """Smallest grid ε with δ(ε) ≤ target (grid resolution; None if none on the grid).

    Args:
        eps: The ε grid (increasing).
        delta: δ(ε) on it.
        target: The δ to reach.

    Returns:
        The ε, or None.
    """
    idx = np.nonzero(np.asarray(delta) <= target)[0]
    return None if len(idx) == 0 else float(eps[idx[0]])


class C2(Claim):
    """Claim C2 (THEOREMS.md; paper Section 5, Fig. 3, Appendix C.1.2 grid): a WOR top level (the tight T6, Thm 4.4, floor(N/Λ) compositions per
    epoch) gives a smaller δ(ε) than deterministic iteration (the tight T1, Thm 4.2) after 1 step, 1 epoch and
    10 epochs, for r, Λ/N ∈ {0.5, 0.1}; :attr:`statement` words it, :meth:`rule` judges it."""

    id = "C2"
    on_configuration = True
    statement = ("WOR top level (T6, floor(N/Λ) compositions per epoch) beats deterministic iteration (T1) after 1 step, "
                 "1 epoch and 10 epochs, for r, Λ/N ∈ {0.5, 0.1}")

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        eps = eps_grid()
        cells = Cells()
        panels, rows = [], []
        for label, cfg, why in grid_cells(config):
            cells.grid += len(SCHEDULES)
            if cfg is None:
                cells.skip(label, why, len(SCHEDULES))
                continue
            if quick and label != CONFIG_CELL:
                continue
            ctx.step(label)
            det = cfg.with_(top="deterministic")
            per_epoch = cfg.compositions_per_epoch
            sched = {"1 step": (1, 1), "1 epoch": (per_epoch, 1), "10 epochs": (10 * per_epoch, 10)}
            n6, n1 = [v[0] for v in sched.values()], [v[1] for v in sched.values()]
            s6, a6 = (delta_curves(e, "T6", cfg, n6, eps) for e in (Estimate.SOUND, Estimate.ATTAINED))
            s1, a1 = (delta_curves(e, "T1", det, n1, eps) for e in (Estimate.SOUND, Estimate.ATTAINED))
            curves = []
            for name, (k6, k1) in sched.items():
                curves.append({"label": f"WOR (T6), {name}: {k6} comp.", "schedule": name, "scheme": Top.WOR,
                               "compositions": k6, "sound": floats(s6[k6]), "attained": floats(a6[k6])})
                curves.append({"label": f"deterministic (T1), {name}: {k1} comp.", "schedule": name,
                               "scheme": Top.DETERMINISTIC, "compositions": k1, "sound": floats(s1[k1]),
                               "attained": floats(a1[k1])})
                row = {"cell": label, "schedule": name, "compositions_T6": k6, "compositions_T1": k1,
                       "eps_at_delta_1e-5_T6_sound": eps_at(eps, s6[k6], 1e-5),
                       "eps_at_delta_1e-5_T1_sound": eps_at(eps, s1[k1], 1e-5)}
                for how, mine, other in (("sound", s6, s1), ("attained", a6, a1), ("robust", s6, a1)):
                    cmp = first_win_epsilon(eps, mine[k6], other[k1])
                    row[f"{how}_wor_wins_everywhere"] = cmp["everywhere"]
                    row[f"{how}_wor_wins_from_eps"] = cmp["all_from"]
                    row[f"{how}_wor_loses_on"] = losing_range(eps, mine[k6], other[k1])
                rows.append(row)
                cells.evaluated.append(f"{label}, {name}")
            panels.append({"cell": label, "params": cell_info(cfg), "steps_per_epoch_T6": per_epoch, "curves": curves})
        return Computed({"rows": rows, "cells": cells.as_dict(quick)}, {"eps": floats(eps), "panels": panels})

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """Confirmed when both like-for-like evaluations give δ_T6 ≤ δ_T1 at every grid ε in every
        evaluated (cell, schedule); refuted when neither does for any schedule of the configuration
        (of any cell when the configuration was not evaluated); qualified otherwise; not evaluated
        without rows."""
        rows = numbers["rows"]
        if not rows:
            return NOT_EVALUATED, "no cell could be evaluated"
        like = [r["sound_wor_wins_everywhere"] and r["attained_wor_wins_everywhere"] for r in rows]
        mine = [r for r in rows if r["cell"] == CONFIG_CELL] or rows
        if all(like):
            verdict = CONFIRMED
        elif not any(r["sound_wor_wins_everywhere"] or r["attained_wor_wins_everywhere"] for r in mine):
            verdict = REFUTED
        else:
            verdict = QUALIFIED
        failed = []
        for r, ok in zip(rows, like):
            if not ok:
                lose = r["sound_wor_loses_on"] or r["attained_wor_loses_on"]
                failed.append(f"{r['cell']}/{r['schedule']} (WOR larger on ε ∈ [{fmt4(lose['eps_min'])}, "
                              f"{fmt4(lose['eps_max'])}], δ up to {fmt4(lose['delta_ours_max'])} vs "
                              f"{fmt4(lose['delta_other_max'])})")
        robust = sum(r["robust_wor_wins_everywhere"] for r in rows)
        reason = (f"like for like (sound vs sound, attained vs attained) δ_T6 ≤ δ_T1 at every grid ε in "
                  f"{sum(like)}/{len(rows)} (cell, schedule) pairs" + (f"; not in {'; '.join(failed)}" if failed else "") +
                  f"; robust (T6 sound ≤ T1 attained) in {robust}/{len(rows)}")
        return verdict, reason

    def figure(self, result: dict, out: Path) -> List[str]:
        """Paper Fig. 3 and the appendix grid: T6 (WOR, solid) vs T1 (deterministic, dashed) after
        1 step, 1 epoch, 10 epochs, sound evaluation (the paper's); attained as thin dotted lines."""
        from .figures import cell_title, finish_panel, grid, legend_outside, plot, save

        f = result["figure"]
        eps = np.asarray(f["eps"])
        fig, axes = grid(len(f["panels"]), 3)
        for ax, panel in zip(axes, f["panels"]):
            for j, name in enumerate(SCHEDULES):
                for c in panel["curves"]:
                    if c["schedule"] != name:
                        continue
                    who = "WOR (T6)" if c["scheme"] == Top.WOR else "det. (T1)"
                    plot(ax, eps, c["sound"], color=f"C{j}", ls="-" if c["scheme"] == Top.WOR else "--",
                         label=f"{who}, {name}")
                    plot(ax, eps, c["attained"], color=f"C{j}", ls=":", lw=0.8)
            finish_panel(ax, cell_title(panel["cell"], panel["params"]), after="10 epochs")
        legend_outside(fig, axes, ncol=3, title="sound; dotted: attained")
        fig.suptitle("C2 (Fig. 3): top-level WOR vs deterministic iteration, λ = 1")
        return [save(fig, out, "c2.png")]


CLAIM = C2()
