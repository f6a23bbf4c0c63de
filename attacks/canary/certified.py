"""One canary score's certified ε lower bound (Steinke et al. 2023), typed: an entry of
:func:`attacks.canary.steinke_bound.certify`'s ``scores``."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Optional

from tsdp.verify.json_data import with_note

from .steinke_bound import AUC_NOTE


@dataclass(frozen=True)
class ScoreBound:
    """The ε lower bound that one score's fixed guesses certify (a **lower** bound on the training's ε at event
    level, Bonferroni-corrected over the audit's scores), with the score's AUC.

    Attributes:
        epsilon_lower: the certified ε lower bound (0.0 when no guess set rejects ε = 0).
        guesses: the guesses of the best guess set.
        correct: how many of them were right.
        side: that set's side (``both``, ``in`` or ``out``; None when no set had a guess).
        ceiling: the bound with every one of those guesses right (what the audit's size allows).
        limited_by: ``audit size`` when ``epsilon_lower`` reaches most of ``ceiling``, else ``training``.
        auc: the score's area under the ROC curve for "inserted" (0.5: chance); NaN when every canary is on one
            side (null in JSON, with ``auc_note``).
    """

    epsilon_lower: float
    guesses: int
    correct: int
    side: Optional[str]
    ceiling: float
    limited_by: str
    auc: float

    @classmethod
    def from_dict(cls, entry: dict) -> "ScoreBound":
        """The typed form of one ``certify(...)["scores"]`` entry (its ``auc_note`` follows from ``auc``)."""
        return cls(**{f.name: entry[f.name] for f in fields(cls)})

    def as_dict(self) -> dict:
        """The JSON form: the attributes, and ``auc_note`` beside an undefined (NaN, written as null) AUC."""
        return with_note(asdict(self), "auc", AUC_NOTE)


__all__ = ["ScoreBound"]
