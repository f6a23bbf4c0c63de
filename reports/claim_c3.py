"""Claim C3 (paper Section 5, Fig. 4; erratum 5): with σ_C = 0, σ_F → ∞ in T11 equals forecast length L_F → 0.

T11 (upper bound) has weight w(σ_F) = ρ r (φ τ(σ_F) + 1 - φ); the L_F → 0 reference is T6 on
the same T and ρ with k' = L_C windows (only the windows holding the element in their context
remain), weight w∞ = ρ L_C / T; L_C = 0 gives the zero profile max(0, 1 - α). Both exact
one-step profiles, and after 100 steps both sound (connect-the-dots, upper). Cells: the σ_F
values of the sweep, the last standing for σ_F → ∞ (:func:`limit_sigma_f`: 1e3, larger for long forecasts), and
Appendix C.1.3's four (r, Λ/N) cells ("in all cases"), each judged at its limit σ_F on the exact one-step profile and
the weight (the composed curves are the configuration's only).
The weights checked are T11's own, read off the pair its bound builds (:func:`t11_weight`), against w∞ computed
from the configuration: a T11 whose weight is wrong fails the check. A non-finite value in a compared curve
(either reference or T11's) leaves the claim not evaluated, saying where; it is never skipped.
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import get
from tsdp.verify.estimate import Estimate
from tsdp.verify.rounded import rounded_down, rounded_nearest, rounded_up

from .claim_base import (CONFIRMED, NOT_EVALUATED, QUALIFIED, REFUTED, Cells, Claim, ClaimContext, Computed,
                         cell_info, floats, grid_cells, plain)
from .curves import NEGLIGIBLE, delta_curves, eps_grid

SIGMA_F = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 1e3)
QUICK_SIGMA_F = (0.0, 0.5, 2.0, 1e3)
"""The σ_F of the sweep; the last is the limit's, at least 1e3 (:func:`limit_sigma_f`)."""
STEPS = 100
PROFILE_REL, WEIGHT_REL = 1e-2, 1e-3
"""Tolerances of the limit: one-step profile and weight at the largest σ_F against the reference."""
LIMIT_SHARE = 0.1
"""At the limit's σ_F the weight's own distance to w∞ is at most this share of WEIGHT_REL (:func:`limit_sigma_f`)."""


def t11_weight(config: TrainingConfig) -> float:
    """T11's weight w, read off the pair its bound builds (T11, Thm G.1: H_α(MoG([0, 2], [1 - w, w]) ‖ N(0, σ))):
    what T11's profile uses, not a recomputation of its formula.

    Args:
        config: The configuration (T11's scheme: WOR top level, WR bottom level, λ = 1).

    Returns:
        The weight of the mixture's component at 2.
    """
    pair = get("T11").pair(config, numeric=True)
    return float(sum(w for m, w in zip(pair.P.means, pair.P.weights) if m == 2))


def limit_sigma_f(config: TrainingConfig) -> float:
    """The σ_F that stands for σ_F → ∞: 1e3, or larger where T11's weight ρ r (φ τ(σ_F) + 1 - φ) is there still more
    than LIMIT_SHARE · WEIGHT_REL (relative) from its limit w∞ = ρ r (1 - φ): that distance is φ τ(σ_F) / (1 - φ),
    L_F / L_C times τ(1e3) ≈ 4e-4 at 1e3, above WEIGHT_REL from L_F ≥ 2.5 L_C, where a σ_F of 1e3 is not yet the
    limit and the check would refute a claim that holds. Without context (L_C = 0, w∞ = 0): 1e3.

    Args:
        config: The configuration (φ = L_F / (L_C + L_F)).

    Returns:
        The largest σ_F of the sweep.
    """
    from scipy.special import erfinv

    phi = float(config.phi)
    if phi >= 1:
        return 1e3
    t = LIMIT_SHARE * WEIGHT_REL * (1 - phi) / phi  # τ(s) = erf(1 / (2√2 s)) = t
    return max(1e3, float(1.0 / (2.0 * math.sqrt(2.0) * erfinv(t))))


def non_finite_curves(curves: List[Tuple[str, list]]) -> List[str]:
    """The curves holding a non-finite value (NaN, ±inf), each as "NAME is not finite at k of n ε".

    Args:
        curves: (name, values) pairs.

    Returns:
        One text per curve with a non-finite value (empty: all finite).
    """
    out = []
    for name, values in curves:
        bad = int(np.count_nonzero(~np.isfinite(np.asarray(values, dtype=float))))
        if bad:
            out.append(f"{name} is not finite at {bad} of {len(values)} ε")
    return out


def max_rel(a: np.ndarray, ref: np.ndarray) -> Optional[float]:
    """Largest relative gap |a - ref| / ref where ref > NEGLIGIBLE (None when nowhere: nothing was compared, e.g.
    the zero reference of L_C = 0).

    Args:
        a: The values.
        ref: The reference values.

    Returns:
        The largest relative gap, or None.
    """
    a, ref = np.asarray(a), np.asarray(ref)
    keep = ref > NEGLIGIBLE
    return float(np.max(np.abs(a[keep] - ref[keep]) / ref[keep])) if keep.any() else None


