"""The shape every claim of THEOREMS.md "Claims" (C1-C12) takes in the report.

A :class:`Claim` has four parts, kept apart:

* ``compute(config, quick, ctx)`` -> :class:`Computed`: the numbers (including the cells it
  covered and the cells it could not evaluate) and the figure's data;
* ``rule(numbers)`` -> ``(verdict word, reason)``: a pure function of those numbers
  (unit-tested on hand-made inputs); a rule that judges zero cells answers
  :data:`NOT_EVALUATED`, never :data:`CONFIRMED`;
* ``statement``: the claim's prose;
* ``data(numbers)``: what the computed numbers were measured on, where that is not the paper's
  setting (C7 trains on the shipped M1 yearly series): the verdict text names it, and the words
  are then ``reproduced`` / ``not reproduced`` there, not ``confirmed`` / ``refuted`` of the paper;
* ``other_verdicts(numbers)``: the same claim judged on other evidence by the same rule (C7: the
  paper's own reported tables), each an :class:`OtherVerdict` naming its source and cells;
* ``scope(numbers)``: where the verdict holds when narrower than its cells (C1: the ε range of its rigorous
  comparison), appended to the verdict text;
* ``figure(result, out)``: the PNGs drawn from the result (every plotted number is in
  results.json).

:meth:`Claim.evaluate` joins them into the dict results.json carries. The verdict text names
the cells it rests on, the same way in quick and full mode: "confirmed on all 15 cells",
"confirmed on the quick grid, 3 of 15 cells", "qualified on 4 of 15 cells (11 not
evaluable)", "not evaluated (0 of 15 cells)"; with its data, "not reproduced on M1 yearly (the
quick grid, 2 of 4 cells)".
"""
from __future__ import annotations

import abc

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.rounded import rounded_down, rounded_nearest, rounded_up

CONFIRMED, REFUTED, QUALIFIED, NOT_EVALUATED = "confirmed", "refuted", "qualified", "not evaluated"
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
"""The words of a claim judged on data other than the paper's (C7 on M1 yearly): a finding there, not a verdict on
the paper's claim."""
VERDICTS = (CONFIRMED, REFUTED, QUALIFIED, NOT_EVALUATED, REPRODUCED, NOT_REPRODUCED)

GRID_RATIOS = (0.5, 0.1)
"""r and Λ/N of the paper's appendix grid (Appendix C.1)."""

CONFIG_CELL = "config"
"""The label of the report's own configuration among a claim's cells (:func:`grid_cells`: the grid cells are labelled
by their r and Λ/N)."""


def _silent(what: str) -> None:
    """A :attr:`ClaimContext.step` that shows nothing."""


@dataclass(frozen=True)
class ClaimContext:
    """What a claim may need beyond the configuration: the auditor (or None), its trials, the seed, and
    ``step(what)``, called as each sub-step (a cell, an audit) starts, for the progress bar.

    Attributes:
        audit_fn: The auditor (None: no audit).
        trials: The auditor's trials.
        seed: The seed.
        step: Called with what starts, as each sub-step starts.
    """

    audit_fn: Optional[Callable] = None
    trials: int = 0
    seed: int = 0
    step: Callable[[str], None] = _silent


@dataclass
class Cells:
    """The cells of a claim's grid at one configuration: ``grid`` counts the full grid's cells,
    ``evaluated`` names those the verdict rests on, ``not_evaluated`` those it could not
    evaluate, each with the reason.

    Attributes:
        grid: How many cells the full grid has.
        evaluated: The cells the verdict rests on.
        not_evaluated: The cells not evaluated, each ``{"cell", "reason", "cells"}``.
    """

    grid: int = 0
    evaluated: List[str] = field(default_factory=list)
    not_evaluated: List[dict] = field(default_factory=list)

    def skip(self, cell: str, reason: str, cells: int = 1) -> None:
        """Record ``cell`` (standing for ``cells`` cells of the grid) as not evaluable, with the reason.

        Args:
            cell: The cell's label.
            reason: Why it could not be evaluated.
            cells: How many cells of the grid it stands for.
        """
        self.not_evaluated.append({"cell": cell, "reason": reason, "cells": cells})

    def as_dict(self, quick: bool) -> dict:
        """The JSON form, with whether the run was quick.

        Args:
            quick: Whether the run was quick.

        Returns:
            ``{"grid", "quick", "evaluated", "not_evaluated"}``.
        """
        return {"grid": self.grid, "quick": quick, "evaluated": list(self.evaluated),
                "not_evaluated": list(self.not_evaluated)}


