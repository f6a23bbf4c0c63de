"""`tsdp bench audit`: a tiny real run's bookkeeping and its human summary (no wall-clock asserts: a benchmark)."""
import pytest

from tsdp.bench.audit import bench_audit, bench_canary_runs, bench_scaling, format_bench

import published_json


@pytest.mark.slow  # 7 interleaved rounds on 1 and 2 workers
def test_scaling_rounds_on_one_and_two_workers():
    """Interleaved rounds: one rate per round and side, the efficiency is the rates' per-round ratio over 2,
    1 and 2 warm workers merge identical counts, the human summary prints the median and the environment."""
    messages = []
    s = bench_scaling(trials=2048, shard_size=512, rounds=7, progress=messages.append)
    assert s.shards == 8 and s.identical and len(messages) == 7 and messages[-1].endswith("round 7/7")
    one, two = s.trials_per_minute_per_world["1"], s.trials_per_minute_per_world["2"]
    assert one.min <= one.median <= one.max and two.min <= two.median <= two.max
    eff = s.scaling_efficiency
    assert eff.min <= eff.median <= eff.max
    assert two.max / (2 * one.min) >= eff.max and two.min / (2 * one.max) <= eff.min
    assert s.merge_seconds_per_shard > 0 and s.shard_payload_bytes > 0
    text = format_bench({"device": "cpu", "threads": 1, "batched_trials_per_minute_per_world": 1e6, "rounds": 7,
                         "naive_trials_per_second": 1.0, "speedup": 1.0, "speedup_range": [1.0, 1.0],
                         "goal_trials_per_minute_per_world": 1e6,
                         "goal_speedup": 100.0, "meets_goals": False, "scaling": s.as_dict()})
    assert f"efficiency {eff.median:.2f}" in text and "load average" in text


def test_summary_states_the_figures_and_the_verdict():
    result = bench_audit(trials=4096, naive_trials=3, scaling=False, canary_runs=False)
    assert result.rounds == 7 and result.speedup_range[0] <= result.speedup <= result.speedup_range[1]
    # the speedup is the median of per-round ratios: between the extreme rounds' rate ratios
    assert result.speedup > 0 and result.environment.before.cpus >= 1
    assert result.scaling is None and result.canary_runs is None
    text = format_bench(result)
    assert f"{result.speedup:.0f}x" in text and f"{result.batched_trials_per_minute_per_world / 1e6:.2f} M" in text
    assert ("NOT met" in text) is (not result.meets_goals) and text == format_bench(result.as_dict())


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    from tsdp.bench.audit import AuditBench

    published = published_json.published("audit")
    bench = published_json.rebuilt(AuditBench, published)
    assert bench.scaling is not None and bench.canary_runs is not None  # the published run measured both
    published_json.assert_gives_back(bench, published)
    assert format_bench(bench) == format_bench(published)


@pytest.mark.slow  # 7 interleaved rounds of 4 trainings: 6 s
def test_canary_runs_together_against_one_at_a_time(one_thread):
    """Interleaved rounds of 2 canary runs of tsdp's loop each way: one rate per side, the speed-up the per-round
    ratio's median within its range, the two ways' scores equal to float rounding, the summary prints them."""
    r = bench_canary_runs(runs=2, canaries=4, epochs=1)
    assert r.rounds == 7 and r.steps == 4 and r.torch_threads == 1
    for side in ("alone", "together"):
        assert 0 < r.runs_per_second[side].min <= r.runs_per_second[side].median
    assert r.speedup.min <= r.speedup.median <= r.speedup.max
    assert r.max_score_difference < 1e-4
    text = format_bench({"device": "cpu", "threads": 1, "batched_trials_per_minute_per_world": 1e6, "rounds": 7,
                         "naive_trials_per_second": 1.0, "speedup": 1.0, "speedup_range": [1.0, 1.0],
                         "goal_trials_per_minute_per_world": 1e6, "goal_speedup": 100.0, "meets_goals": False,
                         "canary_runs": r.as_dict()})
    assert f"together {r.runs_per_second['together'].median:.2f} runs/s" in text
