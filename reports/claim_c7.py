"""Claim C7 (paper Section 5.2, Table 1 and Appendix "Application to Probabilistic Forecasting"): DP-trained
forecasters at ε ≤ 1 beat seasonal naive and AutoETS (1-event level, δ = 1e-7).

Computed on a small privacy-utility grid on the real dataset shipped with tsdp (M1 yearly,
:mod:`tsdp.attacks.data.tsf`), not on the report's configuration (the claim is about trained
models on real series): the quick report trains SimpleFF for one seed, the full report SimpleFF and
DLinear for two, at ε ∈ {0.5, 1, ∞} with the WOR top level and a 10-epoch cap
(:func:`tsdp.attacks.experiment.table.run_grid`; ``tsdp experiment`` runs the paper's whole grid).
Each model's CRPS is its last iterate's, which the ε covers (the lowest-validation checkpoint is
shown beside it, not covered). The baselines come from statsforecast (the ``experiments`` extra);
without it the claim is not evaluated.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import List, Tuple

from .claim_base import CONFIRMED, NOT_EVALUATED, REFUTED, Cells, Claim, ClaimContext, Computed

QUICK_GRID = {"models": ("simple-ff",), "seeds": 1}
FULL_GRID = {"models": ("simple-ff", "dlinear"), "seeds": 2}
EPSILONS = (0.5, 1.0, math.inf)
EPOCHS = 10


class C7(Claim):
    id = "C7"
    statement = ("DP-trained forecasters at ε ≤ 1 beat seasonal naive and AutoETS (1-event level, δ = 1e-7), as in "
                 "the paper's Table 1")

    def compute(self, config, quick: bool, ctx: ClaimContext) -> Computed:
        from tsdp.theorems.errors import MissingExtraError

        from tsdp.attacks.experiment.grid import GridSettings, plan
        from tsdp.attacks.experiment.table import baseline_crps_of, claim_c7, rows_of, run_grid

        grid = QUICK_GRID if quick else FULL_GRID
        settings = GridSettings(epochs=EPOCHS, seed=ctx.seed)
        cells = plan(models=grid["models"], epsilons=EPSILONS, seeds=grid["seeds"], tops=("wor",))
        bookkeeping = Cells(grid=len(grid["models"]) * 2)
        try:
            baselines = baseline_crps_of(settings)
        except MissingExtraError as exc:
            bookkeeping.skip("every cell", str(exc), bookkeeping.grid)
            return Computed({"baselines": None, "rows": [], "evidence": None, "cells": bookkeeping.as_dict(quick)})
        ctx.step(f"privacy-utility grid: {len(cells)} trainings on the shipped M1 yearly series")
        results, info = run_grid(cells, settings)
        rows = rows_of(results)
        evidence = claim_c7(rows, baselines)
        bookkeeping.evaluated = [f"{c['model']} at ε = {c['epsilon']:g} ({c['seeds']} seed(s))"
                                 for c in evidence.cells]
        numbers = {"dataset": "m1-yearly", "epochs": EPOCHS, "baselines": baselines,
                   "rows": [r.as_dict() for r in rows], "evidence": evidence.as_dict(),
                   "seconds": info.get("seconds"), "cells": bookkeeping.as_dict(quick)}
        return Computed(numbers, {"epsilons": [None if math.isinf(e) else e for e in EPSILONS]})

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """Confirmed when at every ε ≤ 1 some DP model's mean CRPS is below both baselines; refuted when at some
        ε ≤ 1 none is (the margin says by how much); not evaluated without baselines or DP cells."""
        ev = numbers.get("evidence")
        if not ev or ev["verdict"] == "not evaluated":
            return NOT_EVALUATED, "no DP cell at ε ≤ 1 or no baseline (statsforecast, the experiments extra)"
        best, margin = ev["best_baseline"], ev["margin"]
        if margin > 0:
            return CONFIRMED, (f"at every ε ≤ 1 a DP model beats the better baseline (CRPS {best:.4f}) by at least "
                               f"{margin:.4f}")
        return REFUTED, (f"at some ε ≤ 1 the best DP model's CRPS is {-margin:.4f} above the better baseline "
                         f"({best:.4f}) on the shipped M1 yearly series")

    def figure(self, result: dict, out: Path) -> List[str]:
        """Test CRPS against ε (last iterate, mean over seeds) of each model, the baselines as horizontal lines."""
        import matplotlib.pyplot as plt

        from .figures import WIDTH_IN, save

        n = result["numbers"]
        if not n.get("rows"):
            return []
        fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.4), layout="constrained")
        labels = ["ε = ∞" if e is None else f"ε = {e:g}" for e in result["figure"]["epsilons"]]
        models = sorted({r["model"] for r in n["rows"]})
        width = 0.8 / max(1, len(models))
        for i, m in enumerate(models):
            by_eps = {r["epsilon"]: r for r in n["rows"] if r["model"] == m and r["checkpoint"] == "last"}
            values = [by_eps[e]["crps_mean"] if e in by_eps else float("nan") for e in result["figure"]["epsilons"]]
            ax.bar([j + i * width for j in range(len(labels))], values, width, label=f"{m} (last iterate)")
        for (name, value), style in zip(n["baselines"].items(), ("--", ":")):
            ax.axhline(value, color="k", linestyle=style, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))], labels)
        ax.set_ylabel("test CRPS (mean wQL, lower is better)")
        ax.set_title("C7: DP forecasters vs baselines on M1 yearly (δ = 1e-7)")
        ax.legend(fontsize=7)
        return [save(fig, out, "c7.png")]


CLAIM = C7()
