"""`tsdp bench planted`: the planted bugs of the hand-written DP-SGD loop (:mod:`.handwritten_dpsgd`), each audited
over many seeds: how often the white-box audit flags each, and which of its tests does.

Each row audits one loop of :data:`.handwritten_dpsgd.BUGS` against one claim, once per seed
(seed s: the loop's model, batches and noise, and the audit's canaries, all from s), with
:func:`.handwritten_dpsgd.audit`: m gradient canaries (default 1000, the documented budget),
the data's per-window gradients taken off with the loop's loss, δ = 1e-5, 95%. The claim is
the intended training's (tsdp's sound accountant of σ = 2 over the 30 steps), except in
two rows: σ / 10 against a claim of :data:`ABOVE_CEILING` (above the ε that any audit of at
most 1000 canaries can certify, every guess right: the page's ceiling column), which no ε bound can flag,
and ``claim-4x-small``, the correct loop against a quarter of its claim. Each row's claim, ceiling and rates
are on the page, never in this prose.

The audit flags a run when any of its tests rejects (:data:`TESTS`): the ε lower bound above the
claim (``epsilon_bound``), the claimed trade-off curve rejected (``claimed_curve``), the noise,
clipping or sampling test (:mod:`attacks.canary.mechanism`). A row reports the runs flagged (its
detection rate; on the correct loop, its false flags, every test together: designed at most
5% for the two ε tests together plus 0.1% for each mechanism test), the runs each test flagged,
and ``named``: the runs flagged by the test that names the planted bug (``expected``). Beside
them the largest certified ε, the canaries' ceiling and the largest ``epsilon_ideal`` (the
same audit on the claimed mechanism itself: its power at the claim).

The seeds run as shards of the engine (:func:`executor.run.run_shards`, local
processes), each audit at one torch thread; the figures do not depend on the number of
workers. The page (``docs/benchmarks/planted.json``) is measured with ``OMP_NUM_THREADS=1``,
which its environment record shows.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple, Union

import torch

from tsdp.verify.rounded import rounded_down, rounded_up
from tsdp.attacks.canary.mechanism import CLIP_ALPHA, NOISE_ALPHA, SAMPLING_ALPHA
from tsdp.executor.run import run_shards
from tsdp.verify.json_data import Record

from tsdp.bench.rounds import Conditions, conditions_since, environment

from . import handwritten_dpsgd as loops

TESTS = ("epsilon_bound", "claimed_curve", "noise", "clipping", "sampling")
"""The audit's tests, by name: the ε lower bound against the claim, the claimed trade-off curve, the mechanism tests."""

TORCH_THREADS = 1
"""The torch threads of each audit (:func:`audit_one`): the workers share the cores, one thread each."""

ABOVE_CEILING = 20.0
"""The claim above the canaries' ceiling (the ε 1000 canaries certify with every guess right, δ = 1e-5, 95%; the
page shows it, and the bench's test checks the claim stays above it): no ε bound can flag it."""


@dataclass(frozen=True)
class Row:
    """A row of the bench: ``name``, the loop's ``bug``, the claimed ε (None: the intended training's,
    :func:`.handwritten_dpsgd.claimed_epsilon` of ``bug``), the test that names the bug (None on the correct loop)
    and the seeds as a multiple of the bench's ``seeds`` (the correct loop's false flags need more).

    Attributes:
        name: The row's name.
        bug: The loop's planted bug.
        expected: The test that names the bug (None on the correct loop).
        claim: The claimed ε (None: the intended training's).
        seeds_factor: The seeds as a multiple of the bench's.
    """

    name: str
    bug: str
    expected: Optional[str]
    claim: Optional[float] = None
    seeds_factor: int = 1