@dataclass
class Computed:
    """A claim's computed numbers (``numbers["cells"]`` from :class:`Cells`) and figure data.

    Attributes:
        numbers: The computed numbers (``numbers["cells"]``: what was evaluated).
        figure: The curves the figures draw (None: no figure).
    """

    numbers: dict
    figure: Optional[dict] = None


def verdict_text(word: str, cells: dict, data: Optional[str] = None) -> str:
    """The verdict word with the cells it rests on, and the data they were measured on where given (see the module
    docstring).

    Args:
        word: The verdict word.
        cells: The claim's cells (:meth:`Cells.as_dict`).
        data: What the numbers were measured on (None: the claim's own grid).

    Returns:
        The text.
    """
    n, total = len(cells["evaluated"]), cells["grid"]
    skipped = sum(c["cells"] for c in cells["not_evaluated"])
    where = f" on {data}" if data else ""
    if word == NOT_EVALUATED or n == 0:
        return f"{NOT_EVALUATED}{where} (0 of {total} cells)"
    unit = "cell" if total == 1 else "cells"
    note = f" ({skipped} not evaluable)" if skipped else ""
    if cells["quick"] and n < total:
        scope = f"the quick grid, {n} of {total} {unit}{note}"
    elif n < total:
        scope = f"{n} of {total} {unit}{note}"
    else:
        scope = f"all {n} {unit}" if n > 1 else "its one cell"
    return f"{word}{where} ({scope})" if data else f"{word} on {scope}"


@dataclass(frozen=True)
class OtherVerdict:
    """A claim judged on other evidence than its computed grid, by the same rule: ``source`` names the evidence
    (C7: the paper's own reported tables), ``verdict`` the word, ``verdict_text`` the word with the data and cells
    it rests on, ``reason`` the numbers.

    Attributes:
        source: The evidence (C7: the paper's own reported tables).
        verdict: The verdict word.
        verdict_text: The word with the data and cells it rests on.
        reason: The numbers.
    """

    source: str
    verdict: str
    verdict_text: str
    reason: str

    def as_dict(self) -> dict:
        """The JSON form: source, verdict, verdict text and reason."""
        return {"source": self.source, "verdict": self.verdict, "verdict_text": self.verdict_text,
                "reason": self.reason}


