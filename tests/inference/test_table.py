"""The CRPS-by-(ε, r) table of Appendix H on synthetic data, and `tsdp forecast tradeoff` on a file.

``data/inference_json_before_typed_rows.json`` was recorded from the code that built the rows and the table as dicts
(`tsdp forecast tradeoff --json` and ``inference_table``'s dict through the CLI's ``dumps``, on the seeds below; the
table's numbers re-recorded, keys and order unchanged, when the samplers and then the inference keep mask moved to
53-bit uniform draws, and the CRPS of both again when the runs' and the releases' generators took every bit of their
seeds, :mod:`tsdp.training.generators`): the
typed rows and table must give every key in the same order with the same numbers (CRPS to 1e-9 relative: a trained
float32 model's).
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tsdp.attacks.inference.mechanism import save_model
from tsdp.attacks.inference.crps_table import InferenceGrid, Releases, crps_tradeoff, inference_table, last_contexts
from tsdp.datasets.series import SeriesData, synthetic
from tsdp.training.models import make_model
from tsdp.cli.main import main
from tsdp.cli.output import dumps
from tsdp.theorems.bounds.inference import InferenceConfig
from tsdp.verify.inference_accounting import calibrate_sigma

BEFORE = json.loads((Path(__file__).parent / "data" / "inference_json_before_typed_rows.json").read_text())


def assert_released(got, want):
    """``got`` has ``want``'s keys in ``want``'s order, recursively, and its values (CRPS to 1e-9 relative)."""
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            assert_released(got[k], want[k])
    elif isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_released(g, w)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=0)
    else:
        assert got == want


def test_table_is_plain_data_with_calibrated_sigmas():
    t = inference_table(N=8, L=40, context_length=4, forecast_length=2, epochs=1,
                        grid=InferenceGrid(epsilons=(1.0, 4.0), rates=(1.0, 0.5)), releases=Releases(n_samples=20,
                                                                                                     repeats=5, seed=0))
    rows = t.rows
    assert len(rows) == 1 + 2 * 2 and rows[0].epsilon == math.inf
    assert_released(json.loads(dumps(t.as_dict())), BEFORE["table"])  # the dict-built table's JSON
    for row in rows[1:]:
        cfg = InferenceConfig(r=row.r, sigma=1.0, w=1, v=1.0, context_length=4)
        assert row.sigma == calibrate_sigma(cfg, row.epsilon, 1e-4).sigma
        assert np.isfinite(row.crps) and row.crps > 0
    # more budget, less noise: σ falls with ε at every r
    for r in (1.0, 0.5):
        s = [row.sigma for row in rows[1:] if row.r == r]
        assert s[0] > s[1]
    assert set(t.best_r) == {1.0, 4.0}
    for eps, r in t.best_r.items():  # the rate of the lowest mean CRPS at that ε
        assert r == min((row for row in rows if row.epsilon == eps), key=lambda row: row.crps).r


def test_noise_costs_crps_on_a_learnable_series():
    """A model that forecasts the context mean: huge noise (ε = 0.05) must score worse than ε = 50."""
    data = synthetic(16, 40, seed=3)

    class Mean(torch.nn.Module):
        def sample(self, context, n, gen):
            m = context.mean(-1, keepdim=True)[:, None, :].expand(-1, n, 2)
            return m + 0.1 * torch.randn(m.shape, generator=gen)

    rows = crps_tradeoff(Mean(), data, context_length=8, forecast_length=2,
                         grid=InferenceGrid(epsilons=(0.05, 50.0), rates=(1.0,), delta=1e-4, v=1.0),
                         releases=Releases(n_samples=50, seed=0))
    by_eps = {row.epsilon: row.crps for row in rows}
    assert by_eps[0.05] > by_eps[50.0]


def test_short_series_is_refused():
    with pytest.raises(ValueError, match="series 1"):
        last_contexts(SeriesData((np.ones(10), np.ones(3))), 4)


def test_tradeoff_cli(tmp_path, capsys):
    torch.manual_seed(0)
    save_model(tmp_path / "m.pt", make_model("simple-ff", 4, 2), "simple-ff", 4, 2)
    data = synthetic(4, 30, seed=1)
    (tmp_path / "d.csv").write_text("\n".join(",".join(f"{s[i]:.6f}" for s in data.series) for i in range(30)))
    code = main(["forecast", "tradeoff", "--model-file", str(tmp_path / "m.pt"), "--data", str(tmp_path / "d.csv"),
                 "--context-length", "4", "--epsilons", "2", "--rates", "1", "0.5", "--samples", "20", "--seed", "0",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out.pop("seed") == 0  # recorded after the rows and the model, recorded before it was printed
    assert out.pop("note") is None  # added after the recording: the file has no training scores to note
    assert_released(out, BEFORE["tradeoff"])
    # the reference row's ε = inf is JSON null
    assert code == 0 and [(r["epsilon"], r["r"]) for r in out["rows"]] == [(None, 1.0), (2.0, 1.0), (2.0, 0.5)]
    code = main(["forecast", "tradeoff", "--model-file", str(tmp_path / "m.pt"), "--data", str(tmp_path / "d.csv"),
                 "--context-length", "4", "--rates", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "--rates" in err and len(err.strip().splitlines()) == 1


def test_tradeoff_draws_a_fresh_secret_seed_unless_given(tmp_path, capsys):
    """Without --seed every table draws its own seed (two draws of 63 bits collide with probability 2^-63) and
    records it; that seed given back reproduces the table, and the text output prints it."""
    torch.manual_seed(0)
    save_model(tmp_path / "m.pt", make_model("simple-ff", 4, 2), "simple-ff", 4, 2)
    data = synthetic(4, 30, seed=1)
    (tmp_path / "d.csv").write_text("\n".join(",".join(f"{s[i]:.6f}" for s in data.series) for i in range(30)))
    flags = ["forecast", "tradeoff", "--model-file", str(tmp_path / "m.pt"), "--data", str(tmp_path / "d.csv"),
             "--context-length", "4", "--epsilons", "2", "--rates", "0.5", "--samples", "20"]

    def table(*extra):
        assert main(flags + list(extra)) == 0
        return capsys.readouterr().out

    first, second = json.loads(table("--json")), json.loads(table("--json"))
    assert first["seed"] != second["seed"] and 0 <= first["seed"] < 2 ** 63
    assert first["rows"] != second["rows"]  # other keep patterns and noise
    assert json.loads(table("--json", "--seed", str(first["seed"]))) == first
    assert table("--seed", "7").splitlines()[-1].startswith("seed 7 (--seed): --seed 7 reproduces the table")
    assert "(fresh, from the operating system's entropy)" in table().splitlines()[-1]


def test_tradeoff_uses_every_bit_of_its_seed(tmp_path, capsys):
    """Seeds that agree in their low 32 bits (torch's CPU ``manual_seed`` keeps only those) draw different tables."""
    torch.manual_seed(0)
    save_model(tmp_path / "m.pt", make_model("simple-ff", 4, 2), "simple-ff", 4, 2)
    data = synthetic(4, 30, seed=1)
    (tmp_path / "d.csv").write_text("\n".join(",".join(f"{s[i]:.6f}" for s in data.series) for i in range(30)))
    flags = ["forecast", "tradeoff", "--model-file", str(tmp_path / "m.pt"), "--data", str(tmp_path / "d.csv"),
             "--context-length", "4", "--epsilons", "2", "--rates", "0.5", "--samples", "20", "--json"]
    rows = []
    for seed in (3, 3 + 2 ** 32):
        assert main(flags + ["--seed", str(seed)]) == 0
        rows.append(json.loads(capsys.readouterr().out)["rows"])
    assert rows[0] != rows[1]
