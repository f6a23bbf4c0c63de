"""The paper's own reported privacy-utility numbers (1-event level, δ = 1e-7) and claim C7 judged on them.

``paper_tables.json`` ships every number of the paper's three appendix tables
(table:1_event_training_traffic, table:1_event_training_electricity, table:1_event_training_solar; mean test
CRPS over 5 seeds ± std, printed to 3 decimals), each with its table label, row and column. Table 1 of Section
5.2 (table:1_event_training_traffic_main) is the ε ∈ {0.5, 1, 2, ∞} columns of the traffic table (a test
parses both from the paper's source and checks every number). :func:`paper_c7` applies the rule tsdp applies to
the grids it measures (:func:`tsdp.experiments.table.c7_verdict`) to each table: on electricity the
paper's best DP model is not below AutoETS at ε = 0.25 (DLinear 0.076 against 0.064) nor at ε = 0.5 (0.064
against 0.064, a tie at the printed precision).

It also ships the appendix tables behind the paper's other utility claims (``appendix``: the three w-user tables, the
three label-perturbation tables and the three inference-time tables, each number with its table, row, column, ± std
and whether the paper prints it in bold; :func:`appendix_entries`) and the AutoARIMA CRPS its text quotes. Printed
stds that equal their mean (solar_10_minutes at ε = ∞, every model cell of the electricity inference table) carry a
``std_note`` naming the misprint; :mod:`.reported_claims` judges those claims.
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Optional, Tuple

from .table import C7Evidence, Score, c7_verdict, c7_words


@dataclass(frozen=True)
class PaperEntry:
    """One number of the paper's tables: ``label`` (the table's LaTeX label), ``row`` and ``column`` as printed,
    the ``model`` (DP rows) or ``baseline`` it is the CRPS of, its ε (inf: the non-private column) and its ± std
    (None where the paper prints none: the baselines, and one std the paper misprints).

    Attributes:
        label: The table's LaTeX label.
        dataset: The dataset.
        row: The row as printed.
        column: The column as printed.
        epsilon: The column's ε.
        crps: The printed CRPS.
        model: The DP model ('' for a baseline).
        baseline: The baseline ('' for a model).
        std: The printed std.
    """

    label: str
    dataset: str
    row: str
    column: str
    epsilon: float
    crps: float
    model: str = ""
    baseline: str = ""
    std: Optional[float] = None


@functools.lru_cache(maxsize=1)
def raw() -> dict:
    """``paper_tables.json`` as shipped."""
    return json.loads(resources.files(__package__).joinpath("paper_tables.json").read_text(encoding="utf-8"))


def entries() -> Tuple[PaperEntry, ...]:
    """Every number of the shipped tables, in the paper's order."""
    out = []
    for table in raw()["tables"]:
        for e in table["entries"]:
            out.append(PaperEntry(table["label"], table["dataset"], e["row"], e["column"],
                                  math.inf if e["epsilon"] is None else float(e["epsilon"]), float(e["crps"]),
                                  e.get("model", ""), e.get("baseline", ""), e.get("std")))
    return tuple(out)


def baselines_of(label: str) -> dict:
    """The baselines' CRPS of one table (constant across its columns; a table that varies raises ValueError).

    Args:
        label: The table's label.

    Returns:
        CRPS per baseline.

    Raises:
        ValueError: The table's baselines vary across its columns.
    """
    values = {}
    for e in entries():
        if e.label == label and e.baseline:
            values.setdefault(e.baseline, set()).add(e.crps)
    if any(len(v) != 1 for v in values.values()):
        raise ValueError(f"{label}: a baseline's CRPS differs across columns: {values}")
    return {name: v.pop() for name, v in values.items()}


@dataclass(frozen=True)
class AppendixEntry:
    """One number of the paper's appendix tables (w-user, label-perturbation, inference): its table ``label``,
    ``dataset``, ``kind`` (the ``appendix`` key), ``row`` and ``column`` as printed, the column's ``value`` (w, σ_F or
    ε), the keep rate ``r`` (inference rows; None elsewhere), the ``model`` or ``baseline`` it is the CRPS of, its
    printed ± ``std`` (None where none is printed), whether it is printed in ``bold``, and ``misprint`` (the std_note
    where the printed std is a misprint, else '').

    Attributes:
        label: The table's LaTeX label.
        dataset: The dataset.
        kind: The appendix kind.
        row: The row as printed.
        column: The column as printed.
        value: The column's w, σ_F or ε.
        crps: The printed CRPS.
        std: The printed std.
        bold: Whether it is printed bold.
        model: The DP model ('' for a baseline).
        baseline: The baseline ('' for a model).
        r: The keep rate (inference rows).
        misprint: The std's misprint note.
    """

    label: str
    dataset: str
    kind: str
    row: str
    column: str
    value: float
    crps: float
    std: Optional[float]
    bold: bool
    model: str = ""
    baseline: str = ""
    r: Optional[float] = None
    misprint: str = ""


