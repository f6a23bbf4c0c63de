"""`tsdp bench loop`: its candidates compute what they claim, its bookkeeping, its table, the CLI (no wall-clock asserts)."""
import copy
import json

import pytest
import torch

from tsdp.bench import loop as bench
from tsdp.bench.loop import (BENCH_MODELS, TARGETS, LoopBench, LSTMDeepAR, bench_loop, format_bench, make_bench_model,
                             opacus_step, opacus_update_error)
from tsdp.bench.rounds import Conditions, Environment, Spread, Timed
from tsdp.bench.together import TogetherRow
from tsdp.training.factored import factored_clipped_sum
from tsdp.cli.main import main
from tsdp.cli.output import dumps

import published_json

pytest.importorskip("opacus")


def batch(n, lc=12, lf=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return 5 + torch.randn(n, lc, generator=g, dtype=torch.float64), 5 + torch.randn(n, lf, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("name,mode", [("mlp", "ghost"), ("mlp", "hooks"), ("simple-ff", "ghost"), ("deepar", "hooks")])
def test_opacus_candidate_is_algorithm_2(name, mode):
    """The Opacus column's noise-free update equals tsdp's exact clipped sum / Λ (float64) to Opacus's own offset:
    it clips by C / (||g_i|| + 1e-6), a relative change ≤ 1e-6 / C; some windows clipped, some not."""
    torch.manual_seed(1)
    model = make_bench_model(name, 12, 3).double()
    c, f = batch(6)
    _, norms = factored_clipped_sum(model, c, f, 1.0)
    clip = float(norms.median())
    assert 0 < int((norms > clip).sum()) < 6
    assert opacus_update_error(model, mode, c, f, clip) < 1.5e-6 / clip


def test_opacus_ghost_refuses_deepar():
    """Opacus's ghost clipping does not take DeepAR (its LSTM linears run many times per forward): the bench falls
    back to hooks and records why."""
    torch.manual_seed(2)
    model = make_bench_model("deepar", 12, 3)
    c, f = batch(4, seed=2)
    with pytest.raises(NotImplementedError):
        opacus_update_error(model, "ghost", c.float(), f.float(), 1.0)
    mode, run, refused = bench.opacus_candidate(model, c.float(), f.float(), dict(clip=1.0, sigma=1.0, batch_size=4,
                                                                                    generator=None))
    assert mode == "hooks" and "ghost" in refused and run is not None


def test_opacus_step_adds_noise_of_sigma_c_over_lambda():
    """Two noise seeds from the same state (lr 1): the clipped sums cancel, the updates differ by N(0, 2 σ² C² / Λ²)."""
    torch.manual_seed(3)
    model = make_bench_model("mlp", 12, 3).double()
    c, f = batch(5, seed=3)
    moved = []
    for seed in (0, 1):
        m = copy.deepcopy(model)
        before = torch.cat([p.detach().reshape(-1).clone() for p in m.parameters()])
        opacus_step(m, "hooks", clip=0.5, sigma=2.0, batch_size=5, lr=1.0,
                    generator=torch.Generator().manual_seed(seed))(c, f)
        moved.append(before - torch.cat([p.detach().reshape(-1) for p in m.parameters()]))
    diff = moved[0] - moved[1]  # the clipped sums cancel; N(0, 2 σ² C² / Λ²) per coordinate remains
    assert float(diff.std()) == pytest.approx(2 ** 0.5 * 2.0 * 0.5 / 5, rel=0.05)


def test_ratios_and_targets_from_rounds(monkeypatch):
    """With stubbed round times, ms per step and the ratios are medians over rounds, and the targets follow."""
    seconds = {"nonprivate": [1.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0], "tsdp": [1.2, 3.0, 1.5, 1.2, 1.2, 1.2, 1.2],
               "opacus": [3.0, 6.0, 2.0, 3.0, 3.0, 3.0, 3.0]}

    def fake_interleave(runs, rounds, **kw):
        assert list(runs) == ["nonprivate", "tsdp", "opacus"] and rounds == 7
        env = Environment("a machine", 2, {}, (1.0, 1.0, 1.0))
        return Timed(rounds, {k: tuple(v) for k, v in seconds.items()}, {}, Conditions(env, env))

    monkeypatch.setattr(bench, "interleave", fake_interleave)
    monkeypatch.setattr(bench, "SECONDS_PER_ROUND", 0.0)  # one step per round
    result = bench_loop(("mlp",), batches=(256,), context_length=12, forecast_length=3)
    (row,) = result.rows
    assert row.steps == 1 and row.ms["tsdp"].median == pytest.approx(1200.0)
    assert row.ratios["tsdp/nonprivate"].as_dict() == {"median": pytest.approx(1.2), "min": pytest.approx(1.2),
                                                       "max": pytest.approx(1.5)}
    assert row.ratios["tsdp/opacus"].median == pytest.approx(0.4)
    assert row.ratios["tsdp/opacus"].max == pytest.approx(0.75)
    assert row.targets_met == {"tsdp/nonprivate": 1.2 <= TARGETS["tsdp/nonprivate"]["256"], "tsdp/opacus": True}
    assert row.opacus_mode in ("ghost", "hooks")


@pytest.mark.slow  # a real bench run of 7 interleaved rounds
def test_real_run_and_table():
    """A tiny real run: positive times, consistent ratios, a table naming the model, the Opacus mode and the load."""
    result = bench_loop(("mlp", "deepar"), batches=(4,), context_length=12, forecast_length=3)
    assert result.torch_threads == 1 and [r.model for r in result.rows] == ["mlp", "deepar"]
    for row in result.rows:
        for s in row.ms.values():
            assert 0 < s.min <= s.median <= s.max < float("inf")
        # DeepAR's row times the nn.LSTM floor anchor too
        assert set(row.ms) == {"nonprivate", "tsdp", "opacus"} | ({"lstm"} if row.model == "deepar" else set())
    assert "tsdp/lstm" in result.rows[1].ratios and "tsdp/lstm" not in result.rows[0].ratios
    table = format_bench(result)
    assert table == format_bench(json.loads(dumps(result.as_dict())))  # the table reads the JSON form alike
    assert "mlp" in table and "deepar" in table and "(hooks)" in table and "load average" in table
    assert "nn.LSTM" in table
    assert "ghost refused for deepar" in table


def test_lstm_floor_is_deepar_on_nn_lstm():
    """The floor anchor computes DeepAR's loss: with DeepAR's LSTM weights copied into its nn.LSTM, the same
    per-sample losses (float64, 1e-10), so its step is the same work on torch's recurrence."""
    torch.manual_seed(4)
    floor = LSTMDeepAR(12, 3).double()
    reference = make_bench_model("deepar", 12, 3).double()
    reference.load_state_dict({k: v for k, v in floor.state_dict().items() if not k.startswith("lstm.")})
    with torch.no_grad():
        for layer, cell in enumerate(reference.rnn.cells):
            for part in ("ih", "hh"):
                getattr(floor.lstm, f"weight_{part}_l{layer}").copy_(cell[part].weight)
                getattr(floor.lstm, f"bias_{part}_l{layer}").copy_(cell[part].bias)
    c, f = batch(5, seed=4)
    cov = torch.randn(5, 15, 1, dtype=torch.float64)
    torch.testing.assert_close(floor(c, f, cov), reference(c, f, cov), rtol=1e-10, atol=1e-12)
    assert all(not p.requires_grad for p in floor.rnn.parameters())
    with torch.no_grad():
        floor.lstm.weight_hh_l1.mul_(0.5)  # the loss is nn.LSTM's: its weights move it
    assert float((floor(c, f, cov) - reference(c, f, cov)).abs().max()) > 1e-6


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    """docs/benchmarks/loop.json was written by the bench before its result was a record: the record rebuilt from it
    (its rows' and its cells-trained-together rows' spreads and conditions as records) gives back every key in its
    order and every value, and the same table."""
    published = published_json.published("loop")
    result = published_json.rebuilt(LoopBench, published)
    row = result.rows[0]
    assert isinstance(row.ms["tsdp"], Spread) and isinstance(row.ratios["tsdp/nonprivate"], Spread)
    assert isinstance(row.environment, Conditions) and isinstance(row.environment.before, Environment)
    assert len(result.together) == len(published["together"]) > 0
    for together in result.together:
        assert isinstance(together, TogetherRow) and isinstance(together.speedup, Spread)
        assert isinstance(together.ms["together"], Spread) and isinstance(together.cells_per_second["alone"], Spread)
        assert isinstance(together.environment, Conditions) and isinstance(together.environment.after, Environment)
    published_json.assert_gives_back(result, published)
    assert format_bench(result) == format_bench(published)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown model"):
        bench_loop(("lstm",))
    with pytest.raises(ValueError, match=">= 7"):
        bench_loop(("mlp",), rounds=3)
    with pytest.raises(ValueError, match="unknown model"):
        make_bench_model("lstm", 4, 2)
    assert set(BENCH_MODELS) >= {"mlp", "simple-ff", "deepar"}


def test_cli(capsys):
    """`tsdp bench loop --models mlp --batches 4 --json` prints one JSON object; bad flags exit 2 naming them."""
    assert main(["bench", "loop", "--models", "mlp", "--batches", "4", "--device", "cpu", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in d["rows"]] == ["mlp"] and d["rounds"] == 7 and d["torch_threads"] == 1
    assert d["device"] == "cpu"
    for argv, flag in ((["--rounds", "3"], "--rounds"), (["--models", "lstm"], "--models"),
                       (["--batches", "0"], "--batches"), (["--threads", "0"], "--threads"),
                       (["--device", "tpu"], "--device"), (["--device", ""], "--device"),
                       *([(["--device", "cuda"], "--device")] if not torch.cuda.is_available() else [])):
        assert main(["bench", "loop", *argv]) == 2
        err = capsys.readouterr().err
        assert flag in err and "Traceback" not in err
    assert main(["bench", "accounting", "--batches", "4"]) == 2
    assert "--batches" in capsys.readouterr().err
    assert main(["bench", "accounting", "--device", "cpu"]) == 2
    assert "--device" in capsys.readouterr().err

