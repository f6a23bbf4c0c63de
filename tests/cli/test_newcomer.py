"""A newcomer's first hour, command by command, as typed at a shell (in-process).

train -> save -> forecast predict with the defaults; every command that reads series reads the same
files (CSV long / wide / headerless, parquet, JSON lines .gz) through one loader, and an ambiguous
table names the flag to add; train says when its model does not beat seasonal naive; the audit
labels its two certified values and never prints "-0.0000".
"""
import gzip
import json

import numpy as np
import pytest

from cli_run import error_line, run_cli

SMALL = ["--N", "4", "--L", "40", "--batch-size", "2"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The same 4 series (length 44) as long CSV, wide CSV, headerless CSV, long parquet, JSON lines .gz, and a
    long table with its own column names; and the series themselves."""
    pd = pytest.importorskip("pandas")
    d = tmp_path_factory.mktemp("newcomer")
    rng = np.random.default_rng(0)
    series = [10 + np.sin(np.arange(44) / 3 + k) + 0.1 * rng.standard_normal(44) for k in range(4)]
    long = pd.DataFrame({"item_id": np.repeat(["a", "b", "c", "d"], 44), "timestamp": np.tile(np.arange(44), 4),
                         "target": np.concatenate(series)})
    wide = pd.DataFrame({name: s for name, s in zip("abcd", series)})
    long.to_csv(d / "long.csv", index=False)
    long.to_parquet(d / "long.parquet")
    long.rename(columns={"item_id": "shop", "timestamp": "day", "target": "sales"}).to_parquet(d / "named.parquet")
    long.drop(columns="item_id").to_csv(d / "no_id.csv", index=False)
    wide.to_csv(d / "wide.csv", index=False)
    wide.to_csv(d / "headerless.csv", index=False, header=False)
    with gzip.open(d / "gluonts.json.gz", "wt") as fh:
        for s in series:
            fh.write(json.dumps({"start": "2020-01-01", "target": s.tolist()}) + "\n")
    return d, series


def test_train_save_then_predict_with_the_defaults(tmp_path):
    """`tsdp train --save model.pt` then `tsdp forecast predict --model-file model.pt` with no L_C given: the
    model file's L_C is used; a conflicting --context-length is refused with one line naming it and the file's."""
    model = tmp_path / "model.pt"
    code, out, err = run_cli(["train", *SMALL, "--epochs", "1", "--delta", "1e-5", "--save", model, "--json"])
    assert code == 0, err
    saved = json.loads(out)
    code, out, err = run_cli(["forecast", "predict", "--model-file", model, "--values", "1", "2", "3",
                              "--epsilon", "4", "--delta", "1e-4", "--samples", "20", "--json"])
    assert code == 0, err
    predicted = json.loads(out)
    assert predicted["model"]["context_length"] == 1 and predicted["model"]["model"] == saved["model"]
    assert len(predicted["quantiles"]["0.5"]) == 1
    code, out, err = run_cli(["forecast", "predict", "--model-file", model, "--values", "1", "2", "3",
                              "--context-length", "8", "--epsilon", "4", "--delta", "1e-4"])
    line = error_line(err)
    assert code == 2 and out == "" and "--context-length" in line and "L_C = 1" in line and "(got 8" in line


def test_train_says_when_it_does_not_beat_seasonal_naive(capsys):
    """One epoch of 2 steps: the CRPS is worse than seasonal naive and the output says so, with the flags that help;
    the note is in --json too; a model that beats seasonal naive gets no note."""
    from dataclasses import replace

    from tsdp.training.result import TrainResult
    from tsdp.cli.cmd_train import quality_note

    code, out, err = run_cli(["train", *SMALL, "--epochs", "1", "--delta", "1e-5"])
    assert code == 0, err
    crps = float(out.split("test CRPS ")[1].split()[0])
    naive = float(out.split("seasonal naive ")[1].rstrip(")\n").split(")")[0])
    assert crps >= naive
    assert f"note: CRPS {crps:.4f} is not better than seasonal naive {naive:.4f}: 2 steps in 1 epoch(s) are too " \
           "few; raise --epochs or --lr" in out
    base = TrainResult(model="simple-ff", private=True, top="wor", bottom="wr", sigma=1.0, warmup_steps=0,
                       warmup_sigma=None, clip=1.0, epsilon_budget=2.0, epsilon=1.9, delta=1e-5, theorem="T6",
                       discretization=1e-4, steps=5, compositions=5, epochs=0.5, crps=0.69, untrained_crps=0.7,
                       seasonal_naive_crps=0.16, seconds=0.1, device="cpu", ledger=())
    assert quality_note(base, None) == ("CRPS 0.6900 is not better than seasonal naive 0.1600: the budget ε = 2 "
                                        "bought only 5 steps; raise --epsilon, or --sigma (more, noisier steps)")
    assert "raise --epochs" in quality_note(base, 0.5)  # the epochs, not the budget, stopped it
    assert quality_note(replace(base, crps=0.05), None) is None


@pytest.mark.parametrize("name", ["long.csv", "long.parquet", "wide.csv", "headerless.csv", "gluonts.json.gz"])
def test_every_command_reads_every_format(files, name, tmp_path):
    """train, audit-fn's loader, forecast tradeoff and audit-model accept the same file with the layout detected:
    train and audit-model load 4 series (an --N mismatch names the file's count), forecast tradeoff forecasts
    them all."""
    d, series = files
    path = d / name
    code, _, err = run_cli(["train", "--N", "5", "--L", "40", "--batch-size", "2", "--epochs", "1", "--delta", "1e-5",
                            "--data", path])
    assert code == 2 and "--N 4" in error_line(err)  # read: 4 series (the configuration says 5)
    code, _, err = run_cli(["audit-model", "--model", "simple-ff", "--canaries", "4", "--epsilon", "1",
                            "--delta", "1e-5", "--N", "5", "--data", path])
    assert code == 2 and "invalid --N" in error_line(err) and "--N 4" in error_line(err)
    model = tmp_path / "m.pt"
    from tsdp.attacks.inference.mechanism import save_model
    from tsdp.training.models import make_model

    save_model(model, make_model("simple-ff", 4, 2), "simple-ff", 4, 2)
    code, out, err = run_cli(["forecast", "tradeoff", "--model-file", model, "--data", path, "--epsilons", "2",
                              "--rates", "1", "--samples", "5", "--json"])
    assert code == 0, err
    assert len(json.loads(out)["rows"]) == 2


def test_train_reads_a_long_table_with_its_own_column_names(files):
    """A long parquet whose columns are not the defaults: auto-detection cannot tell, the error names
    the flags and the text column; with them the file trains."""
    d, _ = files
    argv = ["train", *SMALL, "--epochs", "1", "--delta", "1e-5", "--json", "--data", d / "named.parquet"]
    code, _, err = run_cli(argv)
    line = error_line(err)
    assert code == 2 and "invalid --layout" in line and "--item-id shop" in line and "named.parquet" in line
    code, out, err = run_cli(argv + ["--item-id", "shop", "--timestamp", "day", "--target", "sales"])
    assert code == 0, err
    assert json.loads(out)["steps"] == 2


@pytest.mark.parametrize("argv,flag,words", [
    (["--data", "FILE:no_id.csv"], "--item-id", "repeats timestamps"),
    (["--data", "FILE:long.csv", "--layout", "wide", "--target", "target"], "--layout", "--layout long"),
    (["--data", "FILE:long.csv", "--item-id", "shop"], "--item-id", "no item_id column 'shop'"),
    (["--data", "FILE:missing.parquet"], "--data", "no such file"),
    (["--data", "FILE:long.csv", "--layout", "sideways"], "--layout", "invalid choice"),
    (["--data", "FILE:long.csv", "--freq", "h"], "--freq", "numeric timestamps need a positive number"),
    (["--data", "FILE:long.csv", "--freq", "0"], "--freq", "numeric timestamps need a positive number"),
    (["--data", "FILE:long.csv", "--freq", "2"], "--freq", "its timestamps are at the step 1, not 2"),
    (["--data", "FILE:wide.csv", "--freq", "D"], "--freq", "has none (a plain row index)"),
    (["--data", "FILE:gluonts.json.gz", "--freq", "3"], "--freq", "pandas offset alias"),
    (["--data", "FILE:gluonts.json.gz", "--freq", "fortnightly"], "--freq", "not a pandas frequency"),
    (["--data", "FILE:gluonts.json.gz", "--freq", ""], "--freq", "not a pandas frequency"),
    (["--data", "grunfeld", "--freq", "D"], "--freq", "grunfeld states its own step"),
    (["--data", "synthetic", "--freq", "D"], "--freq", "synthetic has no calendar"),
])
def test_ambiguous_or_wrong_tables_name_the_flag(files, argv, flag, words):
    d, _ = files
    argv = [str(d / a[5:]) if a.startswith("FILE:") else a for a in argv]
    sized = SMALL if "synthetic" in argv else []  # spike canaries refuse the sizes of 'synthetic' with a file
    for command in (["train", *SMALL, "--epochs", "1", "--delta", "1e-5"],
                    ["audit-fn", "--train", "json:loads", "--canaries", "4", "--delta", "1e-5", "--canary", "spike", *sized]):
        code, out, err = run_cli(command + argv)
        line = error_line(err)
        assert code == 2 and out == "" and f"{flag}" in line and words in line, line


def test_forecast_tradeoff_reads_gzipped_json_lines(files, tmp_path):
    """The newcomer's first report: `forecast tradeoff --data x.json.gz` said "unknown data format '.gz'"."""
    from tsdp.attacks.inference.mechanism import save_model
    from tsdp.training.models import make_model

    d, _ = files
    save_model(tmp_path / "m.pt", make_model("simple-ff", 4, 2), "simple-ff", 4, 2)
    code, out, err = run_cli(["forecast", "tradeoff", "--model-file", tmp_path / "m.pt", "--data",
                              d / "gluonts.json.gz", "--epsilons", "2", "--rates", "1", "--samples", "5"])
    assert code == 0 and "unknown data format" not in err and "CRPS of private forecasts" in out


def test_audit_labels_its_two_certified_values_and_prints_no_negative_zero():
    """`tsdp audit`: the estimate's certified ε lower bound and the violation test's value at its level are
    labelled as such; a composition gap that rounds to zero prints 0."""
    from tsdp.verify.rounded import rounded_nearest

    gap = lambda x: rounded_nearest(x, fixed=True)  # noqa: E731 - how `tsdp audit` prints the gap

    code, out, err = run_cli(["audit", "--theorem", "T6", "--trials", "2000", "--delta", "1e-3", "--N", "16",
                              "--batch-size", "4", "--L", "6"])
    assert code == 0, err
    assert "estimate: certified ε lower bound (confidence 95%) at δ = 0.001:" in out
    assert "the violation test's own certified ε ≥" in out and "at its level" in out
    assert "composition gap sound - upper = " in out and "-0.0000" not in out
    assert (gap(-4e-6), gap(4e-6), gap(-0.25), gap(0.12345)) == ("0", "0", "-0.2500", "0.1235")


def test_report_reads_its_real_panel_through_the_same_loader(files, monkeypatch):
    """`tsdp report --data FILE` hands the file's series (the one loader, layout detected) to the report's
    inference section, which scales them like Grunfeld and names the table after the file; without --data the
    report keeps its own Grunfeld panel; a bad file fails before any work, naming --data."""
    import tsdp.reports.run as run
    from tsdp.reports.inference_section import inference_section

    d, series = files
    seen = {}
    monkeypatch.setattr(run, "build_report", lambda config, **kw: seen.update(kw) or {"violations": [],
                                                                                       "violation": False})
    assert run_cli(["report", "--json"])[0] == 0 and seen["real_data"] is None
    code, _, err = run_cli(["report", "--json", "--data", d / "nothing.csv"])
    assert code == 2 and "invalid --data" in error_line(err) and "nothing.csv" in error_line(err)
    assert run_cli(["report", "--json", "--data", d / "long.csv"])[0] == 0
    name, data = seen["real_data"]
    assert name == str(d / "long.csv") and data.N == 4
    for got, want in zip(data.series, series):
        np.testing.assert_allclose(got, want)

    tables = {}

    class Table:  # what inference_table was given, as its table's JSON form
        def __init__(self, **kw):
            self.kw = tables.setdefault(kw.get("data_name", "synthetic"), kw)

        def as_dict(self):
            return self.kw

    monkeypatch.setattr("tsdp.attacks.inference.crps_table.inference_table", Table)
    inference_section(quick=True, real_data=("panel.csv", data))
    real = tables["panel.csv, unit-std scaled"]["data"]
    assert all(abs(s.std() - 1) < 1e-12 for s in real.series)


def test_a_table_without_the_data_extra_names_the_extra(files, monkeypatch):
    """On the core install (pandas blocked), a CSV --data exits 2 with one line naming tsdp[data]; JSON lines
    still load."""
    import sys

    d, _ = files
    monkeypatch.setitem(sys.modules, "pandas", None)
    code, _, err = run_cli(["train", *SMALL, "--epochs", "1", "--delta", "1e-5", "--data", d / "wide.csv"])
    assert code == 2 and "invalid --data" in error_line(err) and "tsdp[data]" in error_line(err)
    code, _, err = run_cli(["train", "--N", "5", *SMALL[2:], "--epochs", "1", "--delta", "1e-5",
                            "--data", d / "gluonts.json.gz"])
    assert code == 2 and "--N 4" in error_line(err)  # read without pandas: 4 series


def test_json_lines_with_freq_train_deepar_on_their_calendar(files, tmp_path):
    """--freq gives GluonTS JSON lines their calendar: DeepAR trained on daily entries reads 3 calendar features and
    the age (the saved model says so, with the step), without --freq the age only."""
    import torch

    d, _ = files
    for freq, covariates in (("D", 4), (None, 1)):
        model = tmp_path / f"deepar-{freq}.pt"
        argv = ["train", "--model", "deepar", *SMALL, "--context-length", "8", "--epochs", "1", "--delta", "1e-5",
                "--data", d / "gluonts.json.gz", "--save", model, "--json"] + (["--freq", freq] if freq else [])
        code, _, err = run_cli(argv)
        assert code == 0, err
        blob = torch.load(model, weights_only=True)
        assert blob["covariates"] == covariates and blob["freq"] == freq


def test_n_and_l_are_taken_from_the_data_and_said():
    """`tsdp train --data m1-yearly` without --N and --L trains on the file's N and shortest training length (said in
    one note line); a conflicting --N or a longer --L is one error line naming it before σ is calibrated."""
    from tsdp.datasets.tsf import m1_yearly

    series = m1_yearly().data.series
    n, shortest = len(series), min(len(s) for s in series) - 1  # L_F = 1 held out for testing
    base = ["train", "--data", "m1-yearly", "--epsilon", "1", "--delta", "1e-5", "--epochs", "1", "--json"]
    code, out, err = run_cli(base)
    assert code == 0, err
    notes = [line for line in err.splitlines() if "note:" in line and "taken from" in line]
    assert notes == [f"tsdp train: note: N = {n} (its series) and L = {shortest} (the training values of its shortest "
                     "series, the last L_F = 1 held out for testing) taken from m1-yearly"]
    from tsdp.theorems.config import TrainingConfig

    assert json.loads(out)["steps"] == TrainingConfig(N=n, L=shortest).steps_per_epoch  # one epoch of the file's N
    for extra, flag, fix in ((["--N", str(n - 1)], "--N", f"--N {n}"), (["--L", str(shortest + 1)], "--L",
                                                                          f"--L {shortest}")):
        code, out, err = run_cli([*base, *extra])
        assert code == 2 and out == "" and "calibrating" not in err, err
        assert error_line(err).startswith(f"tsdp train: error: invalid {flag}:") and fix in error_line(err)
