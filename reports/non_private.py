"""The non-private utility claims of the paper's Appendix "Effect of Subsampling Parameters on Non-Private Utility"
(C10: batch size Λ × top level, λ = 1; C12: subsequences λ × top level at one Λ), measured and judged one way.

Each trains the grid's training (:func:`tsdp.experiments.cells.train_cell`, the paper's optimiser, WR bottom level) at
ε = ∞ on the shipped M1 yearly series: SimpleFF, top level ∈ {deterministic, shuffle, WOR} (the paper's three) × the
claim's levels of its other factor (a :class:`~tsdp.theorems.config.TrainingConfig` field, ``batch_size`` or
``instances``; the other field fixed), a 10-epoch cap (a step takes N' = Λ / λ series, λ WR windows each, Λ windows
in all; an epoch is floor(N λ / Λ) steps, the deterministic order's ceil(N / N'), its last step the series left; a
claim may cap the quick report lower, saying so in its reason), 2 seeds per cell in the quick report and 4 in the
full one (seed i of every cell starts from the same model). The test: a two-way analysis of variance with replication
(:func:`tsdp.experiments.effects.two_way_anova`), each factor's F-test at α = 0.025 (a family level of 0.05 over the
two), with its power against an effect of 5% of the mean CRPS. 'Reproduced' needs no
significant effect and power ≥ 0.8 for both; a significant effect is 'not reproduced'; no significant effect at
lower power is 'qualified' (the test could not have seen that effect).

The paper's own evidence, its two figures, cannot be judged: their image files are empty in its source
(``\\includegraphics[]{ }``).
"""
from __future__ import annotations

import math
from typing import Dict, Tuple

import numpy as np

from tsdp.theorems.config import Top, TrainingConfig
from tsdp.verify.rounded import rounded_down, rounded_up

from .claim_base import NOT_EVALUATED, NOT_REPRODUCED, QUALIFIED, REPRODUCED, Cells, Claim, ClaimContext, Computed, \
    OtherVerdict, p_value_text

TOPS = ("deterministic", "shuffle", "wor")
SEEDS = {True: 2, False: 4}
"""Seeds per cell: quick report, full report."""
EPOCHS = 10
"""The epochs cap (a claim's :attr:`NonPrivateClaim.epochs` may lower it in the quick report)."""
MODEL = "simple-ff"
FAMILY_ALPHA = 0.05
EFFECT = 0.05
"""The smallest effect of interest: two levels whose mean CRPS differ by 5% of the grand mean."""
SYMBOL = {"batch_size": "Λ", "instances": "λ"}
"""The symbol of each configuration field a claim varies or fixes."""
FACTOR = {"batch_size": "batch size Λ", "instances": "subsequences λ"}
"""The ANOVA's name of each field a claim varies."""


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


def fixed_text(fixed: Dict[str, int]) -> str:
    """The fields a claim fixes, by symbol ("λ = 1", "Λ = 32").

    Args:
        fixed: The fixed fields and their values.

    Returns:
        The text.
    """
    return ", ".join(f"{SYMBOL[k]} = {v}" for k, v in fixed.items())


def anova_text(numbers: dict) -> str:
    """The reason's numbers: each factor's F-test with its power and level means, then the steps the epochs cap
    allows at each level of the claim's factor (WOR top level).

    Args:
        numbers: The claim's numbers (with ``tests``).

    Returns:
        The text.
    """
    from tsdp.experiments.effects import POWER

    share = f"{100 * numbers['effect_relative']:g}% of the mean CRPS"

    def one(t):
        means = ", ".join(f"{lv} {m:.4g}" for lv, m in zip(t["levels"], t["means"]))
        return (f"{t['factor']}: F({t['df']}, {t['df_error']}) = {f_text(t)}, p = {p_text(t)} "
                f"(α = {t['alpha']:g}); power {power_text(t['power'])} against Δ = {t['effect']:.3g} ({share}), "
                f"detects Δ = {detectable_text(t)} with power {POWER:g}; means {means}")

    field, sym = numbers["factor"], SYMBOL[numbers["factor"]]
    steps = [(c[field], c["steps"]) for c in numbers["crps"] if c["top"] == Top.WOR]
    trend = "fewer" if steps[-1][1] < steps[0][1] else "more"
    cap = f"A {numbers['epochs']}-epoch cap"
    if numbers["epochs_full"] != numbers["epochs"]:
        cap += f" (the quick report's; the full report's is {numbers['epochs_full']})"
    return ("two-way ANOVA with replication on the last iterate's test CRPS, "
            f"{numbers['seeds']} seeds per cell: " + "; ".join(one(t) for t in numbers["tests"])
            + f". {cap} runs " + ", ".join(f"{s} steps at {sym} = {v}" for v, s in steps)
            + f" (WOR top level, {fixed_text(numbers['fixed'])}): a larger {sym} trains {trend} steps, where the paper "
              "trains every cell to convergence (4000-16000 epochs), so a significant effect here can be training length")


