"""The one-run certifiers' answers, typed: what :func:`attacks.canary.steinke_bound.certify` and
:func:`attacks.canary.fdp_bound.certify` return, and an entry of a certified audit's ``scores``.

:class:`GuessBound` is Steinke et al.'s (2023) bound of one score's best guess set
(:func:`attacks.canary.steinke_bound.guess_bound`), :class:`ScoreBound` the same with the score's AUC and
:class:`SteinkeCertificate` several named scores at once; :class:`FdpCertificate` is the f-DP one-run test of one
score with Steinke et al.'s bound as its baseline (:func:`attacks.canary.fdp_bound.certify`), its analyses typed by
:class:`FdpAnalyses`, and :class:`FdpScoreBound` the same with the score's AUC
(:func:`attacks.canary.evidence.fdp`). Every ε here is a **lower** bound on the training's ε at event level.
Each class's JSON form is its fields (:class:`tsdp.verify.json_data.Record`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Union

from tsdp.verify.json_data import Record, extend, noted, omitted_when_none

AUC_UNDEFINED = "undefined: every canary on one side"
"""What a NaN AUC means (every canary included, or none: no ranking to score), in human output and as the JSON
``auc_note`` beside its null."""

AUC_NOTE = "null: " + AUC_UNDEFINED
"""The JSON ``auc_note`` beside an undefined AUC's null."""


class _Unscored(Record):
    """A certifier's answer for one score, before the score's AUC is added (:meth:`scored`)."""

    __slots__ = ()

    def scored(self, auc: float) -> "ScoreResult":
        """This answer with its score's AUC.

        Args:
            auc: The score's area under the ROC curve for "included" (NaN: undefined).

        Returns:
            The scored type of this answer (:class:`ScoreBound` or :class:`FdpScoreBound`).
        """
        return extend(self, type(self), _SCORED[type(self)], auc=auc)


@dataclass(frozen=True)
class GuessBound(_Unscored):
    """The ε lower bound that one score's fixed guess sets certify (a **lower** bound on the training's ε at event
    level, at the significance it was tested at).

    Attributes:
        epsilon_lower: the certified ε lower bound (0.0 when no guess set rejects ε = 0).
        guesses: the guesses of the best guess set.
        correct: how many of them were right.
        side: that set's side (``both``, ``in`` or ``out``; None when no set had a guess).
        ceiling: the bound with every one of those guesses right (what the audit's size allows).
        limited_by: ``audit size`` when ``epsilon_lower`` reaches most of ``ceiling``, else ``training``.
    """

    epsilon_lower: float
    guesses: int
    correct: int
    side: Optional[str]
    ceiling: float
    limited_by: str


@dataclass(frozen=True)
class ScoreBound(GuessBound):
    """A :class:`GuessBound` with the score's AUC: one entry of a certified audit's ``scores``.

    Attributes:
        auc: the score's area under the ROC curve for "inserted" (0.5: chance); NaN when every canary is on one
            side (null in JSON, with ``auc_note``).
    """

    auc: float = noted(AUC_NOTE)


@dataclass(frozen=True)
class SteinkeCertificate(Record):
    """Steinke et al.'s bounds of several named scores of one audit, each at its Bonferroni share of the level.

    Attributes:
        scores: each score's bound and AUC, by name.
        epsilon_lower: the best of them (a **lower** bound at the audit's confidence).
    """

    scores: Dict[str, ScoreBound]
    epsilon_lower: float


@dataclass(frozen=True)
class GuessSetBound(Record):
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


@dataclass(frozen=True)
class GaussianBound(Record):
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


@dataclass(frozen=True)
class CurveTest(Record):
    """The ``claimed`` analysis of the f-DP one-run test: the guesses tested against the run's claimed trade-off
    curve (its sound accountant's).

    Attributes:
        violation: some guess set rejects the claimed curve at the analysis's share of the level.
    """

    violation: bool


@dataclass(frozen=True)
class FdpAnalyses(Record):
    """The analyses an f-DP one-run test ran on one score (None: not run; absent from the JSON form).

    Attributes:
        dp: the (ε, δ) trade-off curve's bound (assumption-free).
        gdp: the Gaussian curve's bound (only under that assumption).
        steinke: Steinke et al.'s bound on the same guess sets (the baseline; assumption-free).
        claimed: the test of the claimed trade-off curve (with a claimed profile only).
    """

    dp: Optional[GuessSetBound] = omitted_when_none()
    gdp: Optional[GaussianBound] = omitted_when_none()
    steinke: Optional[GuessSetBound] = omitted_when_none()
    claimed: Optional[CurveTest] = omitted_when_none()

    def bounds(self) -> Dict[str, GuessSetBound]:
        """The assumption-free analyses that ran (``dp``, ``steinke``), by name.

        Returns:
            Each one's :class:`GuessSetBound`.
        """
        return {name: b for name, b in (("dp", self.dp), ("steinke", self.steinke)) if b is not None}


@dataclass(frozen=True, kw_only=True)
class FdpCertificate(_Unscored):
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
    """

    canaries: int
    delta: float
    confidence: float
    guess_sets: int
    significance: Dict[str, float]
    analyses: FdpAnalyses
    epsilon_lower: Optional[float]
    epsilon_if_gaussian: Optional[float] = omitted_when_none()
    violation: bool
    ceiling: Dict[str, float]
    limited_by: str


@dataclass(frozen=True, kw_only=True)
class FdpScoreBound(FdpCertificate):
    """An :class:`FdpCertificate` with the score's AUC: one entry of a certified audit's ``scores``.

    Attributes:
        auc: the score's area under the ROC curve for "included"; NaN when every canary is on one side (null in
            JSON, with ``auc_note``).
    """

    auc: float = noted(AUC_NOTE)


ScoreResult = Union[ScoreBound, FdpScoreBound]
"""What a certifier (:mod:`attacks.canary.evidence`) answers for one score."""

_SCORED = {GuessBound: ScoreBound, FdpCertificate: FdpScoreBound}
"""Each unscored answer's type with the AUC."""


__all__ = ["AUC_NOTE", "AUC_UNDEFINED", "CurveTest", "FdpAnalyses", "FdpCertificate", "FdpScoreBound",
           "GaussianBound", "GuessBound", "GuessSetBound", "ScoreBound", "ScoreResult", "SteinkeCertificate"]
