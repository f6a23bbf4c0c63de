"""The Monte Carlo privacy auditor: a proof's worst case through the real loop, an ε lower bound with confidence.

:func:`audit` builds the construction of the audited theorem (:mod:`attacks.montecarlo.constructions`),
runs ``trials`` independent trials of ``steps`` DP-SGD steps in each neighbouring world
through the real loop (:mod:`attacks.montecarlo.trials`), and reports

* ``epsilon_lower``: a lower confidence bound on the mechanism's ε at δ (Neyman-Pearson
  statistic = Σ_s log p(y_s)/q(y_s) of the construction's known mixtures; threshold fixed
  before sampling from the pair's law, :mod:`attacks.montecarlo.design`, or chosen on a selection
  split; the union of Clopper-Pearson bounds on the trials that were not used to choose, certified at its
  exact level; :mod:`attacks.montecarlo.statistics`, :mod:`attacks.montecarlo.exact_level`);
* ``epsilon_sound``: the composed ε the sound bound claims (an upper bound; the sound
  ``PldAccountant`` of :mod:`tsdp.verify.accountant`, which alone composes PLDs);
* ``epsilon_attained``: the composed ε of the construction's exact pair (what a perfect
  attack reaches; the accountant's attained estimate); ``ratio`` = epsilon_lower / epsilon_attained;
* ``violation``: a certified privacy bug in the theory or the loop: the violation test
  (:mod:`attacks.montecarlo.sequential`) finds H_α above the sound profile at some point of
  an ε grid, or ε above epsilon_sound at δ, or ``epsilon_lower`` itself exceeds epsilon_sound
  (strictly); `tsdp audit` then exits 1. Each of the two tests errs with probability at most
  1 - ``confidence`` on a correct loop, so the verdict at most twice that (union bound). Only where
  the sound bound covers the audited relation: otherwise ``sound_exceeded`` carries the verdict and
  ``relation_note`` says why it is not a violation (the pooled loop against T13, claim C6);
* ``attained_bracket``: the pair's composed ε with the optimistic and the pessimistic
  discretisation, and the composition gap sound ε - upper (:mod:`attacks.montecarlo.bracket`);
* ``profile``: lower confidence bounds on H_α next to the sound bound's H_α;
* ``gof_pvalue``: KS test of the observed one-step updates against the construction's mixture.

A violation epsilon_lower > epsilon_sound (beyond the confidence level) is a privacy bug in
the theory or in the loop. Between building the construction and reporting,
:func:`audit_statistics` runs the statistics pipeline: the law of the statistic under the
claimed pair (:mod:`attacks.montecarlo.design`), the shards (:mod:`attacks.montecarlo.shards`, run on
:mod:`executor`), and the bounds (:mod:`attacks.montecarlo.statistics`, :mod:`attacks.montecarlo.sequential`).
Its options, one object per concern, are :mod:`attacks.montecarlo.options`'s: ``Statistic(threshold="theory")``
fixes the test before sampling and spends every trial on the estimate; ``threshold="split"`` chooses it on a
selection share of the shards (the first ones) and certifies on the rest, for when the claimed pair is not trusted
to be the law.

For the pooled-window loop (``audit("T13" | "T14", ...)``, claim
C6) ``epsilon_sound`` is what T13, the standard one-record guarantee, claims; the loop's
element-level leakage attains T14 and may exceed it: a relation mismatch (one element lies in k
windows; T13 covers one), never a ``violation``.
"""
from __future__ import annotations

import contextvars
import math
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from tsdp.executor.cluster import check_cluster
from tsdp.executor.local import threads_per_worker, worker_pool
from tsdp.executor.run import ExecutorRun, run_shards
from tsdp.executor.seams import holding
from tsdp.theorems.config import ConfigError, TrainingConfig, check_delta, check_int
from tsdp.theorems.constructions import CONSTRUCTIONS
from tsdp.theorems.hidden_position import hidden_position_name
from tsdp.theorems.registry import get
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import compositions, training_event
from tsdp.verify.json_data import Record, noted
from tsdp.verify.pld import DEFAULT_DISCRETIZATION

from tsdp.training.step import check_noise_std

