"""The non-private utility claims of the paper's Appendix "Effect of Subsampling Parameters on Non-Private Utility"
(C10: batch size Λ × top level, λ = 1; C12: subsequences λ × top level at one Λ), measured and judged one way.

Each trains the grid's training (the paper's optimiser, WR bottom level, :func:`tsdp.experiments.cells.train_seeds`:
a cell's seeds together, each run bit for bit its run alone) at ε = ∞ on the shipped M1 yearly series: SimpleFF,
top level ∈ {deterministic, shuffle, WOR} (the paper's three) × the claim's levels of its other factor (a
:class:`~tsdp.theorems.config.TrainingConfig` field, ``batch_size`` or ``instances``; the other field fixed; a step
takes N' = Λ / λ series, λ WR windows each, Λ windows in all), 2 seeds per cell in the quick report and 4 in the full
one (seed i of every cell starts from the same model).

**The paper's protocol** (its Appendix "Training": every model trained to convergence, 4000-16000 epochs, then "the
checkpoint with the lowest validation log-likelihood") is the judged measurement (:func:`paper_protocol`): every
cell of both claims trains the same number of steps (:data:`STEPS`), is validated every :data:`VALIDATE_EVERY`
steps (the same checkpoints for all), and its judged number is the test CRPS of its checkpoint with the lowest
validation loss. Equal steps, not equal epochs: an epoch is floor(N λ / Λ) steps (the authors' code's), so equal
epochs give a smaller Λ (C10) or a larger λ (C12) more Adam updates at the same learning rate, the training-length
effect an epochs cap measures (C12 at 10 epochs: 50 steps at λ = 1, 850 at λ = 16); equal steps give every cell the
same updates and the same validations to choose from, and in C12 the same windows too (Λ a step). In C10 they leave
the passes over the series unequal (at 6000 steps Λ = 4 trains 140 epochs, Λ = 32 1200), and on M1 yearly the
selected checkpoint's test CRPS rises slowly with training (the validation loss keeps falling while the test CRPS
no longer does), so the full report also trains C10 the paper's literal way, every cell the same epochs
(:attr:`NonPrivateClaim.equal_epochs`), and a finding that one converged design makes and the other does not is
'qualified'.
At ε = ∞ nothing needs privacy cover, so the checkpoint choice, which no ε covers in a private run (THEOREMS.md
errata), is legitimate here. Converged is checked, not assumed (:func:`convergence`): a validation loss that has
stopped falling puts its lowest point in the last quarter of training about a quarter (independent noise) to a
third (a random walk's minimum, the arcsine law) of the time, one still falling nearly always; more than half of
the runs there say the training had not converged, and the verdict is then 'qualified' whatever the test says. The
quick report trains the two extreme levels of the claim's factor only (a claim's
:attr:`NonPrivateClaim.quick_levels`), fewer steps and no equal-epochs design, which its reason says. C12 has no
equal-epochs design: its equal steps are equal windows already, and equal epochs would give λ = 16 seventeen times
the steps and windows of λ = 1.

**The epochs cap** (:data:`CAPPED`: 10 epochs, the last iterate, the measurement before the paper's protocol) is
kept as the claim's secondary verdict (:meth:`NonPrivateClaim.other_verdicts`), by the same test and rule without
the convergence check: it shows what training length alone does.

The test: a two-way analysis of variance with replication (:func:`tsdp.experiments.effects.two_way_anova`), each
factor's F-test at α = 0.025 (a family level of 0.05 over the two), with its power against an effect of 5% of the
mean CRPS. 'Reproduced' needs no significant effect and power ≥ 0.8 for both; a significant effect is 'not
reproduced'; no significant effect at lower power is 'qualified' (the test could not have seen that effect).

The paper's own evidence, its two figures, cannot be judged: their image files are empty in its source
(``\\includegraphics[]{ }``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

import numpy as np

from tsdp.theorems.config import Top, TrainingConfig
from tsdp.verify.json_data import Record
from tsdp.verify.rounded import rounded_down, rounded_up

from .claim_base import NOT_EVALUATED, NOT_REPRODUCED, QUALIFIED, REPRODUCED, Cells, Claim, ClaimContext, Computed, \
    OtherVerdict, p_value_text, verdict_text

TOPS = ("deterministic", "shuffle", "wor")
SEEDS = {True: 2, False: 4}
"""Seeds per cell: quick report, full report."""
STEPS = {True: 1500, False: 6000}
"""Training steps of every cell under the paper's protocol: quick report, full report. The full report's are 70 epochs
of the longest epoch of either claim (C12's λ = 16, 85 steps) and 1200 of the shortest (Λ = 32 at λ = 1, 5 steps). On
M1 yearly (2 seeds, every cell of both claims) the validation loss still fell past 2000 steps: three quarters of the
runs found their lowest in the last quarter of 2000 steps, a third in that of 4000; the mean selected test CRPS moved
by less than 0.003 from 500 steps on. The quick report trains 1500, what its time allows: its convergence check, a count
over 12 runs, may then fail and make its verdict 'qualified' (the quick report exercises the measurement; the full
report judges)."""
VALIDATE_EVERY = 25
"""Steps between the validations that choose a cell's checkpoint (the same steps for every cell; a divisor of
:data:`STEPS`, so the last step is one of them)."""
TAIL = 0.25
"""The last part of training (a share of its steps) where a converged run rarely finds its lowest validation loss."""
TAIL_LIMIT = 0.5
"""The largest share of runs whose lowest validation loss is in the :data:`TAIL` for a converged training (module
docstring: a flat validation loss puts it there a quarter to a third of the time)."""
CAP_EPOCHS = 10
"""The epochs cap of the secondary measurement (:data:`CAPPED`)."""
MODEL = "simple-ff"
FAMILY_ALPHA = 0.05
EFFECT = 0.05
"""The smallest effect of interest: two levels whose mean CRPS differ by 5% of the grand mean."""
SYMBOL = {"batch_size": "Λ", "instances": "λ"}
"""The symbol of each configuration field a claim varies or fixes."""
FACTOR = {"batch_size": "batch size Λ", "instances": "subsequences λ"}
"""The ANOVA's name of each field a claim varies."""


