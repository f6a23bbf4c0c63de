"""What a Monte Carlo audit answers, typed to its leaves: :class:`AuditResult` (what :func:`attacks.montecarlo.audit.audit`
and ``tsdp.audit`` return; ``as_dict()`` is `tsdp audit --json`), the certified statistics of the trials
(:class:`AuditStatistics`) and the accountant's numbers (:class:`Theory`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Union

import numpy as np

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.json_data import Record, noted

from .bracket import AttainedBracket
from .design import Design
from .fit import GoodnessOfFit
from .sequential import SequentialSummary
from .counts import ExecutorRun
from .statistics import TestBound


@dataclass(frozen=True)
class StoppedTest(Record):
    """The ε bound of a sequential audit that stopped at a violating checkpoint: the violation test's certified value
    there (a **lower** bound); no single test was chosen, so threshold, union value and counts are null.

    Attributes:
        value: the certified ε lower bound at the stopping checkpoint.
        n_positive: trials of the positive world merged there.
        n_negative: trials of the negative world merged there.
    """

    value: float
    threshold: None = None
    side: str = "sequential"
    union_value: None = None
    true_positives: None = None
    false_positives: None = None
    n_positive: int = 0
    n_negative: int = 0


@dataclass(frozen=True)
class AuditRun(ExecutorRun):
    """How an audit's shards ran (:class:`attacks.montecarlo.shards.ExecutorRun`, both worlds' shards; stopped early:
    by the sequential test) and the audit's plan.

    Attributes:
        shard_size: trials of one world per shard.
        trials_run: trials per world the bounds used.
        edges: the statistic histogram's edges.
    """

    shard_size: int
    trials_run: int
    edges: int


@dataclass(frozen=True)
class AuditStatistics:
    """What the trials certify (:func:`attacks.montecarlo.audit.audit_statistics`); every bound a **lower** bound.

    Attributes:
        test: the ε lower bound at δ (probability ≥ confidence).
        h_lower: lower bounds on H_α per α (pointwise confidence).
        gof: the goodness of fit of the observed outputs to the construction's law.
        run: how the shards ran.
        violation_test: the violation test's verdict (None without ε_sound).
        design: the test fixed before sampling (None: chosen on a selection split).
    """

    test: Union[TestBound, StoppedTest]
    h_lower: np.ndarray
    gof: GoodnessOfFit
    run: AuditRun
    violation_test: Optional[SequentialSummary]
    design: Optional[Design]


RATIO_UNDEFINED = "null: undefined, the attained ε is 0"
"""What a NaN ``ratio`` (lower / attained with attained ε = 0) means, beside its JSON null and in human output."""


@dataclass(frozen=True)
class ProfilePoint(Record):
    """The audited H_α at one α.

    Attributes:
        alpha: α ≥ 1.
        h_lower: the certified lower bound on H_α (pointwise confidence).
        h_theory: the sound bound's H_α (an upper bound).
    """

    alpha: float
    h_lower: float
    h_theory: float


@dataclass(frozen=True, kw_only=True)
class AuditResult(Record):
    """One audit. ``as_dict()`` (or ``to_dict()``) gives the JSON keys of `tsdp audit --json` (and the report's input).

    Attributes:
        theorem: the audited theorem.
        config: the configuration the construction ran (its scheme fixed by the theorem).
        trials: trials per world.
        steps: training steps per trial.
        compositions: the compositions those steps are.
        delta: the δ of the ε values.
        confidence: the probability with which ``epsilon_lower`` holds.
        epsilon_lower: the certified ε lower bound (a **lower** bound on the true ε).
        epsilon_sound: the sound bound's composed ε (an upper bound).
        epsilon_attained: the construction pair's composed ε (what a perfect attack attains).
        ratio: epsilon_lower / epsilon_attained (NaN where the attained ε is 0: null with ``ratio_note``).
        gof_pvalue: the goodness of fit's combined p-value.
        profile: the certified H_α next to the sound one, per α.
        sound_theorem: the sound bound's theorem.
        attained_pair: the pair whose composed ε is ``epsilon_attained``.
        violation: a certified violation of the sound claim (a privacy bug); never where the sound bound does not
            cover the audited relation.
        gof: the goodness of fit.
        test: the test that certified ``epsilon_lower``.
        device: the torch device.
        seconds: wall-clock seconds from the theory to the result.
        design: the test fixed before sampling (None: split mode).
        violation_test: the violation test's verdict.
        run: how the shards ran.
        attained_bracket: the attained ε bracketed by the two discretisations, and the composition gap.
        sound_exceeded: the violation test's verdict whatever the relation.
        relation_note: why an exceeded sound bound is no violation (None: it covers the relation).
    """

    theorem: str
    config: TrainingConfig
    trials: int
    steps: int
    compositions: int
    delta: float
    confidence: float
    epsilon_lower: float
    epsilon_sound: float
    epsilon_attained: float
    ratio: float = noted(RATIO_UNDEFINED)
    gof_pvalue: float
    profile: List[ProfilePoint]
    sound_theorem: str
    attained_pair: str
    violation: bool
    gof: GoodnessOfFit
    test: Union[TestBound, StoppedTest]
    device: str
    seconds: float
    design: Optional[Design]
    violation_test: Optional[SequentialSummary]
    run: AuditRun
    attained_bracket: AttainedBracket
    sound_exceeded: bool
    relation_note: Optional[str]

    def to_dict(self) -> dict:
        """The JSON form (:meth:`as_dict`).

        Returns:
            The dict `tsdp audit --json` prints.
        """
        return self.as_dict()


@dataclass(frozen=True)
class Theory:
    """What the accountant says of an audited construction (:func:`attacks.montecarlo.audit.theory`).

    Attributes:
        epsilon_sound: the sound bound's composed ε at δ (an upper bound).
        epsilon_attained: the construction pair's composed ε at δ (a lower bound: what a perfect attack attains).
        h_theory: the sound H_α per α (an upper bound).
    """

    epsilon_sound: float
    epsilon_attained: float
    h_theory: np.ndarray


__all__ = ["AuditResult", "AuditRun", "AuditStatistics", "ProfilePoint", "RATIO_UNDEFINED", "StoppedTest", "Theory"]