class NonPrivateClaim(Claim):
    """A claim of the appendix (module docstring): no significant effect of the top level nor of the configuration
    field :attr:`factor` (its :attr:`levels`, the fields of :attr:`fixed` held) on non-private utility, measured on
    M1 yearly at ε = ∞ (:meth:`compute`) and judged by the two-way ANOVA's tests and their power (:meth:`rule`)."""

    factor: str = ""
    """The :class:`~tsdp.theorems.config.TrainingConfig` field varied beside the top level."""
    levels: Tuple[int, ...] = ()
    fixed: Dict[str, int] = {}
    """The fields held, with their values (the other of Λ and λ)."""
    paper_figure: str = ""
    """The LaTeX label of the paper's figure of the claim."""
    data_text: str = "M1 yearly at ε = ∞"
    epochs: Dict[bool, int] = {True: EPOCHS, False: EPOCHS}
    """The epochs cap: quick report, full report."""

    def training_config(self, cell, settings, level: int) -> TrainingConfig:
        """The configuration a cell of the claim trains on: the grid's (:func:`tsdp.experiments.cells.cell_config`)
        with :attr:`fixed` and ``level`` of :attr:`factor`.

        Args:
            cell (tsdp.experiments.grid.Cell): The grid cell (its top level).
            settings (tsdp.experiments.grid.GridSettings): The grid's settings.
            level: The value of :attr:`factor`.

        Returns:
            The configuration.
        """
        from tsdp.experiments.cells import cell_config

        return cell_config(cell, settings).with_(**self.fixed, **{self.factor: level})

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        from tsdp.experiments.cells import train_cell
        from tsdp.experiments.effects import two_way_anova
        from tsdp.experiments.grid import Cell, GridSettings

        settings = GridSettings(epochs=self.epochs[quick], seed=ctx.seed)
        seeds, sym = SEEDS[quick], SYMBOL[self.factor]
        crps = np.full((len(TOPS), len(self.levels), seeds), np.nan)
        rows = []
        cells = Cells(grid=len(TOPS) * len(self.levels))
        for i, top in enumerate(TOPS):
            for j, level in enumerate(self.levels):
                ctx.step(f"non-private training, top level {top}, {sym} = {level}")
                steps = 0
                for s in range(seeds):
                    cell = Cell(MODEL, math.inf, s, "1-event", top)
                    cfg = self.training_config(cell, settings, level)
                    r = train_cell(cell, settings, cfg)
                    crps[i, j, s], steps = r.crps, r.steps
                rows.append({"top": top, "batch_size": cfg.batch_size, "instances": cfg.instances, "steps": int(steps),
                             "crps": [float(v) for v in crps[i, j]]})
                cells.evaluated.append(f"{top}, {sym} = {level} ({seeds} seeds)")
        numbers = {"dataset": "m1-yearly", "model": MODEL, "epochs": settings.epochs, "epochs_full": self.epochs[False],
                   "seeds": seeds, "tops": list(TOPS),
                   "factor": self.factor, "levels": list(self.levels), "fixed": dict(self.fixed), "crps": rows,
                   "family_alpha": FAMILY_ALPHA, "effect_relative": EFFECT, "tests": None,
                   "cells": cells.as_dict(quick)}
        if np.all(np.isfinite(crps)):
            effect = EFFECT * float(crps.mean())
            tests = two_way_anova(crps, ("top level", FACTOR[self.factor]), (TOPS, self.levels),
                                  alpha=FAMILY_ALPHA / 2, effect=effect)
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
        text = anova_text(numbers)
        if any(t["significant"] for t in tests):
            return NOT_REPRODUCED, text
        if all(t["power"] >= POWER for t in tests):
            return REPRODUCED, text
        return QUALIFIED, text + f" (no significant effect, but a test's power is below {POWER:g})"

    def data(self, numbers: dict) -> str:
        """M1 yearly at ε = ∞ (the shipped series, not the paper's traffic), with the scaling where the claim names
        it.

        Returns:
            The data in words.
        """
        return self.data_text

    def other_verdicts(self, numbers: dict) -> Tuple[OtherVerdict, ...]:
        """The paper's own evidence: a figure whose image file is empty in its source.

        Returns:
            The verdicts on other evidence.
        """
        return (OtherVerdict("the paper's figure", NOT_EVALUATED,
                             f"not evaluated on the paper's figure ({self.paper_figure})",
                             "the figure is \\includegraphics[]{ } in the paper's source: no number to judge"),)
