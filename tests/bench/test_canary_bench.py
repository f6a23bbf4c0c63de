"""`tsdp bench canary`: the idealised bench's bookkeeping, its a-priori guess sets, and the CLI's flag checks."""
import json

import numpy as np
import pytest

from tsdp.bench import canary as B
from tsdp.attacks.canary import fdp_bound as F
from tsdp.attacks.canary import steinke_bound
from tsdp.cli.main import main

import published_json


def test_expected_counts_match_a_monte_carlo_mean():
    """The a-priori counts (mixture quantiles) against 400 simulated audits: within 2% of k (floor included)."""
    mu, m = 1.0, 1000
    sets = np.array([[16, 16], [64, 64], [250, 250]])
    scores, included = B.simulate(mu, m, range(400))
    simulated = F.correct_counts(scores, included, sets).mean(axis=0)
    assert np.all(np.abs(B.expected_counts(mu, m, sets) - simulated) <= 0.02 * sets.sum(1) + 1)


def test_bench_rows_are_consistent():
    result = B.bench_canary(mus=(1.0,), canaries=(300,), seeds=4)
    (row,) = result.rows
    assert row.true_epsilon == pytest.approx(4.377, abs=1e-3)  # exact GDP curve at δ = 1e-5
    for a in B.ANALYSES:
        s = getattr(row, a)
        assert s.min <= s.mean <= s.max and 0 <= s.above_true <= 4
    grid = F.guess_grid(300)
    assert [row.steinke.k_in, row.steinke.k_out] in grid.tolist()
    # the a-priori analyses test one set at the full level: rerun one audit by hand
    scores, included = B.simulate(1.0, 300, [0])
    k_in = row.steinke.k_in
    c = int(F.correct_counts(scores, included, np.array([[k_in, k_in]]))[0, 0])
    single = steinke_bound.epsilon_lower_bound(300, 2 * k_in, c, 1e-5, 0.05)
    assert row.steinke.min <= single <= row.steinke.max
    text = B.format_bench(result)
    assert f"{row.fdp_grid.mean:5.2f}" in text and "coverage" in text and text == B.format_bench(result.as_dict())


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    published = published_json.published("canary")
    bench = published_json.rebuilt(B.CanaryBench, published)
    published_json.assert_gives_back(bench, published)
    assert B.format_bench(bench) == B.format_bench(published) and bench.goal == B.GOAL


def test_cli_json_and_flag_checks(capsys):
    assert main(["bench", "canary", "--mu", "1", "--canaries", "200", "--seeds", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seeds"] == 2 and out["rows"][0]["canaries"] == 200
    for bad in (["--seeds", "0"], ["--mu", "-1"], ["--canaries", "1"], ["--delta", "0"], ["--confidence", "1.5"],
                ["--rounds", "2"]):
        assert main(["bench", "canary", *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("tsdp bench: error: invalid " + bad[0])