from .bracket import AttainedBracket, attained_bracket
from .constructions import Construction, build, pair_numeric
from .counts import merge
from .design import EPOCH_MAX, Design, plan_tests, y_edges_of
from .fit import GoodnessOfFit
from .sequential import SequentialSummary, SequentialTest
from .shuffled import reading_of, reads_epoch_maxima
from .options import DEFAULT_ALPHAS, THRESHOLDS, Confidence, Statistic, Threshold, TrialPlan, split_shard_size
from .shards import SHARD_IMPORTS, plan_shards, run_shard
from .statistics import (TestBound, binned_goodness_of_fit, choose_profile_tests, fixed_test_bound,
                         profile_lower_bounds, split_test_bound)
from .trials import resolve_device
from .verdict import sound_exceeded

PROFILE_EPSILONS = tuple(0.5 * i for i in range(41))  # ε grid (≤ ε_sound used) of the sound profile the violation test checks


@dataclass(frozen=True)
class StoppedTest(Record):
    """The ε bound of a sequential audit that stopped at a violating checkpoint: the violation test's certified value
    there (a **lower** bound); no single test was chosen, so threshold, union value and counts are null.

    Attributes:
        value: the certified ε lower bound at the stopping checkpoint.
        threshold: None (no single test was chosen).
        side: ``"sequential"``.
        union_value: None.
        true_positives: None.
        false_positives: None.
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
    """How an audit's shards ran (:class:`executor.run.ExecutorRun`, both worlds' shards; stopped early:
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
        confidence: the probability with which ``epsilon_lower`` holds (with a sequential violation test, which
            may put its own value there, 1 - 2 (1 - confidence): :func:`audit`).
        epsilon_lower: the certified ε lower bound (a **lower** bound on the true ε).
        epsilon_sound: the sound bound's composed ε (an upper bound).
        epsilon_attained: the construction pair's composed ε (what a perfect attack attains).
        ratio: epsilon_lower / epsilon_attained (NaN where the attained ε is 0: null with ``ratio_note``).
        gof_pvalue: the goodness of fit's combined p-value.
        profile: the certified H_α next to the sound one, per α.
        sound_theorem: the sound bound's theorem.
        attained_pair: the pair whose composed ε is ``epsilon_attained``.
        violation: a certified violation of the sound claim (a privacy bug): the violation test's, or
            ``epsilon_lower`` > ``epsilon_sound``; never where the sound bound does not cover the audited relation.
        gof: the goodness of fit.
        test: the test that certified ``epsilon_lower``.
        device: the torch device.
        seconds: wall-clock seconds from the theory to the result.
        design: the test fixed before sampling (None: split mode).
        violation_test: the violation test's verdict.
        run: how the shards ran.
        attained_bracket: the attained ε bracketed by the two discretisations, and the composition gap.
        sound_exceeded: the verdict whatever the relation (the violation test's, or ``epsilon_lower`` >
            ``epsilon_sound``).
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


_SAMPLER = contextvars.ContextVar("tsdp_audit_sampler", default=None)
"""A sampler that replaces the scheme's inside an audit (None: the scheme's own); set only by :func:`_sampler_replaced`."""


def _sampler_replaced(sampler):
    """Within the block (a context manager), audits draw their batches with ``sampler`` instead of the scheme's
    (tests: a broken sampler the goodness of fit must catch)."""
    return holding(_SAMPLER, sampler)


@dataclass(frozen=True)
class SoundClaim:
    """What the violation test checks: the sound bound after the audited steps (every value an **upper** bound).

    Attributes:
        epsilon: The sound bound's composed ε at the audit's δ.
        profile: Its H_α at points (α, H_α) of an ε grid up to ``epsilon``.
    """

    epsilon: float
    profile: Tuple[Tuple[float, float], ...] = ()


