"""`tsdp experiment`: the paper's split and hyperparameters, honest ε per cell, resume, worker identity, C7, bad input."""
import gzip
import json
import math

import numpy as np
import pytest

from tsdp.datasets.benchmarks import PAPER, load_split, shipped_split
from tsdp.datasets.series import DataError
from tsdp.experiments.cells import CellTask, cell_config, run_cell
from tsdp.experiments.grid import Cell, GridSettings, plan
from tsdp.experiments.table import Row, claim_c7, rows_of, run_grid, same_runs
from tsdp.verify import accounting
from tsdp.verify.rounded import rounded_up

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
            for s in full:
                out.write(json.dumps({"start": "2012-01-01 00:00", "target": s[:length + w * f].tolist()}) + "\n")
    return full


def test_the_papers_split_and_hyperparameters_on_a_gluonts_fixture(tmp_path):
    """Train: each training series less its last 7·L_F steps (the official code's 7 validation windows);
    validation: those seven windows; test: GluonTS's rolling test entries, last L_F the targets; the cell's
    configuration has the paper's L_C, Λ, σ and the run uses C = 1e-4, Adam 1e-3, weight decay 1e-8, DeepAR's lags
    and season 24."""
    full = _gluonts_fixture(tmp_path)
    split = load_split("electricity", tmp_path)
    f, k = 24, 7
    n, length = 321, 300
    assert split.train.N == n and split.train.lengths == (length - k * f,) * n
    assert split.validation.count == n * k
    np.testing.assert_array_equal(split.validation.targets[0], full[0][length - 7 * f: length - 6 * f])
    np.testing.assert_array_equal(split.validation.targets[6], full[0][length - f: length])
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
        (321, 132, 24, 24, 128, 2.0)
    r = run_cell(CellTask(cell, settings))  # 132 steps per series, 40 % of them per step: ε = 2 buys no step
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


def test_cells_trained_together_are_the_cells_trained_alone(tmp_path):
    """The default grid (cells of one model and column trained together) and --cell-by-cell give every cell the same
    steps, sound ε, checkpoint step and file key exactly, its CRPS to float rounding (rtol 1e-5; measured 1e-8; cells
    without DP exactly: alone, such a cell trains as a group of one), and files with the same fields."""
    cells = plan(models=("simple-ff",), epsilons=(1.0, math.inf), seeds=2, tops=("wor",))
    together, info = run_grid(cells, TINY, folder=tmp_path / "together")
    alone, info_alone = run_grid(cells, TINY, folder=tmp_path / "alone", together=False)
    assert info.together and not info_alone.together and info.run == info_alone.run == 4
    for a, b in zip(together, alone):
        fuzzy = ("crps", "selected_crps", "seconds")
        assert {k: v for k, v in a.as_dict().items() if k not in fuzzy} == {
            k: v for k, v in b.as_dict().items() if k not in fuzzy}
        assert math.isclose(a.crps, b.crps, rel_tol=1e-5) and math.isclose(a.selected_crps, b.selected_crps,
                                                                          rel_tol=1e-5)
        if math.isinf(a.epsilon):  # cells without DP: the cell in its group is its group of one, bit for bit
            assert (a.crps, a.selected_crps) == (b.crps, b.selected_crps)
        files = [json.loads((tmp_path / side / f"{a.key}.json").read_text()) for side in ("together", "alone")]
        assert files[0]["key"] == files[1]["key"] and set(files[0]["result"]) == set(files[1]["result"])


