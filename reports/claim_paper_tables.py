"""Claims C8, C9 and C11: the paper's utility claims that rest on its appendix tables alone, judged on those tables
(:mod:`tsdp.experiments.reported_claims`; the numbers ship with tsdp, :mod:`tsdp.experiments.paper_tables`).

* C8 (w-user): "except for traffic and w = 8, at least one model outperforms the baselines for all w" (ε = 4).
* C9 (label perturbation): "the best score is attained with σ_F = 2 or σ_F = 2", read 2 or 5 (ε = 0.5).
* C11 (inference-time privacy, Appendix H): "subsampling with r = 0.5 or 0.75 yields better CRPS for small ε on
  traffic and solar, no improvement on electricity". The report's inference section (its section 6) measures the
  same comparison on synthetic and Grunfeld data; that verdict is added beside this one once the section has run
  (:func:`reports.inference_section.measured_verdicts`).

Each verdict text names the tables and the cells (one per table column, row or model and ε) it rests on; the reason
gives the deciding numbers.
"""
from __future__ import annotations

from typing import Callable, Tuple

from tsdp.theorems.config import TrainingConfig

from .claim_base import Cells, Claim, ClaimContext, Computed


class PaperTableClaim(Claim):
    """A claim judged on the paper's own tables by ``judge`` (a function of :mod:`tsdp.experiments.reported_claims`
    returning a :class:`~tsdp.experiments.reported_claims.PaperVerdict`); ``tables`` names them in the verdict text.

    Args:
        cid: The claim's id (C7, C8, ...).
        statement: The claim in words.
        judge: The judge of :mod:`tsdp.experiments.reported_claims`.
        tables: The tables in words (in the verdict text).
    """

    def __init__(self, cid: str, statement: str, judge: Callable, tables: str):
        self.id, self.statement, self._judge, self._tables = cid, statement, judge, tables

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        v = self._judge()
        cells = Cells(grid=len(v.cells), evaluated=list(v.cells))
        return Computed({"paper": v.as_dict(), "tables": self._tables, "cells": cells.as_dict(False)})

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """The paper verdict's word and its deciding numbers, with the tables' labels."""
        p = numbers["paper"]
        return p["verdict"], f"{p['line']} ({', '.join(p['tables'])})"

    @staticmethod
    def data(numbers: dict) -> str:
        """The paper's tables the verdict rests on.

        Returns:
            The data in words.
        """
        return f"the paper's {numbers['tables']}"


def _judge(name: str) -> Callable:
    def judge():
        from tsdp.experiments import reported_claims

        return getattr(reported_claims, name)()

    return judge


C8 = PaperTableClaim("C8", "with w-user-level privacy (ε = 4), at least one DP model outperforms seasonal naive and "
                           "AutoETS for every w, except traffic at w = 8 (Appendix 'w-event and w-User-Level Privacy')",
                     _judge("w_user_verdict"), "w-user tables")
C9 = PaperTableClaim("C9", "with label perturbation ((1, v)-level privacy, ε = 0.5), every model's best CRPS is at label "
                           "noise σ_F = 2 or σ_F = 5 (the text prints 'σ_F = 2 or σ_F = 2'; Appendix 'Amplification "
                           "by Label Perturbation')",
                     _judge("label_perturbation_verdict"), "label-perturbation tables")
C11 = PaperTableClaim("C11", "inference-time privacy (Appendix H): Poisson subsampling of the context with r = 0.5 or "
                             "0.75 gives better CRPS than r = 1 at small ε (≤ 1) on traffic and solar_10_minutes, and "
                             "no improvement on electricity", _judge("inference_verdict"), "inference tables")
