"""Claim C10 (Appendix "Effect of Subsampling Parameters on Non-Private Utility"): without DP, neither the batch size
nor the top-level scheme has any significant effect on utility.

Measured with the grid's training (:func:`tsdp.experiments.cells.train_cell`, the paper's optimiser, λ = 1, WR bottom
level) at ε = ∞ on the shipped M1 yearly series: SimpleFF, top level ∈ {deterministic, shuffle, WOR} (the paper's
three) × Λ ∈ {4, 8, 16, 32} (the paper's {16, ..., 128} on traffic, scaled to M1's 170 series), a 10-epoch cap,
2 seeds per cell in the quick report and 4 in the full one (seed i of every cell starts from the same model). The
test: a two-way analysis of variance with replication (:func:`tsdp.experiments.effects.two_way_anova`), each factor's
F-test at α = 0.025 (a family level of 0.05 over the two), with its power against an effect of 5% of the mean CRPS.
'Reproduced' needs no significant effect and power ≥ 0.8 for both; a significant effect is 'not reproduced'; no
significant effect at lower power is 'qualified' (the test could not have seen that effect).

The paper's own evidence, two figures, cannot be judged: their image files are empty in its source
(``\\includegraphics[]{ }``).
"""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np

from tsdp.theorems.config import Top, TrainingConfig
from tsdp.verify.rounded import rounded_down, rounded_up

from .claim_base import NOT_EVALUATED, NOT_REPRODUCED, QUALIFIED, REPRODUCED, Cells, Claim, ClaimContext, Computed, \
    OtherVerdict, p_value_text

TOPS = ("deterministic", "shuffle", "wor")
BATCH_SIZES = (4, 8, 16, 32)
SEEDS = {True: 2, False: 4}
EPOCHS = 10
MODEL = "simple-ff"
FAMILY_ALPHA = 0.05
EFFECT = 0.05
"""The smallest effect of interest: two levels whose mean CRPS differ by 5% of the grand mean."""


def power_text(power: float) -> str:
    """A test's power, 2 digits after the point rounded down: 'reproduced' needs power ≥ POWER (0.8), and to nearest
    0.796 would print 0.80 beside a verdict that says the power is below 0.8.

    Args:
        power: The power.

    Returns:
        The text.
    """
    return rounded_down(power, 2, fixed=True)


def p_text(test: dict) -> str:
    """A factor's F-test p-value, 3 significant digits on the side that does not strengthen the test's finding
    (:func:`~tsdp.reports.claim_base.p_value_text`: up for a significant effect, which backs 'not reproduced', down
    for none, which backs 'reproduced').

    Args:
        test: One test of the claim's numbers (``p_value``, ``significant``).

    Returns:
        The text.
    """
    return p_value_text(test["p_value"], test["significant"])


def f_text(test: dict) -> str:
    """A factor's F statistic, 3 significant digits on the side that does not strengthen the finding (a larger F is
    a stronger effect): down for a significant effect, up for none (:func:`p_text`).

    Args:
        test: One test of the claim's numbers (``f``, ``significant``).

    Returns:
        The text.
    """
    return (rounded_down if test["significant"] else rounded_up)(test["f"], 3)


def detectable_text(test: dict) -> str:
    """The effect a test detects with power POWER, 3 significant digits rounded up: a smaller one would claim a more
    sensitive test than was computed.

    Args:
        test: One test of the claim's numbers (``detectable``).

    Returns:
        The text.
    """
    return rounded_up(test["detectable"], 3)


