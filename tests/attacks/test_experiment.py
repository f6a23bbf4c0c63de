"""`tsdp experiment`: the paper's split and hyperparameters, honest ε per cell, resume, worker identity, C7, bad input."""
import gzip
import json
import math

import numpy as np
import pytest

from tsdp.attacks.data.benchmarks import PAPER, VALIDATION_WINDOWS, load_split, shipped_split
from tsdp.attacks.data.series import DataError
from tsdp.attacks.experiment.cells import CellTask, cell_config, run_cell
from tsdp.attacks.experiment.grid import Cell, GridSettings, plan
from tsdp.attacks.experiment.table import Row, claim_c7, rows_of, run_grid
from tsdp.verify import accounting

TINY = GridSettings(epochs=1, n_samples=10, device="cpu")


def _gluonts_fixture(root, name="electricity", n=321, length=300, windows=2):
    """GluonTS's on-disk layout: metadata.json, train/ and test/ JSON lines (the test's rolling windows extend
    each training series by L_F per window), gzipped as get_dataset writes them."""
    rng = np.random.default_rng(5)
    f = PAPER[name].forecast_length
    folder = root / name
    (folder / "train").mkdir(parents=True)
    (folder / "test").mkdir()
    (folder / "metadata.json").write_text(json.dumps({"freq": "1H", "prediction_length": f}))
    full = [50 + 10 * np.sin(np.arange(length + windows * f) * 2 * np.pi / 24) + rng.normal(0, 1, length + windows * f)
            for _ in range(n)]
    with gzip.open(folder / "train" / "data.json.gz", "wt") as out:
        for i, s in enumerate(full):
            out.write(json.dumps({"start": "2012-01-01 00:00", "target": s[:length].tolist(), "item_id": i}) + "\n")
    with gzip.open(folder / "test" / "data.json.gz", "wt") as out:
        for w in range(1, windows + 1):
            for i, s in enumerate(full):
                out.write(json.dumps({"start": "2012-01-01 00:00", "target": s[:length + w * f].tolist()}) + "\n")
    return full


def test_the_papers_split_and_hyperparameters_on_a_gluonts_fixture(tmp_path):
    """Train: each training series less its last 5·L_F steps; validation: those five windows; test: GluonTS's
    rolling test entries, last L_F the targets; the cell's configuration has the paper's L_C, Λ, σ and the
    run uses C = 1e-4, Adam 1e-3, weight decay 1e-8, DeepAR's lags and season 24."""
    full = _gluonts_fixture(tmp_path)
    split = load_split("electricity", tmp_path)
    f = 24
    n, length = 321, 300
    assert split.train.N == n and split.train.lengths == (length - VALIDATION_WINDOWS * f,) * n
    assert split.validation.count == n * VALIDATION_WINDOWS
    np.testing.assert_array_equal(split.validation.targets[0], full[0][length - 5 * f: length - 4 * f])
    np.testing.assert_array_equal(split.validation.targets[4], full[0][length - f: length])
    assert split.test.count == 2 * n
    np.testing.assert_array_equal(split.test.targets[n], full[0][length + f: length + 2 * f])
    np.testing.assert_array_equal(split.test.histories[n], full[0][: length + f])
    spec = split.spec.as_dict()
    assert (spec["context_length"], spec["batch_size"], spec["sigma"], spec["season"], spec["epochs"]) == \
        (24, 128, 2.0, 24, 8000)
    assert (spec["clip"], spec["lr"], spec["weight_decay"]) == (1e-4, 1e-3, 1e-8)
    assert spec["lags"] == [1, 2, 3, 4, 5, 6, 7, 23, 24, 25] or tuple(spec["lags"]) == (1, 2, 3, 4, 5, 6, 7, 23, 24, 25)
    settings = GridSettings(dataset="electricity", data_dir=str(tmp_path), epochs=1, n_samples=10, device="cpu")
    cell = Cell("simple-ff", 2.0, 0, "1-event", "wor")
    config = cell_config(cell, settings)
    assert (config.N, config.L, config.context_length, config.forecast_length, config.batch_size, config.sigma) == \
        (321, 180, 24, 24, 128, 2.0)
    r = run_cell(CellTask(cell, settings))  # 180 steps per series, 40 % of them per step: ε = 2 buys no step
    assert (r.steps, r.epsilon_spent, math.isnan(r.crps)) == (0, 0.0, True)
    r = run_cell(CellTask(Cell("simple-ff", math.inf, 0, "1-event", "wor"), settings))
    assert r.steps == config.steps_per_epoch and r.epsilon_spent is None and math.isfinite(r.crps)