def audit_statistics(construction: Construction, *, steps: int, delta: float, trials: TrialPlan,
                     statistic: Statistic = Statistic(), confidence: Confidence = Confidence(),
                     sound: Optional[SoundClaim] = None, loop: str = "correct",
                     progress: bool = False) -> AuditStatistics:
    """Run the audit's trials in shards and certify (lower-bound direction).

    Args:
        construction: The construction whose worlds the trials run.
        steps: Compositions per trial (epoch-max constructions: training steps).
        delta: The δ of the ε bound.
        trials: The trials, their seed and shards, and where they run.
        statistic: How the test is chosen, and the α grid of the H_α bounds.
        confidence: The probability with which the bounds hold; with ``sequential``, the violation test runs at
            geometric checkpoints and may stop the run early (``test`` is then its certified value at the stopping
            checkpoint).
        sound: The sound claim the violation test checks (None: no violation test).
        loop: A planted bug (:mod:`attacks.montecarlo.planted`; "correct": none).
        progress: Report progress.

    Returns:
        The :class:`AuditStatistics`.
    """
    level, sequential, alphas = confidence.level, confidence.sequential, list(statistic.alphas)
    split = statistic.threshold == Threshold.SPLIT
    reading = reading_of(construction, steps) if reads_epoch_maxima(construction) else None
    num = pair_numeric(construction.pair)
    shard_size = split_shard_size(trials.trials, trials.shard_size) if split else trials.shard_size
    n_shards = math.ceil(trials.trials / shard_size)
    key = tuple(tuple(np.atleast_1d(x).tolist()) for x in num)
    if reading is not None:
        key = (EPOCH_MAX, construction.theorem, construction.config, int(steps), float(construction.offset))
    seq_logs = None if sound is None else tuple(math.log(x) for x, _ in sound.profile)
    if seq_logs is not None and not split:
        seq_logs = seq_logs + (None,)  # the violation test's family includes the estimate's test
    design, profile_tests, seq_tests, edges = plan_tests(key, steps, trials.trials, float(delta), float(level),
                                                         tuple(alphas), not split, seq_logs)
    y_edges = y_edges_of(num) if reading is None else reading.z_edges()
    specs = plan_shards(construction.theorem, construction.config, trials.trials, steps, trials.seed, edges, y_edges,
                        shard_size=shard_size, device=trials.device, loop=loop, sampler=_SAMPLER.get(),
                        threads=threads_per_worker(trials.workers, trials.cluster))
    seq = None
    if sound is not None:
        seq = SequentialTest(n_shards, edges, seq_tests, float(sound.epsilon), delta, level,
                             [(float(x), float(h)) for x, h in sound.profile] + [(math.exp(sound.epsilon), delta)],
                             sequential=sequential)
    results, run = run_shards(specs, run_shard, workers=trials.workers, cluster=trials.cluster, progress=progress,
                              stop=seq if sequential else None, desc="audit trials (both worlds)")
    if seq is not None and not sequential:
        seq(results)  # one checkpoint: all shards, level 1 - confidence
    stopped = seq is not None and sequential and seq.violation
    used = seq.history[-1].shards if stopped else n_shards
    p, q = merge(results, "p", used), merge(results, "q", used)
    if stopped:
        test = StoppedTest(seq.history[-1].epsilon_lower, n_positive=p.trials, n_negative=q.trials)
        h_lower = np.maximum(0.0, 1.0 - np.asarray(alphas))
    elif not split:
        test = fixed_test_bound(p.counts, q.counts, edges, design.threshold, design.side, delta, level,
                                design.fp_share)
        h_lower = profile_lower_bounds(p.counts, q.counts, edges, profile_tests, alphas, level)
    else:
        n_sel = min(n_shards - 1, max(1, round(statistic.select_fraction * n_shards)))
        sel = (merge(results, "p", n_sel).counts, merge(results, "q", n_sel).counts)
        out = (p.counts - sel[0], q.counts - sel[1])
        test = split_test_bound(sel, out, edges, delta, level)
        h_lower = profile_lower_bounds(*out, edges, choose_profile_tests(*sel, edges, alphas, level), alphas, level)
    gof = (binned_goodness_of_fit(p.y_counts, q.y_counts, y_edges, num) if reading is None
           else reading.goodness_of_fit(p.y_counts, q.y_counts, y_edges))
    return AuditStatistics(test=test, h_lower=h_lower, gof=gof,
                           run=run.extended(AuditRun, shard_size=shard_size, trials_run=p.trials, edges=len(edges)),
                           violation_test=seq.summary() if seq is not None else None, design=design)


