"""`tsdp bench loop`: the measurement's bookkeeping, its table, and the CLI (no wall-clock asserts: a benchmark)."""
import json
import statistics

import pytest
import torch

from tsdp.attacks.loop import bench
from tsdp.attacks.loop.bench import ENGINES, GOAL, bench_loop, format_bench, naive_dp_step
from tsdp.attacks.loop.models import make_model
from tsdp.attacks.loop.step import dp_step
from tsdp.cli.main import main


def test_naive_baseline_is_algorithm_2():
    """The baseline computes the same noise-free step as both engines (1e-12, float64): the ratio compares equals."""
    torch.manual_seed(0)
    c = 5 + torch.randn(5, 30, dtype=torch.float64)
    f = 5 + torch.randn(5, 6, dtype=torch.float64)
    models = {k: make_model("itransformer", 30, 6).double() for k in ("naive", *ENGINES)}
    for m in list(models.values())[1:]:
        m.load_state_dict(models["naive"].state_dict())
    kw = dict(clip=0.05, sigma=0.0, batch_size=5, generator=None)
    naive_dp_step(models["naive"], torch.optim.SGD(models["naive"].parameters(), lr=1.0), c, f, **kw)
    for e in ENGINES:
        dp_step(models[e], torch.optim.SGD(models[e].parameters(), lr=1.0), c, f, engine=e, **kw)
        for (k, p), q in zip(models[e].named_parameters(), models["naive"].parameters()):
            assert torch.allclose(p, q, atol=1e-12, rtol=0), (e, k)


def test_speedup_is_median_of_round_ratios(monkeypatch):
    """With stubbed timings the reported speedups are the medians of per-round naive/engine ratios, goal_met follows."""
    per_step = {"factored": [1.0, 2.0, 4.0], "vmap": [2.0, 2.0, 2.0], "naive": [30.0, 50.0, 60.0]}
    # each round times factored, vmap, then naive
    sequence = iter([per_step[k][r] for r in range(3) for k in ("factored", "vmap", "naive")])
    monkeypatch.setattr(bench, "_seconds_per_step", lambda step, n: next(sequence))
    result = bench_loop(("dlinear",), rounds=3, steps=1, naive_steps=1, batch=2, context_length=30, forecast_length=6)
    entry = result["models"]["dlinear"]
    assert entry["engines"]["factored"]["speedup"] == statistics.median([30.0, 25.0, 15.0])
    assert entry["engines"]["factored"]["speedup_min"] == 15.0 and entry["engines"]["factored"]["speedup_max"] == 30.0
    assert entry["engines"]["vmap"]["speedup"] == 25.0
    assert entry["naive_steps_per_s"] == pytest.approx(1 / 50.0)
    assert result["goal_met"] is (25.0 >= GOAL)


def test_real_run_and_table():
    """A tiny real run: positive finite rates, ratios consistent with them, a table naming each model and the verdict."""
    result = bench_loop(("simple-ff", "dlinear"), rounds=2, steps=1, naive_steps=1, batch=4)
    assert result["threads"] == torch.get_num_threads() and result["batch"] == 4
    for name in ("simple-ff", "dlinear"):
        entry = result["models"][name]
        assert entry["naive_steps_per_s"] > 0
        for e in ENGINES:
            x = entry["engines"][e]
            assert 0 < x["speedup_min"] <= x["speedup"] <= x["speedup_max"] < float("inf")
    table = format_bench(result)
    assert "simple-ff" in table and "dlinear" in table and ("goal" in table)
    assert ("NOT met" in table) is (not result["goal_met"])


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown model"):
        bench_loop(("lstm",))
    with pytest.raises(ValueError, match=">= 1"):
        bench_loop(("dlinear",), rounds=0)


def test_cli(capsys):
    """`tsdp bench loop --models dlinear --rounds 1 --json` prints one JSON object; bad flags exit 2 naming them."""
    assert main(["bench", "loop", "--models", "dlinear", "--rounds", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert list(d["models"]) == ["dlinear"] and d["rounds"] == 1 and set(d["models"]["dlinear"]["engines"]) == set(ENGINES)
    assert main(["bench", "loop", "--rounds", "0"]) == 2
    err = capsys.readouterr().err
    assert "--rounds" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "loop", "--models", "lstm"])
    assert exit_info.value.code == 2
