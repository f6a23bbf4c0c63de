"""Claim C4 (Appendix C.1.4, epoch privacy vs length): deterministic top level, Λ = N, 16 steps.

λ = 1 composes T1 (tight) once per step (one step = one epoch); λ > 1 has λ steps per epoch and
is evaluated at each step that ends one of its epochs by T3 (optimistic lower bound, the strong
competitor) and T2 (sound upper bound). T1 against T3 like for like on the two construction
pairs (upper: pessimistic buckets, vs upper; attained: optimistic, vs attained) and robust (T1
upper vs T3 attained, lower); T1 sound against T2 sound (both connect-the-dots, upper bounds).
ε ∈ {1, 4}; r from the configuration and, unless quick, 0.5 and 0.1.

Cells: (r, λ). A cell the configuration cannot represent (r), a λ larger than Λ, a λ without
an epoch end within 16 steps, or a λ whose PLD the accountant refuses (profile not reaching
the truncation level on its grid) is listed as not evaluated with the reason, never counted.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import List, Tuple

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.estimate import Estimate

from .claim_base import (CONFIRMED, NOT_EVALUATED, QUALIFIED, REFUTED, GRID_RATIOS, Cells, Claim, ClaimContext,
                         Computed, cell_info, plain)
from .curves import NEGLIGIBLE, TIE_REL, delta_curves, with_ratios

EPSILONS = (1.0, 4.0)
STEPS = 16
LAMBDAS, QUICK_LAMBDAS = (2, 4, 8, 16), (2, 4)


def le(a: float, b: float) -> bool:
    """a ≤ b up to a tie (both < NEGLIGIBLE, or within TIE_REL relative); a NaN on either side is never ≤ (nor a tie).

    Args:
        a: The left side.
        b: The right side.

    Returns:
        Whether a ≤ b up to a tie.
    """
    return a <= b * (1 + TIE_REL) or (a < NEGLIGIBLE and b < NEGLIGIBLE)


def _pick(curves: dict, ns, eps) -> dict:
    return {str(e): [float(curves[n][i]) for n in ns] for i, e in enumerate(eps)}


class C4(Claim):
    """Claim C4 (THEOREMS.md; paper Appendix C.1.4): with a deterministic top level and N = Λ, composing 16/λ epochs,
    λ = 1 gives the smallest δ(ε) at ε ∈ {1, 4}, r ∈ {0.5, 0.1}, at every step that ends an epoch of λ > 1;
    :attr:`statement` words it, :meth:`rule` judges it."""

    id = "C4"
    on_configuration = True
    statement = ("deterministic top level, N = Λ, composing 16/λ epochs: λ = 1 gives the smallest δ(ε) at ε ∈ {1, 4}, "
                 "r ∈ {0.5, 0.1}, at every step that ends an epoch of λ > 1")

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        base = plain(config).with_(top="deterministic")
        all_rs = [float(base.r)] + [r for r in GRID_RATIOS if abs(r - float(base.r)) > 1e-12]
        rs = all_rs[:1] if quick else all_rs
        eps = np.array(EPSILONS)
        cells = Cells(grid=len(all_rs) * len(LAMBDAS))
        rows, panels, skipped = [], [], []
        for r in rs:
            try:
                cfg = with_ratios(base, r, 1.0).with_(top="deterministic")
            except ValueError as exc:
                for lam in LAMBDAS if not quick else QUICK_LAMBDAS:
                    cells.skip(f"r={r:g}, λ={lam}", str(exc))
                continue
            ctx.step(f"r={r:g}, λ=1")
            lambdas = [lam for lam in (QUICK_LAMBDAS if quick else LAMBDAS) if lam <= cfg.batch_size]
            # λ = 1 at the steps that end an epoch of some λ > 1 (the only steps compared)
            counts = sorted({s for lam in lambdas for s in range(cfg.with_(instances=lam).steps_per_epoch, STEPS + 1,
                                                                  cfg.with_(instances=lam).steps_per_epoch)}) or [1]
            t1, t1a, t1u = (delta_curves(e, "T1", cfg, counts, eps)
                            for e in (Estimate.SOUND, Estimate.ATTAINED, Estimate.ATTAINED_UPPER))
            series = [{"instances": 1, "bound": "T1 (sound)", "steps": counts, "delta": _pick(t1, counts, eps)},
                      {"instances": 1, "bound": "T1 (attained)", "steps": counts, "delta": _pick(t1a, counts, eps)}]
            for lam in QUICK_LAMBDAS if quick else LAMBDAS:
                label = f"r={r:g}, λ={lam}"
                if lam > cfg.batch_size:
                    cells.skip(label, f"λ = {lam} > Λ = {cfg.batch_size}")
                    continue
                ctx.step(label)
                c = cfg.with_(instances=lam)
                spe = c.steps_per_epoch
                ends = list(range(spe, STEPS + 1, spe))
                if not ends:
                    cells.skip(label, f"no epoch of {spe} steps ends within {STEPS} steps")
                    continue
                epochs = [s // spe for s in ends]
                try:
                    t3u, t3a = (delta_curves(e, "T3", c, epochs, eps)
                                for e in (Estimate.ATTAINED_UPPER, Estimate.ATTAINED))
                    t2 = delta_curves(Estimate.SOUND, "T2", c, epochs, eps)
                except ValueError as exc:  # the PLD grid cannot hold this pair (verify.pld refuses it)
                    skipped.append({"r": r, "instances": lam, "error": str(exc)})
                    cells.skip(label, f"PLD refused: {exc}")
                    continue
                series += [{"instances": lam, "bound": "T3 (lower bound, upper est.)", "steps": ends,
                            "delta": _pick(t3u, epochs, eps)},
                           {"instances": lam, "bound": "T3 (attained)", "steps": ends, "delta": _pick(t3a, epochs, eps)},
                           {"instances": lam, "bound": "T2 (sound, upper)", "steps": ends, "delta": _pick(t2, epochs, eps)}]
                for s, n in zip(ends, epochs):
                    for i, e in enumerate(eps):
                        v = {"T1_sound": float(t1[s][i]), "T1_upper": float(t1u[s][i]), "T1_attained": float(t1a[s][i]),
                             "T3_upper": float(t3u[n][i]), "T3_attained": float(t3a[n][i]), "T2_sound": float(t2[n][i])}
                        rows.append({"r": r, "instances": lam, "step": s, "epochs": n, "epsilon": float(e),
                                     **{f"delta_{k}": x for k, x in v.items()},
                                     "like_for_like_vs_T3": le(v["T1_upper"], v["T3_upper"]) and
                                     le(v["T1_attained"], v["T3_attained"]),
                                     "robust_vs_T3": le(v["T1_upper"], v["T3_attained"]),
                                     "sound_vs_T2": le(v["T1_sound"], v["T2_sound"])})
                cells.evaluated.append(label)
            panels.append({"r": r, "params": cell_info(cfg), "series": series})
        numbers = {"rows": rows, "skipped": skipped, "cells": cells.as_dict(quick)}
        return Computed(numbers, {"epsilons": list(EPSILONS), "panels": panels})

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """Confirmed when T1 ≤ T3 like for like at every epoch-ending step and ε; qualified when
        only T1 ≤ T2 (sound) holds everywhere; refuted otherwise; not evaluated without rows."""
        rows = numbers["rows"]
        if not rows:
            return NOT_EVALUATED, "no (r, λ) cell could be evaluated"
        if all(r["like_for_like_vs_T3"] for r in rows):
            verdict = CONFIRMED
        elif all(r["sound_vs_T2"] for r in rows):
            verdict = QUALIFIED
        else:
            verdict = REFUTED
        rs = sorted({r["r"] for r in rows}, reverse=True)
        n = len(rows)
        reason = (f"λ=1 (T1) ≤ λ>1 at the epoch-ending steps (ε ∈ {{1, 4}}, r ∈ {{{', '.join(f'{r:g}' for r in rs)}}}): "
                  f"against T3 like for like {sum(r['like_for_like_vs_T3'] for r in rows)}/{n}, robust (T1 upper ≤ T3 "
                  f"attained) {sum(r['robust_vs_T3'] for r in rows)}/{n}, T1 sound ≤ the sound T2 "
                  f"{sum(r['sound_vs_T2'] for r in rows)}/{n}")
        missed = numbers["cells"]["not_evaluated"]
        if missed:
            reason += "; not evaluated: " + ", ".join(f"{x['cell']} ({x['reason']})" for x in missed)
        return verdict, reason

    def figure(self, result: dict, out: Path) -> List[str]:
        """Appendix figure (epoch privacy vs length): δ at ε ∈ {1, 4} over 16 training steps,
        deterministic top level, Λ = N; λ = 1 (T1) vs λ > 1 at its epoch ends (T3 sound and
        attained, T2 sound)."""
        from .figures import grid, legend_outside, note_flat, plot, save

        f = result["figure"]
        panels = [(p, e) for p in f["panels"] for e in f["epsilons"]]
        fig, axes = grid(len(panels), 2)
        for ax, (p, e) in zip(axes, panels):
            for s in p["series"]:
                color = f"C{int(math.log2(s['instances']))}"
                ls = {"T1 (sound)": "-", "T1 (attained)": ":"}.get(s["bound"], "--" if "upper est." in s["bound"] else
                                                                     (":" if "attained" in s["bound"] else "-."))
                marker = {"-": "o", ":": ".", "--": "s", "-.": "^"}[ls]
                plot(ax, s["steps"], s["delta"][str(e)], color=color, ls=ls, marker=marker, ms=4,
                     label=f"λ={s['instances']} {s['bound']}")
            ax.set_yscale("log")
            ax.set_xlabel("training step")
            ax.set_ylabel(f"δ(ε = {e:g})")
            ax.grid(True, alpha=0.3)
            ax.set_title(f"ε = {e:g}, r = {p['r']:g}")
            note_flat(ax, f"{STEPS} steps")
        legend_outside(fig, axes, ncol=3)
        fig.suptitle("C4: deterministic top level, N = Λ, epoch privacy vs length")
        return [save(fig, out, "c4.png")]


CLAIM = C4()