@dataclass(frozen=True)
class Protocol(Record):
    """How a claim's cells train and which model of each is judged (module docstring).

    Attributes:
        steps: Training steps of every cell (None: the epochs cap ``epochs``).
        epochs: The epochs cap (None: ``steps``).
        validate_every: Steps between validations (None: an epoch).
        selected: Judge the checkpoint with the lowest validation loss (the paper's choice); False: the last iterate.
    """

    steps: Optional[int] = None
    epochs: Optional[int] = None
    validate_every: Optional[int] = None
    selected: bool = False

    def training(self, cell, settings):
        """What a cell's seeds share under this protocol: the grid's (:func:`tsdp.experiments.cells.cell_training`)
        with the protocol's length and validations.

        Args:
            cell (tsdp.experiments.grid.Cell): The grid cell.
            settings (tsdp.experiments.grid.GridSettings): The grid's settings.

        Returns:
            tsdp.training.together.GroupSettings: The shared settings.
        """
        from tsdp.experiments.cells import cell_training

        return replace(cell_training(cell, settings), epochs=self.epochs, steps=self.steps,
                       validate_every=self.validate_every)


def paper_protocol(quick: bool) -> Protocol:
    """The paper's protocol (module docstring): :data:`STEPS` steps for every cell, validated every
    :data:`VALIDATE_EVERY`, the checkpoint with the lowest validation loss judged.

    Args:
        quick: The quick report.

    Returns:
        The protocol.
    """
    return Protocol(steps=STEPS[quick], validate_every=VALIDATE_EVERY, selected=True)


