"""`tsdp bench accounting` measures like for like: one grid for both sides, interleaved rounds,
the ratio's median and range, the machine state; the two ε agree with the library's."""
from __future__ import annotations

import pytest
from dp_accounting.pld import privacy_loss_distribution as lib

from tsdp.bench import accounting as bench_accounting, rounds as bench_rounds
from tsdp.verify import pld

import published_json

GRID = 0.05  # coarse: the library's per-point inversion stays fast
T6_ONLY = bench_accounting.accounting_cases()[:1]


def test_both_sides_run_on_the_grid_ours_was_built_at(monkeypatch):
    grids = []
    original = lib.from_mixture_gaussian_mechanism

    def recording(*args, value_discretization_interval, **kw):
        grids.append(value_discretization_interval)
        return original(*args, value_discretization_interval=value_discretization_interval, **kw)

    monkeypatch.setattr(lib, "from_mixture_gaussian_mechanism", recording)
    # a ceiling this small coarsens our one-step grid (T3 at 1e-4 in real use): the library must follow
    monkeypatch.setenv(pld.MEMORY_LIMIT_ENV, str(64 * 512))
    monkeypatch.setattr(bench_accounting, "accounting_cases", lambda: T6_ONLY)
    with pytest.warns(pld.PldCoarsenedWarning):
        result = bench_accounting.bench_accounting(discretization=GRID / 4, rounds=7)
    (case,) = result.cases
    assert case.grid > GRID / 4
    assert grids == [case.grid] * 8  # one warm-up and seven timed rounds, all on our grid


def test_rounds_ratios_and_environment(monkeypatch):
    monkeypatch.setattr(bench_accounting, "accounting_cases", lambda: T6_ONLY)
    result = bench_accounting.bench_accounting(discretization=GRID, rounds=7)
    (case,) = result.cases
    assert result.rounds == 7 and case.grid == GRID
    for name in ("ours_s", "library_s", "ours_sound_s", "speedup"):
        s = getattr(case, name)
        assert 0 < s.min <= s.median <= s.max
    assert case.meets_goal == (case.speedup.median >= case.goal)
    # ε: ours (pessimistic) against the library's own construction of the same pair, read independently
    num = bench_accounting.get("T6").pair(bench_accounting.DEFAULT_CONFIG).numeric()
    reference = lib.from_mixture_gaussian_mechanism(num.sigma, list(num.a * num.sigma), list(num.p),
                                                    value_discretization_interval=GRID).get_epsilon_for_delta(1e-5)
    assert case.epsilon_library == reference
    assert case.agree and case.epsilon_ours == pytest.approx(reference, rel=1e-3)
    assert case.epsilon_sound >= case.epsilon_ours * (1 - 1e-9)  # T6 is tight: the same pair, rounded up
    env = result.environment
    assert env.before.cpus >= 1 and len(env.before.load) == 3
    text = bench_accounting.format_bench(result)
    assert "interleaved rounds" in text and "load average" in text and bench_rounds.format_spread(case.speedup) in text
    assert text == bench_accounting.format_bench(result.as_dict())


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    """The published cases' configurations come back as TrainingConfigs whose JSON form (with its derived sizes) is
    the published one."""
    published = published_json.published("accounting")
    bench = published_json.rebuilt(bench_accounting.AccountingBench, published)
    assert all(isinstance(c.config, bench_accounting.TrainingConfig) for c in bench.cases)
    published_json.assert_gives_back(bench, published)
    assert bench_accounting.format_bench(bench) == bench_accounting.format_bench(published)
