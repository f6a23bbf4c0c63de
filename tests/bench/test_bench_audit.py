"""`tsdp bench audit`: a tiny real run's bookkeeping and its human summary (no wall-clock asserts: a benchmark)."""
import pytest

from tsdp.bench.audit import bench_audit, bench_scaling, format_bench


@pytest.mark.slow  # 7 interleaved rounds on 1 and 2 workers
def test_scaling_rounds_on_one_and_two_workers():
    """Interleaved rounds: one rate per round and side, the efficiency is the rates' per-round ratio over 2,
    1 and 2 warm workers merge identical counts, the human summary prints the median and the environment."""
    messages = []
    s = bench_scaling(trials=2048, shard_size=512, rounds=7, progress=messages.append)
    assert s["shards"] == 8 and s["identical"] and len(messages) == 7 and messages[-1].endswith("round 7/7")
    one, two = s["trials_per_minute_per_world"]["1"], s["trials_per_minute_per_world"]["2"]
    assert one["min"] <= one["median"] <= one["max"] and two["min"] <= two["median"] <= two["max"]
    eff = s["scaling_efficiency"]
    assert eff["min"] <= eff["median"] <= eff["max"]
    assert two["max"] / (2 * one["min"]) >= eff["max"] and two["min"] / (2 * one["max"]) <= eff["min"]
    assert s["merge_seconds_per_shard"] > 0 and s["shard_payload_bytes"] > 0
    text = format_bench({"device": "cpu", "threads": 1, "batched_trials_per_minute_per_world": 1e6, "rounds": 7,
                         "naive_trials_per_second": 1.0, "speedup": 1.0, "speedup_range": [1.0, 1.0],
                         "goal_trials_per_minute_per_world": 1e6,
                         "goal_speedup": 100.0, "meets_goals": False, "scaling": s})
    assert f"efficiency {eff['median']:.2f}" in text and "load average" in text


def test_summary_states_the_figures_and_the_verdict():
    result = bench_audit(trials=4096, naive_trials=3, scaling=False)
    assert result["rounds"] == 7 and result["speedup_range"][0] <= result["speedup"] <= result["speedup_range"][1]
    # the speedup is the median of per-round ratios: between the extreme rounds' rate ratios
    assert result["speedup"] > 0 and result["environment"]["before"]["cpus"] >= 1
    text = format_bench(result)
    assert f"{result['speedup']:.0f}x" in text and f"{result['batched_trials_per_minute_per_world'] / 1e6:.2f} M" in text
    assert ("NOT met" in text) is (not result["meets_goals"])
