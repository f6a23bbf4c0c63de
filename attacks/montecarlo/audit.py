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
* ``violation``: a certified (at ``confidence``) privacy bug in the theory or the loop: the
  violation test (:mod:`attacks.montecarlo.sequential`) finds H_α above the sound profile at some point of
  an ε grid, or ε above epsilon_sound at δ; `tsdp audit` then exits 1. Only where the sound
  bound covers the audited relation: otherwise ``sound_exceeded`` carries the test's verdict and
  ``relation_note`` says why it is not a violation (the pooled loop against T13, claim C6);
* ``attained_bracket``: the pair's composed ε with the optimistic and the pessimistic
  discretisation, and the composition gap sound ε - upper (:mod:`attacks.montecarlo.bracket`);
* ``profile``: lower confidence bounds on H_α next to the sound bound's H_α;
* ``gof_pvalue``: KS test of the observed one-step updates against the construction's mixture.

A violation epsilon_lower > epsilon_sound (beyond the confidence level) is a privacy bug in
the theory or in the loop. Between building the construction and reporting,
:func:`audit_statistics` runs the statistics pipeline: the law of the statistic under the
claimed pair (:mod:`attacks.montecarlo.design`), the shards (:mod:`attacks.montecarlo.shards`),
and the bounds (:mod:`attacks.montecarlo.statistics`, :mod:`attacks.montecarlo.sequential`).
``threshold="theory"`` fixes the test before sampling and spends every trial on the estimate;
``threshold="split"`` chooses it on a selection share of the shards (the first ones) and
certifies on the rest, for when the claimed pair is not trusted to be the law.

For the pooled-window loop (``audit("T13" | "T14", ...)``, claim
C6) ``epsilon_sound`` is what T13, the standard one-record guarantee, claims; the loop's
element-level leakage attains T14 and may exceed it: a relation mismatch (one element lies in k
windows; T13 covers one), never a ``violation``.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
from typing import List, Optional, Sequence, Tuple

import numpy as np

from tsdp.theorems.config import ConfigError, TrainingConfig, check_delta, check_int, check_real
from tsdp.theorems.constructions import CONSTRUCTIONS
from tsdp.theorems.hidden_position import hidden_position_name
from tsdp.verify.cpus import check_workers
from tsdp.theorems.registry import get
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.events import compositions, training_event
from tsdp.verify.pld import DEFAULT_DISCRETIZATION
from tsdp.verify.json_data import with_note

from tsdp.training.step import check_noise_std

from .bracket import attained_bracket
from .constructions import Construction, build, pair_numeric
from .counts import merge
from .design import design_test, epoch_max_law, histogram_edges, profile_thresholds, statistic_law, tail_thresholds
from .sequential import SequentialTest
from .shuffled import epoch_max_reading, reading_of, reads_epoch_maxima
from .shards import (DEFAULT_SHARD_SIZE, check_cluster, check_plan, plan_shards, run_shard, run_shards,
                     threads_per_worker, worker_pool)
from .statistics import (binned_goodness_of_fit, choose_profile_tests, fixed_test_bound, profile_lower_bounds,
                         split_test_bound)
from .trials import resolve_device

PROFILE_EPSILONS = tuple(0.5 * i for i in range(41))  # ε grid (≤ ε_sound used) of the sound profile the violation test checks
DEFAULT_ALPHAS = tuple(float(math.exp(e)) for e in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0))
THRESHOLDS = ("theory", "split")
EPOCH_MAX = "epoch-max"
"""First entry of a :func:`plan_tests` key whose statistic is read through epoch maxima (shuffled iteration)."""

Y_BINS = 4096


def y_edges_of(pair_num) -> np.ndarray:
    """Histogram edges of the one-step update: the pair's means ± 8σ in ``Y_BINS`` bins (plus under/overflow)."""
    a, _, b, _, sigma = pair_num
    means = np.concatenate([a, b])
    return np.linspace(means.min() - 8 * sigma, means.max() + 8 * sigma, Y_BINS + 1)


