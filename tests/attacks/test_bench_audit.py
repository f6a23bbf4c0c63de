"""`tsdp bench audit`: a tiny real run's bookkeeping and its human summary (no wall-clock asserts: a benchmark)."""
import pytest

from tsdp.attacks.montecarlo.bench import bench_audit, bench_scaling, format_bench


def test_scaling_bookkeeping_on_one_and_two_workers():
    """Busy + overhead = wall, the efficiencies are the ratios they claim, 1 and 2 workers merge identical counts."""
    messages = []
    s = bench_scaling(trials=2048, shard_size=512, progress=messages.append)
    assert s["shards"] == 8 and [m.endswith(f"on {w} worker(s)") for m, w in zip(messages, (1, 2))] == [True, True]
    one, two = s["workers"]
    assert one["identical"] and two["identical"]
    for row in (one, two):
        assert row["busy_seconds_per_worker"] + row["overhead_seconds"] == pytest.approx(row["seconds"])
        assert row["steady_trials_per_minute_per_world"] == pytest.approx(60 * 2048 / row["busy_seconds_per_worker"])
    assert two["scaling_efficiency"] == pytest.approx(
        two["steady_trials_per_minute_per_world"] / (2 * one["steady_trials_per_minute_per_world"]))
    assert two["scaling_efficiency_wall"] == pytest.approx(
        two["trials_per_minute_per_world"] / (2 * one["trials_per_minute_per_world"]))
    assert s["merge_seconds_per_shard"] > 0 and s["shard_payload_bytes"] > 0


def test_summary_states_the_figures_and_the_verdict():
    result = bench_audit(trials=4096, naive_trials=3, scaling=False)
    assert result["speedup"] == pytest.approx(result["batched_trials_per_second"] / result["naive_trials_per_second"])
    text = format_bench(result)
    assert f"{result['speedup']:.0f}x" in text and f"{result['batched_trials_per_minute_per_world'] / 1e6:.2f} M" in text
    assert ("NOT met" in text) is (not result["meets_goals"])
