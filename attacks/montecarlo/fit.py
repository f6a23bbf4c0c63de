"""The goodness of fit of an audit's observed outputs to the law the construction claims (what ``gof`` of an audit holds).

Two worlds' Kolmogorov-Smirnov tests combined by Bonferroni: :func:`attacks.montecarlo.statistics.binned_goodness_of_fit`
(histograms) and
:meth:`attacks.montecarlo.shuffled.EpochMaxReading.goodness_of_fit` (an epoch's maximum) all answer a
:class:`GoodnessOfFit`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tsdp.verify.json_data import Record, omitted_when_none


@dataclass(frozen=True)
class GoodnessOfFit(Record):
    """Kolmogorov-Smirnov tests of the two worlds' observed outputs against their laws, combined by Bonferroni.

    Attributes:
        pvalue: the combined p-value min(1, 2 min(pvalue_p, pvalue_q)); small: the loop's law is not the pair's.
        pvalue_p: world P's p-value.
        pvalue_q: world Q's p-value.
        statistic_p: world P's KS distance.
        statistic_q: world Q's KS distance.
        observation: what was observed when it is not the one-step update (None: that; absent from the JSON form).
    """

    pvalue: float
    pvalue_p: float
    pvalue_q: float
    statistic_p: float
    statistic_q: float
    observation: Optional[str] = omitted_when_none()


def combined_fit(res: dict, observation: Optional[str] = None) -> GoodnessOfFit:
    """The Bonferroni combination of the two worlds' KS tests.

    Args:
        res: ``{"p": (distance, p-value), "q": (distance, p-value)}``.
        observation: What was observed (None: the one-step update).

    Returns:
        The :class:`GoodnessOfFit`.
    """
    return GoodnessOfFit(min(1.0, 2 * min(res["p"][1], res["q"][1])), res["p"][1], res["q"][1], res["p"][0],
                         res["q"][0], observation)


__all__ = ["GoodnessOfFit", "combined_fit"]
