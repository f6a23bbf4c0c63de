"""`tsdp bench planted` (bench/bug_rates.py): the planted bugs of the hand-written DP-SGD loop audited over
many seeds; the table and the flags here, the rates on fewer seeds in the slow test."""
import json

import pytest

from tsdp.bench.bug_rates import (ABOVE_CEILING, DESIGNED_FALSE_FLAGS, ROWS, TESTS, PlantedBench,
                                                  RowResult, bench_planted, format_bench)
from tsdp.bench.rounds import Conditions
from tsdp.cli.main import main

import published_json


def _row(name, expected, seeds, flagged, named, by_test, ideal=0.1, claim=3.134):
    return RowResult(name, name, claim, expected, seeds, 0, 1000, flagged, named, dict(zip(TESTS, by_test)), 0.2, 4.8,
                     ideal, 1.0)


def test_the_table_reads_from_the_json_and_names_what_it_cannot_see():
    """The JSON form (what the benchmark page reads back) formats as the record does; each row's rate is flagged /
    seeds; the correct loop's line gives its false flags against the design (5% + 3 × 0.1%); a row named in fewer
    than 90% of its seeds is said with the audit's power at its claim, a row named in every seed is not."""
    bench = PlantedBench((_row("correct", None, 100, 3, 0, (2, 1, 0, 0, 0)),
                          _row("noise-off", "noise", 20, 20, 20, (3, 5, 20, 0, 0)),
                          _row("claim-4x-small", "epsilon_bound", 20, 1, 1, (1, 0, 0, 0, 0), ideal=0.17, claim=0.783)),
                         1e-5, 0.95, DESIGNED_FALSE_FLAGS, 2, 60.0, {})
    record = json.loads(json.dumps(bench.as_dict()))
    assert [r["rate"] for r in record["rows"]] == [0.03, 1.0, 0.05]
    assert record["rows"][1]["by_test"] == {"epsilon_bound": 3, "claimed_curve": 5, "noise": 20, "clipping": 0,
                                        "sampling": 0}
    text = format_bench(record)
    assert text == format_bench(bench)
    lines = text.splitlines()
    assert lines[2].split()[:6] == ["correct", "3.134", "4.800", "100", "3", "0.03"]
    assert lines[3].split()[-4:] == ["20", "3/5/20/0/0", "0.200", "0.100"]
    assert lines[5] == "correct: flagged in 3 of 100 (rate 0.030), every test together; designed at most 0.053"
    assert lines[6].startswith("claim-4x-small: named in 1 of 20 by epsilon_bound") and "at most 0.170" in lines[6]
    assert len(lines) == 8 and DESIGNED_FALSE_FLAGS == pytest.approx(0.053)


@pytest.mark.parametrize("argv,flag", [
    (["--seeds", "0"], "--seeds"), (["--canaries", "1"], "--canaries"), (["--canaries", "10", "20"], "--canaries"),
    (["--seed", "-1"], "--seed"), (["--workers", "0"], "--workers"), (["--epochs", "3"], "--epochs"),
])
def test_bad_flags_are_one_line(argv, flag, capsys):
    assert main(["bench", "planted"] + argv) == 2
    err = capsys.readouterr().err.strip()
    assert flag in err and "\n" not in err, err


def test_the_opacus_bench_is_its_own_part_and_takes_no_seeds(capsys):
    assert main(["bench", "planted-opacus", "--seeds", "3"]) == 2
    assert "--seeds" in capsys.readouterr().err