def _reference(base: TrainingConfig, eps: np.ndarray) -> tuple:
    """The L_F → 0 reference of a cell: T6 on the same T and ρ with k' = L_C windows (its configuration), and its exact
    one-step profile; L_C = 0: no configuration (None) and the zero profile max(0, 1 - α).

    Args:
        base: The cell (WOR top, WR bottom, λ = 1).
        eps: The ε grid.

    Returns:
        (reference configuration or None, one-step δ on ``eps``).
    """
    if base.context_length < 1:
        return None, np.maximum(0.0, -np.expm1(eps))
    ref_cfg = base.with_(context_length=base.context_length - 1, forecast_length=1, L=base.T)
    return ref_cfg, np.asarray(get("T6").profile(ref_cfg, np.exp(eps)))


def _cell_ok(row: dict) -> bool:
    """Whether a grid cell's limit matches L_F → 0: one-step profile within PROFILE_REL (or not compared) and weight
    within WEIGHT_REL."""
    rel = row["max_rel_gap_one_step"]
    return (rel is None or rel <= PROFILE_REL) and row["weight_rel_gap"] <= WEIGHT_REL


class C3(Claim):
    """Claim C3 (THEOREMS.md; paper Section 5, Fig. 4; erratum 5): with σ_C = 0, T11's upper bound (Thm G.1) as σ_F → ∞ equals the bound
    at forecast length L_F → 0; :attr:`statement` words it, :meth:`rule` judges it."""

    id = "C3"
    on_configuration = True
    statement = ("with σ_C = 0, letting σ_F → ∞ (T11) equals forecast length L_F → 0, in all cases r, Λ/N ∈ {0.5, 0.1} "
                 "(Appendix C.1.3)")

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        eps = eps_grid()
        base = plain(config)
        w_inf = base.rho * Fraction(base.context_length, base.T)
        ref_cfg, ref_one = _reference(base, eps)
        if ref_cfg is not None:
            ref_comp = delta_curves(Estimate.SOUND, "T6", ref_cfg, [STEPS], eps)[STEPS]
        else:
            ref_comp = ref_one.copy()
        sigmas = (QUICK_SIGMA_F if quick else SIGMA_F)[:-1] + (limit_sigma_f(base),)
        grid = grid_cells(config)[1:]
        cells = Cells(grid=len(SIGMA_F) + len(grid))
        curves, weights, one_steps = [], [], []
        t11 = get("T11")
        for s in sigmas:
            ctx.step(f"σ_F = {s:g}")
            cfg = base.with_(sigma_forecast=float(s))
            one = np.asarray(t11.profile(cfg, np.exp(eps)))
            comp = delta_curves(Estimate.SOUND, "T11", cfg, [STEPS], eps)[STEPS]
            weights.append({"sigma_F": s, "weight": t11_weight(cfg)})
            one_steps.append(one)
            curves.append({"label": f"σ_F = {s:g} (T11, upper)", "sigma_F": s, "delta_1": floats(one),
                           "delta_composed": floats(comp)})
            cells.evaluated.append(f"σ_F = {s:g}")
        grid_rows, grid_curves = [], []
        for label, cfg, why in grid:
            if cfg is None:
                cells.skip(label, why)
                continue
            ctx.step(f"{label}, σ_F → ∞")
            s = limit_sigma_f(cfg)
            cell_ref = _reference(cfg, eps)[1]
            cell_one = np.asarray(t11.profile(cfg.with_(sigma_forecast=float(s)), np.exp(eps)))
            grid_curves += [(f"the L_F → 0 reference at {label}", cell_ref), (f"T11 at {label}, σ_F = {s:g}", cell_one)]
            w = t11_weight(cfg.with_(sigma_forecast=float(s)))
            w_cell = float(cfg.rho * Fraction(cfg.context_length, cfg.T))
            grid_rows.append({"cell": label, "sigma_F": s, "params": cell_info(cfg),
                              "max_rel_gap_one_step": max_rel(cell_one, cell_ref),
                              "weight": w, "w_limit_LF_to_0": w_cell,
                              "weight_rel_gap": abs(w - w_cell) / w_cell if w_cell > 0 else abs(w)})
            cells.evaluated.append(f"{label}, σ_F = {s:g} (one step)")
        non_finite = non_finite_curves([("the L_F → 0 reference (one step)", ref_one),
                                        ("the L_F → 0 reference (composed)", ref_comp)]
                                       + [(f"T11 at {c['label'].split(' (')[0]} ({key})", c[kind])
                                          for c in curves for key, kind in (("one step", "delta_1"),
                                                                            ("composed", "delta_composed"))]
                                       + grid_curves)
        if non_finite:
            cells.skip("every σ_F", "not finite: " + "; ".join(non_finite), cells.grid)
            cells.evaluated.clear()
        mono = all(bool(np.all(b <= a * (1 + 1e-9) + 1e-15)) for a, b in zip(one_steps, one_steps[1:]))
        w_rel = abs(weights[-1]["weight"] - float(w_inf)) / float(w_inf) if w_inf > 0 else abs(weights[-1]["weight"])
        numbers = {"weights": weights, "w_limit_LF_to_0": float(w_inf),
                   "w_limit_LC_to_0_printed_reading": float(base.rho * Fraction(base.forecast_length, base.T)),
                   "phi": float(base.phi), "max_rel_gap_one_step": max_rel(one_steps[-1], ref_one),
                   "max_rel_gap_composed": max_rel(curves[-1]["delta_composed"], ref_comp),
                   "weight_rel_gap": w_rel, "composed_steps": STEPS, "monotone_in_sigma_F": mono,
                   "non_finite": non_finite,
                   "params": cell_info(base), "grid": grid_rows, "cells": cells.as_dict(quick)}
        figure = {"eps": floats(eps), "steps": STEPS, "curves": curves,
                  "reference": {"label": "L_F → 0 (T6 shape, w = ρ L_C / T)", "delta_1": floats(ref_one),
                                "delta_composed": floats(ref_comp)}}
        return Computed(numbers, figure)

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """Confirmed when the one-step profile is non-increasing in σ_F, T11 at the largest σ_F is
        within 1e-2 relative of the reference at every ε where the reference exceeds NEGLIGIBLE,
        and its weight within 1e-3 relative of w∞; refuted when one of these fails; qualified when the rest holds but
        the reference exceeds NEGLIGIBLE nowhere (L_C = 0: the profile was compared at no ε, a check with no power);
        not evaluated without σ_F, or where a compared curve is not finite (a NaN is never skipped: a gap there is
        unknown)."""
        if not numbers["weights"]:
            return NOT_EVALUATED, "no σ_F evaluated"
        if numbers.get("non_finite"):
            return NOT_EVALUATED, "not compared: " + "; ".join(numbers["non_finite"])
        mono, rel, w_rel = numbers["monotone_in_sigma_F"], numbers["max_rel_gap_one_step"], numbers["weight_rel_gap"]
        grid = numbers.get("grid", [])
        grid_ok = all(_cell_ok(g) for g in grid)
        ok = mono and (rel is None or rel <= PROFILE_REL) and w_rel <= WEIGHT_REL and grid_ok
        last = numbers["weights"][-1]

        def gap(x, tolerance=None):  # a judged gap on the side that does not strengthen its finding
            if x is None:
                return f"not compared (the reference is below {NEGLIGIBLE:g} at every ε)"
            if tolerance is None:
                return rounded_nearest(x, 4)
            return (rounded_up if x <= tolerance else rounded_down)(x, 4)

        reason = (f"one-step profile non-increasing in σ_F: {mono}; at σ_F = {last['sigma_F']:g} max relative gap to "
                  f"the L_F → 0 reference {gap(rel, PROFILE_REL)} (one step), {gap(numbers['max_rel_gap_composed'])} "
                  f"({numbers['composed_steps']} steps, not judged); weight {last['weight']:.4g} vs w∞ = ρ L_C / T = "
                  f"{numbers['w_limit_LF_to_0']:.4g} (relative gap {gap(w_rel, WEIGHT_REL)})")
        if grid:
            worst = max(grid, key=lambda g: (g["max_rel_gap_one_step"] or 0.0, g["weight_rel_gap"]))
            reason += (f"; Appendix C.1.3's (r, Λ/N) cells at their limit σ_F, one step: within {PROFILE_REL:g} "
                       f"(profile) and {WEIGHT_REL:g} (weight) of L_F → 0 in {sum(map(_cell_ok, grid))}/{len(grid)}, "
                       f"largest gaps {gap(worst['max_rel_gap_one_step'], PROFILE_REL if grid_ok else None)} (profile), {gap(worst['weight_rel_gap'], WEIGHT_REL if grid_ok else None)} "
                       f"(weight) at {worst['cell']}")
        return (REFUTED if not ok else QUALIFIED if rel is None else CONFIRMED), reason

    def figure(self, result: dict, out: Path) -> List[str]:
        """Paper Fig. 4: T11 δ(ε) for σ_C = 0 and growing σ_F, with the L_F → 0 reference; one step
        (exact) and composed (sound)."""
        from .figures import finish_panel, grid, legend_outside, plot, save, plt

        f = result["figure"]
        eps = np.asarray(f["eps"])
        fig, axes = grid(2, 2)
        for ax, key, title in ((axes[0], "delta_1", "1 step (exact)"),
                               (axes[1], "delta_composed", f"{f['steps']} steps (sound)")):
            for j, c in enumerate(f["curves"]):
                plot(ax, eps, c[key], color=plt.cm.viridis(j / max(1, len(f["curves"]) - 1)), label=c["label"])
            plot(ax, eps, f["reference"][key], color="red", ls="--", lw=2, label=f["reference"]["label"])
            finish_panel(ax, title)
        legend_outside(fig, axes, ncol=3)
        fig.suptitle("C3 (Fig. 4): label noise σ_F (σ_C = 0, WOR top, WR bottom, λ = 1)")
        return [save(fig, out, "c3.png")]


CLAIM = C3()