def theory(construction: Construction, steps: int, delta: float, alphas: Sequence[float],
           discretization: float = DEFAULT_DISCRETIZATION) -> Theory:
    """Sound ε (upper bound), attained ε (lower bound) and the sound H_α after ``steps`` training steps.

    Both from the accountant over :func:`tsdp.verify.events.training_event` of the
    construction's scheme: "sound" for the sound theorem, "attained" for the pair the
    construction realises (the audited theorem's, or the sound bound's own construction pair
    for T11).

    Args:
        construction: The audited construction.
        steps: Training steps.
        delta: The δ of the ε values.
        alphas: The α grid of the sound H_α.
        discretization: The PLD grid (sound rounds up, attained down).

    Returns:
        The :class:`Theory`.
    """
    cfg = construction.config
    attained_id = construction.attained_theorem or construction.sound_theorem
    sound = PldAccountant("sound", discretization=discretization).compose(
        training_event(cfg, steps=steps, theorem=construction.sound_theorem))
    attained = PldAccountant("attained", discretization=discretization).compose(
        training_event(cfg, steps=steps, theorem=attained_id))
    if compositions(cfg, steps=steps) == 1:
        h = get(construction.sound_theorem).profile(cfg, np.asarray(alphas), check=False)
    else:
        h = np.array([sound.get_delta(math.log(a)) for a in alphas])
    return Theory(sound.get_epsilon(delta), attained.get_epsilon(delta), h)


