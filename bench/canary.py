"""`tsdp bench canary`: the one-run analyses on idealised Gaussian canary scores (numpy only, no training).

Each canary is included with probability 1/2; its score is N(μ, 1) if included, N(0, 1)
if not: the scores of a μ-GDP mechanism run once per canary with the likelihood-ratio
attack, so the true trade-off curve is G_μ and the true ε at δ is the exact GDP ε. For
each μ and m, ``seeds`` independent audits are analysed on the same scores by

* ``fdp_grid``: the f-DP audit (:mod:`attacks.canary.fdp_bound`, Gaussian family) over the
  guess sets of :func:`attacks.canary.fdp_bound.guess_grid`, the best picked after seeing the
  scores (Bonferroni over the grid);
* ``fdp_dp``: the f-DP audit of the (ε, δ) curves over the same grid: ε without assuming a
  Gaussian curve (:mod:`attacks.canary.fdp_bound`, "dp");
* ``fdp_prior``: the Gaussian-family test on one guess set fixed a priori;
* ``steinke``: Steinke, Nasr & Jagielski (2023) on that same a-priori guess set.

The a-priori guess set of each analysis is the grid set whose bound at the *expected*
correct counts (computed from μ and m, not from the audits' scores) is largest: the oracle
choice of k that today's Steinke figures assume. Each analysis runs at the full confidence
(they are compared, not combined). Coverage: the fraction of audits whose certified ε
exceeds the true ε, which must stay at or below 1 - confidence up to sampling error.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np
from scipy import special

from tsdp.attacks.canary import fdp_bound as F
from tsdp.attacks.canary import tradeoff
from tsdp.attacks.canary import steinke_bound
from tsdp.verify.json_data import Record

ANALYSES = ("fdp_grid", "fdp_dp", "fdp_prior", "steinke")


def expected_counts(mu: float, m: int, sets: np.ndarray) -> np.ndarray:
    """Expected correct guesses of each set (k_in highest "in", k_out lowest "out") for N(μ,1) vs N(0,1) scores.

    The k-th highest of m scores sits near the (1 - k/m) quantile t of the mixture; the
    fraction of included canaries above t is Q(t - μ) / (Q(t - μ) + Q(t)), Q the normal tail.

    Args:
        mu: The included canaries' mean shift μ.
        m: The canaries.
        sets: The guess sets, rows (k_in, k_out).

    Returns:
        Each set's expected correct guesses (floored).
    """
    def tail_in_fraction(k):  # fraction of "in" among the k highest
        lo, hi = np.full(k.shape, -40.0), np.full(k.shape, 40.0)
        target = k / m
        for _ in range(100):
            mid = (lo + hi) / 2
            mass = 0.5 * (special.ndtr(mu - mid) + special.ndtr(-mid))
            lo, hi = np.where(mass > target, mid, lo), np.where(mass > target, hi, mid)
        t = (lo + hi) / 2
        a, b = special.ndtr(mu - t), special.ndtr(-t)
        return a / (a + b)

    k_in, k_out = sets[:, 0].astype(float), sets[:, 1].astype(float)
    # bottom k_out: the fraction of "out" among the lowest is the same expression for -score
    out_frac = np.where(k_out > 0, tail_in_fraction(np.maximum(k_out, 1.0)), 0.0)
    return np.floor(k_in * tail_in_fraction(k_in) + k_out * out_frac).astype(np.int64)


def prior_set(family: str, mu: float, m: int, delta: float, significance: float, sets: np.ndarray) -> int:
    """Index of the set whose bound at the expected counts is largest (chosen before any score is drawn).

    Args:
        family: "steinke" or a trade-off family ("gdp", "dp").
        mu: The mean shift μ.
        m: The canaries.
        delta: The δ.
        significance: 1 - confidence.
        sets: The guess sets.

    Returns:
        The index of the set.
    """
    expected = expected_counts(mu, m, sets)
    k = sets.sum(axis=1)
    if family == "steinke":
        values = steinke_bound.epsilon_lower_bound(m, k, expected, delta, significance)
    else:
        values = F.largest_rejected(tradeoff._inverse(family, delta), m, k, expected, significance, F.MU_MAX)
    return int(np.argmax(values))


def simulate(mu: float, m: int, seeds: Sequence[int]) -> tuple:
    """(scores, included), each (len(seeds), m): one idealised audit per seed.

    Args:
        mu: The mean shift μ.
        m: The canaries.
        seeds: One audit per seed.

    Returns:
        (scores, included), each (len(seeds), m).
    """
    scores, included = [], []
    for s in seeds:
        rng = np.random.default_rng(s)
        inc = rng.random(m) < 0.5
        scores.append(rng.standard_normal(m) + mu * inc)
        included.append(inc)
    return np.array(scores), np.array(included)


@dataclass(frozen=True)
class Summary(Record):
    """One analysis's certified ε over a cell's audits (each a **lower** bound).

    Attributes:
        mean: Their mean.
        min: Their smallest.
        max: Their largest.
        above_true: The audits whose bound exceeds the true ε (each a failure of the analysis).
    """

    mean: float
    min: float
    max: float
    above_true: int


@dataclass(frozen=True)
class PriorSummary(Summary):
    """:class:`Summary` of an analysis that tests one guess set fixed a priori, and that set.

    Attributes:
        k_in: The guesses "included".
        k_out: The guesses "excluded".
    """

    k_in: int
    k_out: int


def _summary(values: np.ndarray, true_eps: float) -> Summary:
    return Summary(float(values.mean()), float(values.min()), float(values.max()), int((values > true_eps).sum()))


def _prior(values: np.ndarray, true_eps: float, guesses: np.ndarray) -> PriorSummary:
    s = _summary(values, true_eps)
    return PriorSummary(s.mean, s.min, s.max, s.above_true, k_in=int(guesses[0]), k_out=int(guesses[1]))


@dataclass(frozen=True)
class CanaryRow(Record):
    """One cell (μ, m) of the bench.

    Attributes:
        mu: The canaries' Gaussian shift μ.
        canaries: m.
        true_epsilon: The μ-GDP ε at δ (what no certified bound may exceed).
        fdp_grid: The f-DP test on Gaussian curves, the best guess set picked after the scores.
        fdp_dp: The same on (ε, δ) curves.
        fdp_prior: The f-DP test on one guess set fixed a priori.
        steinke: Steinke et al.'s bound on one guess set fixed a priori.
        ceiling: Per analysis, what every guess right certifies.
    """

    mu: float
    canaries: int
    true_epsilon: float
    fdp_grid: Summary
    fdp_dp: Summary
    fdp_prior: PriorSummary
    steinke: PriorSummary
    ceiling: Dict[str, float]


@dataclass(frozen=True)
class CanaryGoal(Record):
    """The bench's goal: at μ and m, a mean certified ε of at least ``mean_epsilon_at_least``.

    Attributes:
        mu: The goal's μ.
        canaries: Its m.
        mean_epsilon_at_least: The mean certified ε it asks for.
    """

    mu: float
    canaries: int
    mean_epsilon_at_least: float


GOAL = CanaryGoal(1.0, 1000, 2.25)
"""The goal of the module docstring."""


@dataclass(frozen=True)
class CanaryBench(Record):
    """What :func:`bench_canary` measured.

    Attributes:
        delta: The δ.
        confidence: Each analysis's confidence.
        seeds: Audits per cell.
        first_seed: The seed of the first audit.
        analyses: The analyses compared (:data:`ANALYSES`).
        rows: The cells.
        seconds: The wall seconds.
        goal: The goal.
    """

    delta: float
    confidence: float
    seeds: int
    first_seed: int
    analyses: Tuple[str, ...]
    rows: Tuple[CanaryRow, ...]
    seconds: float
    goal: CanaryGoal


def bench_canary(mus: Sequence[float] = (0.5, 1.0, 2.0), canaries: Sequence[int] = (1000, 10000),
                 seeds: int = 20, delta: float = 1e-5, confidence: float = 0.95, seed: int = 0,
                 progress: Optional[Callable[[str], None]] = None) -> CanaryBench:
    """The table of the module docstring. Audit i of a cell uses seed ``seed + i``.

    Args:
        mus: The μ of the cells.
        canaries: The m of the cells.
        seeds: Audits per cell.
        delta: The δ.
        confidence: Each analysis's confidence.
        seed: The seed of the first audit.
        progress: Called with a line per cell, if given.

    Returns:
        The :class:`CanaryBench`.
    """
    significance = 1 - confidence
    rows = []
    started = time.perf_counter()
    for m in canaries:
        grid = F.guess_grid(m)
        for mu in mus:
            if progress is not None:
                progress(f"μ = {mu:g}, m = {m}: {seeds} audits")
            scores, included = simulate(mu, m, range(seed, seed + seeds))
            counts = F.correct_counts(scores, included, grid)
            true_eps = float(F.gdp_epsilon(delta, mu))
            fdp_grid = F.fdp_bounds(counts, grid, m, delta, significance, "gdp")
            fdp_dp = F.fdp_bounds(counts, grid, m, delta, significance, "dp")
            i_f = prior_set("gdp", mu, m, delta, significance, grid)
            i_s = prior_set("steinke", mu, m, delta, significance, grid)
            fdp_prior = F.fdp_bounds(counts[:, [i_f]], grid[[i_f]], m, delta, significance, "gdp")
            steinke = F.fdp_bounds(counts[:, [i_s]], grid[[i_s]], m, delta, significance, "steinke")
            rows.append(CanaryRow(
                mu, m, true_eps, _summary(fdp_grid["epsilon"], true_eps), _summary(fdp_dp["epsilon"], true_eps),
                _prior(fdp_prior["epsilon"], true_eps, grid[i_f]), _prior(steinke["epsilon"], true_eps, grid[i_s]),
                {"fdp_grid": float(F.fdp_bounds(grid.sum(axis=1)[None], grid, m, delta, significance,
                                                "gdp")["epsilon"][0])}))
    return CanaryBench(delta, confidence, seeds, seed, tuple(ANALYSES), tuple(rows), time.perf_counter() - started,
                       GOAL)


def format_bench(result: Union[CanaryBench, dict]) -> str:
    """Human-readable table of :func:`bench_canary`'s result (``--json`` prints its ``as_dict()``).

    Args:
        result: What :func:`bench_canary` returned, or its ``as_dict()`` (the benchmark page's).

    Returns:
        The table.
    """
    if isinstance(result, CanaryBench):
        result = result.as_dict()
    lines = [f"one-run audits of idealised Gaussian canaries: {result['seeds']} audits per cell, "
             f"δ = {result['delta']:g}, confidence {result['confidence']:g} per analysis",
             "certified ε: mean [min, max] (audits above the true ε)",
             f"{'μ':>4} {'m':>6} {'true ε':>7}  " + "  ".join(f"{a:>26}" for a in ANALYSES)]
    for row in result["rows"]:
        cells = []
        for a in ANALYSES:
            s = row[a]
            cells.append(f"{s['mean']:5.2f} [{s['min']:5.2f}, {s['max']:5.2f}] ({s['above_true']:>2})".rjust(26))
        lines.append(f"{row['mu']:>4g} {row['canaries']:>6} {row['true_epsilon']:>7.2f}  " + "  ".join(cells))
    lines.append("fdp_grid (Gaussian curves) and fdp_dp ((ε, δ) curves, no assumption): best guess set picked after "
                 "the scores (Bonferroni over the grid); fdp_prior, steinke: one guess set fixed a priori from μ and m")
    audits = result["seeds"] * len(result["rows"])
    lines.append("coverage: audits above the true ε, all cells: " + ", ".join(
        f"{a} {sum(r[a]['above_true'] for r in result['rows'])}/{audits}" for a in ANALYSES))
    goal = result["goal"]
    hit = [r for r in result["rows"] if r["mu"] == goal["mu"] and r["canaries"] == goal["canaries"]]
    if hit:
        r = hit[0]
        lines.append(f"goal (μ = 1, m = 1000, mean ≥ {goal['mean_epsilon_at_least']}): fdp_prior "
                     f"{r['fdp_prior']['mean']:.2f}, fdp_grid {r['fdp_grid']['mean']:.2f}, steinke "
                     f"{r['steinke']['mean']:.2f}")
    lines.append(f"{result['seconds']:.1f} s")
    return "\n".join(lines)