ROWS = (Row("correct", "correct", None, seeds_factor=5),
        Row("noise-off", "noise-off", "noise"),
        Row("noise-10x-small", "noise-10x-small", "noise"),
        Row("noise-10x-small, claim above the ceiling", "noise-10x-small", "noise", ABOVE_CEILING),
        Row("noise-once-per-epoch", "noise-once-per-epoch", "noise"),
        Row("clipping-off", "clipping-off", "clipping"),
        Row("claim-4x-small", "claim-4x-small", "epsilon_bound"))
"""The bench's rows (module docstring)."""

DESIGNED_FALSE_FLAGS = 1 - 0.95 + NOISE_ALPHA + CLIP_ALPHA + SAMPLING_ALPHA
"""The designed bound on the correct loop's flag rate, every test together (at the audit's 95%)."""


@dataclass(frozen=True)
class AuditSpec:
    """One audit of the bench (a shard of the engine): row ``index``, ``seed``, the loop's ``bug``, ``canaries``,
    the ``claim``.

    Attributes:
        index: The row.
        seed: The seed of the loop and the canaries.
        bug: The loop's planted bug.
        canaries: The gradient canaries.
        claim: The claimed ε.
        trials: One audit (the engine's progress unit).
    """

    index: int
    seed: int
    bug: str
    canaries: int
    claim: float
    trials: int = 1

    @property
    def key(self) -> tuple:
        return self.index, self.seed


@dataclass(frozen=True)
class AuditOutcome:
    """What one audit of the bench gave: the tests that flagged it (``failed``, names of :data:`TESTS`), its certified
    ε, the canaries' ceiling, its ``epsilon_ideal`` and its wall seconds.

    Attributes:
        key: The audit's key (row index, seed).
        failed: The tests that flagged it (names of :data:`TESTS`).
        epsilon_lower: Its certified ε (a **lower** bound; NaN: the planted loop diverged, none certified).
        ceiling: The canaries' ceiling (every guess right; NaN when diverged).
        epsilon_ideal: The same audit's certified ε on the claimed mechanism (NaN when diverged).
        seconds: Its wall seconds.
        trials: One audit (the engine's progress unit).
    """

    key: tuple
    failed: Tuple[str, ...]
    epsilon_lower: float
    ceiling: float
    epsilon_ideal: float
    seconds: float
    trials: int = 1


def audit_one(spec: AuditSpec) -> AuditOutcome:
    """Run the audit of ``spec`` at one torch thread (:func:`.handwritten_dpsgd.audit`, the loop's loss given).

    Args:
        spec: The audit.

    Returns:
        Its :class:`AuditOutcome`.
    """
    from tsdp.attacks.canary.guarded_calls import DivergedError

    torch.set_num_threads(TORCH_THREADS)
    started = time.perf_counter()
    try:
        r = loops.audit(spec.bug, spec.canaries, spec.seed, epsilon=spec.claim)
    except DivergedError as err:  # a planted loop that diverged: flagged by the tests that failed before it, no ε
        failed = tuple(name for name in TESTS if name in err.failed_tests)
        nan = float("nan")
        return AuditOutcome(spec.key, failed, nan, nan, nan, time.perf_counter() - started)
    hits = {"epsilon_bound": r.above_claim, "claimed_curve": bool(r.curve_rejected),
            **{t.name: t.failed for t in r.gradient.mechanism.tests}}
    failed = tuple(name for name in TESTS if hits.get(name, False))
    ceiling = max(max(s.ceiling["dp"], s.ceiling["steinke"]) for s in r.scores.values())
    return AuditOutcome(spec.key, failed, float(r.epsilon_lower), float(ceiling), float(r.gradient.epsilon_ideal),
                        time.perf_counter() - started)


