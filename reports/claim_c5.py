"""Claim C5 (Appendix C.2, figure of Prop. C.2): pooled-window DP-SGD (T14) is less private than T6.

One step, exact profiles: T6 (tight, λ = 1) against T14 (optimistic **lower** bound of the
pooled scheme), so T14 > T6 means the pooled scheme is certainly less private. Grid N_tot ∈
{1e4, 1e6}, Λ/N_tot ∈ {0.1, 0.001}, L_C + L_F ∈ {1, 2, 4, 8, 16, 32} (quick: 1e4 and {1, 4,
32}). Cells: (N_tot, Λ/N_tot, L_C + L_F). The configuration's own row (N_tot = N T, Λ, k) is
computed and shown, not judged: the claim is about the paper's grid.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import get
from tsdp.verify.rounded import rounded_up

from .claim_base import (CONFIG_CELL, CONFIRMED, NOT_EVALUATED, QUALIFIED, REFUTED, Cells, Claim, ClaimContext,
                         Computed, floats, plain)
from .curves import NEGLIGIBLE, eps_grid, first_win_epsilon

NTOT = (10**4, 10**6)
RATIOS = (0.1, 0.001)
LENGTHS, QUICK_LENGTHS = (1, 2, 4, 8, 16, 32), (1, 4, 32)
EQUAL_AT_K1 = 1e-9


def c5_config(sigma: float, n_tot: int, ratio: float, length: int) -> TrainingConfig:
    """Structured config with N = Λ = ratio · N_tot, T = N_tot / Λ, L_F = 1, L_C = length - 1.

    T6's weight ρ r = (Λ/N)(k/T) = Λ k / N_tot depends only on N_tot, Λ and k (capped at T),
    so N = Λ is no restriction; the same config with top = pooled is T14's.

    Args:
        sigma: σ.
        n_tot: N_tot, the windows of all series.
        ratio: Λ / N_tot.
        length: L_C + L_F.

    Returns:
        The configuration (WOR top, WR bottom).
    """
    lam = int(round(ratio * n_tot))
    T = n_tot // lam
    return TrainingConfig(N=lam, L=T, context_length=length - 1, forecast_length=1, batch_size=lam, sigma=sigma)


def comparison(eps: np.ndarray, h6: np.ndarray, h14: np.ndarray) -> dict:
    """Where T14 lies above T6 on the ε grid: ``T14_ge_T6_from_eps``, the crossing (the smallest grid ε from which
    T6 ≤ T14 at every larger one, ties below NEGLIGIBLE included; None: not even at the last);
    ``T14_gt_T6_somewhere``, T14 > T6 (by more than 1e-12) at some ε; ``T14_gt_T6_from_crossing``, at some ε from the
    crossing on (a crossing whose tail is only ties does not show T14 above T6 there).

    Args:
        eps: The ε grid.
        h6: T6's H_α at α = e^ε.
        h14: T14's.

    Returns:
        The three flags by name.
    """
    diff = h14 - h6
    crossing = first_win_epsilon(eps, h6, h14)["all_from"]
    above = diff > 1e-12
    return {"T14_ge_T6_from_eps": crossing, "T14_gt_T6_somewhere": bool(above.any()),
            "T14_gt_T6_from_crossing": crossing is not None and bool(np.any(above & (eps >= crossing)))}


class C5(Claim):
    """Claim C5 (THEOREMS.md; paper Appendix C.2): pooled-window DP-SGD, read through the optimistic lower bound T14
    (Prop. C.2), is less private than structured subsampling's tight T6 (Thm 4.4) for larger L_C + L_F;
    :attr:`statement` words it, :meth:`rule` judges it."""

    id = "C5"
    on_configuration = True
    statement = ("pooled-window DP-SGD (T14) is less private than structured subsampling (T6) for larger L_C + L_F; "
                 "grid N_tot ∈ {1e4, 1e6}, Λ/N_tot ∈ {0.1, 0.001}, L_C+L_F ∈ {1..32}")

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        eps = eps_grid()
        alphas = np.exp(eps)
        t6, t14 = get("T6"), get("T14")
        cells = Cells(grid=len(NTOT) * len(RATIOS) * len(LENGTHS))
        groups = []
        for n_tot in NTOT[:1] if quick else NTOT:
            for ratio in RATIOS:
                label = f"N_tot={n_tot:.0e}, Λ/N_tot={ratio:g}"
                items = []
                for length in QUICK_LENGTHS if quick else LENGTHS:
                    try:
                        items.append((length, c5_config(config.sigma, n_tot, ratio, length)))
                    except ValueError as exc:
                        cells.skip(f"{label}, L_C+L_F={length}", str(exc))
                groups.append((label, items))
        own = plain(config)
        groups.append((CONFIG_CELL, [(own.window_length, own)]))
        panels, rows = [], []
        for label, items in groups:
            ctx.step(label)
            curves = []
            for length, cfg in items:
                h6 = np.asarray(t6.profile(cfg, alphas))
                h14 = np.asarray(t14.profile(cfg.with_(top="pooled"), alphas))
                diff = h14 - h6
                pos = h6 > NEGLIGIBLE
                rows.append({"cell": label, "window_length": length, "k": cfg.k, "N_tot": cfg.n_windows_total,
                             "batch_size": cfg.batch_size, "weight_T6": float(cfg.rho * cfg.r),
                             "max_excess_T14_minus_T6": float(diff.max()), "at_eps": float(eps[int(diff.argmax())]),
                             "max_gap_T14_T6": float(np.abs(diff).max()),
                             "T14_ge_T6_everywhere": bool(np.all(diff >= -1e-12)),
                             "max_ratio_T14_over_T6": float(np.max(h14[pos] / h6[pos])) if pos.any() else None,
                             **comparison(eps, h6, h14)})
                curves.append({"window_length": length, "k": cfg.k, "T6": floats(h6), "T14": floats(h14)})
                if label != CONFIG_CELL:
                    cells.evaluated.append(f"{label}, L_C+L_F={length}")
            panels.append({"cell": label, "curves": curves})
        return Computed({"rows": rows, "cells": cells.as_dict(quick)}, {"eps": floats(eps), "panels": panels})

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """Per grid cell (N_tot, Λ/N_tot) over its lengths: T14 = T6 at L_C + L_F = 1 (max |T14 - T6| ≤ 1e-9; a cell
        without its L_C + L_F = 1 row has not shown it);
        for every k ≥ 2 T14 ≥ T6 at every grid ε above a crossing ε and strictly somewhere above it; the
        largest excess max_ε(T14 - T6) non-decreasing in L_C + L_F. Confirmed when every grid
        cell shows all three; qualified when T14 exceeds T6 somewhere for the largest k of every
        grid cell; refuted otherwise; not evaluated without grid rows."""
        grid_rows = [r for r in numbers["rows"] if r["cell"] != CONFIG_CELL]
        if not grid_rows:
            return NOT_EVALUATED, "no grid cell could be evaluated"
        ok_all, some_all = True, True
        for label in dict.fromkeys(r["cell"] for r in grid_rows):
            rs = sorted([r for r in grid_rows if r["cell"] == label], key=lambda r: r["window_length"])
            ones = [r for r in rs if r["window_length"] == 1]
            eq1 = bool(ones) and all(r["max_gap_T14_T6"] <= EQUAL_AT_K1 for r in ones)
            longer = [r for r in rs if r["k"] > 1]
            tail = all(r["T14_ge_T6_from_eps"] is not None and r["T14_gt_T6_from_crossing"] for r in longer)
            mono = all(b["max_excess_T14_minus_T6"] >= a["max_excess_T14_minus_T6"] - 1e-12 for a, b in zip(rs, rs[1:]))
            ok_all &= eq1 and mono and tail and bool(longer)
            some_all &= bool(longer) and longer[-1]["T14_gt_T6_somewhere"]
        verdict = CONFIRMED if ok_all else (QUALIFIED if some_all else REFUTED)
        crosses = [r["T14_ge_T6_from_eps"] for r in grid_rows if r["k"] > 1 and r["T14_ge_T6_from_eps"] is not None]
        groups = len(dict.fromkeys(r["cell"] for r in grid_rows))
        cells = numbers.get("cells")
        share = f" ({len(cells['evaluated'])} of the grid's {cells['grid']} cells)" if cells else ""
        reason = (f"in each of the {groups} (N_tot, Λ/N_tot) cells evaluated{share} T14 = T6 at L_C+L_F = 1, and for k ≥ 2 T14 > T6 at every grid ε from a "
                  "crossing ε "
                  + (f"({rounded_up(min(crosses), 4)} to {rounded_up(max(crosses), 4)}) " if crosses else "(none found) ")
                  + f"on, the excess non-decreasing in L_C+L_F: {ok_all}; below the crossing T14 may be < T6 (same "
                  "expected hits, spread over more windows)")
        own = [r for r in numbers["rows"] if r["cell"] == CONFIG_CELL]
        if own:
            o = own[0]
            frm = o["T14_ge_T6_from_eps"]
            reason += (f"; on the configuration (k = {o['k']}, shown, not judged) max excess "
                       f"{o['max_excess_T14_minus_T6']:.4g} at ε = {o['at_eps']:.4g}, T14 ≥ T6 from ε = "
                       + ("never" if frm is None else f"{frm:.4g}"))
        return verdict, reason

    def figure(self, result: dict, out: Path) -> List[str]:
        """Appendix figure (vs standard DP-SGD): one-step H_α of T6 (solid, tight) and T14 (dashed,
        optimistic lower bound of pooled windows) over ε, one colour per L_C + L_F; one panel per grid cell,
        two per row, one legend below them."""
        from .figures import finish_panel, grid, legend_outside, plot, save

        f = result["figure"]
        eps = np.asarray(f["eps"])
        lengths = sorted({c["window_length"] for p in f["panels"] for c in p["curves"]})
        fig, axes = grid(len(f["panels"]), 2, height=3.6)
        for ax, p in zip(axes, f["panels"]):
            for c in p["curves"]:
                color = f"C{lengths.index(c['window_length'])}"
                plot(ax, eps, c["T6"], color=color)
                plot(ax, eps, c["T14"], color=color, ls="--")
            capped = sorted({c["window_length"] for c in p["curves"] if c["k"] < c["window_length"]})
            title = "configuration (shown, not judged)" if p["cell"] == CONFIG_CELL else p["cell"]
            finish_panel(ax, title + (f"\n(L_C+L_F ∈ {capped}: k capped at T)" if capped else ""),
                         ylabel="H_α, α = e^ε (one step)")
        for j, length in enumerate(lengths):  # the legend: one entry per colour, in order of length
            axes[0].plot([], [], color=f"C{j}", label=f"L_C+L_F = {length}")
        axes[0].plot([], [], color="k", label="T6 (λ = 1)")
        axes[0].plot([], [], color="k", ls="--", label="T14 (pooled, lower bound)")
        legend_outside(fig, axes, ncol=4)
        fig.suptitle("C5: pooled windows (T14, dashed) vs structured subsampling λ = 1 (T6, solid)")
        return [save(fig, out, "c5.png")]


CLAIM = C5()