CAPPED = Protocol(epochs=CAP_EPOCHS)
"""The secondary measurement: a :data:`CAP_EPOCHS`-epoch cap, validated every epoch, the last iterate judged."""


def convergence(rows: List[dict]) -> dict:
    """The convergence check of the paper's protocol (module docstring): how many runs found their lowest validation
    loss in the last :data:`TAIL` of their training.

    Args:
        rows: The measurement's rows (``steps``: the steps the cell's runs trained; ``selected_steps``: each seed's
            selected checkpoint's step).

    Returns:
        ``{"runs", "late", "tail", "limit", "converged"}``: converged when at most :data:`TAIL_LIMIT` of the runs
        are late.
    """
    chosen = [(s, r["steps"]) for r in rows for s in r["selected_steps"]]
    late = sum(s > (1 - TAIL) * steps for s, steps in chosen)
    return {"runs": len(chosen), "late": late, "tail": TAIL, "limit": TAIL_LIMIT,
            "converged": late <= TAIL_LIMIT * len(chosen)}


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


def tests_text(measurement: dict, numbers: dict) -> str:
    """Each factor's F-test of one measurement with its power and level means.

    Args:
        measurement: One measurement of the claim's numbers (``tests``, ``seeds``).
        numbers: The claim's numbers (``effect_relative``).

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

    return (f"two-way ANOVA with replication, {numbers['seeds']} seeds per cell: "
            + "; ".join(one(t) for t in measurement["tests"]))


def grid_text(numbers: dict) -> str:
    """The levels of the claim's factor measured, and the full report's where the quick report trains fewer.

    Args:
        numbers: The claim's numbers (``factor``, ``levels``, ``levels_full``).

    Returns:
        The text ("Λ ∈ {4, 32} (the quick report's; the full report's Λ ∈ {4, 8, 16, 32})").
    """
    sym = SYMBOL[numbers["factor"]]

    def of(levels):
        return f"{sym} ∈ {{{', '.join(str(v) for v in levels)}}}"

    text = of(numbers["levels"])
    if list(numbers["levels"]) != list(numbers["levels_full"]):
        text += f" (the quick report's; the full report's {of(numbers['levels_full'])})"
    return text


def protocol_text(m: dict, numbers: dict) -> str:
    """The reason of a measurement under the paper's protocol (equal steps, or equal epochs): its design, the test,
    the convergence check.

    Args:
        m: The measurement (``steps`` or ``epochs``, ``validate_every``, ``crps``, ``tests``, ``convergence``).
        numbers: The claim's numbers.

    Returns:
        The text.
    """
    if m["steps"]:
        design = f"every cell {m['steps']} steps"
        if m["steps"] != m.get("steps_full", m["steps"]):
            design += f" (the quick report's; the full report's {m['steps_full']})"
    else:
        steps = [c["steps"] for c in m["crps"]]
        design = f"every cell {m['epochs']} epochs ({min(steps)} to {max(steps)} steps)"
    c = m["convergence"]
    return (f"the paper's protocol: {design}, validated every {m['validate_every']} steps, judged on the test CRPS "
            f"of its checkpoint with the lowest validation loss; top level × {grid_text(numbers)}, "
            f"{fixed_text(numbers['fixed'])}; "
            + tests_text(m, numbers)
            + f". Convergence: {c['late']} of {c['runs']} runs found their lowest validation loss in the last "
              f"{c['tail']:.0%} of training (at most {c['limit']:.0%} for a converged training: a validation loss "
              "that has stopped falling puts it there a quarter to a third of the time)")


def protocol_verdict(m: dict, numbers: dict) -> Tuple[str, str]:
    """A measurement under the paper's protocol judged: :func:`anova_verdict`, unless its convergence check fails:
    then qualified whatever the test says (a finding can still be training length).

    Args:
        m: The measurement.
        numbers: The claim's numbers.

    Returns:
        (verdict word, reason).
    """
    word = anova_verdict(m)
    if word == NOT_EVALUATED:
        return NOT_EVALUATED, "a training gave no CRPS"
    text = protocol_text(m, numbers)
    if not m["convergence"]["converged"]:
        return QUALIFIED, text + (f": more than {m['convergence']['limit']:.0%}, the training had not converged, so "
                                  f"the test's finding ({word}) can still be training length")
    return word, text + (underpowered_text() if word == QUALIFIED else "")


def capped_text(numbers: dict) -> str:
    """The reason of the epochs cap's measurement: the test, then the steps the cap allows at each level of the
    claim's factor (WOR top level).

    Args:
        numbers: The claim's numbers (``capped``: the measurement with ``tests``).

    Returns:
        The text.
    """
    m, field, sym = numbers["capped"], numbers["factor"], SYMBOL[numbers["factor"]]
    steps = [(c[field], c["steps"]) for c in m["crps"] if c["top"] == Top.WOR]
    trend = "fewer" if steps[-1][1] < steps[0][1] else "more"
    return (f"a {m['epochs']}-epoch cap, judged on the last iterate's test CRPS; " + tests_text(m, numbers)
            + ". The cap runs " + ", ".join(f"{s} steps at {sym} = {v}" for v, s in steps)
            + f" (WOR top level, {fixed_text(numbers['fixed'])}): a larger {sym} trains {trend} steps, so an effect "
              "here can be training length, which the paper's protocol equalises")


def anova_verdict(measurement: dict) -> str:
    """The verdict of the two-way ANOVA on one measurement: not reproduced when a factor's F-test is significant;
    reproduced when neither is and both have power ≥ 0.8 against the effect of interest; qualified when neither is
    but a test lacks that power; not evaluated without tests (a training that gave no CRPS).

    Args:
        measurement: One measurement (``tests``: None when a training gave no CRPS).

    Returns:
        The verdict word.
    """
    from tsdp.experiments.effects import POWER

    tests = measurement.get("tests")
    if not tests:
        return NOT_EVALUATED
    if any(t["significant"] for t in tests):
        return NOT_REPRODUCED
    return REPRODUCED if all(t["power"] >= POWER for t in tests) else QUALIFIED


def cell_labels(numbers: dict) -> List[str]:
    """The labels of the cells measured: "top level, Λ = level (n seeds)".

    Args:
        numbers: The claim's numbers (``tops``, ``factor``, ``levels``, ``seeds``).

    Returns:
        The labels.
    """
    sym = SYMBOL[numbers["factor"]]
    return [f"{top}, {sym} = {level} ({numbers['seeds']} seeds)" for top in numbers["tops"]
            for level in numbers["levels"]]


def underpowered_text() -> str:
    """The reason's end for a 'qualified' verdict of an underpowered test."""
    from tsdp.experiments.effects import POWER

    return f" (no significant effect, but a test's power is below {POWER:g})"


