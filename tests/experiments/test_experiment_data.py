"""`tsdp experiment --data FILE`: the grid on a user's long-format CSV, its split, scale-free CRPS, bad settings."""
import json
import math

import numpy as np
import pytest

from tsdp.datasets.benchmarks import UserData, user_split
from tsdp.cli.main import main


def _long_csv(path, scale=1.0, n=40, length=400):
    """n daily-seasonal series (season 24) of ``length`` values × ``scale`` in long format (item_id, timestamp, target)."""
    rng = np.random.default_rng(0)
    rows = ["item_id,timestamp,target"]
    for i in range(n):
        level = rng.uniform(20, 80)
        t = np.arange(length)
        x = level * (1 + 0.5 * np.sin(2 * np.pi * t / 24 + rng.uniform(0, 6))) + rng.normal(0, 0.05 * level, length)
        rows += [f"s{i},{j},{float(v) * scale!r}" for j, v in enumerate(x)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_split_of_a_users_file(tmp_path):
    """Test: the last 2·L_F values of every series as two rolling windows; validation: the L_F before them; train: the
    rest; series too short for L_F training values after both are dropped."""
    path = tmp_path / "mine.csv"
    path.write_text("item_id,timestamp,target\n" + "".join(f"a,{j},{j + 1}\n" for j in range(40))
                    + "".join(f"b,{j},{j + 1}\n" for j in range(31)))
    split = user_split(UserData(str(path), forecast_length=8, context_length=8, batch_size=1, sigma=4.0, season=1,
                                epochs=1, test_windows=2, validation_windows=1))
    assert split.dropped == 1 and split.train.N == 1 and split.train.lengths == (16,)
    np.testing.assert_array_equal(split.test.targets, [np.arange(25, 33), np.arange(33, 41)])
    np.testing.assert_array_equal(split.test.histories[1], np.arange(1, 33))
    np.testing.assert_array_equal(split.validation.targets, [np.arange(17, 25)])


def test_every_format_of_the_loader_gives_the_same_split(tmp_path):
    """The same 3 series as a long CSV, a wide CSV and GluonTS JSON lines: the same training series and test windows."""
    values = [np.arange(1.0, 61.0) * (i + 1) for i in range(3)]
    long_csv = tmp_path / "long.csv"
    long_csv.write_text("item_id,timestamp,target\n" + "".join(f"s{i},{j},{v}\n" for i, s in enumerate(values)
                                                               for j, v in enumerate(s)))
    wide_csv = tmp_path / "wide.csv"
    wide_csv.write_text("a,b,c\n" + "".join(",".join(str(s[j]) for s in values) + "\n" for j in range(60)))
    jsonl = tmp_path / "data.jsonl"
    jsonl.write_text("".join(json.dumps({"start": "2020-01-01", "target": s.tolist()}) + "\n" for s in values))
    splits = [user_split(UserData(str(p), forecast_length=10, context_length=10, batch_size=1, sigma=4.0, season=1,
                                  epochs=1)) for p in (long_csv, wide_csv, jsonl)]
    for split in splits:
        assert split.train.N == 3 and split.train.lengths == (40,) * 3
        np.testing.assert_array_equal(split.test.targets, [s[50:] for s in values])
        for got, want in zip(split.train.series, values):
            np.testing.assert_array_equal(got, want[:40])


def _table(tmp_path, csv, *extra):
    return main(["experiment", "--data", str(csv), "--seeds", "1", "--epochs", "2", "--samples", "10",
                 "--out", str(tmp_path / "out"), "--device", "cpu", *extra])


@pytest.mark.slow
def test_experiment_on_a_users_long_csv_prints_every_row(tmp_path, capsys):
    """40 series × 400 values with the --data defaults (L_F = L_C = 24, Λ = 40 // 4, σ = 4): the table has every ε
    column with a trained last iterate (σ = 4 buys steps at ε = 0.5), both baselines, and the spec's sources."""
    csv = _long_csv(tmp_path / "mine.csv")
    assert _table(tmp_path, csv, "--models", "simple-ff") == 0
    out = capsys.readouterr().out
    assert "dataset mine.csv: 40 training series, 40 test windows, L_F = 24, L_C = 24" in out
    assert all(f"ε = {e}" in out for e in ("0.5", "1", "2", "∞"))
    ff = next(line for line in out.splitlines() if line.startswith("SimpleFF "))
    assert ff.count("±") == 4 and "no step" not in ff
    assert any(line.startswith("Seasonal ") for line in out.splitlines())
    assert any(line.startswith("AutoETS ") for line in out.splitlines())
    assert _table(tmp_path, csv, "--models", "simple-ff", "--json") == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["dataset"]["batch_size"] == 10 and payload["dataset"]["sigma"] == 4.0
    assert payload["dataset"]["sources"]["batch_size"] == "tsdp experiment --data flags"


@pytest.mark.parametrize("argv,flag", [
    (["--season", "7"], "--season"),
    (["--data", "X", "--dataset", "electricity"], "--data"),
    (["--data", "X", "--forecast-length", "0"], "--forecast-length"),
    (["--data", "X", "--batch-size", "41"], "--batch-size"),
    (["--data", "X", "--season", "1000000000"], "--season"),
    (["--data", "X", "--test-windows", "5"], "--data"),
])
def test_bad_data_settings_are_one_line_naming_the_flag(tmp_path, capsys, argv, flag):
    """--data's settings without --data, --data with --dataset, a length of 0, Λ above the 40 series, a season
    longer than the series (DeepAR's lags would follow it), test windows that leave no series (120 values, 5 test
    and 1 validation window of 24 need 168): exit 2, one line naming the flag, before any training."""
    csv = _long_csv(tmp_path / "mine.csv", length=120)
    argv = [str(csv) if a == "X" else a for a in argv]
    assert main(["experiment", *argv, "--models", "simple-ff", "--out", str(tmp_path / "o"), "--seeds", "1",
                 "--epochs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0], err


@pytest.mark.slow
def test_the_grid_is_scale_free(tmp_path, capsys):
    """The same file × 1e-4 gives every row's CRPS (simple-ff and DLinear, ε 0.5, 1, 2, ∞; 2 seeds, 10 epochs) within
    15 % of × 1 (the old learned floor, 1 in data units, gave 0.672 vs 0.434 at ε = 2)."""
    crps = {}
    for scale in (1.0, 1e-4):
        csv = _long_csv(tmp_path / f"mine{scale}.csv", scale)
        assert main(["experiment", "--data", str(csv), "--models", "simple-ff", "dlinear", "--seeds", "2",
                     "--epochs", "10", "--samples", "50", "--out", str(tmp_path / f"o{scale}"), "--device", "cpu",
                     "--seed", "0", "--json"]) == 0  # one seed for both scales: the same draws
        rows = json.loads(capsys.readouterr().out)["rows"]
        crps[scale] = {(r["model"], r["epsilon"], r["checkpoint"]): r["crps_mean"] for r in rows}
    assert crps[1.0].keys() == crps[1e-4].keys() and len(crps[1.0]) == 16
    for key, value in crps[1.0].items():
        assert math.isfinite(value) and abs(crps[1e-4][key] - value) <= 0.15 * value, (key, value, crps[1e-4][key])


def test_the_same_data_in_another_folder_is_the_same_grid(tmp_path):
    """A cell's key holds the data's fingerprint, not its folder: a copy of the file elsewhere gives every cell the same
    key (its stored result is resumed); other values under the same name give another data fingerprint."""
    from tsdp.experiments.cells import cell_key
    from tsdp.experiments.grid import GridSettings, plan

    rows = "item_id,timestamp,target\n" + "".join(f"a,{j},{(j * 7) % 5 + 1}\n" for j in range(40))
    paths = []
    for folder, text in (("here", rows), ("there", rows), ("edited", rows.replace("a,39,", "a,39,9"))):
        (tmp_path / folder).mkdir()
        paths.append(tmp_path / folder / "mine.csv")
        paths[-1].write_text(text)

    def keys(path):
        user = UserData(str(path), forecast_length=4, context_length=4, batch_size=1, sigma=4.0, season=1, epochs=1)
        settings = GridSettings(user=user, seed=0)
        return [cell_key(c, settings).as_dict() for c in plan(models=("dlinear",), epsilons=(1.0,), seeds=1,
                                                               tops=("wor",))]

    here, there, edited = map(keys, paths)
    assert here == there
    assert [k["data"] for k in here] != [k["data"] for k in edited]


def test_run_grid_refuses_deepar_on_a_millisecond_step_before_any_cell(tmp_path):
    """The library's grid, as the command: DeepAR's covariates need GluonTS time features, which a millisecond step
    has none of; :func:`run_grid` refuses it naming the step's parameter before any cell trains or any file is
    written, even where no budget buys a step (no cell would read the step); a grid without DeepAR is not refused."""
    from tsdp.datasets.series import DataError
    from tsdp.experiments.grid import GridSettings, plan
    from tsdp.experiments.table import run_grid

    path = tmp_path / "ms.csv"
    path.write_text("item_id,timestamp,target\n" + "".join(
        f"{k},2020-01-01 00:00:00.{j:03d},{j % 7 + 1}\n" for k in "ab" for j in range(40)))
    user = UserData(str(path), forecast_length=4, context_length=4, batch_size=1, sigma=1.0, season=2, epochs=1)
    settings = GridSettings(user=user, n_samples=2, device="cpu")
    out = tmp_path / "out"
    with pytest.raises(DataError, match="no GluonTS time features") as caught:
        run_grid(plan(models=("simple-ff", "deepar"), epsilons=(0.001,), seeds=1), settings, folder=out)
    assert caught.value.parameter == "freq" and not out.exists()
    results, _ = run_grid(plan(models=("simple-ff",), epsilons=(0.001,), seeds=1), settings, folder=out)
    assert [r.steps for r in results] == [0]  # ε = 0.001 buys no step: stored, never trained