class Claim(abc.ABC):
    """Base of the claims C1-C12: subclasses set ``id``, ``statement`` and implement the abstract
    :meth:`compute` and :meth:`rule` (and :meth:`figure` where the claim draws one). The parameters of these
    methods are documented here, once: an override says only what is its own (the rule in words, the figure drawn)
    and inherits its Args (``help()`` and ``inspect.getdoc`` show the base's docstring where it has none)."""

    id: str = ""
    statement: str = ""
    on_configuration: bool = False
    """Whether :meth:`compute` evaluates bounds on the given configuration (C1-C6): :meth:`evaluate` then names its
    parameters among the cells (:func:`configuration_evidence`), the evidence a cell labelled ``config`` (or a grid
    cell varying r and Λ/N around it) stands for."""
    audits: bool = False
    """Whether :meth:`compute` runs the Monte Carlo auditor (``ctx.audit_fn``); the report computes the
    others in side processes."""

    @abc.abstractmethod
    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        """The claim's numbers on ``config`` (``numbers["cells"]`` names what was and was not evaluated).

        Args:
            config: The configuration.
            quick: The quick run (a smaller grid).
            ctx: The auditor, seed and progress.

        Returns:
            The numbers and figure data.
        """

    @staticmethod
    @abc.abstractmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """(verdict word, reason): a pure function of the computed numbers.

        Args:
            numbers: The computed numbers.

        Returns:
            (verdict word, reason).
        """

    def figure(self, result: dict, out: Path) -> List[str]:
        """Draw the claim's figures from its entry of results.json (none unless a claim has some).

        Args:
            result: The claim's entry (:meth:`evaluate`).
            out: The folder of the figures.

        Returns:
            The files written, relative to ``out``.
        """
        return []

    @staticmethod
    def data(numbers: dict) -> Optional[str]:
        """What the numbers were measured on where it is not the paper's setting (None: the claim's own grid).

        Args:
            numbers: The computed numbers.

        Returns:
            The data in words, or None.
        """
        return None

    @staticmethod
    def other_verdicts(numbers: dict) -> Tuple[OtherVerdict, ...]:
        """The claim on other evidence than its grid (none unless a claim has some).

        Args:
            numbers: The computed numbers.

        Returns:
            The verdicts on other evidence.
        """
        return ()

    @staticmethod
    def scope(numbers: dict) -> Optional[str]:
        """Where the verdict holds, when that is narrower than its cells (C1: the ε range of the rigorous
        comparison), appended to the verdict text; None: nothing to add.

        Args:
            numbers: The computed numbers.

        Returns:
            The scope in words, or None.
        """
        return None

    def evaluate(self, config: TrainingConfig, quick: bool = False, ctx: Optional[ClaimContext] = None) -> dict:
        """The claim's entry of results.json: id, statement, verdict (the word), verdict_text (the
        word with its data and cells), reason, cells, numbers, other_verdicts (:meth:`other_verdicts`), figure (the
        curves the PNGs draw).

        Args:
            config: The configuration.
            quick: The quick run (a smaller grid).
            ctx: The auditor, seed and progress (None: no audit, seed 0).

        Returns:
            The claim's entry of results.json.
        """
        computed = self.compute(config, quick, ctx or ClaimContext())
        numbers = computed.numbers
        word, reason = self.rule(numbers)
        if not numbers["cells"]["evaluated"]:
            word = NOT_EVALUATED
        if self.on_configuration:
            numbers["cells"] = {**numbers["cells"], "configuration": configuration_evidence(config)}
        text = verdict_text(word, numbers["cells"], self.data(numbers))
        scope = self.scope(numbers) if word != NOT_EVALUATED else None
        return {"id": self.id, "statement": self.statement, "verdict": word,
                "verdict_text": f"{text}; {scope}" if scope else text, "reason": reason,
                "cells": numbers["cells"], "numbers": numbers,
                "other_verdicts": [v.as_dict() for v in self.other_verdicts(numbers)], "figure": computed.figure}

    __call__ = evaluate


# ----------------------------------------------------------------------------- shared helpers


def plain(config: TrainingConfig) -> TrainingConfig:
    """WOR top, WR bottom, λ = 1, no augmentation: the scheme of T6 (and T9, T11 when changed).

    Args:
        config: The configuration.

    Returns:
        It with that scheme.
    """
    return config.with_(top="wor", bottom="wr", instances=1, sigma_context=0.0, sigma_forecast=0.0, lengths=None)


def cell_info(cfg: TrainingConfig) -> dict:
    """The parameters a figure title and a table name a cell by.

    Args:
        cfg: The cell's configuration.

    Returns:
        The parameters by name.
    """
    return {"N": cfg.N, "L": cfg.L, "batch_size": cfg.batch_size, "r": float(cfg.r), "rho": float(cfg.rho),
            "sigma": cfg.sigma}


