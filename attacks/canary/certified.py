"""One canary score's certified ε lower bound, typed: an entry of a certified audit's ``scores``.

:class:`ScoreBound` is Steinke et al.'s (2023) bound of one score (:func:`attacks.canary.steinke_bound.certify`,
:func:`attacks.canary.evidence.steinke`); :class:`FdpScoreBound` the f-DP one-run test of one score with Steinke
et al.'s bound as its baseline (:func:`attacks.canary.fdp_bound.certify`, :func:`attacks.canary.evidence.fdp`), its
analyses typed by :class:`FdpAnalyses`. Both are **lower** bounds on the training's ε at event level.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Dict, Optional, Union

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


@dataclass(frozen=True)
class GuessSetBound:
    """An assumption-free analysis of the f-DP one-run test (``dp``: the (ε, δ) trade-off curve; ``steinke``:
    Steinke et al.'s bound on the same guess sets) at its best guess set.

    Attributes:
        epsilon_lower: the ε lower bound the analysis certifies at its share of the level (a **lower** bound).
        k_in: the best guess set's guesses "included" (the highest scores).
        k_out: its guesses "not included" (the lowest scores).
        correct: how many of those k_in + k_out guesses were right.
    """

    epsilon_lower: float
    k_in: int
    k_out: int
    correct: int

    def as_dict(self) -> dict:
        """The JSON form: the four attributes under their names."""
        return asdict(self)


@dataclass(frozen=True)
class GaussianBound:
    """The ``gdp`` analysis of the f-DP one-run test: a bound that holds only if the training's trade-off curve is
    Gaussian (μ-GDP), at its own confidence, outside the verdict.

    Attributes:
        epsilon_if_gaussian: the ε at the audit's δ of the certified μ (a **lower** bound only under the assumption).
        mu_lower: the certified μ lower bound.
        k_in: the best guess set's guesses "included".
        k_out: its guesses "not included".
        correct: how many of them were right.
    """

    epsilon_if_gaussian: float
    mu_lower: float
    k_in: int
    k_out: int
    correct: int

    def as_dict(self) -> dict:
        """The JSON form: the five attributes under their names."""
        return asdict(self)


@dataclass(frozen=True)
class CurveTest:
    """The ``claimed`` analysis of the f-DP one-run test: the guesses tested against the run's claimed trade-off
    curve (its sound accountant's).

    Attributes:
        violation: some guess set rejects the claimed curve at the analysis's share of the level.
    """

    violation: bool

    def as_dict(self) -> dict:
        """The JSON form: ``{"violation": ...}``."""
        return asdict(self)


@dataclass(frozen=True)
class FdpAnalyses:
    """The analyses an f-DP one-run test ran on one score (None: not run; absent from the JSON form).

    Attributes:
        dp: the (ε, δ) trade-off curve's bound (assumption-free).
        gdp: the Gaussian curve's bound (only under that assumption).
        steinke: Steinke et al.'s bound on the same guess sets (the baseline; assumption-free).
        claimed: the test of the claimed trade-off curve (with a claimed profile only).
    """

    dp: Optional[GuessSetBound] = None
    gdp: Optional[GaussianBound] = None
    steinke: Optional[GuessSetBound] = None
    claimed: Optional[CurveTest] = None

    @classmethod
    def from_dict(cls, analyses: dict) -> "FdpAnalyses":
        """The typed form of :func:`attacks.canary.fdp_bound.certify`'s ``analyses``."""
        kinds = {"dp": GuessSetBound, "gdp": GaussianBound, "steinke": GuessSetBound, "claimed": CurveTest}
        return cls(**{name: kinds[name](**row) for name, row in analyses.items()})

    def as_dict(self) -> dict:
        """The JSON form: each analysis that ran, under its name."""
        return {f.name: getattr(self, f.name).as_dict() for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class FdpScoreBound:
    """The f-DP one-run test (Mahloujifar, Melis & Chaudhuri 2025) of one score, with Steinke et al.'s bound as its
    baseline on the same guess sets: a **lower** bound on the training's ε at event level.

    Attributes:
        canaries: m, the canaries scored.
        delta: the δ of the bounds.
        confidence: the score's confidence (the audit's, Bonferroni-corrected over its scores).
        guess_sets: how many guess sets were tested (fixed before the scores).
        significance: each analysis's share of 1 - ``confidence``, by analysis name.
        analyses: what each analysis certified.
        epsilon_lower: the larger of the assumption-free ``dp`` and ``steinke`` bounds (None when neither ran).
        epsilon_if_gaussian: the ``gdp`` analysis's ε, a lower bound only if the curve is Gaussian (None when it
            did not run; absent from the JSON form then).
        violation: the guesses reject the claimed trade-off curve (False without one).
        ceiling: the perfect-guess ε of each analysis (what the audit's size allows), by analysis name.
        limited_by: ``audit size`` when some analysis reaches its ceiling, else ``training``.
        auc: the score's area under the ROC curve for "included"; NaN when every canary is on one side (null in
            JSON, with ``auc_note``).
    """

    canaries: int
    delta: float
    confidence: float
    guess_sets: int
    significance: Dict[str, float]
    analyses: FdpAnalyses
    epsilon_lower: Optional[float]
    epsilon_if_gaussian: Optional[float]
    violation: bool
    ceiling: Dict[str, float]
    limited_by: str
    auc: float

    @classmethod
    def from_dict(cls, entry: dict) -> "FdpScoreBound":
        """The typed form of :func:`attacks.canary.fdp_bound.certify`'s answer with the score's ``auc``."""
        values = {f.name: entry.get(f.name) for f in fields(cls)}
        return cls(**dict(values, analyses=FdpAnalyses.from_dict(entry["analyses"])))

    def as_dict(self) -> dict:
        """The JSON form: the attributes (``epsilon_if_gaussian`` only with the ``gdp`` analysis), the analyses as
        their dict, and ``auc_note`` beside an undefined (NaN, written as null) AUC."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["analyses"] = self.analyses.as_dict()
        if self.analyses.gdp is None:
            del out["epsilon_if_gaussian"]
        return with_note(out, "auc", AUC_NOTE)


ScoreResult = Union[ScoreBound, FdpScoreBound]
"""What a certifier (:mod:`attacks.canary.evidence`) answers for one score."""


__all__ = ["CurveTest", "FdpAnalyses", "FdpScoreBound", "GaussianBound", "GuessSetBound", "ScoreBound",
           "ScoreResult"]
