"""Hold-out bad inputs: each is one line and exit 2 (or a finite answer), checked before the user's code runs,
and the process ends cleanly (no abort at exit)."""
import os
import subprocess
import sys

import pytest

from cli_run import error_line
from sweep import NON_FINITE, run_capped, run_case, verdict

SMALL = ["--N", "16", "--L", "30", "--batch-size", "4"]
LIMIT_S = 120

NO_OPTIMIZER = '''
import torch


class Zero:
    def __call__(self, context, forecast):
        return torch.zeros(context.shape[0])


def train(series):
    return Zero()
'''

STEPS_AN_OPTIMIZER = '''
import torch


def train(series):
    model = torch.nn.Linear(999, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.ones(4, 999)).sum().backward()
        optimizer.step()
    return lambda context, forecast: forecast.float().pow(2).sum(-1)
'''


@pytest.fixture
def no_optimizer(user_module_of):
    return user_module_of(NO_OPTIMIZER) + ":train"


def test_a_million_gradient_canaries_are_refused_at_the_first_step_for_the_models_size(user_module_of):
    """m ≤ 2^28 is all that can be checked before the model exists (m · d direction entries, d ≥ 1): a million
    canaries suit a model of at most 268 parameters. For a model of d = 1000 they are refused at its first optimizer step,
    when d is known, naming --canaries and the most canaries per run; a training that steps no optimizer is refused for
    that instead (the test above)."""
    outcome = run_case(["audit-fn", "--train", user_module_of(STEPS_AN_OPTIMIZER) + ":train", "--delta", "1e-5",
                        "--canaries", "1000000", *SMALL], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert "--canaries" in line and "1000000 canaries × 1000 parameters" in line and "at most 268435 " in line, line


@pytest.mark.parametrize("extra, flag", [
    (["--canaries", "1000000000"], "--canaries: must be <= 2.68435e+08"),
    (["--canaries", "10", "--canary", "spike", "--spike", "1e308"], "--spike: must be <= 1.67772e+07"),
    (["--canaries", "10", "--clip", "1e308"], "--clip: must be <= 1.84467e+19"),
    (["--canaries", "10", "--clip", "1e10", "--gradient-scale", "1e10"], "--gradient-scale: times the clipping norm"),
    (["--canaries", "10", "--timeout", "0"], "--timeout"),
])
def test_flags_are_checked_before_the_users_code(no_optimizer, extra, flag):
    """A training that steps no optimizer would be refused under the default gradient canaries; a bad flag is named
    first (the train is never called)."""
    outcome = run_case(["audit-fn", "--train", no_optimizer, "--delta", "1e-5", *SMALL, *extra], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    assert flag in error_line(outcome.err)


def test_the_gradient_canarys_error_names_the_cli_flag(no_optimizer):
    outcome = run_case(["audit-fn", "--train", no_optimizer, "--delta", "1e-5", "--canaries", "10", *SMALL], LIMIT_S)
    line = error_line(outcome.err)
    assert outcome.code == 2 and "never called a torch.optim optimizer's step()" in line
    assert "(--canary spike audits any returned model)" in line and "canary='spike'" not in line


def test_api_messages_keep_the_api_spelling():
    from tsdp.attacks.canary.user_training import UserFunctionError, audit_training
    from tsdp.datasets.series import synthetic
    from tsdp.theorems.config import TrainingConfig

    config = TrainingConfig(N=16, L=30, context_length=2, forecast_length=1, batch_size=4)
    with pytest.raises(UserFunctionError, match=r"\(canary='spike' audits any returned model\)"):
        audit_training(lambda series: object(), synthetic(16, 30, seed=0), config, canaries=10, delta=1e-5)


@pytest.mark.parametrize("lr, words", [("1e308", "--lr: must be <= 1e+30"),
                                       ("1e30", "--lr: the training diverged")])
def test_train_with_a_huge_learning_rate(lr, words):
    outcome = run_case(["train", "--delta", "1e-5", "--epochs", "1", "--lr", lr, *SMALL], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    assert words in error_line(outcome.err)


@pytest.mark.parametrize("value, code", [("1e308", 2), ("1e37", 0), ("3.5", 0)])
def test_forecast_predict_gives_finite_quantiles_or_one_line(model_file, value, code):
    outcome = run_case(["forecast", "predict", "--model-file", model_file, "--values", *[value] * 12,
                        "--epsilon", "1", "--delta", "1e-5"], LIMIT_S)
    assert verdict(outcome, code) == "", (outcome.code, outcome.out[-500:], outcome.err[-1500:])
    if code == 2:
        assert "--values: the forecast of this series is not finite" in error_line(outcome.err)
    else:
        assert "q0.1:" in outcome.out and not NON_FINITE.search(outcome.out)


def test_epsilon_with_too_many_steps_prints_at_most_one_note():
    outcome = run_case(["epsilon", "--steps", str(10 ** 12), "--delta", "1e-5"], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    notes = [line for line in outcome.err.splitlines() if line.startswith("tsdp: note:")]
    assert len(notes) <= 1 and "--steps" in error_line(outcome.err)
    assert outcome.err.splitlines()[-1].startswith("tsdp epsilon: error:")  # the note, if any, before the error


def test_reading_parquet_starts_no_thread(tmp_path):
    """The parquet loader reads on the calling thread: Arrow's pool threads, alive at exit next to torch's, made
    the process abort after its last line now and then."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from tsdp.datasets.formats import load_table

    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0, 4.0], "b": [2.0, 3.0, 4.0, 5.0]}), path)
    before = set(os.listdir("/proc/self/task"))
    data = load_table(path, layout="wide")
    started = set(os.listdir("/proc/self/task")) - before  # threads of others may end meanwhile; none may start
    assert not started, f"load_table started threads {sorted(started)}"
    assert data.N == 2


@pytest.mark.slow
def test_an_empty_parquet_file_is_one_line_and_a_clean_exit(tmp_path):
    """audit-fn on a parquet file with no columns, in fresh processes: one line, exit 2, never SIGABRT (an abort at
    exit came about once in 10 runs with pandas' threaded reader)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({}), tmp_path / "empty.parquet")
    code = ("import sys, torch\nfrom tsdp.cli.main import main\n"
            "sys.exit(main(['audit-fn', '--train', 'json:loads', '--canaries', '10', '--delta', '1e-5', "
            f"'--data', {str(tmp_path / 'empty.parquet')!r}]))")
    for _ in range(5):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr[-1500:]
        assert "has no series" in error_line(proc.stderr) and "terminate called" not in proc.stderr


def test_an_undefined_auc_is_labelled_not_nan():
    """Every canary on one side (all included, or none: probability 2^(1-m), but possible) has no AUC: the human
    output says so instead of printing nan."""
    from tsdp.attacks.canary.steinke_bound import auc
    from tsdp.cli.output import auc_text

    import numpy as np

    undefined = auc(np.arange(4.0), np.ones(4, dtype=bool))
    assert not np.isfinite(undefined) and not NON_FINITE.search(auc_text(undefined))
    assert auc_text(auc(np.arange(4.0), np.arange(4) >= 2)) == "1.000"


def test_a_budget_that_outlasts_the_accountant_names_the_sigma_that_was_typed():
    """`train --epsilon 10 --sigma 1e6` (no schedule typed): the run would last beyond the accountant's reach; the one
    line names --sigma (typed), never --steps (not typed)."""
    outcome = run_case(["train", *SMALL, "--epsilon", "10", "--sigma", "1e6", "--delta", "1e-5"], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert "invalid --sigma" in line and "invalid --steps" not in line


@pytest.mark.parametrize("command", [["audit-model", "--model", "simple-ff", "--epsilon", "1"], ["audit-fn"]])
def test_a_spike_that_overflows_is_blamed_on_spike(command, no_optimizer):
    """A spike of 1e308 standard deviations is not a finite element: one line naming --spike, before any training
    (not a data error about series holding inf)."""
    extra = ["--train", no_optimizer, "--canary", "spike"] if command == ["audit-fn"] else []
    outcome = run_case([*command, *extra, "--canaries", "4", "--delta", "1e-5", *SMALL, "--spike", "1e308"], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "invalid --spike" in error_line(outcome.err) and "series" not in error_line(outcome.err).split(":")[1]



@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    """Two daily series, one month-start series and one at numeric timestamps 0, 1, 2, ... (60 values each)."""
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")  # reads CSV
    import datetime

    d = tmp_path_factory.mktemp("stepped")
    day = datetime.date(2020, 1, 1)
    (d / "daily.csv").write_text("item_id,timestamp,target\n" + "".join(
        f"{k},{day + datetime.timedelta(days=j)},{(3 * j + i) % 7 + 1}\n" for i, k in enumerate("ab") for j in range(60)))
    (d / "monthly.csv").write_text("item_id,timestamp,target\n" + "".join(
        f"a,{2000 + j // 12}-{j % 12 + 1:02d}-01,{j % 5 + 1}\n" for j in range(60)))
    (d / "numbers.csv").write_text("item_id,timestamp,target\n" + "".join(f"a,{j},{j % 5 + 1}\n" for j in range(60)))
    return d


@pytest.mark.parametrize("name, freq, own", [("daily.csv", "h", "D"), ("daily.csv", "BH", "D"),
                                             ("monthly.csv", "M", "MS"), ("numbers.csv", "2", "1"),
                                             ("daily.csv", "ms", "D")])
def test_a_step_the_data_is_not_at_is_blamed_on_freq(stepped, name, freq, own):
    """--freq that the timestamps are not at (they have a regular step of their own) is one line naming --freq and
    the data's step, not a missing value inside the series; a step far finer than the data's (ms on daily data) is
    refused without building its date range (a 1 GiB address space suffices)."""
    outcome = run_capped(["train", "--data", stepped / name, "--freq", freq, "--epochs", "1", "--delta", "1e-5",
                          "--batch-size", "1"], LIMIT_S, 2 ** 30 + 2 ** 31)  # torch's import maps about 2 GiB
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert "invalid --freq" in line and f"give --freq {own}," in line and "missing value" not in line


def test_experiment_refuses_a_step_far_finer_than_the_data_without_allocating(stepped, tmp_path):
    """`experiment --data daily.csv --freq ms` (a 76.6 GiB date range once): one line naming --freq and the data's step,
    within the same 3 GiB address space as train's, nothing written to --out."""
    outcome = run_capped(["experiment", "--data", stepped / "daily.csv", "--freq", "ms", "--forecast-length", "4",
                          "--season", "7", "--models", "dlinear", "--seeds", "1", "--out", tmp_path / "out"], LIMIT_S,
                         2 ** 30 + 2 ** 31)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert "invalid --freq" in line and "give --freq D," in line and not (tmp_path / "out").exists()


def test_the_data_at_its_own_step_still_trains_and_a_gap_is_a_missing_value(stepped, tmp_path):
    outcome = run_case(["train", "--data", stepped / "daily.csv", "--freq", "D", "--epochs", "1", "--delta", "1e-5",
                        "--batch-size", "1"], LIMIT_S)
    assert verdict(outcome, 0) == "", outcome.err[-1500:]
    rows = (stepped / "daily.csv").read_text().splitlines()
    (tmp_path / "gap.csv").write_text("\n".join(rows[:10] + rows[11:]) + "\n")  # one day of series a missing
    outcome = run_case(["train", "--data", tmp_path / "gap.csv", "--freq", "D", "--epochs", "1", "--delta", "1e-5",
                        "--batch-size", "1"], LIMIT_S)
    assert verdict(outcome, 2) == "" and "a missing value inside the series" in error_line(outcome.err)


@pytest.mark.parametrize("argv, flag", [
    (["experiment", "--quick", "--freq", "h"], "--freq"),
    (["experiment", "--quick", "--dataset", "electricity", "--freq", "h"], "--freq"),
    (["report", "--quick", "--freq", "h"], "--freq"),
    (["forecast", "predict", "--values", "1", "2", "3", "--freq", "h", "--epsilon", "1", "--delta", "1e-5"], "--freq"),
    (["audit-fn", "--plan", "--steps", "10", "--parameters", "100", "--canaries", "100", "--delta", "1e-5", "--freq",
      "h"], "--freq"),
    (["audit-fn", "--plan", "--steps", "10", "--parameters", "100", "--canaries", "100", "--delta", "1e-5", "--data",
      "/nonexistent.csv"], "--data"),
])
def test_a_data_flag_that_does_not_apply_is_refused_not_ignored(argv, flag, model_file, tmp_path):
    """--freq where no timestamps are read (the shipped data, a benchmark, the report's Grunfeld panel, --values, a
    --plan) and --data with --plan are checked, never silently ignored: one line naming the flag."""
    if argv[:2] == ["forecast", "predict"]:
        argv = [*argv, "--model-file", model_file]
    if argv[0] in ("experiment", "report"):
        argv = [*argv, "--out", tmp_path / "out"]
    outcome = run_case(argv, LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert f"invalid {flag}" in error_line(outcome.err) and not (tmp_path / "out").exists()


def test_a_step_the_data_states_is_blamed_on_the_data_when_freq_was_not_typed(tmp_path):
    """Data at a millisecond step (inferred) that DeepAR cannot read: the line names --data, not the --freq nobody
    typed."""
    (tmp_path / "ms.csv").write_text("item_id,timestamp,target\n" + "".join(
        f"a,2020-01-01 00:00:00.{j:03d},{j % 5 + 1}\n" for j in range(60)))
    outcome = run_case(["train", "--model", "deepar", "--data", tmp_path / "ms.csv", "--epochs", "1", "--delta", "1e-5",
                        "--batch-size", "1"], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "invalid --data" in error_line(outcome.err) and "--freq" not in error_line(outcome.err).split(":")[1]


def test_a_step_without_periods_on_json_lines_is_blamed_on_freq(tmp_path):
    """--freq BH (business hours: pandas has no periods of it) on GluonTS JSON lines names --freq, not the entry's
    start as text pandas cannot read."""
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    (tmp_path / "bh.jsonl").write_text('{"start": "2024-03-04 09:00:00", "target": %s}\n' % list(range(1, 21)))
    outcome = run_case(["train", "--data", tmp_path / "bh.jsonl", "--freq", "BH", "--epochs", "1", "--delta", "1e-5",
                        "--batch-size", "1"], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "invalid --freq" in error_line(outcome.err) and "no pandas periods" in error_line(outcome.err)