def audit(theorem: str, config: TrainingConfig, *, delta: float, trials: TrialPlan, steps: int = 1,
          statistic: Statistic = Statistic(), confidence: Confidence = Confidence(),
          discretization: float = DEFAULT_DISCRETIZATION, loop: str = "correct", progress: bool = False) -> AuditResult:
    """Audit ``theorem``'s worst case on ``config``'s sizes: ``trials.trials`` trials of ``steps`` steps per world.

    ``result.epsilon_lower`` is a **lower** bound on the true ε at δ with probability ≥ ``confidence.level``
    (with ``confidence.sequential``: ≥ 1 - 2(1 - level), since an audit that stops reports the violation test's
    value and one that runs on the estimate's, each failing with probability ≤ 1 - level).
    ``result.violation``: the violation test (:mod:`tsdp.attacks.montecarlo.sequential`: the sound profile on an
    ε grid and (ε_sound, δ), certified exceeded at that confidence) rejects the sound claim, or ``epsilon_lower``
    exceeds ε_sound (an estimate above the sound ε is never read as a pass; on a correct loop each errs with
    probability ≤ 1 - level, the verdict with ≤ twice that).

    ``steps`` counts training steps, as everywhere in tsdp. The trials run the compositions
    those steps are (:func:`tsdp.verify.events.compositions`): one per step for the
    step-scoped schemes (WOR top level, pooled), one per epoch touched for the epoch-scoped
    ones (deterministic top level: T1, T3, T4; 10 steps at N = 320, N' = 64 touch 2 epochs),
    whose other steps release the same law in both worlds (:mod:`tsdp.attacks.montecarlo.trials`).
    Under shuffled iteration (``config.top == "shuffle"`` with T1, T3 or T4) every step runs, with a
    fresh permutation each epoch, and the statistic reads each epoch's maximum
    (:mod:`tsdp.attacks.montecarlo.shuffled`); the attained ε is then the hidden-position one.

    Args:
        theorem: The audited theorem; it fixes the scheme (T1/T3/T4 deterministic top level, T6/T9/T10/T11 WOR,
            T13/T14 pooled windows; WR bottom level except T4/T10 Poisson).
        config: Gives N, L, L_C, L_F, Λ, λ, σ and σ_C, σ_F (T11); ``top="shuffle"`` with T1, T3 or T4 audits
            shuffled iteration.
        delta: The δ at which ε is bounded.
        trials: The trials per world, their seed (the same seed gives the same result on any number of workers),
            their shards (:mod:`tsdp.attacks.montecarlo.shards`) and where they run (local processes, a Dask
            cluster, the torch device).
        steps: Training steps per trial.
        statistic: How the test is chosen (fixed from the construction's pair before sampling, every trial
            certifying, :mod:`tsdp.attacks.montecarlo.design`; or on a selection share) and the α grid of the profile.
        confidence: The probability with which the lower bounds hold, and whether the violation test stops the
            audit at the first certified violation (``sequential``).
        discretization: The PLD grid of the theory numbers (sound rounds up, attained down).
        loop: Plants a bug in the loop (:mod:`tsdp.attacks.montecarlo.planted`; "correct": none).
        progress: Report progress while the trials run.

    Returns:
        The audit: ε lower bound, sound and attained ε, goodness of fit, the violation verdict.

    Raises:
        ConfigError: A bad argument, naming it (the options' own values are checked when they are made).
    """
    check_int("steps", steps, 1)
    check_delta(delta)
    if config.context_length < 1:  # the accountant allows L_C = 0; the loop's model cannot read an empty context
        raise ConfigError("context_length", "must be >= 1 to audit: the loop's model reads the last L_C values of "
                          "every window", config.context_length)
    check_cluster(trials.cluster)
    if trials.workers > 1 and trials.cluster is None:  # processes start while the theory and the test are designed
        worker_pool(trials.workers, warm=SHARD_IMPORTS)
    alphas = list(statistic.alphas)
    dev = resolve_device(trials.device)
    construction = build(theorem, config, device=dev)
    check_noise_std(construction.config.sigma, construction.clip)
    n = compositions(construction.config, steps=steps)
    started = time.perf_counter()
    grid = [float(math.exp(e)) for e in PROFILE_EPSILONS]
    th = theory(construction, steps, delta, alphas + grid, discretization)
    h_user, h_grid = th.h_theory[:len(alphas)], th.h_theory[len(alphas):]
    # the sound profile on the ε grid up to ε_sound: the claim the violation test checks (with (ε_sound, δ))
    sound = SoundClaim(th.epsilon_sound, tuple((a, float(h)) for a, h, e in zip(grid, h_grid, PROFILE_EPSILONS)
                                               if e <= th.epsilon_sound))
    stats = audit_statistics(construction, steps=steps if reads_epoch_maxima(construction) else n, delta=delta,
                             trials=trials, statistic=statistic, confidence=confidence, sound=sound, loop=loop,
                             progress=progress)
    lower, attained = stats.test.value, th.epsilon_attained
    exceeded = sound_exceeded(lower, th.epsilon_sound, stats.violation_test.violation)
    note = CONSTRUCTIONS[construction.theorem].relation_note(construction.config.k)
    return AuditResult(
        theorem=construction.theorem, config=construction.config, trials=trials.trials, steps=steps,
        compositions=n, delta=float(delta), confidence=confidence.level, epsilon_lower=lower,
        epsilon_sound=th.epsilon_sound, epsilon_attained=attained,
        ratio=lower / attained if attained > 0 else float("nan"), gof_pvalue=stats.gof.pvalue,
        profile=[ProfilePoint(a, float(h), float(t)) for a, h, t in zip(alphas, stats.h_lower, h_user)],
        sound_theorem=construction.sound_theorem,
        attained_pair=(hidden_position_name(construction.attained_theorem) if reads_epoch_maxima(construction)
                       else construction.attained_theorem or f"{construction.sound_theorem} construction pair"),
        violation=exceeded and note is None, sound_exceeded=exceeded, relation_note=note,
        gof=stats.gof, test=stats.test, device=str(dev), seconds=time.perf_counter() - started,
        design=stats.design, violation_test=stats.violation_test, run=stats.run,
        attained_bracket=attained_bracket(construction.config, steps, delta,
                                          construction.attained_theorem or construction.sound_theorem,
                                          epsilon_sound=th.epsilon_sound, discretization=discretization),
    )


__all__ = ["EPOCH_MAX", "RATIO_UNDEFINED", "AuditResult", "AuditRun", "AuditStatistics", "Confidence", "ProfilePoint",
           "SoundClaim", "Statistic", "StoppedTest", "Theory", "TrialPlan", "audit", "audit_statistics", "plan_tests",
           "theory", "y_edges_of", "DEFAULT_ALPHAS", "THRESHOLDS"]