class NonPrivateClaim(Claim):
    """A claim of the appendix (module docstring): no significant effect of the top level nor of the configuration
    field :attr:`factor` (its :attr:`levels`, the fields of :attr:`fixed` held) on non-private utility, measured on
    M1 yearly at ε = ∞ under the paper's protocol and under an epochs cap (:meth:`compute`) and judged by the
    two-way ANOVA's tests, their power and the convergence check (:meth:`rule`; the cap:
    :meth:`other_verdicts`)."""

    factor: str = ""
    """The :class:`~tsdp.theorems.config.TrainingConfig` field varied beside the top level."""
    levels: Tuple[int, ...] = ()
    quick_levels: Tuple[int, ...] = ()
    """The levels the quick report trains: the two extremes of :attr:`levels`."""
    fixed: Dict[str, int] = {}
    """The fields held, with their values (the other of Λ and λ)."""
    paper_figure: str = ""
    """The LaTeX label of the paper's figure of the claim."""
    data_text: str = "M1 yearly at ε = ∞"
    equal_epochs: Optional[int] = None
    """The epochs of every cell in the full report's second design of the paper's protocol (None: none): equal
    epochs, the paper's literal design (every traffic cell 4000 epochs), where equal steps leave the passes over the
    series unequal (module docstring)."""

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

    def measure(self, protocol: Protocol, levels: Tuple[int, ...], seeds: int, ctx: ClaimContext) -> dict:
        """Train every (top level, level, seed) under ``protocol`` and test the two factors.

        Args:
            protocol: How the cells train and which model is judged.
            levels: The levels of :attr:`factor`.
            seeds: Seeds per cell.
            ctx: The seed and progress.

        Returns:
            The measurement: the protocol's fields, ``crps`` (a row per cell: top level, Λ, λ, steps, epochs, each
            seed's judged test CRPS and, for the selected checkpoint, its step), ``tests`` (None when a judged CRPS
            is not finite) and, for the selected checkpoint, ``convergence`` (:func:`convergence`).
        """
        from tsdp.experiments.cells import train_seeds
        from tsdp.experiments.effects import two_way_anova
        from tsdp.experiments.grid import Cell, GridSettings

        settings, sym = GridSettings(seed=ctx.seed), SYMBOL[self.factor]
        what = f"{protocol.steps} steps" if protocol.steps else f"{protocol.epochs}-epoch cap"
        crps = np.full((len(TOPS), len(levels), seeds), np.nan)
        rows = []
        for i, top in enumerate(TOPS):
            for j, level in enumerate(levels):
                ctx.step(f"non-private training ({what}), top level {top}, {sym} = {level}")
                cell = Cell(MODEL, math.inf, 0, "1-event", top)
                cfg = self.training_config(cell, settings, level)
                runs = train_seeds(cell, settings, cfg, range(seeds), protocol.training(cell, settings))
                crps[i, j] = [r.selection.selected_crps if protocol.selected else r.crps for r in runs]
                row = {"top": top, "batch_size": cfg.batch_size, "instances": cfg.instances,
                       "steps": int(runs[0].steps), "epochs": float(runs[0].epochs),
                       "crps": [float(v) for v in crps[i, j]]}
                if protocol.selected:
                    row["selected_steps"] = [int(r.selection.selected_step) for r in runs]
                rows.append(row)
        out = {**protocol.as_dict(), "crps": rows, "tests": None}
        if np.all(np.isfinite(crps)):
            tests = two_way_anova(crps, ("top level", FACTOR[self.factor]), (TOPS, levels),
                                  alpha=FAMILY_ALPHA / 2, effect=EFFECT * float(crps.mean()))
            out["tests"] = [t.as_dict() for t in tests]
        if protocol.selected:
            out["convergence"] = convergence(rows)
        return out

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        levels = self.quick_levels if quick else self.levels
        seeds = SEEDS[quick]
        paper = self.measure(paper_protocol(quick), levels, seeds, ctx)
        paper["steps_full"] = STEPS[False]
        numbers = {"dataset": "m1-yearly", "model": MODEL, "seeds": seeds, "tops": list(TOPS),
                   "factor": self.factor, "levels": list(levels), "levels_full": list(self.levels),
                   "fixed": dict(self.fixed), "family_alpha": FAMILY_ALPHA, "effect_relative": EFFECT,
                   "paper": paper, "capped": self.measure(CAPPED, levels, seeds, ctx)}
        numbers["equal_epochs_full"] = self.equal_epochs
        if self.equal_epochs and not quick:
            numbers["equal_epochs"] = self.measure(Protocol(epochs=self.equal_epochs, validate_every=VALIDATE_EVERY,
                                                            selected=True), levels, seeds, ctx)
        cells = Cells(grid=len(TOPS) * len(self.levels))
        if paper["tests"] is not None:
            cells.evaluated = cell_labels(numbers)
        numbers["cells"] = cells.as_dict(quick)
        return Computed(numbers)

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """The paper's protocol with equal steps judged (:func:`protocol_verdict`: the ANOVA, qualified when not
        converged); where the full report also trains every cell the same epochs and that design converged too, a
        significant effect in one design and none in the other is qualified (the finding depends on how training
        length is equalised; an equal-epochs design that did not converge is named and does not count); not
        evaluated without tests (a training that gave no CRPS)."""
        word, text = protocol_verdict(numbers.get("paper") or {}, numbers)
        other = numbers.get("equal_epochs")
        if word != NOT_EVALUATED and not other and numbers.get("equal_epochs_full"):
            text += f"; the full report also trains every cell {numbers['equal_epochs_full']} epochs"
        if word in (NOT_EVALUATED, QUALIFIED) or not other or not other.get("tests"):
            return word, text
        if not other["convergence"]["converged"]:
            return word, text + (f"; every cell {other['epochs']} epochs instead did not converge by this check (its "
                                 "verdict beside), so it does not count")
        found = anova_verdict(other) == NOT_REPRODUCED
        if found == (word == NOT_REPRODUCED):
            return word, text + f"; every cell {other['epochs']} epochs instead finds the same (its verdict beside)"
        return QUALIFIED, text + (f"; but every cell {other['epochs']} epochs instead (its verdict beside) finds "
                                  f"{'a significant effect' if found else 'no significant effect'}: the finding "
                                  "depends on whether steps or epochs are equalised")

    def data(self, numbers: dict) -> str:
        """M1 yearly at ε = ∞ (the shipped series, not the paper's traffic), with the scaling where the claim names
        it, and the paper's protocol (steps a cell, the checkpoint judged) where measured.

        Returns:
            The data in words.
        """
        paper = numbers.get("paper")
        if not paper:
            return self.data_text
        return f"{self.data_text}, {paper['steps']} steps a cell, the lowest-validation-loss checkpoint"

    def other_verdicts(self, numbers: dict) -> Tuple[OtherVerdict, ...]:
        """The paper's protocol with equal epochs (the full report, where the claim has :attr:`equal_epochs`), by the
        same rule; the epochs cap's measurement (module docstring), by the same test and rule without the convergence
        check; the paper's own evidence: a figure whose image file is empty in its source.

        Returns:
            The verdicts on other evidence.
        """
        out = []
        other = numbers.get("equal_epochs")
        if other:
            word, reason = protocol_verdict(other, numbers)
            where = f"{self.data_text}, {other['epochs']} epochs a cell, the lowest-validation-loss checkpoint"
            cells = {**numbers["cells"], "evaluated": cell_labels(numbers) if word != NOT_EVALUATED else []}
            out.append(OtherVerdict(f"the paper's protocol with every cell {other['epochs']} epochs (its literal "
                                    "design) instead of the same steps", word, verdict_text(word, cells, where),
                                    reason))
        capped = numbers.get("capped")
        if capped:
            word = anova_verdict(capped)
            where = f"{self.data_text}, a {capped['epochs']}-epoch cap, the last iterate"
            reason = ("a training gave no CRPS" if word == NOT_EVALUATED else
                      capped_text(numbers) + (underpowered_text() if word == QUALIFIED else ""))
            cells = {**numbers["cells"], "evaluated": cell_labels(numbers) if word != NOT_EVALUATED else []}
            out.append(OtherVerdict(f"a {capped['epochs']}-epoch cap, the last iterate (training length not "
                                    "equalised)", word, verdict_text(word, cells, where), reason))
        out.append(OtherVerdict("the paper's figure", NOT_EVALUATED,
                                f"not evaluated on the paper's figure ({self.paper_figure})",
                                "the figure is \\includegraphics[]{ } in the paper's source: no number to judge"))
        return tuple(out)