def audit_statistics(construction: Construction, *, trials: int, steps: int, delta: float, confidence: float,
                     alphas: Sequence[float], seed: int, device: str, workers: int = 1, cluster: Optional[str] = None,
                     shard_size: int = DEFAULT_SHARD_SIZE, threshold: str = "theory", select_fraction: float = 0.5,
                     epsilon_sound: Optional[float] = None, sound_profile: Sequence[Tuple[float, float]] = (),
                     sequential: bool = False,
                     loop: str = "correct", sampler=None, progress: bool = False, shard_fn=run_shard) -> dict:
    """Run the audit's trials in shards and certify: {"test", "h_lower", "gof", "violation_test", "run", "design"}.

    ``test``: the ε lower bound at δ (a :class:`auditor_stats.TestBound`; probability ≥ ``confidence``);
    ``h_lower``: lower bounds on H_α per α (pointwise confidence); ``violation_test`` (when
    ``epsilon_sound`` is given): the violation test of ε_sound at δ and of the sound profile's
    points ``sound_profile`` [(α, H_α)] on all trials, or with ``sequential`` the anytime-valid
    one at geometric checkpoints, which may stop the run early (``test`` is then its certified
    value at the stopping checkpoint). ``shard_fn``: the unit of work (fault-injection
    tests wrap it, :class:`attacks.montecarlo.shards.FailOnce`). Lower-bound direction.
    """
    if threshold not in THRESHOLDS:
        raise ValueError(f"threshold must be one of {', '.join(THRESHOLDS)}, got {threshold!r}")
    reading = reading_of(construction, steps) if reads_epoch_maxima(construction) else None
    num = pair_numeric(construction.pair)
    if threshold == "split":  # shards small enough for a selection share in steps of 5%
        shard_size = min(shard_size, max(1, math.ceil(trials / 20)))
    n_shards = math.ceil(trials / shard_size)
    key = tuple(tuple(np.atleast_1d(x).tolist()) for x in num)
    if reading is not None:
        key = (EPOCH_MAX, construction.theorem, construction.config, int(steps), float(construction.offset))
    seq_logs = None if epsilon_sound is None else tuple(math.log(x) for x, _ in sound_profile)
    if seq_logs is not None and threshold == "theory":
        seq_logs = seq_logs + (None,)  # the violation test's family includes the estimate's test
    design, profile_tests, seq_tests, edges = plan_tests(key, steps, trials, float(delta), float(confidence),
                                                         tuple(alphas), threshold == "theory", seq_logs)
    y_edges = y_edges_of(num) if reading is None else reading.z_edges()
    specs = plan_shards(construction.theorem, construction.config, trials, steps, seed, edges, y_edges,
                        shard_size=shard_size, device=device, loop=loop, sampler=sampler,
                        threads=threads_per_worker(workers, cluster))
    seq = None
    if epsilon_sound is not None:
        seq = SequentialTest(n_shards, edges, seq_tests, float(epsilon_sound), delta, confidence,
                             [(float(x), float(h)) for x, h in sound_profile] + [(math.exp(epsilon_sound), delta)],
                             sequential=sequential)
    results, run = run_shards(specs, workers=workers, cluster=cluster, progress=progress,
                              stop=seq if sequential else None, shard_fn=shard_fn)
    if seq is not None and not sequential:
        seq(results)  # one checkpoint: all shards, level 1 - confidence
    stopped = seq is not None and sequential and seq.violation
    used = seq.history[-1]["shards"] if stopped else n_shards
    p, q = merge(results, "p", used), merge(results, "q", used)
    if stopped:
        test = {"value": seq.history[-1]["epsilon_lower"], "threshold": None, "side": "sequential",
                "union_value": None, "true_positives": None, "false_positives": None, "n_positive": p.trials, "n_negative": q.trials}
        h_lower = np.maximum(0.0, 1.0 - np.asarray(alphas))
    elif threshold == "theory":
        test = fixed_test_bound(p.counts, q.counts, edges, design.threshold, design.side, delta, confidence,
                                design.fp_share).__dict__
        h_lower = profile_lower_bounds(p.counts, q.counts, edges, profile_tests, alphas, confidence)
    else:
        n_sel = min(n_shards - 1, max(1, round(select_fraction * n_shards)))
        sel = (merge(results, "p", n_sel).counts, merge(results, "q", n_sel).counts)
        out = (p.counts - sel[0], q.counts - sel[1])
        test = split_test_bound(sel, out, edges, delta, confidence).__dict__
        h_lower = profile_lower_bounds(*out, edges, choose_profile_tests(*sel, edges, alphas, confidence), alphas,
                                       confidence)
    gof = (binned_goodness_of_fit(p.y_counts, q.y_counts, y_edges, num) if reading is None
           else reading.goodness_of_fit(p.y_counts, q.y_counts, y_edges))
    run.update(shard_size=shard_size, trials_run=p.trials, edges=len(edges))
    return {"test": dict(test), "h_lower": h_lower, "gof": gof, "run": run,
            "violation_test": seq.summary() if seq is not None else None,
            "design": None if design is None else {**design.__dict__, "source": "theory"}}