APPENDIX_KINDS = {"w-user": "w", "label-perturbation": "sigma_forecast", "inference": "epsilon"}
"""The appendix table kinds and the entry field that holds each one's column value."""


def appendix_entries(kind: str) -> Tuple[AppendixEntry, ...]:
    """Every number of the appendix tables of ``kind`` (:data:`APPENDIX_KINDS`), in the paper's order.

    Args:
        kind: The appendix kind.

    Returns:
        The entries.
    """
    out = []
    for table in raw()["appendix"][kind]["tables"]:
        for e in table["entries"]:
            out.append(AppendixEntry(table["label"], table["dataset"], kind, e["row"], e["column"],
                                     float(e[APPENDIX_KINDS[kind]]), float(e["crps"]), e.get("std"), bool(e["bold"]),
                                     e.get("model", ""), e.get("baseline", ""), e.get("r"), e.get("std_note", "")))
    return tuple(out)


def misprinted_stds() -> Tuple[Tuple[str, str, str], ...]:
    """(table label, row, column) of every shipped number whose printed ± std equals its mean (a ``std_note``)."""
    out = [(t["label"], e["row"], e["column"]) for t in raw()["tables"] for e in t["entries"]
           if "equal to the mean" in e.get("std_note", "")]
    out += [(e.label, e.row, e.column) for kind in APPENDIX_KINDS for e in appendix_entries(kind) if e.misprint]
    return tuple(out)


@dataclass(frozen=True)
class PaperC7:
    """Claim C7 on the paper's own tables: one :class:`C7Evidence` per table (source: its label). ``verdict``:
    'confirmed' when the rule holds on every table, 'refuted' when it fails on one (the paper's datasets:
    :func:`c7_words`), 'not evaluated' otherwise; ``failing``: the datasets where it fails.

    Attributes:
        verdict: The verdict.
        tables: One evidence per table.
    """

    verdict: str
    tables: Tuple[C7Evidence, ...]

    @property
    def failing(self) -> Tuple[str, ...]:
        return tuple(t.dataset for t in self.tables if t.margin is not None and t.margin <= 0)

    def line(self) -> str:
        """The verdict, naming the tables and cells it rests on."""
        if self.failing:
            held = [t.dataset for t in self.tables if t.dataset not in self.failing]
            return ("; ".join(t.line() for t in self.tables if t.dataset in self.failing)
                    + (f"; it holds on {' and '.join(held)}" if held else ""))
        return "; ".join(t.line() for t in self.tables)

    def as_dict(self) -> dict:
        """The JSON form: the verdict, the failing tables, :meth:`line`, each table's evidence, and the tables' source and
        printed decimals."""
        return {"verdict": self.verdict, "failing": list(self.failing), "line": self.line(),
                "tables": [t.as_dict() for t in self.tables], "source": raw()["source"],
                "printed_decimals": raw()["printed_decimals"]}


def paper_c7() -> PaperC7:
    """Claim C7 on each of the paper's tables by the measured grids' rule (:func:`c7_verdict`): its DP rows at every
    ε ≤ 1 (the paper's 5 seeds each; top level not stated) against its baselines, at the printed 3 decimals."""
    decimals, seeds = raw()["printed_decimals"], raw()["seeds"]
    tables = []
    for table in raw()["tables"]:
        label = table["label"]
        scores = [Score(e.model, e.epsilon, None, e.crps, e.std, seeds) for e in entries()
                  if e.label == label and e.model]
        tables.append(c7_verdict(scores, baselines_of(label), table["dataset"], source=label, decimals=decimals))
    holds, fails = c7_words(tables[0].dataset)
    margins = [t.margin for t in tables]
    verdict = (fails if any(m is not None and m <= 0 for m in margins) else
               holds if all(m is not None for m in margins) else "not evaluated")
    return PaperC7(verdict, tuple(tables))