class C10(Claim):
    """Claim C10 (THEOREMS.md; paper Appendix "Effect of Subsampling Parameters on Non-Private Utility"): without DP,
    neither the batch size Λ nor the top-level scheme has a significant effect on utility, measured on M1 yearly
    at ε = ∞ by a two-way ANOVA with each test's power stated; :attr:`statement` words it, :meth:`rule` judges
    it."""

    id = "C10"
    statement = ("without DP, neither the batch size Λ nor the top-level scheme has any significant effect on utility "
                 "(Appendix 'Effect of Subsampling Parameters on Non-Private Utility', λ = 1)")

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        from tsdp.experiments.cells import cell_config, train_cell
        from tsdp.experiments.effects import two_way_anova
        from tsdp.experiments.grid import Cell, GridSettings

        settings = GridSettings(epochs=EPOCHS, seed=ctx.seed)
        seeds = SEEDS[quick]
        crps = np.full((len(TOPS), len(BATCH_SIZES), seeds), np.nan)
        steps = np.zeros((len(TOPS), len(BATCH_SIZES)), dtype=int)
        cells = Cells(grid=len(TOPS) * len(BATCH_SIZES))
        for i, top in enumerate(TOPS):
            for j, b in enumerate(BATCH_SIZES):
                ctx.step(f"non-private training, top level {top}, Λ = {b}")
                for s in range(seeds):
                    cell = Cell(MODEL, math.inf, s, "1-event", top)
                    r = train_cell(cell, settings, cell_config(cell, settings).with_(batch_size=b))
                    crps[i, j, s], steps[i, j] = r.crps, r.steps
                cells.evaluated.append(f"{top}, Λ = {b} ({seeds} seeds)")
        numbers = {"dataset": "m1-yearly", "model": MODEL, "epochs": EPOCHS, "seeds": seeds, "tops": list(TOPS),
                   "batch_sizes": list(BATCH_SIZES),
                   "crps": [{"top": t, "batch_size": b, "steps": int(steps[i, j]), "crps": [float(v) for v in crps[i, j]]}
                            for i, t in enumerate(TOPS) for j, b in enumerate(BATCH_SIZES)],
                   "family_alpha": FAMILY_ALPHA, "effect_relative": EFFECT, "tests": None,
                   "cells": cells.as_dict(quick)}
        if np.all(np.isfinite(crps)):
            effect = EFFECT * float(crps.mean())
            tests = two_way_anova(crps, ("top level", "batch size Λ"), (TOPS, BATCH_SIZES), alpha=FAMILY_ALPHA / 2,
                                  effect=effect)
            numbers["tests"] = [t.as_dict() for t in tests]
        else:
            numbers["cells"]["evaluated"] = []
        return Computed(numbers)

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """Not reproduced when a factor's F-test is significant; reproduced when neither is and both have power ≥ 0.8
        against the effect of interest; qualified when neither is but a test lacks that power; not evaluated without
        tests (a training that gave no CRPS)."""
        from tsdp.experiments.effects import POWER

        tests = numbers.get("tests")
        if not tests:
            return NOT_EVALUATED, "a training gave no CRPS"
        share = f"{100 * numbers['effect_relative']:g}% of the mean CRPS"

        def one(t):
            means = ", ".join(f"{lv} {m:.4g}" for lv, m in zip(t["levels"], t["means"]))
            return (f"{t['factor']}: F({t['df']}, {t['df_error']}) = {f_text(t)}, p = {p_text(t)} "
                    f"(α = {t['alpha']:g}); power {power_text(t['power'])} against Δ = {t['effect']:.3g} ({share}), "
                    f"detects Δ = {detectable_text(t)} with power {POWER:g}; means {means}")

        by_b = {c["batch_size"]: c["steps"] for c in numbers["crps"] if c["top"] == Top.WOR}
        text = ("two-way ANOVA with replication on the last iterate's test CRPS, "
                f"{numbers['seeds']} seeds per cell: " + "; ".join(one(t) for t in tests)
                + f". A {numbers['epochs']}-epoch cap runs " + ", ".join(f"{s} steps at Λ = {b}" for b, s in by_b.items())
                + " (WOR top level): a larger Λ trains fewer steps")
        if any(t["significant"] for t in tests):
            return NOT_REPRODUCED, text
        if all(t["power"] >= POWER for t in tests):
            return REPRODUCED, text
        return QUALIFIED, text + f" (no significant effect, but a test's power is below {POWER:g})"

    @staticmethod
    def data(numbers: dict) -> str:
        """M1 yearly at ε = ∞: the shipped series, not the paper's traffic.

        Returns:
            The data in words.
        """
        return "M1 yearly at ε = ∞"

    @staticmethod
    def other_verdicts(numbers: dict) -> Tuple[OtherVerdict, ...]:
        """The paper's own evidence: two figures whose image files are empty in its source.

        Returns:
            The verdicts on other evidence.
        """
        return (OtherVerdict("the paper's figures", NOT_EVALUATED,
                             "not evaluated on the paper's figures (fig:non_dp_training_batchsize_traffic, "
                             "fig:non_dp_training_subsequences_traffic)",
                             "both figures are \\includegraphics[]{ } in the paper's source: no number to judge"),)


CLAIM = C10()