@dataclass(frozen=True)
class RowResult(Record):
    """One row measured: its ``name``, ``bug``, ``claim``, ``expected`` test, ``seeds`` (first ``first_seed``),
    ``canaries`` per audit, ``flagged`` (runs any test flagged), ``named`` (runs the expected test flagged),
    ``by_test`` (runs each of :data:`TESTS` flagged), the largest certified ε, ceiling and ``epsilon_ideal``, and
    the audits' summed ``seconds``.

    Attributes:
        name: The row's name.
        bug: The loop's planted bug.
        claim: The claimed ε.
        expected: The test that names the bug (None on the correct loop).
        seeds: The audits run.
        first_seed: The first seed.
        canaries: The gradient canaries per audit.
        flagged: The audits any test flagged.
        rate: The detection rate (on the correct loop: the false-flag rate), every test together: ``flagged / seeds``,
            derived at construction.
        named: The audits the expected test flagged.
        by_test: The audits each test flagged.
        epsilon_lower_max: The largest certified ε.
        ceiling: The largest ceiling.
        epsilon_ideal_max: The largest ``epsilon_ideal``.
        seconds: The audits' summed seconds.
    """

    name: str
    bug: str
    claim: float
    expected: Optional[str]
    seeds: int
    first_seed: int
    canaries: int
    flagged: int
    rate: float = field(init=False)
    named: int
    by_test: Dict[str, int]
    epsilon_lower_max: float
    ceiling: float
    epsilon_ideal_max: float
    seconds: float

    def __post_init__(self):
        object.__setattr__(self, "rate", self.flagged / self.seeds)


@dataclass(frozen=True)
class PlantedBench(Record):
    """The bench (module docstring): its ``rows``, the ``delta`` and ``confidence`` of every audit, the designed
    false-flag bound of the correct loop, ``workers`` (processes over the seeds; one torch thread each), the wall
    ``seconds`` and the ``environment`` it ran in (:func:`tsdp.bench.rounds.environment`, before and after).

    Attributes:
        rows: The rows measured.
        delta: The δ of every audit.
        confidence: Their confidence.
        designed_false_flags: The designed bound on the correct loop's flag rate.
        workers: The processes over the seeds.
        torch_threads: The torch threads of each audit (:data:`TORCH_THREADS`).
        seconds: The wall seconds.
        environment: The environment before and after.
    """

    rows: Tuple[RowResult, ...]
    delta: float
    confidence: float
    designed_false_flags: float
    workers: int
    torch_threads: int = field(default=TORCH_THREADS, init=False)
    seconds: float
    environment: Conditions


def _largest(values) -> float:
    """The largest of the audits' numbers that were computed (NaN: a diverged run certified none); NaN if none was."""
    computed = [v for v in values if not math.isnan(v)]
    return max(computed) if computed else float("nan")


def bench_planted(*, seeds: int = 20, canaries: int = 1000, seed: int = 0, workers: int = 1, rows=ROWS,
                  progress: Optional[Callable[[str], None]] = None) -> PlantedBench:
    """Audit every row of ``rows`` over ``seeds`` seeds (``seeds`` times its factor: 100 for the correct loop at the
    default), from ``seed`` on, with ``canaries`` gradient canaries each, on ``workers`` local processes (module
    docstring). Each audit's ε is a **lower** bound (95%); the rates are measured frequencies.

    Args:
        seeds: Seeds per row (times its factor).
        canaries: Gradient canaries per audit.
        seed: The first seed.
        workers: Local processes over the seeds.
        rows: The rows.
        progress: Called with a line per row, if given.

    Returns:
        The :class:`PlantedBench`.
    """

    before = environment()
    specs = []
    claims = [loops.claimed_epsilon(row.bug) if row.claim is None else row.claim for row in rows]
    for i, row in enumerate(rows):
        specs += [AuditSpec(i, s, row.bug, canaries, claims[i]) for s in range(seed, seed + seeds * row.seeds_factor)]
    if progress is not None:
        progress(f"{len(specs)} audits of {canaries} canaries on {workers} process(es), one torch thread each")
    started = time.perf_counter()
    results, _ = run_shards(specs, workers=workers, shard_fn=audit_one, desc="planted-bug audits", progress=True)
    out = []
    for i, row in enumerate(rows):
        got = [results[s.key] for s in specs if s.index == i]
        flagged = [o for o in got if o.failed]
        by_test = {t: sum(t in o.failed for o in got) for t in TESTS}
        out.append(RowResult(row.name, row.bug, claims[i], row.expected, len(got), seed, canaries, len(flagged),
                             by_test[row.expected] if row.expected else 0, by_test,
                             _largest(o.epsilon_lower for o in got), _largest(o.ceiling for o in got),
                             _largest(o.epsilon_ideal for o in got), sum(o.seconds for o in got)))
        if progress is not None:
            progress(f"{row.name}: flagged in {len(flagged)} of {len(got)}")
    return PlantedBench(tuple(out), loops.DELTA, 0.95, DESIGNED_FALSE_FLAGS, workers, time.perf_counter() - started,
                        conditions_since(before))