def test_cell_by_cell_flag(tmp_path, capsys):
    from tsdp.cli.main import main

    argv = ["experiment", "--models", "dlinear", "--epsilons", "1", "--seeds", "1", "--epochs", "1", "--samples",
            "10", "--device", "cpu", "--out", str(tmp_path), "--json"]
    assert main(argv + ["--cell-by-cell"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["together"] is False
    (tmp_path / "1-event_wor_dlinear_eps1.0_seed0.json").unlink()
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["run"]["together"] is True
    with pytest.raises(SystemExit):
        main(argv + ["--cell-by-cell=yes"])


def test_a_killed_grid_resumes_and_workers_do_not_change_a_number(tmp_path):
    """Cells stored on disk are not run again (a removed file is, with the same result); 2 worker processes give
    the numbers of 1 (each cell's seed is spawned from one SeedSequence by its seed index)."""
    cells = plan(models=("simple-ff",), epsilons=(1.0, math.inf), seeds=2, tops=("wor",))
    first, info = run_grid(cells, TINY, folder=tmp_path)
    assert info.run == 4 and info.resumed == 0
    (tmp_path / f"{cells[1].key}.json").unlink()
    (tmp_path / f"{cells[2].key}.json").write_text("{truncated")  # a file cut by a kill is run again
    again, info = run_grid(cells, TINY, folder=tmp_path)
    assert info.run == 2 and info.resumed == 2
    assert [r.as_dict() | {"seconds": 0} for r in again] == [r.as_dict() | {"seconds": 0} for r in first]
    two, info = run_grid(cells, TINY, workers=2)
    assert info.executor == "processes"
    strip = lambda rs: [{k: v for k, v in r.as_dict().items() if k != "seconds"} for r in rs]  # noqa: E731
    assert strip(two) == strip(first)
    assert len({r.seed for r in first}) == 2


def _row(model, eps, mean):
    return Row(model, eps, "1-event", "wor", "last", mean, 0.0, 1, (1,), (eps,), True, (False,))


def test_claim_c7_verdict_names_its_cells():
    """The best DP cell of each ε ≤ 1 against the better baseline; the verdict rests on all of them when it holds,
    on the losing ones otherwise, and its line names the data and those cells."""
    base = {"seasonal-naive": 0.25, "autoets": 0.40}
    ok = claim_c7([_row("deepar", 0.5, 0.157), _row("deepar", 1.0, 0.145), _row("dlinear", 0.5, 0.30),
                   _row("deepar", math.inf, 0.12)], base, "traffic")
    assert ok.verdict == "confirmed" and ok.best_baseline == 0.25 and ok.margin == pytest.approx(0.25 - 0.157)
    assert {(c["model"], c["epsilon"]) for c in ok.cells} == {("deepar", 0.5), ("deepar", 1.0), ("dlinear", 0.5)}
    assert [(c["model"], c["epsilon"]) for c in ok.deciding] == [("deepar", 0.5), ("deepar", 1.0)]
    assert ok.line() == ("confirmed on traffic: at every ε ≤ 1 a DP model beats the better baseline, seasonal-naive "
                         "0.2500 (ε = 0.5: deepar (wor) 0.1570; ε = 1: deepar (wor) 0.1450)")
    bad = claim_c7([_row("deepar", 0.5, 0.30), _row("deepar", 1.0, 0.20)], base, "traffic")
    assert bad.verdict == "refuted" and bad.margin == pytest.approx(-0.05)
    assert [(c["model"], c["epsilon"]) for c in bad.deciding] == [("deepar", 0.5)]
    assert "ε = 0.5: deepar (wor) 0.3000" in bad.line() and "ε = 1:" not in bad.line()
    assert claim_c7([_row("deepar", 2.0, 0.1)], base, "traffic").verdict == "not evaluated"


def test_c7_counts_an_epsilon_whose_budget_buys_no_step_as_no_win():
    """A grid column ε ≤ 1 where every DP model's budget bought no step (mean CRPS NaN: no forecast) is not dropped
    from the rule: no DP model beats the baselines there, so the rule does not hold, and the line names that ε
    among all the grid's ε ≤ 1; a model without a step beside one that trained at the same ε is no win, not a loss."""
    base = {"seasonal-naive": 0.25, "autoets": 0.40}
    no_step = Row("dlinear", 0.01, "1-event", "wor", "last", math.nan, math.nan, 1, (0,), (0.0,), True, (False,))
    ev = claim_c7([no_step, _row("dlinear", 1.0, 0.10)], base, "traffic")
    assert ev.verdict == "refuted" and ev.margin == -math.inf
    assert [c["epsilon"] for c in ev.per_epsilon] == [0.01, 1.0]
    assert [(c["epsilon"], c["beats_baselines"]) for c in ev.deciding] == [(0.01, False)]
    assert "ε = 0.01: dlinear (wor) no step" in ev.line() and "(of 2 ε ≤ 1)" in ev.line()
    partly = claim_c7([no_step, _row("deepar", 0.01, 0.12), _row("dlinear", 1.0, 0.10)], base, "traffic")
    assert partly.verdict == "confirmed" and partly.margin == pytest.approx(0.25 - 0.12)
    assert claim_c7([no_step], base, "traffic").verdict == "not evaluated"


@pytest.mark.parametrize("dataset,words", [
    ("m1-yearly", ("reproduced on M1 yearly", "not reproduced on M1 yearly")),
    ("traffic", ("confirmed on traffic", "refuted on traffic")),
    ("electricity", ("confirmed on electricity", "refuted on electricity")),
    ("solar_10_minutes", ("confirmed on solar_10_minutes", "refuted on solar_10_minutes")),
])
@pytest.mark.parametrize("dp,holds", [(0.10, True), (0.134, True), (0.135, False), (0.136, False), (0.7, False)])
def test_c7_is_worded_on_the_data_it_was_measured_on(dataset, words, dp, holds):
    """On the paper's datasets the rule confirms or refutes the paper's claim; on M1 yearly (not the paper's data)
    it says only whether the finding is reproduced there. A tie with the better baseline (AutoETS 0.135) is no
    win."""
    ev = claim_c7([_row("dlinear", 0.5, dp), _row("simple-ff", 1.0, 0.01)], {"seasonal-naive": 0.205,
                                                                            "autoets": 0.135}, dataset)
    assert ev.line().startswith(words[0 if holds else 1] + ":")
    assert ev.verdict == words[0 if holds else 1].split(" on ")[0]
    assert (ev.baseline, ev.best_baseline, ev.margin) == ("autoets", 0.135, pytest.approx(0.135 - dp))
    if not holds:  # it names the losing cell, not the winning one
        assert f"ε = 0.5: dlinear (wor) {dp:.4f}" in ev.line() and "simple-ff" not in ev.line()


def test_a_rows_infinite_epsilon_is_a_labelled_null_in_json():
    """The non-private column (ε = inf) is written null with an ``epsilon_note`` saying so (the report's results.json
    and ``tsdp experiment --json`` both take the rows' as_dict); a finite ε gets no note."""
    from tsdp.experiments.table import NO_DP

    private = _row("deepar", 0.5, 0.157).as_dict()
    plain = Row("deepar", math.inf, "1-event", "wor", "last", 0.12, 0.0, 1, (40,), (None,), True,
                (False,)).as_dict()  # no ε spent
    assert private["epsilon"] == 0.5 and "epsilon_note" not in private
    assert plain["epsilon"] is None and plain["epsilon_note"] == NO_DP
    assert json.loads(json.dumps(plain, allow_nan=False))["epsilon_note"].startswith("null: ε = ∞")


def test_rows_are_mean_and_std_over_seeds_with_both_checkpoints():
    from tsdp.experiments.cells import CellResult

    rs = [CellResult(f"k{i}", "deepar", 1.0, i, "1-event", "wor", i, 8.0, 10 + i, 1.0, 0.9, "T6", c, c + 1, 3, 1.0,
                     "cpu") for i, c in enumerate((0.1, 0.2, 0.4))]
    last, selected = rows_of(rs, 1)
    assert last.crps_mean == pytest.approx(np.mean([0.1, 0.2, 0.4])) and last.crps_std == pytest.approx(
        np.std([0.1, 0.2, 0.4], ddof=1))
    assert last.covered and not selected.covered and selected.crps_mean == pytest.approx(last.crps_mean + 1)
    assert last.steps == (10, 11, 12)
    assert last.capped == selected.capped == (True, True, True)  # 1.0 epochs ran of a 1-epoch cap, ε spent 0.9 < 1
    assert rows_of(rs, 2)[0].capped == (False, False, False)


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_capped_cells_and_same_run_columns_in_the_table_and_json(tmp_path, capsys):
    """On the shipped data with a 2-epoch cap (42 steps), ε = 0.3 is spent first, ε = 1 and ε = 2 both stop at the
    cap with the same ε spent: both capped (ε spent < ε) and ε = 2 the same runs as ε = 1, which their equal CRPS
    (same seed, same steps) bears out; the text marks both, the JSON carries ``capped`` and ``same_runs``."""
    from tsdp.cli.main import main
    from tsdp.verify.accountant import max_steps
    from tsdp.verify.pld import PldSettings

    argv = ["experiment", "--models", "dlinear", "--epsilons", "0.3", "1", "2", "inf", "--seeds", "1", "--tops", "wor",
            "--epochs", "2", "--samples", "10", "--device", "cpu", "--out", str(tmp_path / "cells")]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    last = {r["epsilon"]: r for r in out["rows"] if r["checkpoint"] == "last"}
    cap = 2 * cell_config(Cell("dlinear", 1.0, 0, "1-event", "wor"), TINY).steps_per_epoch
    config = cell_config(Cell("dlinear", 0.3, 0, "1-event", "wor"), TINY)
    assert last[0.3]["steps"] == [max_steps(config, 0.3, 1e-7, cap=cap, settings=PldSettings(1e-3))]
    assert cap > last[0.3]["steps"][0]
    assert [last[e]["capped"] for e in (0.3, 1.0, 2.0, None)] == [[False], [True], [True], [False]]
    assert last[1.0]["steps"] == last[2.0]["steps"] == [cap]
    assert last[1.0]["epsilon_spent"] == last[2.0]["epsilon_spent"]
    assert last[1.0]["epsilon_spent"][0] < 1 and "capped_note" in last[1.0] and "capped_note" not in last[0.3]
    assert last[1.0]["crps_mean"] == last[2.0]["crps_mean"] != last[0.3]["crps_mean"]
    assert out["same_runs"] == [{"level": "1-event", "top": "wor", "epsilon": None, "column": 2.0, "same_as": 1.0,
                                 "steps": [["dlinear", [cap]]]}]
    assert main(argv) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("model"))
    assert "ε = 2 [= ε = 1]" in header and "ε = 1 [" not in header
    dlinear = next(line for line in text.splitlines() if line.startswith("DLinear "))
    assert dlinear.count("†") == 2
    spent = rounded_up(last[2.0]['epsilon_spent'][0], 4, fixed=True)  # a sound ε printed rounded up
    assert f"DLinear ε=2: {cap} steps, ε {spent} < 2 (epochs cap)" in text
    assert "DLinear ε=0.3: " in text and "< 0.3" not in text
    assert f"): {out['claim_c7']['line']}" in text and out["claim_c7"]["line"].split(":")[0].endswith("on M1 yearly")


def test_same_runs_needs_every_model_and_seed_to_match():
    """A column repeats another only when every model's steps match seed for seed; ε = ∞ (no noise) never does,
    nor label-noise columns (σ_F changes the training)."""
    def row(model, eps, steps, level="1-event", **extra):
        return Row(model, eps, level, "wor", "last", 0.5, 0.0, len(steps), steps, (0.1,) * len(steps), True,
                   (True,) * len(steps), **extra)

    rows = [row("a", 1.0, (42, 42)), row("b", 1.0, (42, 42)), row("a", 2.0, (42, 42)), row("b", 2.0, (42, 42)),
            row("a", 4.0, (42, 42)), row("b", 4.0, (42, 41)),
            row("a", math.inf, (42, 42)), row("b", math.inf, (42, 42))]
    assert [(x.column, x.same_as) for x in same_runs(rows)] == [(2.0, 1.0)]
    noise = [row("a", 0.5, (42,), "label-noise", sigma_forecast=s, v=0.01) for s in (0.0, 2.0)]
    assert same_runs(noise) == ()
    w = [row("a", 4.0, (42,), "w-user", w=x) for x in (1, 2, 8)]
    assert [(x.column, x.same_as, x.epsilon) for x in same_runs(w)] == [(2, 1, 4.0), (8, 1, 4.0)]


@pytest.mark.parametrize("argv,flag", [
    (["--seeds", "0"], "--seeds"), (["--epochs", "0"], "--epochs"), (["--samples", "1"], "--samples"),
    (["--w", "0"], "--w"), (["--v", "-1"], "--v"), (["--sigma-forecast", "nan"], "--sigma-forecast"),
    (["--delta", "1"], "--delta"),
    (["--discretization", "0"], "--discretization"), (["--epsilons", "0"], "--epsilons"),
    (["--epsilons", "nan"], "--epsilons"), (["--models", "arima"], "--models"), (["--tops", "poisson"], "--tops"),
    (["--dataset", "m4"], "--dataset"), (["--data-dir", "/nonexistent/x"], "--data-dir"),
    (["--workers", "0"], "--workers"), (["--cluster", "tcp://127.0.0.1:1"], "--cluster"),
    (["--out", "/proc/forbidden"], "--out"), (["--levels", "2-event"], "--levels"), (["--out", ""], "--out"),
    (["--samples", "1000000000"], "--samples"), (["--seed", "-1"], "--seed"),
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
    assert first["claim_c7"]["dataset"] == "m1-yearly" and first["claim_c7"]["verdict"] in ("reproduced",
                                                                                            "not reproduced")
    assert first["run"]["run"] == 2 and first["run"]["resumed"] == 0
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["run"]["run"] == 0 and again["run"]["resumed"] == 2 and again["rows"] == first["rows"]
    assert again["baselines"] == first["baselines"] and (tmp_path / "cells" / "baselines.json").is_file()