@functools.lru_cache(maxsize=32)
def plan_tests(pair_key: tuple, steps: int, trials: int, delta: float, confidence: float, alphas: tuple,
               theory: bool, sequential_logs: Optional[tuple]):
    """(design, H_α tests, sequential tests, histogram edges) of an audit, all fixed before sampling.

    ``pair_key``: the pair's numeric arrays as tuples (cached: repeated audits of one construction
    design once), or ``(EPOCH_MAX, theorem, config, steps, offset)`` for a shuffled construction read
    through its epoch maxima (:mod:`attacks.montecarlo.shuffled`). ``theory``: design the ε and H_α tests from
    the statistic's law (else None: split mode).
    ``sequential_logs``: log α of the sound profile's points the violation test checks (None: no test; an
    entry None adds the designed test to the violation test's family).
    """
    if pair_key[0] == EPOCH_MAX:
        law = epoch_max_law(epoch_max_reading(*pair_key[1:]).laws)
    else:
        num = tuple(np.asarray(x, dtype=float) for x in pair_key[:4]) + (float(pair_key[4][0]),)
        law = statistic_law(num, steps)
    design, profile_tests, extra = None, None, []
    if theory:
        design = design_test(law, trials, delta, confidence)
        profile_tests = profile_thresholds(law, alphas, trials, confidence)
        extra = [design.threshold] + [t for t, _ in profile_tests]
    seq_tests = []
    if sequential_logs is not None:  # tail thresholds, the pair's likelihood-ratio tests at each α, the estimate's
        logs = [x for x in sequential_logs if x is not None]
        seq_tests = tail_thresholds(law) + [(float(t), s) for t in _snap(law, logs) for s in ("upper", "lower")]
        if design is not None and None in sequential_logs:
            seq_tests.append((design.threshold, design.side))
    return design, profile_tests, seq_tests, histogram_edges(law, extra + [t for t, _ in seq_tests])


def _snap(law, values) -> np.ndarray:
    """The law's midpoint thresholds nearest to ``values`` (unique)."""
    t = law.thresholds
    return np.unique(t[np.clip(np.searchsorted(t, values), 0, len(t) - 1)])




@dataclass
class AuditResult:
    """One audit. ``to_dict()`` gives the JSON keys of `tsdp audit --json` (and the report's input)."""

    theorem: str
    config: dict
    trials: int
    steps: int
    compositions: int
    delta: float
    confidence: float
    epsilon_lower: float
    epsilon_sound: float
    epsilon_attained: float
    ratio: float
    gof_pvalue: float
    profile: List[dict]
    sound_theorem: str
    attained_pair: str
    violation: bool
    gof: dict = field(default_factory=dict)
    test: dict = field(default_factory=dict)
    device: str = "cpu"
    seconds: float = 0.0
    design: Optional[dict] = None
    violation_test: Optional[dict] = None
    run: dict = field(default_factory=dict)
    attained_bracket: dict = field(default_factory=dict)
    sound_exceeded: bool = False
    relation_note: Optional[str] = None

    def to_dict(self) -> dict:
        return with_note(asdict(self), "ratio", RATIO_UNDEFINED)