@pytest.mark.slow
def test_the_planted_bugs_are_named_and_the_correct_loop_rarely_flagged():
    """The must-show rates on fewer seeds (1000 canaries, seeds 0-9 per bug, 0-49 for the correct loop): noise off,
    σ / 10 (at the intended claim and at a claim above the canaries' ceiling), noise on one step per epoch and no
    clipping each flagged by the test that names them in ≥ 9 of 10 (false-failure rate 0.004 at a true rate of 99%;
    the bench's own rates are on its page, docs/benchmarks/planted.json); the correct loop flagged in ≤ 5 of 50,
    every test together (false-failure rate 0.048 at the design's worst case 5.3%, 1e-5 at 1%). A claim 4× too
    small is below what the audit can see: the same audit on the claimed mechanism certifies less than that claim on every seed."""
    bench = bench_planted(seeds=10, workers=2)
    rows = {r.name: r for r in bench.rows}
    assert [r.name for r in bench.rows] == [r.name for r in ROWS]
    for row in bench.rows[1:-1]:
        assert row.named >= 9 and row.flagged >= row.named and row.seeds == 10, row
    above = rows["noise-10x-small, claim above the ceiling"]
    assert above.claim == ABOVE_CEILING > above.ceiling and above.by_test["epsilon_bound"] == 0
    correct = rows["correct"]
    assert correct.seeds == 50 and correct.flagged <= 5, correct
    small = rows["claim-4x-small"]
    assert small.epsilon_ideal_max < small.claim, small


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    """docs/benchmarks/planted.json was written by the bench before its rows were records: the records built from its
    numbers give back every key in its order and every value, each row's rate derived again as flagged / seeds."""
    import dataclasses
    from pathlib import Path

    published = json.loads((Path(__file__).parents[2] / "docs" / "benchmarks" / "planted.json").read_text())
    form = {k: v for k, v in published.items() if k not in ("bench", "command")}  # the CLI's, around the result
    names = [f.name for f in dataclasses.fields(RowResult) if f.init]
    rows = tuple(RowResult(**{k: row[k] for k in names}) for row in form["rows"])
    bench = PlantedBench(rows, form["delta"], form["confidence"], form["designed_false_flags"], form["workers"],
                         form["seconds"], published_json.rebuilt(Conditions, form["environment"]))
    got = json.loads(json.dumps(bench.as_dict()))
    assert got == form and list(got) == list(form)
    assert [list(row) for row in got["rows"]] == [list(row) for row in form["rows"]]
    assert format_bench(bench) == format_bench(published)


def test_a_planted_loop_that_diverges_counts_the_tests_that_failed_before_it(monkeypatch):
    """A planted loop that diverges (clipping off, some seeds) cannot be scored: the audit raises DivergedError with
    the mechanism tests that failed on the steps before it. The bench counts those tests, certifies no ε (NaN), and the
    error crosses a process boundary whole (an unpicklable one broke the worker pool)."""
    import dataclasses
    import math
    import pickle

    from tsdp.attacks.canary.guarded_calls import DivergedError
    from tsdp.bench import bug_rates, handwritten_dpsgd

    err = DivergedError(print, "made non-finite gradients", ["clipping", "noise"])
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is DivergedError and str(back) == str(err) and back.failed_tests == ("clipping", "noise")
    assert back.parameter == "train"

    def diverged(*args, **kwargs):
        raise err

    monkeypatch.setattr(handwritten_dpsgd, "audit", diverged)
    out = bug_rates.audit_one(bug_rates.AuditSpec(5, 4, "clipping-off", 1000, 1.0))
    assert set(out.failed) == {"clipping", "noise"} and math.isnan(out.epsilon_lower) and math.isnan(out.ceiling)
    # the bench's row: the largest ε over the seeds that certified one (seed 5 diverged); NaN when none did
    certified = {6: 0.5, 7: 0.2}

    def audited(spec):
        if spec.seed not in certified:
            return dataclasses.replace(out, key=spec.key)
        return dataclasses.replace(out, key=spec.key, failed=(), epsilon_lower=certified[spec.seed], ceiling=1.0,
                                   epsilon_ideal=0.7)

    monkeypatch.setattr(bug_rates, "audit_one", audited)
    row = bug_rates.Row("clipping-off", "clipping-off", "clipping", 1.0)
    some, = bug_rates.bench_planted(seeds=3, seed=5, rows=(row,)).rows
    none, = bug_rates.bench_planted(seeds=1, seed=5, rows=(row,)).rows
    assert (some.epsilon_lower_max, some.ceiling, some.epsilon_ideal_max, some.flagged) == (0.5, 1.0, 0.7, 1)
    assert math.isnan(none.epsilon_lower_max) and math.isnan(none.ceiling) and none.flagged == 1
