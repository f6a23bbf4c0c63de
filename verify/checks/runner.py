"""The plan and runner of ``tsdp verify``: which checks run on which configurations.

``plan(quick, seed, bounds)`` lists the checks as :class:`Task` objects (a name and a
zero-argument callable returning a :class:`CheckResult`); ``run(tasks)`` executes them,
turning an exception into a ``fail`` result, optionally on several processes (fork), with
a tqdm progress bar on stderr. ``bounds`` maps T-ids to bound objects (default: the
registry), so a test can run the whole plan against a deliberately broken bound.

Quick run: every property and every T-id once, on the paper's default
configuration. Full run: the fixed grid (paper default + the C1/C2 grid r, Λ/N ∈ {0.5, 0.1})
and ``RANDOM_CASES`` seeded random configurations for every configuration-dependent check,
random mixtures for property 5.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

from tsdp.theorems.bounds.base import Bound
from tsdp.verify.cpus import check_workers

from . import axioms, composition, errata, lemmas, ordering, paths, symbolic
from .common import bound as registry_bound, bounds as registry_bounds, evaluated_ids, ids_with_construction
from .grid import PAPER, Case, fixed_grid, for_bound, inference_cases, random_cases
from .result import FINDING, CheckResult, VerifyReport, error_result, summarise

RANDOM_CASES = 8
"""Random configurations of the full run (per seed)."""


@dataclass(frozen=True)
class Task:
    """One check to run: its name (as the result will carry it), property, ids, and the call.

    Attributes:
        name: The check's name, as its result will carry it.
        property: The property number.
        theorems: The T-ids checked.
        fn: Runs the check.
    """

    name: str
    property: int
    theorems: tuple
    fn: Callable[[], CheckResult]


def _lam(b: Bound, lam: Optional[int]) -> Optional[int]:
    return None if b.scheme.single_instance else lam


class _Planner:
    def __init__(self, bounds: Dict[str, Bound]):
        self.B = bounds
        self.tasks: List[Task] = []

    def add(self, name: str, prop: int, ids: Sequence[str], fn: Callable[[], CheckResult]) -> None:
        self.tasks.append(Task(name, prop, tuple(ids), fn))

    # ---- property 1 and 3
    def axioms(self, case: Case, ids: Sequence[str], lam: int = 2) -> None:
        for i in ids:
            b = self.B[i]
            cfg = for_bound(b, case.config, instances=_lam(b, lam))
            self.add(f"P1.axioms[{i}]@{case.label}", 1, [i], lambda b=b, cfg=cfg, l=case.label: axioms.profile_axioms(b, cfg, l))

    def inference(self, cases: Sequence[Case]) -> None:
        """Properties 1 and 3 for T15 (Appendix H) on its own configurations (not the training grid)."""
        b = registry_bound("T15")
        for case in cases:
            self.add(f"P1.axioms[T15]@{case.label}", 1, ["T15"],
                     lambda c=case: axioms.profile_axioms(b, c.config, c.label))
            self.add(f"P3.profile_symmetry[T15]@{case.label}", 3, ["T15"],
                     lambda c=case: axioms.profile_self_symmetry(b, c.config, c.label))

    def pair_symmetry(self, case: Case, ids: Sequence[str], lam: int = 2) -> None:
        for i in ids:
            b = self.B[i]
            if not b.has_pair:
                continue
            cfg = for_bound(b, case.config, instances=_lam(b, lam))
            self.add(f"P3.pair_symmetry[{i}]@{case.label}", 3, [i],
                     lambda b=b, cfg=cfg, l=case.label: axioms.pair_symmetry(b, cfg, l))

    def profile_symmetry(self, case: Case, ids: Sequence[str], lam: int = 2) -> None:
        for i in ids:
            b = self.B[i]
            cfg = for_bound(b, case.config, instances=_lam(b, lam))
            self.add(f"P3.profile_symmetry[{i}]@{case.label}", 3, [i],
                     lambda b=b, cfg=cfg, l=case.label: axioms.profile_self_symmetry(b, cfg, l))

    # ---- property 2
    def order(self, lower: str, upper: str, cfg_lower, cfg_upper=None, label: str = "", equal=False, **kw) -> None:
        lo, up = self.B[lower], self.B[upper]
        rel = "=" if equal else "≤"
        self.add(f"P2.order[{lower}{rel}{upper}]@{label}", 2, [lower, upper],
                 lambda: ordering.order(lo, up, cfg_lower, cfg_upper, label, equal=equal, **kw))

    def orders(self, case: Case, full: bool) -> None:
        B, c, L = self.B, case.config, case.label
        det = c.with_(top="deterministic", sigma_context=0.0, sigma_forecast=0.0)
        plain = c.with_(sigma_context=0.0, sigma_forecast=0.0)
        for lam in ((1, 2, 3, 4) if full else (2,)):
            self.order("T3", "T2", for_bound(B["T2"], det, instances=lam), label=f"{L},lam={lam}")
        self.order("T3", "T1", for_bound(B["T3"], det, instances=1), for_bound(B["T1"], det), f"{L},lam=1", equal=True,
                   why="tightness at λ = 1")
        for lam in ((1, 2, 4) if full else (2,)):
            self.order("T9", "T7", for_bound(B["T9"], plain, instances=lam), label=f"{L},lam={lam}")
            cp = for_bound(B["T10"], plain, instances=lam)
            self.order("T10", "T8", cp, label=f"{L},lam={lam}", why="construction form")
            self.order("T10-printed", "T8", cp, label=f"{L},lam={lam}", violation_status=FINDING,
                       why="printed form, erratum 8")
        self.order("T9", "T6", for_bound(B["T9"], plain, instances=1), for_bound(B["T6"], plain), f"{L},lam=1",
                   equal=True, why="tightness at λ = 1")
        self.order("T11", "T6", for_bound(B["T11"], c), label=L)
        self.order("T13", "T14", for_bound(B["T14"], c), label=L)
        if full:
            self.order("T1", "T2", for_bound(B["T1"], det), label=f"{L},lam=1", why="tight ≤ upper")
            self.order("T6", "T7", for_bound(B["T6"], plain), label=f"{L},lam=1", why="tight ≤ upper")
            self.order("T12", "T6", for_bound(B["T12"], c), label=L)
            c12 = for_bound(B["T12"], c)
            self.order("T12", "T11", c12, label=L, equal=True, why="T12 = T11 at σ_C = σ_F")
            self.order("T10-printed", "T10", for_bound(B["T10"], plain, instances=2), label=f"{L},lam=2",
                       why="printed form below the construction")

    # ---- property 4
    def t5(self, case: Case, instances=(2, 3, 4)) -> None:
        B = self.B
        self.add(f"P4.T5[lambda=1 minimises]@{case.label}", 4, ["T5", "T1", "T2", "T3", "T4"],
                 lambda: ordering.t5_monotonicity(B["T1"], B["T2"], B["T3"], B["T4"], case.config, case.label, instances))

    def sweeps(self, case: Case, ids: Sequence[str], only: Optional[Sequence[str]] = None, lam: int = 2) -> None:
        for i in ids:
            b = self.B[i]
            cfg = for_bound(b, case.config, instances=_lam(b, lam))
            for par, inc, vals, cfgs in ordering.parameter_sweeps(b, cfg):
                if only is not None and par not in only:
                    continue
                self.add(f"P4.monotone[{i},{par}]@{case.label}", 4, [i],
                         lambda b=b, cfgs=cfgs, par=par, inc=inc, vals=vals, l=case.label:
                         ordering.monotone_in(b, cfgs, par, inc, l, vals))

    # ---- property 5
    def lemmas(self, seed: int, trials_joint: int, trials_mean: int, trials_binom: int) -> None:
        label = f"seed{seed}"
        rng = lambda k: np.random.default_rng([seed, k])  # noqa: E731
        self.add(f"P5.joint_convexity@{label}", 5, ["T6", "T7", "T8", "T9"],
                 lambda: lemmas.advanced_joint_convexity(rng(1), trials_joint, label))
        self.add(f"P5.mean_monotonicity@{label}", 5, ["T2", "T4", "T5"],
                 lambda: lemmas.mean_monotonicity(rng(2), trials_mean, label))
        self.add(f"P5.binomial_dominance@{label}", 5, ["T3", "T5", "T9"],
                 lambda: lemmas.binomial_dominance(rng(3), trials_binom, label))

    # ---- property 6
    def closed_forms(self, case: Case, ids: Sequence[str]) -> None:
        for i in ids:
            b = self.B[i]
            if not b.has_pair:
                continue
            cfg = for_bound(b, case.config, instances=1)
            if i == "T14":
                cfg = cfg.with_(context_length=0, forecast_length=1, w=1)
            if not paths.has_closed_form(i, cfg):
                continue
            self.add(f"P6.closed_form[{i}]@{case.label}", 6, [i],
                     lambda b=b, cfg=cfg, l=case.label: paths.closed_form_paths(b, cfg, l))

    def engine_paths(self, case: Case, ids: Sequence[str], lam: int = 2) -> None:
        for i in ids:
            b = self.B[i]
            cfg = for_bound(b, case.config, instances=_lam(b, lam))
            self.add(f"P6.engine_paths[{i}]@{case.label}", 6, [i],
                     lambda b=b, cfg=cfg, l=case.label: paths.engine_paths(b, cfg, l))

    def pld(self, case: Case, ids: Sequence[str], lam: int = 2) -> None:
        for i in ids:
            b = self.B[i]
            cfg = for_bound(b, case.config, instances=_lam(b, lam))
            self.add(f"P6.pld_pessimism[{i}]@{case.label}", 6, [i],
                     lambda b=b, cfg=cfg, l=case.label: paths.pld_pessimism(b, cfg, l))

    # ---- property 7
    def reductions(self, case: Case) -> None:
        B, L = self.B, case.label
        items = symbolic.paper_reductions(case.config)
        for red, tgt, cfg, sub, desc in items:
            self.add(f"P7.reduction[{red}->{tgt}:{desc}]@{L}", 7, [red, tgt],
                     lambda red=red, tgt=tgt, cfg=cfg, sub=sub, desc=desc:
                     symbolic.reduction(B[red], B[tgt], cfg, sub, desc, L))

    # ---- property 8
    def compositions(self, case: Case, ids: Sequence[str], schedule=(1, 10, 100), lam: int = 2) -> None:
        for i in ids:
            b = self.B[i]
            if b.construction is None:
                continue
            cfg = for_bound(b, case.config, instances=_lam(b, lam))
            self.add(f"P8.composition[{i}]@{case.label}", 8, [i] + ([b.construction] if b.construction != i else []),
                     lambda b=b, cfg=cfg, l=case.label: composition.composition(b, cfg, l, schedule))

    # ---- errata
    def errata(self, case: Case, which=(1, 8, 9)) -> None:
        B, c, L = self.B, case.config, case.label
        if 1 in which:
            self.add(f"E.erratum1[index]@{L}", 9, ["T3", "T9", "T14"],
                     lambda: errata.erratum_1_index(B["T3"], B["T9"], B["T14"], c, L))
        if 8 in which:
            c10 = for_bound(B["T10"], c.with_(sigma_context=0.0, sigma_forecast=0.0), instances=2)
            self.add(f"E.erratum8[T10-printed]@{L}", 9, ["T10", "T10-printed", "T8"],
                     lambda: errata.erratum_8_printed_t10(B["T10"], B["T10-printed"], B["T8"], c10, L))
        if 9 in which:
            self.add(f"E.erratum9[T3<T2]@{L}", 9, ["T2", "T3"], lambda: errata.erratum_9_t3_vs_t2(B["T2"], B["T3"], c, L))

    def printed_lemma(self, seed: int, trials: int) -> None:
        label = f"seed{seed}"
        self.add(f"E.joint_convexity_printed_w@{label}", 9, ["T7", "T8"],
                 lambda: lemmas.printed_joint_convexity(np.random.default_rng([seed, 4]), trials, label))


def plan(quick: bool = False, seed: int = 0, bounds: Optional[Dict[str, Bound]] = None,
         random_count: int = RANDOM_CASES) -> List[Task]:
    """The checks of ``tsdp verify`` (``quick``: the paper default only; else grid + random).

    ``bounds`` overrides registry entries by id (e.g. ``{"T6": broken_t6}``).

    Args:
        quick: The paper default only.
        seed: The seed of the random configurations and lemma trials.
        bounds: Registry entries replaced by id while the checks run.
        random_count: How many random configurations.

    Returns:
        The tasks, in the output's order.
    """
    B = registry_bounds()
    B.update(bounds or {})
    p = _Planner(B)
    all_ids = evaluated_ids()
    paper = Case("paper", PAPER)
    if quick:
        p.axioms(paper, all_ids)
        p.inference(inference_cases()[-1:])
        p.orders(paper, full=False)
        p.pair_symmetry(paper, all_ids)
        p.profile_symmetry(paper, ["T1", "T6", "T7", "T8", "T10"])
        p.t5(paper)
        p.sweeps(paper, ["T6", "T11"], only=("r", "rho", "sigma", "sigma_C", "sigma_F"))
        p.lemmas(seed, trials_joint=5, trials_mean=10, trials_binom=50)
        p.closed_forms(paper, ["T1", "T6", "T11", "T12", "T13"])
        p.engine_paths(paper, ["T2", "T4", "T7", "T8", "T10", "T14"])
        p.pld(paper, ["T6", "T7", "T8"])
        p.reductions(paper)
        p.compositions(paper, ["T6", "T7"], schedule=(1, 10))
        p.errata(paper)
        p.printed_lemma(seed, trials=3)
        return p.tasks
    grid = fixed_grid()
    rand = random_cases(seed, random_count)
    for case in grid + rand:
        p.axioms(case, all_ids)
        p.orders(case, full=True)
        p.pair_symmetry(case, all_ids)
        p.profile_symmetry(case, all_ids)
        p.t5(case)
        p.sweeps(case, all_ids)
        p.closed_forms(case, all_ids)
        p.engine_paths(case, all_ids)
        p.pld(case, all_ids)
        p.reductions(case)
        p.compositions(case, ids_with_construction())
    p.inference(inference_cases())
    for case in grid:
        p.errata(case)
    for case in rand:
        p.errata(case, which=(8,))
    for k in range(3):
        p.lemmas(seed * 1000 + k, trials_joint=15, trials_mean=40, trials_binom=200)
    p.printed_lemma(seed, trials=10)
    return p.tasks


# ----------------------------------------------------------------------------- running


def run_task(task: Task) -> CheckResult:
    """Run one task; an exception becomes a ``fail`` result naming it. Records the elapsed time.

    Args:
        task: The task.

    Returns:
        Its result, with the elapsed time.
    """
    t0 = time.perf_counter()
    try:
        res = task.fn()
    except Exception as exc:  # noqa: BLE001 - a crash of a check is a failure to report, not to raise
        res = error_result(task.name, task.property, task.theorems, exc)
    return replace(res, elapsed_s=time.perf_counter() - t0)


_TASKS: List[Task] = []


def _run_index(i: int):
    return i, run_task(_TASKS[i])


def run(tasks: Sequence[Task], jobs: int = 1, progress: bool = False) -> List[CheckResult]:
    """Run ``tasks`` (in order of the plan in the output), on ``jobs`` forked processes.

    ``progress`` shows a tqdm bar on stderr. With ``jobs`` > 1 the tasks are inherited by
    fork (bound objects hold lambdas and do not pickle); only the results travel back.

    Args:
        tasks: The tasks.
        jobs: Forked worker processes.
        progress: Show a progress bar on stderr.

    Returns:
        The results, in the order of ``tasks``.
    """
    global _TASKS
    bar = None
    if progress and tasks:
        from tsdp.verify.progress import progress_bar

        bar = progress_bar(total=len(tasks), file=sys.stderr, unit="check", desc="tsdp verify")
    results: List[Optional[CheckResult]] = [None] * len(tasks)
    try:
        if jobs > 1 and len(tasks) > 1:
            import multiprocessing as mp_

            _TASKS = list(tasks)
            with mp_.get_context("fork").Pool(jobs) as pool:
                for i, res in pool.imap_unordered(_run_index, range(len(tasks))):
                    results[i] = res
                    if bar is not None:
                        bar.update(1)
        else:
            for i, task in enumerate(tasks):
                results[i] = run_task(task)
                if bar is not None:
                    bar.update(1)
    finally:
        _TASKS = []
        if bar is not None:
            bar.close()
    return [r for r in results if r is not None]


def default_jobs() -> int:
    """Processes for the full run: 2, or 1 on a single core."""
    return max(1, min(2, os.cpu_count() or 1))


def verify(quick: bool = False, seed: int = 0, jobs: Optional[int] = None, select: Optional[str] = None,
           progress: bool = False, bounds: Optional[Dict[str, Bound]] = None) -> VerifyReport:
    """Plan, (filter by ``select``, a substring of the check name), run, and summarise.

    Args:
        quick: The paper default only.
        seed: The seed of the random parts.
        jobs: Worker processes (None: one per available CPU).
        select: Keep the checks whose name contains this.
        progress: Show a progress bar on stderr.
        bounds: Registry entries replaced by id while the checks run.

    Returns:
        The report (its ``as_dict()``: mode, seed, elapsed time, checks, summary, theorems covered).
    """
    t0 = time.perf_counter()
    tasks = plan(quick, seed, bounds)
    if select:
        tasks = [t for t in tasks if select in t.name]
    jobs = (1 if quick else default_jobs()) if jobs is None else check_workers("jobs", jobs)
    results = run(tasks, jobs=jobs, progress=progress)
    covered = sorted({i for r in results for i in r.theorems}, key=_id_key)
    return VerifyReport(mode="quick" if quick else "full", seed=seed, elapsed_s=round(time.perf_counter() - t0, 2),
                        checks=tuple(results), summary=summarise(results), theorems_covered=tuple(covered))


def _id_key(i: str):
    digits = "".join(ch for ch in i if ch.isdigit())
    return (int(digits) if digits else 0, i)