def test_offline_and_uncached_is_one_line_saying_what_to_download(tmp_path, capsys):
    with pytest.raises(DataError) as exc:
        load_split("traffic", tmp_path)
    text = str(exc.value)
    assert "\n" not in text and "get_dataset('traffic')" in text and str(tmp_path / "traffic") in text
    from tsdp.cli.main import main

    assert main(["experiment", "--dataset", "traffic", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "get_dataset('traffic')" in err


def test_each_cell_spends_what_tsdp_epsilon_says_within_its_budget():
    """The ε a cell records is `tsdp epsilon` of its configuration and steps (sound), ≤ the budget; one more step
    would exceed it unless the epochs cap stopped the run."""
    settings = GridSettings(epochs=30, n_samples=10, device="cpu")
    for eps in (0.5, 1.0):
        cell = Cell("dlinear", eps, 0, "1-event", "wor")
        r = run_cell(CellTask(cell, settings))
        config = cell_config(cell, settings)
        spent = accounting.epsilon(config, 1e-7, steps=r.steps, discretization=1e-3).epsilon
        assert r.epsilon_spent == spent <= eps
        assert accounting.epsilon(config, 1e-7, steps=r.steps + 1, discretization=1e-3).epsilon > eps


def test_a_killed_grid_resumes_and_workers_do_not_change_a_number(tmp_path):
    """Cells stored on disk are not run again (a removed file is, with the same result); 2 worker processes give
    the numbers of 1 (each cell's seed is spawned from one SeedSequence by its seed index)."""
    cells = plan(models=("simple-ff",), epsilons=(1.0, math.inf), seeds=2, tops=("wor",))
    first, info = run_grid(cells, TINY, folder=tmp_path)
    assert info["run"] == 4 and info["resumed"] == 0
    (tmp_path / f"{cells[1].key}.json").unlink()
    (tmp_path / f"{cells[2].key}.json").write_text("{truncated")  # a file cut by a kill is run again
    again, info = run_grid(cells, TINY, folder=tmp_path)
    assert info["run"] == 2 and info["resumed"] == 2
    assert [r.as_dict() | {"seconds": 0} for r in again] == [r.as_dict() | {"seconds": 0} for r in first]
    two, info = run_grid(cells, TINY, workers=2)
    assert info["executor"] == "processes"
    strip = lambda rs: [{k: v for k, v in r.as_dict().items() if k != "seconds"} for r in rs]  # noqa: E731
    assert strip(two) == strip(first)
    assert len({r.seed for r in first}) == 2


def _row(model, eps, mean):
    return Row(model, eps, "1-event", "wor", "last", mean, 0.0, 1, (1,), (eps,), True)


def test_claim_c7_verdict_names_its_cells():
    base = {"seasonal-naive": 0.25, "autoets": 0.40}
    ok = claim_c7([_row("deepar", 0.5, 0.157), _row("deepar", 1.0, 0.145), _row("dlinear", 0.5, 0.30),
                   _row("deepar", math.inf, 0.12)], base)
    assert ok.verdict == "confirmed" and ok.best_baseline == 0.25 and ok.margin == pytest.approx(0.25 - 0.157)
    assert {(c["model"], c["epsilon"]) for c in ok.cells} == {("deepar", 0.5), ("deepar", 1.0), ("dlinear", 0.5)}
    bad = claim_c7([_row("deepar", 0.5, 0.30), _row("deepar", 1.0, 0.20)], base)
    assert bad.verdict == "refuted" and bad.margin == pytest.approx(-0.05)
    assert claim_c7([_row("deepar", 2.0, 0.1)], base).verdict == "not evaluated"


def test_a_rows_infinite_epsilon_is_a_labelled_null_in_json():
    """The non-private column (ε = inf) is written null with an ``epsilon_note`` saying so (the report's results.json
    and ``tsdp experiment --json`` both take the rows' as_dict); a finite ε gets no note."""
    from tsdp.attacks.experiment.table import NO_DP

    private = _row("deepar", 0.5, 0.157).as_dict()
    plain = Row("deepar", math.inf, "1-event", "wor", "last", 0.12, 0.0, 1, (40,), (None,), True).as_dict()  # no ε spent
    assert private["epsilon"] == 0.5 and "epsilon_note" not in private
    assert plain["epsilon"] is None and plain["epsilon_note"] == NO_DP
    assert json.loads(json.dumps(plain, allow_nan=False))["epsilon_note"].startswith("null: ε = ∞")


def test_rows_are_mean_and_std_over_seeds_with_both_checkpoints():
    from tsdp.attacks.experiment.cells import CellResult

    rs = [CellResult(f"k{i}", "deepar", 1.0, i, "1-event", "wor", i, 8.0, 10 + i, 1.0, 0.9, "T6", c, c + 1, 3, 1.0,
                     "cpu") for i, c in enumerate((0.1, 0.2, 0.4))]
    last, selected = rows_of(rs)
    assert last.crps_mean == pytest.approx(np.mean([0.1, 0.2, 0.4])) and last.crps_std == pytest.approx(
        np.std([0.1, 0.2, 0.4], ddof=1))
    assert last.covered and not selected.covered and selected.crps_mean == pytest.approx(last.crps_mean + 1)
    assert last.steps == (10, 11, 12)


@pytest.mark.parametrize("argv,flag", [
    (["--seeds", "0"], "--seeds"), (["--epochs", "0"], "--epochs"), (["--samples", "1"], "--samples"),
    (["--w", "0"], "--w"), (["--v", "-1"], "--v"), (["--sigma-forecast", "nan"], "--sigma-forecast"),
    (["--delta", "1"], "--delta"),
    (["--discretization", "0"], "--discretization"), (["--epsilons", "0"], "--epsilons"),
    (["--epsilons", "nan"], "--epsilons"), (["--models", "arima"], "--models"), (["--tops", "poisson"], "--tops"),
    (["--dataset", "m4"], "--dataset"), (["--data-dir", "/nonexistent/x"], "--data-dir"),
    (["--workers", "0"], "--workers"), (["--cluster", "tcp://127.0.0.1:1"], "--cluster"),
    (["--out", "/proc/forbidden"], "--out"), (["--levels", "2-event"], "--levels"),
])
def test_bad_input_of_every_experiment_flag(capsys, argv, flag):
    from tsdp.cli.main import main

    with pytest.raises(SystemExit) if flag in ("--epsilons", "--models", "--tops", "--levels") else _nothing() as e:
        code = main(["experiment", *argv])
    code = e.value.code if flag in ("--epsilons", "--models", "--tops", "--levels") else code
    err = capsys.readouterr().err.strip()
    assert code == 2 and flag in err and len(err.splitlines()) == 1 and "Traceback" not in err


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_shipped_split_holds_out_test_and_validation_windows():
    split = shipped_split()
    assert split.train.N == 170 and split.dropped == 11 and split.test.count == split.validation.count == 170
    assert min(split.train.lengths) == 6


def test_experiment_command_json_keys_and_resume(tmp_path, capsys):
    """`tsdp experiment --json` without a dataset runs on the shipped M1 series; its keys are the documented ones;
    a second run reads every cell back (nothing trained) and prints the same rows."""
    from tsdp.cli.main import main

    argv = ["experiment", "--models", "dlinear", "--epsilons", "1", "inf", "--seeds", "1", "--tops", "wor",
            "--epochs", "1", "--samples", "10", "--device", "cpu", "--out", str(tmp_path / "cells"), "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["dataset"]["name"] == "m1-yearly" and first["split"]["train_series"] == 170
    assert {"rows", "baselines", "claim_c7", "dataset", "split"} <= set(first)
    for row in first["rows"]:
        assert {"model", "epsilon", "crps_mean", "crps_std", "seeds", "steps", "epsilon_spent", "checkpoint"} <= set(row)
    assert {r["checkpoint"] for r in first["rows"]} == {"last", "selected"}
    assert set(first["baselines"]) == {"seasonal-naive", "autoets"}
    assert {"verdict", "cells"} <= set(first["claim_c7"]) and first["claim_c7"]["cells"][0]["model"] == "dlinear"
    assert first["run"]["run"] == 2 and first["run"]["resumed"] == 0
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["run"]["run"] == 0 and again["run"]["resumed"] == 2 and again["rows"] == first["rows"]
    assert again["baselines"] == first["baselines"] and (tmp_path / "cells" / "baselines.json").is_file()
