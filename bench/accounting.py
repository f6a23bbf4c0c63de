"""`tsdp bench accounting`: one-step PLD construction time, our path (:func:`verify.pld.pair_pld`) vs
dp-accounting's ``from_mixture_gaussian_mechanism``, on equal work: the same pair, the same grid, both warm, timed
interleaved (:mod:`bench.rounds`); the speed-up is the median (and range) of the per-round ratios, and both ε(δ), upper
estimates of the same pair's ε, must agree to a relative 1e-3. Our sound one-step PLD (:func:`verify.pld.sound_pld`)
is timed in the same rounds. How the work is kept equal, and why the default grid is 1e-3: the manual's
Benchmarks page (docs/benchmarks.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple, Union

from tsdp.theorems.config import DEFAULT_CONFIG, TrainingConfig
from tsdp.theorems.registry import get

from tsdp.bench import rounds as bench_rounds
from tsdp.bench.rounds import Conditions, Spread
from tsdp.verify.json_data import Record
from tsdp.verify.pld import PldSettings, discretization_of, pair_pld, sound_pld

AGREEMENT_RTOL = 1e-3
BENCH_DISCRETIZATION = 1e-3
"""Default grid of the bench (see the module docstring)."""


def accounting_cases() -> List[Tuple[str, str, TrainingConfig, float]]:
    """The configurations `tsdp bench accounting` times tsdp's accountant against the library's on.

    Returns:
        (label, theorem, configuration, speed-up goal) of each case.
    """
    t3 = DEFAULT_CONFIG.with_(top="deterministic", instances=4, batch_size=4 * DEFAULT_CONFIG.batch_size)
    return [("T6 (default configuration)", "T6", DEFAULT_CONFIG, 20.0), ("T3, λ = 4", "T3", t3, 10.0)]


def _library_args(pair) -> Tuple[float, list, list]:
    """σ, sensitivities, probabilities of a MoG(means, w) ‖ N(0, σ) pair for the library."""
    num = pair.numeric()
    if len(num.b) != 1 or num.b[0] != 0:
        raise ValueError("the library's mixture mechanism needs a single N(0, σ) on the right")
    return num.sigma, list(num.a * num.sigma), list(num.p)


@dataclass(frozen=True)
class AccountingCase(Record):
    """One case: ours against the library's one-step PLD of the same pair; spreads (:class:`~tsdp.bench.rounds.Spread`) over rounds.

    Attributes:
        theorem: The bound's id.
        label: The case's label.
        config: The configuration.
        grid: The discretisation both sides ran at.
        ours_s: Ours' seconds (pessimistic: an upper estimate).
        library_s: The library's seconds.
        ours_sound_s: Ours' sound PLD's seconds.
        speedup: The per-round library / ours ratios.
        goal: The speed-up's goal.
        meets_goal: The median speed-up meets it.
        epsilon_ours: Ours' ε at δ (an upper estimate).
        epsilon_sound: The sound PLD's ε (an upper bound).
        epsilon_library: The library's ε (an upper estimate).
        rel_diff: ``|ours - library| / library``.
        agree: ``rel_diff`` within :data:`AGREEMENT_RTOL`.
    """

    theorem: str
    label: str
    config: TrainingConfig
    grid: float
    ours_s: Spread
    library_s: Spread
    ours_sound_s: Spread
    speedup: Spread
    goal: float
    meets_goal: bool
    epsilon_ours: float
    epsilon_sound: float
    epsilon_library: float
    rel_diff: float
    agree: bool


@dataclass(frozen=True)
class AccountingBench(Record):
    """What :func:`bench_accounting` measured.

    Attributes:
        discretization: The value discretisation asked for.
        delta: δ of the ε compared.
        rounds: Interleaved rounds.
        environment: The machine and its load before and after all cases.
        cases: The cases.
    """

    discretization: float
    delta: float
    rounds: int
    environment: Conditions
    cases: Tuple[AccountingCase, ...]


def bench_accounting(discretization: float = BENCH_DISCRETIZATION, delta: float = 1e-5,
                     rounds: int = bench_rounds.MIN_ROUNDS,
                     progress: Optional[Callable[[str], None]] = None) -> AccountingBench:
    """Time one-step PLD construction, ours (:func:`verify.pld.pair_pld`, pessimistic: an upper estimate)
    vs dp-accounting's ``from_mixture_gaussian_mechanism``, interleaved over ``rounds`` rounds.

    A case's ``grid`` is the discretisation both sides ran at (``discretization``, or ours' coarsened grid, see the
    module docstring). Both ε are pessimistic (upper) estimates of the same pair; ``agree`` checks them to 1e-3
    relative; ``environment`` is :func:`bench.rounds.environment` before and after all cases.

    Args:
        discretization: The value discretisation both sides run at (ours may coarsen it).
        delta: δ of the ε compared.
        rounds: Interleaved rounds (at least :data:`~tsdp.bench.rounds.MIN_ROUNDS`).
        progress: Called with what starts (None: nothing).

    Returns:
        The :class:`AccountingBench`.

    Raises:
        ValueError: Fewer rounds than :data:`~tsdp.bench.rounds.MIN_ROUNDS`.
    """
    from dp_accounting.pld import privacy_loss_distribution as lib

    before = bench_rounds.environment()
    cases = []
    for label, theorem, config, goal in accounting_cases():
        bound = get(theorem)
        pair = bound.pair(config, numeric=True)
        grid = discretization_of(pair_pld(pair, PldSettings(discretization), pessimistic=True))  # the grid ours runs at
        at = PldSettings(grid)
        sigma, sens, probs = _library_args(pair)
        runs = {
            "ours": lambda: pair_pld(pair, at, pessimistic=True),
            "library": lambda: lib.from_mixture_gaussian_mechanism(sigma, sens, probs,
                                                                    value_discretization_interval=grid),
            "ours_sound": lambda: sound_pld(bound, config, at),
        }
        timed = bench_rounds.interleave(runs, rounds, progress=progress, label=label)
        out = {name: float(pld.get_epsilon_for_delta(delta)) for name, pld in timed.results.items()}
        rel = abs(out["ours"] - out["library"]) / max(abs(out["library"]), 1e-12)
        speedup = bench_rounds.ratio(timed, "library", "ours")
        seconds = {name: bench_rounds.spread(timed.seconds[name]) for name in runs}
        cases.append(AccountingCase(
            theorem=theorem, label=label, config=config, grid=grid, ours_s=seconds["ours"],
            library_s=seconds["library"], ours_sound_s=seconds["ours_sound"], speedup=speedup, goal=goal,
            meets_goal=speedup.median >= goal, epsilon_ours=out["ours"], epsilon_sound=out["ours_sound"],
            epsilon_library=out["library"], rel_diff=rel, agree=rel <= AGREEMENT_RTOL))
    return AccountingBench(discretization, delta, rounds, bench_rounds.conditions_since(before),
                           tuple(cases))


def format_bench(result: Union[AccountingBench, Dict]) -> str:
    """Human-readable table of :func:`bench_accounting`'s result (medians over rounds, ranges in brackets).

    Args:
        result: What :func:`bench_accounting` returned, or its ``as_dict()`` (``--json``, the benchmark page).

    Returns:
        The table.
    """
    if isinstance(result, AccountingBench):
        result = result.as_dict()
    seconds = lambda s: bench_rounds.format_spread(s, unit="", digits=3)  # noqa: E731
    lines = [f"one-step PLD construction, ε at δ = {result['delta']:g}; {result['rounds']} interleaved rounds "
             "(ours, library, ours sound); seconds and speed-up: median (min-max)",
             bench_rounds.format_environment(result["environment"]),
             f"{'case':<27} {'grid':>7} {'ours (s)':>21} {'library (s)':>24} {'speed-up':>19} {'goal':>5}  "
             f"{'ours sound (s)':>21}  {'ε ours':>9} {'ε library':>9}  agree"]
    for c in result["cases"]:
        lines.append(
            f"{c['label']:<27} {c['grid']:>7.1g} {seconds(c['ours_s']):>21} {seconds(c['library_s']):>24} "
            f"{bench_rounds.format_spread(c['speedup']):>19} {c['goal']:>4.0f}x  {seconds(c['ours_sound_s']):>21}  "
            f"{c['epsilon_ours']:>9.6g} {c['epsilon_library']:>9.6g}  {'yes' if c['agree'] else 'NO'} "
            f"({c['rel_diff']:.1e})"
        )
    return "\n".join(lines)