def format_bench(result: Union[PlantedBench, dict]) -> str:
    """The bench as a table (``--json`` prints :meth:`PlantedBench.as_dict`): per row the claim, the ceiling, the seeds,
    the runs flagged and their rate, the expected test and the runs it named, the runs each test flagged, the largest
    certified ε and ideal; then the correct loop's false flags against the design, and the rows flagged in fewer
    than 90% of their seeds with the audit's power at their claim.

    Args:
        result: The bench, or its ``as_dict()``.

    Returns:
        The table.
    """
    r = result.as_dict() if isinstance(result, PlantedBench) else result
    rows = r["rows"]
    first = rows[0]
    lines = [f"planted bugs in the hand-written DP-SGD loop of handwritten_dpsgd: {first['canaries']} "
             f"gradient canaries per audit, the loop's loss given, δ = {r['delta']:g}, {r['confidence']:.0%}; seeds "
             f"from {first['first_seed']}; {r['workers']} process(es) at {r.get('torch_threads', 1)} torch thread",
             f"{'row':<42}{'claim ε':>8}{'ceiling':>8}{'seeds':>6}{'flagged':>8}{'rate':>6}  {'expected':<14}"
             f"{'named':>6}  {'ε bound/curve/noise/clip/sampling':<35}{'max ε ≥':>8}{'ideal':>7}"]
    for row in rows:
        tests = "/".join(str(row["by_test"][t]) for t in TESTS)
        lines.append(f"{row['name']:<42}{rounded_up(row['claim'], 3, fixed=True):>8}{rounded_up(row['ceiling'], 3, fixed=True):>8}{row['seeds']:>6}"
                     f"{row['flagged']:>8}{row['rate']:>6.2f}  {row['expected'] or '-':<14}"
                     f"{row['named'] if row['expected'] else '-':>6}  {tests:<35}"
                     f"{rounded_down(row['epsilon_lower_max'], 3, fixed=True):>8}"
                     f"{rounded_down(row['epsilon_ideal_max'], 3, fixed=True):>7}")
    for row in rows:
        if row["expected"] is None:
            lines.append(f"{row['name']}: flagged in {row['flagged']} of {row['seeds']} (rate {row['rate']:.3f}), "
                         f"every test together; designed at most {r['designed_false_flags']:.3f}")
        elif row["named"] < 0.9 * row["seeds"]:
            lines.append(f"{row['name']}: named in {row['named']} of {row['seeds']} by {row['expected']}; the same "
                         f"audit on the claimed mechanism certifies at most "
                         f"{rounded_down(row['epsilon_ideal_max'], 3, fixed=True)} against the claim "
                         f"{rounded_up(row['claim'], 3, fixed=True)} (its power at the claim)")
    lines.append(f"{r['seconds']:.0f} s in all")
    return "\n".join(lines)


__all__ = ["ABOVE_CEILING", "TORCH_THREADS", "AuditOutcome", "AuditSpec", "DESIGNED_FALSE_FLAGS", "PlantedBench", "ROWS", "Row",
           "RowResult", "TESTS", "audit_one", "bench_planted", "format_bench"]