def configuration_evidence(config: TrainingConfig) -> dict:
    """The parameters of the configuration a bound claim (C1-C6) was evaluated on, as the report names them beside its
    cells: N, L, L_C, L_F, Λ, σ and the derived r, ρ of WOR top, WR bottom, λ = 1 (:func:`plain`; a claim's cells
    name what they change: top level, λ, r, Λ/N, σ_F, N_tot).

    Args:
        config: The configuration.

    Returns:
        ``{"N", "L", "context_length", "forecast_length", "batch_size", "sigma", "r", "rho"}``.
    """
    base = plain(config)
    return {"N": base.N, "L": base.L, "context_length": base.context_length, "forecast_length": base.forecast_length,
            "batch_size": base.batch_size, "sigma": base.sigma, "r": float(base.r), "rho": float(base.rho)}


def floats(a) -> list:
    """An array as a list of Python floats (results.json).

    Args:
        a (numpy.ndarray): The array.

    Returns:
        Its values.
    """
    return [float(x) for x in np.asarray(a, dtype=float)]


def grid_cells(config: TrainingConfig, pairs: Optional[Sequence[Tuple[float, float]]] = None) -> List[tuple]:
    """(label, config or None, why not) of every cell of the full grid: the configuration itself
    (WOR, WR, λ = 1) and the paper's r × Λ/N grid; a grid cell the configuration cannot represent
    (N, L_C, L_F fixed) has config None and the reason.

    Args:
        config: The configuration.
        pairs: The (r, Λ/N) cells of the grid, in order (None: every pair of :data:`GRID_RATIOS` × itself, the four
            cells of Appendix C.1.2 and C.1.3; C1 passes the three of Appendix C.1.1).

    Returns:
        The cells, the configuration's first.
    """
    from .curves import with_ratios

    base = plain(config)
    out = [(CONFIG_CELL, base, None)]
    for r, b in pairs if pairs is not None else [(r, b) for r in GRID_RATIOS for b in GRID_RATIOS]:
        try:
            out.append((f"r={r:g}, Λ/N={b:g}", with_ratios(base, r, b), None))
        except ValueError as exc:
            out.append((f"r={r:g}, Λ/N={b:g}", None, str(exc)))
    return out


def fmt4(x) -> str:
    """A number that bounds nothing in prose: 4 significant digits to nearest
    (:func:`tsdp.verify.rounded.rounded_nearest`); None or non-finite as 'none'.

    Args:
        x (float | None): The number.

    Returns:
        The text.
    """
    return _prose(x, rounded_nearest)


def upper4(x) -> str:
    """An upper bound (a sound ε) in prose: 4 significant digits rounded up
    (:func:`tsdp.verify.rounded.rounded_up`, the text reads back as at least ``x``); None or non-finite as 'none'.

    Args:
        x (float | None): The number.

    Returns:
        The text.
    """
    return _prose(x, rounded_up)


def lower4(x) -> str:
    """A lower bound (an attained or audited ε) in prose: 4 significant digits rounded down
    (:func:`tsdp.verify.rounded.rounded_down`, the text reads back as at most ``x``); None or non-finite as 'none'.

    Args:
        x (float | None): The number.

    Returns:
        The text.
    """
    return _prose(x, rounded_down)


def p_value_text(p: float, significant: bool, digits: int = 3) -> str:
    """A test's p-value beside a finding, on the side that does not strengthen it: rounded up where the test found an
    effect (p below its level backs the finding), down where it found none (p at or above its level backs that). To
    nearest, p = 0.02496 < α = 0.025 prints 0.025, and 0.02504 prints 0.025 beside 'no significant effect'.

    Args:
        p: The p-value.
        significant: Whether the finding the text backs is a significant effect.
        digits: Significant digits.

    Returns:
        The text.
    """
    return (rounded_up if significant else rounded_down)(p, digits)


def _prose(x, text: Callable[[float], str]) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "none"
    return text(float(x))