RATIO_UNDEFINED = "null: undefined, the attained ε is 0"
"""What a NaN ``ratio`` (lower / attained with attained ε = 0) means, beside its JSON null and in human output."""


def _check(trials, steps, delta, confidence, alphas, shard_size, cluster, workers) -> List[float]:
    """The audit's arguments checked before any work (the plan's size, the cluster's address); the α grid."""
    check_int("trials", trials, 20)
    check_plan(trials, shard_size)
    check_int("steps", steps, 1)
    check_delta(delta)
    check_real("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    check_cluster(cluster)
    check_workers("workers", workers)
    alphas = list(DEFAULT_ALPHAS if alphas is None else alphas)
    for a in alphas:
        if not (isinstance(a, (int, float)) and math.isfinite(a) and a >= 1):
            raise ConfigError("alphas", "every α must be finite and >= 1", a)
    return [float(a) for a in alphas]


def theory(construction: Construction, steps: int, delta: float, alphas: Sequence[float],
           discretization: float = DEFAULT_DISCRETIZATION) -> dict:
    """Sound ε (upper bound), attained ε (lower bound) and the sound H_α after ``steps`` training steps.

    Both from the accountant over :func:`tsdp.verify.events.training_event` of the
    construction's scheme: "sound" for the sound theorem, "attained" for the pair the
    construction realises (the audited theorem's, or the sound bound's own construction pair
    for T11). ``discretization`` is the PLD grid (sound rounds up, attained down).
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
    return {"epsilon_sound": sound.get_epsilon(delta), "epsilon_attained": attained.get_epsilon(delta), "h_theory": h}


def audit(theorem: str, config: TrainingConfig, *, trials: int, steps: int = 1, delta: float, seed: int = 0,
          device: str = "auto", alphas=None, progress: bool = False, confidence: float = 0.95,
          sampler=None, discretization: float = DEFAULT_DISCRETIZATION, select_fraction: float = 0.5,
          threshold: str = "theory", workers: int = 1, cluster: Optional[str] = None,
          shard_size: int = DEFAULT_SHARD_SIZE, sequential: bool = False, loop: str = "correct") -> AuditResult:
    """Audit ``theorem``'s worst case on ``config``'s sizes: ``trials`` trials of ``steps`` steps per world.

    ``result.epsilon_lower`` is a **lower** bound on the true ε at δ with probability ≥ ``confidence``.
    ``result.violation`` is the verdict of the violation test (:mod:`tsdp.attacks.montecarlo.sequential`:
    the sound profile on an ε grid and (ε_sound, δ), certified exceeded at ``confidence``).

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
        trials: Trials per world (at least 20).
        steps: Training steps per trial.
        delta: The δ at which ε is bounded.
        seed: The seed; the same seed gives the same result on any number of workers.
        device: The torch device ("auto": cuda when available, else cpu).
        alphas (Sequence[float] | None): The α grid of the profile (H_α; default e^0, e^0.5, ..., e^3; each finite
            and ≥ 1).
        progress: Report progress while the trials run.
        confidence: The probability with which ``epsilon_lower`` is a lower bound, in (0, 1).
        sampler (BiLevelSampler | PooledSampler | None): Replaces the scheme's sampler (tests); it draws from a CPU
            generator on every device (a user's ``torch.randint(..., generator=g)`` works as written, the same draws
            on CPU and CUDA) and its windows are moved to the device.
        discretization: The PLD grid of the theory numbers (sound rounds up, attained down).
        select_fraction: With ``threshold="split"``: the fraction of the trials that choose the test, in (0, 1).
        threshold: ``"theory"`` fixes the test before sampling from the construction's pair (all trials
            certify, :mod:`tsdp.attacks.montecarlo.design`); ``"split"``: ``select_fraction`` of the trials
            choose the test, the rest bound its error rates (held out).
        workers: Local processes the shards (:mod:`tsdp.attacks.montecarlo.shards`) run on.
        cluster: The address of a Dask cluster to run the shards on instead.
        shard_size: Trials of one world per shard.
        sequential: Run the violation test at geometric checkpoints and stop the audit at the first violation.
        loop: Plants a bug in the loop (:mod:`tsdp.attacks.montecarlo.planted`; "correct": none).

    Returns:
        The audit: ε lower bound, sound and attained ε, goodness of fit, the violation verdict.

    Raises:
        ConfigError: A bad argument, naming it.
    """
    alphas = _check(trials, steps, delta, confidence, alphas, shard_size, cluster, workers)
    if workers > 1 and cluster is None:
        worker_pool(workers, warm=True)  # processes start while the theory and the test design are computed
    dev = resolve_device(device)
    construction = build(theorem, config, device=dev)
    check_noise_std(construction.config.sigma, construction.clip)
    n = compositions(construction.config, steps=steps)
    started = time.perf_counter()
    if not (0 < select_fraction < 1):
        raise ConfigError("select_fraction", "must be in (0, 1)", select_fraction)
    grid = [float(math.exp(e)) for e in PROFILE_EPSILONS]
    th = theory(construction, steps, delta, list(alphas) + grid, discretization)
    h_user, h_grid = th["h_theory"][:len(alphas)], th["h_theory"][len(alphas):]
    # the sound profile on the ε grid up to ε_sound: the claim the violation test checks (with (ε_sound, δ))
    sound_profile = [(a, float(h)) for a, h, e in zip(grid, h_grid, PROFILE_EPSILONS) if e <= th["epsilon_sound"]]
    stats = audit_statistics(construction, trials=trials, steps=steps if reads_epoch_maxima(construction) else n,
                             delta=delta, confidence=confidence, alphas=alphas,
                             seed=seed, device=device, workers=workers, cluster=cluster, shard_size=shard_size,
                             threshold=threshold, select_fraction=select_fraction, loop=loop, sampler=sampler,
                             epsilon_sound=th["epsilon_sound"], sound_profile=sound_profile, sequential=sequential,
                             progress=progress)
    test, h_lower, gof = SimpleNamespace(**stats["test"]), stats["h_lower"], stats["gof"]
    attained = th["epsilon_attained"]
    exceeded = bool(stats["violation_test"]["violation"])
    note = CONSTRUCTIONS[construction.theorem].relation_note(construction.config.k)
    return AuditResult(
        theorem=construction.theorem, config=construction.config.as_dict(), trials=trials, steps=steps,
        compositions=n, delta=float(delta), confidence=confidence, epsilon_lower=test.value, epsilon_sound=th["epsilon_sound"],
        epsilon_attained=attained, ratio=test.value / attained if attained > 0 else float("nan"),
        gof_pvalue=gof["pvalue"],
        profile=[{"alpha": a, "h_lower": float(h), "h_theory": float(t)}
                 for a, h, t in zip(alphas, h_lower, h_user)],
        sound_theorem=construction.sound_theorem,
        attained_pair=(hidden_position_name(construction.attained_theorem) if reads_epoch_maxima(construction)
                       else construction.attained_theorem or f"{construction.sound_theorem} construction pair"),
        violation=exceeded and note is None, sound_exceeded=exceeded, relation_note=note,
        gof=gof, test=stats["test"], device=str(dev), seconds=time.perf_counter() - started,
        design=stats["design"], violation_test=stats["violation_test"], run=stats["run"],
        attained_bracket=attained_bracket(construction.config, steps, delta,
                                          construction.attained_theorem or construction.sound_theorem,
                                          epsilon_sound=th["epsilon_sound"], discretization=discretization),
    )


__all__ = ["AuditResult", "audit", "audit_statistics", "plan_tests", "theory", "y_edges_of", "DEFAULT_ALPHAS", "THRESHOLDS"]
