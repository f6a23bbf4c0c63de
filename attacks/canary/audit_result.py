"""What a canary audit of a training answers, typed: the certified bound, and an audit of a training function.

:class:`EvidenceBound` is :func:`attacks.canary.evidence.certify_evidence`'s answer (the scores' certified ε, a
**lower** bound, against the claim); :class:`TrainingAudit` adds what an audit of a training function saw
(:func:`attacks.canary.user_training.audit_training`, one run or several pooled, and `tsdp audit-fn`):
:class:`GradientRun` for gradient canaries, the multi-run engine's facts. ``as_dict()`` is the JSON form
(`tsdp audit-fn --json` prints it with the CLI's ``train`` and ``sigma``); a part that does not apply (the gradient
facts of a spike audit, the engine of a single run) is absent from it, not null.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Type, TypeVar

from tsdp.verify.json_data import Record, extend, record_dict

from tsdp.executor.run import ExecutorRun

from .certified import ScoreResult
from .data_span import DataPart
from .mechanism import MechanismTests

_Bound = TypeVar("_Bound", bound="EvidenceBound")
_Facts = TypeVar("_Facts", bound="OptimizerFacts")


@dataclass(frozen=True)
class EvidenceBound(Record):
    """The pooled canaries' scores certified (Bonferroni over the scores) by a one-run theorem (Steinke, Nasr &
    Jagielski 2023; the f-DP test of Mahloujifar, Melis & Chaudhuri 2025): a **lower** bound on the training's ε at
    event level, holding with probability ≥ ``confidence``, against the claimed ε and curve.

    Attributes:
        canaries: the canaries certified (m, or m · R pooled over R runs).
        included: how many of them were included.
        delta: the δ of the bound.
        confidence: the probability with which ``epsilon_lower`` (and the curve test) holds.
        epsilon_lower: the best score's certified ε lower bound.
        epsilon_claimed: the ε the training claims at ``delta`` (None: none given).
        violation: ``above_claim``, or the guesses reject the claimed trade-off curve (``curve_rejected``).
        above_claim: ``epsilon_lower`` exceeds a finite ``epsilon_claimed``.
        curve_rejected: some score's guesses reject the claimed curve (None: the curve was not tested).
        scores: each score's certified bound by name (:class:`~attacks.canary.certified.ScoreBound` for Steinke et
            al.'s analysis, :class:`~attacks.canary.certified.FdpScoreBound` for the f-DP test).
    """

    canaries: int
    included: int
    delta: float
    confidence: float
    epsilon_lower: float
    epsilon_claimed: Optional[float]
    violation: bool
    above_claim: bool
    curve_rejected: Optional[bool]
    scores: Dict[str, ScoreResult]

    def extended(self, cls: Type[_Bound], **more: Any) -> _Bound:
        """This bound as a record of ``cls``, a subclass that adds what its audit saw.

        Args:
            cls: A frozen dataclass deriving from :class:`EvidenceBound`.
            **more: The values of the fields ``cls`` adds, and of any of this bound's it replaces (``violation``).

        Returns:
            ``cls`` with this bound's attributes first, in their order, then ``cls``'s own.
        """
        return extend(self, EvidenceBound, cls, **more)



@dataclass(frozen=True)
class OptimizerFacts(Record):
    """What a gradient-canary run saw of the user's optimizer.

    Attributes:
        optimizer: the class name of the torch optimizer the canaries hooked into.
        steps: the optimizer steps of the run.
        clip: the clipping norm C of the canaries (an Opacus optimizer's ``max_grad_norm``).
        scale: the gradient's scale s (what the loop multiplies the noisy clipped sum by).
        observed: ``gradient`` (scored on the gradient the optimizer stepped on) or ``updates`` (its parameter
            updates, for an optimizer class of its own).
        data_span: why the data's per-window gradients were kept (None: taken off).
        data_part: how the data's part was taken off (None: kept).
    """

    optimizer: str
    steps: int
    clip: float
    scale: float
    observed: str
    data_span: Optional[str]
    data_part: Optional[DataPart]

    def extended(self, cls: Type[_Facts], **more: Any) -> _Facts:
        """These facts as a record of ``cls``, a subclass that adds what the audit saw of the training.

        Args:
            cls: A frozen dataclass deriving from :class:`OptimizerFacts`.
            **more: The values of the fields ``cls`` adds.

        Returns:
            ``cls`` with the seven facts of :class:`OptimizerFacts` first, in their order, then ``cls``'s own.
        """
        return extend(self, OptimizerFacts, cls, **more)


@dataclass(frozen=True)
class GradientRun(OptimizerFacts):
    """What a gradient-canary audit saw of the training (the :class:`OptimizerFacts` of its first run; the mechanism
    tests of every run).

    Attributes:
        parameters: the trainable parameters d.
        epsilon_ideal: the same audit's certified ε on the claimed mechanism itself (its power at the claim; not a
            bound on the training, :func:`attacks.canary.ideal.ideal_epsilon`).
        mechanism: the noise and clipping tests, pooled over the runs (``mechanism_failed`` in the JSON form: any
            failed).
    """

    parameters: int
    epsilon_ideal: float
    mechanism: MechanismTests

    def as_dict(self) -> dict:
        """The JSON form: the attributes, ``data_part`` and ``mechanism`` as their dicts, and ``mechanism_failed``."""
        return dict(record_dict(self), mechanism_failed=self.mechanism.failed)


@dataclass(frozen=True)
class EngineRun(ExecutorRun):
    """How the sharded engine ran a multi-run audit (:func:`attacks.canary.runs.run_many`: the
    :class:`tsdp.executor.run.ExecutorRun` of its runs, each run a shard; never stopped early: every run is
    needed).

    Attributes:
        run_seconds: the runs' own seconds, summed.
    """

    run_seconds: float


@dataclass(frozen=True)
class TrainingAudit(EvidenceBound):
    """A canary audit of a training function (:func:`attacks.canary.user_training.audit_training`, `tsdp audit-fn`):
    the certified bound (:class:`EvidenceBound`'s attributes, ``violation`` including a failed mechanism test) and
    what the audit saw.

    Attributes:
        canary: ``gradient`` (white-box canaries in the optimizer) or ``spike`` (black-box spikes in the data).
        analysis: ``fdp`` (the f-DP one-run test with Steinke et al.'s baseline) or ``steinke`` (that bound alone).
        data_canaries: the series scaled for the clipping test (0: none).
        runs: the training runs R whose canaries were pooled.
        spike: the spikes' size in standard deviations (spike canaries; None and absent from the JSON form for
            gradient canaries).
        gradient: what the gradient canaries saw (None for spike canaries); its keys sit at the top level of the
            JSON form.
        engine: how the multi-run engine ran the runs (None for a single run in this process: then neither
            ``runs`` nor ``engine`` is in the JSON form).
    """

    canary: str
    analysis: str
    data_canaries: int
    runs: int = 1
    spike: Optional[float] = None
    gradient: Optional[GradientRun] = None
    engine: Optional[EngineRun] = None

    @property
    def mechanism_failed(self) -> bool:
        """A mechanism test rejected the claimed DP-SGD step (gradient canaries; False for spike canaries)."""
        return self.gradient is not None and self.gradient.mechanism.failed

    def as_dict(self) -> dict:
        """The JSON form: the bound's keys, the gradient facts', then ``runs`` (with ``engine``), ``canary``,
        ``analysis``, ``data_canaries`` and ``spike`` where they apply."""
        out = record_dict(self, EvidenceBound)
        if self.gradient is not None:
            out.update(self.gradient.as_dict())
        if self.engine is not None:
            out["runs"] = self.runs
        out.update(canary=self.canary, analysis=self.analysis, data_canaries=self.data_canaries)
        if self.engine is not None:
            out["engine"] = self.engine.as_dict()
        if self.spike is not None:
            out["spike"] = self.spike
        return out


__all__ = ["EngineRun", "EvidenceBound", "GradientRun", "OptimizerFacts", "TrainingAudit"]
