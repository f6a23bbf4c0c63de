"""White-box gradient-canary audits of tsdp's own DP-SGD loop (:func:`training.train.train`), one run or many.

:class:`LoopTask` is one training run of the real loop with m fresh gradient canaries
(:mod:`attacks.canary.gradient`: each an element of norm-C clipped gradient along its own
direction, included with probability 1/2, taking part in steps with the configured scheme's
law for one element); it returns the run's evidence (the ``sum`` and ``mixture`` scores and the
inclusion bits). :func:`audit_loop` runs R of them on the sharded engine
(:func:`attacks.canary.runs.run_many`), :data:`RUNS_TOGETHER` runs of a shard trained together as one stacked program
(:meth:`LoopTask.together`, :mod:`attacks.canary.loop_together`), and certifies the pooled m·R canaries with a plug-in
certifier (:mod:`attacks.canary.evidence`; the f-DP test by default): a **lower** bound
on the loop's event-level ε at δ, compared with the sound ε the loop's accountant reports.

What one run can see depends on how often a canary takes part (m = 1000, SGD 0.05, simple-ff, 10 epochs,
δ = 1e-5, 95%; ``epsilon_ideal`` is the same audit on the claimed mechanism itself,
:func:`attacks.canary.ideal.ideal_epsilon`, the audit's power at the claim):

* default configuration (N = 320, L = 20, Λ = 32, WOR/WR, 100 steps): a canary takes part in a step with
  probability ρ r = 0.01, about once in the run, one Gaussian shift of 1/σ noise units at an unknown step, so at
  a calibrated claim the claim's ε lives in a tail no one-run audit of this size reaches: the ideal audit
  certifies next to nothing as well, and pooling runs does not close it. The answer is "the audit cannot see
  this claim", and the output says so.
* short series (N = 40, L = L_C + L_F = 9, Λ = 10: r = 1, ρ = 1/4, 40 steps, ten participations per canary):
  the audit certifies a fraction of the claim, and a loop without noise is flagged in one run.

The figures are those :func:`audit_loop` returns for these settings, not quoted here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import TrainingConfig

from tsdp.datasets.series import SeriesData
from tsdp.training.options import Budget, Evaluation, Loop
from tsdp.training.train import train
from tsdp.executor.local import threads_per_worker

from .audit_result import EngineRun, EvidenceBound
from .evidence import Certifier, certify_evidence, fdp
from .gradient import CanaryEvidence, GradientCanaries, sound_profile
from .ideal import ideal_epsilon
from .runs import RunEngine, run_many


@dataclass(frozen=True)
class LoopRunEvidence(CanaryEvidence):
    """The evidence of one run of tsdp's loop with gradient canaries, and the run's accounting.

    Attributes:
        epsilon: the loop's sound accountant's ε of the run (an **upper** bound; None: not private).
        steps: the training steps of the run.
    """

    epsilon: Optional[float]
    steps: int


@dataclass(frozen=True)
class LoopTask:
    """One run of tsdp's loop on ``data`` with ``canaries`` gradient canaries; ``private=False`` trains without
    clipping or noise (the canaries keep norm ``clip``). ``epochs`` fixes the run's length; ``delta`` is the
    accountant's δ. The model's initialisation and the batches are seeded from the run's seed too.

    Attributes:
        model: The forecaster's name.
        config: The configuration (σ and the batching).
        data: The series.
        canaries: m, the gradient canaries of a run.
        epochs: The epochs of a run.
        delta: The accountant's δ.
        private: Train with clipping and noise.
        clip: The clipping norm C (the canaries' norm).
        lr: The learning rate.
        optimizer: "sgd" or "adam".
        device: The torch device.
    """

    model: str
    config: TrainingConfig
    data: SeriesData
    canaries: int
    epochs: int
    delta: float
    private: bool = True
    clip: float = 1.0
    lr: float = 0.05
    optimizer: str = "sgd"
    device: str = "cpu"

    def __call__(self, seed: np.random.SeedSequence) -> LoopRunEvidence:
        """One run alone.

        Args:
            seed: The run's seed (its canaries' and its training's).

        Returns:
            The run's evidence.
        """
        canaries, train_seed = self._canaries(seed)
        run = train(self.config, self.model, self.data,
                    budget=Budget(epochs=self.epochs, delta=self.delta if self.private else None, private=self.private),
                    loop=Loop(clip=self.clip, lr=self.lr, optimizer=self.optimizer, canaries=canaries),
                    evaluation=Evaluation(n_samples=1), device=self.device, seed=train_seed, progress=False)
        return _evidence(canaries, run)

    def together(self, seeds: Sequence[np.random.SeedSequence]) -> Tuple[LoopRunEvidence, ...]:
        """The runs of ``seeds`` trained together as one stacked program
        (:func:`attacks.canary.loop_together.train_with_canaries`): each run's evidence is what :meth:`__call__`
        gives it alone, to float rounding. Runs without DP under Poisson sampling (whose empty steps a run alone
        skips) run one at a time.

        Args:
            seeds: The runs' seeds, in run order.

        Returns:
            The runs' evidence, in run order.
        """
        from tsdp.theorems.config import Bottom, Top
        from tsdp.training.together import GroupSettings, Run

        from .loop_together import train_with_canaries

        poisson = self.config.top == Top.POISSON or self.config.bottom == Bottom.POISSON
        if not self.private and poisson:
            return tuple(self(s) for s in seeds)  # their empty steps are skipped alone: not stacked
        drawn = [self._canaries(s) for s in seeds]
        settings = GroupSettings(self.model, data=self.data, delta=self.delta if self.private else None,
                                 epochs=self.epochs, clip=self.clip, lr=self.lr, optimizer=self.optimizer,
                                 device=self.device, private=self.private, n_samples=1)
        results = train_with_canaries(self.config, [Run(seed) for _, seed in drawn], settings,
                                      [c for c, _ in drawn])
        return tuple(_evidence(c, run) for (c, _), run in zip(drawn, results))

    def _canaries(self, seed: np.random.SeedSequence) -> Tuple[GradientCanaries, int]:
        """The run's canaries and its training seed, both from ``seed``."""
        canary_seed, train_seed = seed.spawn(2)
        canaries = GradientCanaries(self.config, self.canaries, clip=self.clip, seed=canary_seed)
        return canaries, int(train_seed.generate_state(1)[0])


def _evidence(canaries: GradientCanaries, run) -> LoopRunEvidence:
    evidence = canaries.evidence()
    return LoopRunEvidence(scores=evidence.scores, included=evidence.included, parameters=evidence.parameters,
                           epsilon=run.epsilon, steps=run.steps)


@dataclass(frozen=True)
class LoopAudit(EvidenceBound):
    """A white-box audit of tsdp's own loop (:func:`audit_loop`): the certified bound (:class:`EvidenceBound`'s
    attributes, a **lower** bound on the loop's ε, against the claim) and the loop's facts.

    Attributes:
        runs: the training runs R whose canaries were pooled.
        steps: the training steps of the first run.
        epsilon_sound: the loop's sound accountant's ε of a run (an **upper** bound).
        engine: how the multi-run engine ran the runs.
        epsilon_ideal: the same audit's certified ε on the claimed mechanism itself (its power at the claim,
            :func:`attacks.canary.ideal.ideal_epsilon`).
    """

    runs: int
    steps: int
    epsilon_sound: float
    engine: EngineRun
    epsilon_ideal: float


RUNS_TOGETHER = 8
"""Runs trained together per shard by :func:`audit_loop` by default (:class:`attacks.canary.runs.RunEngine`)."""


def audit_loop(task: LoopTask, *, runs: int = 1, delta: float, claimed: Optional[float] = None,
               confidence: float = 0.95, seed: int = 0, certifier: Certifier = fdp,
               engine: RunEngine = RunEngine(together=RUNS_TOGETHER)) -> LoopAudit:
    """R = ``runs`` runs of ``task`` pooled and certified (module docstring), with ``epsilon_ideal`` (the same audit
    on the claimed mechanism itself, :func:`attacks.canary.ideal.ideal_epsilon`: its power).

    Args:
        task: One run of tsdp's loop with gradient canaries.
        runs: R, the runs pooled.
        delta: The δ of the bound.
        claimed: The ε the training claims at ``delta`` (default: the loop's own sound ε of a run, the accountant's
            **upper** bound).
        confidence: The probability with which the bound (and the curve test) holds.
        seed: The seed the runs' seeds are spawned from.
        certifier: The one-run analysis (:mod:`attacks.canary.evidence`).
        engine: Where the runs run and how many train together per shard (each run's evidence is the one it gives
            alone, to float rounding: :meth:`LoopTask.together`).

    Returns:
        A :class:`LoopAudit`: a **lower** bound on the loop's ε; ``violation`` when it exceeds ``claimed`` or (with the
        f-DP certifier) the guesses reject the loop's sound trade-off curve.
    """
    many = run_many(task, runs, seed=seed, workers=engine.workers, cluster=engine.cluster,
                    threads=threads_per_worker(engine.workers, engine.cluster), progress=engine.progress,
                    together=engine.together)
    first = many.runs[0]
    if claimed is None:
        claimed = first.epsilon
    bound = certify_evidence(many.evidence, delta, confidence, certifier=certifier, claimed=claimed,
                             profile=sound_profile(task.config, first.steps) if certifier is fdp else None)
    return bound.extended(LoopAudit, runs=runs, steps=first.steps, epsilon_sound=first.epsilon, engine=many.engine,
                          epsilon_ideal=ideal_epsilon(task.config, task.canaries * runs, first.steps, delta, confidence,
                                                      certifier=certifier, seed=seed, parameters=first.parameters,
                                                      per_run=task.canaries))


__all__ = ["RUNS_TOGETHER", "LoopAudit", "LoopRunEvidence", "LoopTask", "audit_loop"]
