"""An adversarial user's inputs that an earlier sweep found accepted or misnamed: each is one line naming the flag
and exit 2, never a pass by accident.

* user code that ends the process itself (``os._exit``) inside `tsdp audit-fn`: the process exited 0 with no output,
  which a script reads as a passed audit;
* a train that raises under --runs: the engine retried it and ended in a ShardError traceback (exit 1);
* flags of the other canary kind (or of the other --threshold) that were silently ignored;
* a --config file, or a GluonTS JSON lines entry, that names a key twice (JSON keeps the last: a silently different
  configuration or series);
* a count of releases past the accountant's range, which named the library's ``steps`` and a --discretization that
  `tsdp forecast` and `tsdp check-accountant` do not have;
* a model file whose weights are not finite, which was blamed on the series (--values).
"""
import json
import os
import subprocess
import sys

import pytest

from cli_run import error_line, run_cli
from sweep import run_case, verdict

SMALL = ["--N", "16", "--L", "30", "--batch-size", "4"]
LIMIT_S = 120

USER_CODE = '''
import os

import torch


class Zero:
    def __call__(self, context, forecast):
        return torch.zeros(context.shape[0])


def good(series):
    return Zero()


def ends_the_process(series):
    os._exit(0)


def loss_ends_the_process(model, context, forecast):
    os._exit(0)


def must_not_run(series):
    raise RuntimeError("the training ran")


def raises(series):
    raise ValueError("boom")
'''


@pytest.fixture
def user_module(user_module_of):
    return user_module_of(USER_CODE)


def _audit_fn(module, train, *extra):
    return ["audit-fn", "--train", f"{module}:{train}", "--canaries", "10", "--delta", "1e-5", *SMALL, *extra]


def _as_a_user_runs_it(cwd, argv):
    """``tsdp argv`` in a fresh interpreter with real standard streams, as from a shell."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "tsdp.cli", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


# ----------------------------------------------------------------------------- audit-fn: code that ends the process


@pytest.mark.parametrize("train, loss, extra", [
    ("ends_the_process", None, []),
    ("ends_the_process", None, ["--timeout", "60"]),  # the supervised child too
    ("good", "loss_ends_the_process", []),
])
def test_code_that_ends_the_process_is_not_a_passed_audit(user_module, tmp_path, train, loss, extra):
    """``os._exit(0)`` inside the user's train (or loss) ended `tsdp audit-fn` with status 0 and no output: a script
    that checks the status read it as a passed audit. It is one line naming --train, exit 2."""
    loss_flags = [] if loss is None else ["--loss", f"{user_module}:{loss}"]
    proc = _as_a_user_runs_it(tmp_path, _audit_fn(user_module, train, "--canary", "spike", *loss_flags, *extra))
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-1500:])
    line = error_line(proc.stderr)
    assert line.startswith("tsdp audit-fn: error: invalid --train:") and "ended the process" in line, line
    assert "os._exit(0)" in line and "nothing was certified" in line, line
    assert proc.stdout == "" and "Traceback" not in proc.stderr


def test_a_supervised_audit_that_finishes_keeps_its_exit_code_and_output(user_module, tmp_path):
    """The supervision that catches an ended process passes a finished audit through unchanged."""
    proc = _as_a_user_runs_it(tmp_path, _audit_fn(user_module, "good", "--canary", "spike", "--json"))
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert json.loads(proc.stdout)["canaries"] == 10


@pytest.mark.parametrize("workers", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_a_train_that_raises_over_runs_is_one_line(user_module, workers):
    """Over --runs the user's error was retried 4 times and ended in the engine's ShardError traceback, exit 1."""
    outcome = run_case(_audit_fn(user_module, "raises", "--canary", "spike", "--runs", "2", "--workers", workers),
                       LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    assert f"invalid --train: your train function {user_module}.raises raised ValueError: boom" in \
        error_line(outcome.err)


@pytest.mark.slow  # the engine re-runs a dead worker's run 4 times, each in a fresh spawned process
def test_code_that_ends_its_worker_process_is_one_line(user_module, tmp_path):
    """os._exit in the worker processes of --runs --workers: the engine's ShardError traceback with a hint about
    `if __name__ == "__main__":` (a script's mistake, not the CLI's) was the answer."""
    proc = _as_a_user_runs_it(tmp_path, _audit_fn(user_module, "ends_the_process", "--canary", "spike", "--runs", "2",
                                                  "--workers", "2"))
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-1500:])
    line = error_line(proc.stderr)
    assert "invalid --train:" in line and "kept dying" in line and "__main__" not in line, line
    assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- flags that do not apply


@pytest.mark.parametrize("extra, flag", [
    (["--canary", "spike", "--clip", "5"], "--clip"),
    (["--canary", "spike", "--gradient-scale", "0.5"], "--gradient-scale"),
    (["--canary", "spike", "--span-entries", "100"], "--span-entries"),
    (["--spike", "5"], "--spike"),  # gradient canaries (the default)
    (["--span-entries", "100"], "--span-entries"),  # gradient canaries without --loss: no data part taken off
])
def test_a_flag_of_the_other_canary_kind_is_refused_not_ignored(user_module, extra, flag):
    """Each was silently ignored (the audit ran as if it had not been given): one line naming it, before the train."""
    outcome = run_case(_audit_fn(user_module, "must_not_run", *extra), LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert line.startswith(f"tsdp audit-fn: error: invalid {flag}:"), line
    assert "the training ran" not in outcome.err


def test_the_flags_of_each_canary_kind_are_still_taken(user_module):
    """The refusals above leave each kind's own flags alone."""
    code, out, err = run_cli(_audit_fn(user_module, "good", "--canary", "spike", "--spike", "5", "--json"))
    assert code == 0 and json.loads(out)["canaries"] == 10, err


def test_audit_select_fraction_needs_the_split_threshold():
    """--select-fraction sets the share of a --threshold split; with the default theory threshold it was ignored."""
    outcome = run_case(["audit", "--trials", "100", "--delta", "1e-5", "--select-fraction", "0.3"], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert line.startswith("tsdp audit: error: invalid --select-fraction:") and "--threshold split" in line, line
    code, out, err = run_cli(["audit", "--trials", "100", "--delta", "1e-5", "--threshold", "split",
                              "--select-fraction", "0.3", "--json"])
    assert code == 0, err
    assert json.loads(out)["test"]["n_positive"] == 70  # the 30 of 100 trials that chose the test bound nothing


# ----------------------------------------------------------------------------- --config


@pytest.mark.parametrize("text, key", [('{"L": 4, "L": 5}', "L"), ('{"batch_size": 16, "sigma": 2, "sigma": 1}', "sigma")])
def test_a_config_file_that_names_a_field_twice_is_refused(tmp_path, text, key):
    """JSON readers keep the last of duplicate keys: the report would silently use one of two values written."""
    (tmp_path / "twice.json").write_text(text)
    outcome = run_case(["report", "--config", tmp_path / "twice.json", "--quick", "--no-audit", "--no-progress",
                        "--out", tmp_path / "out"], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert "invalid --config" in line and f"'{key}' twice" in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("spec", ["", " "])
def test_an_empty_config_name_is_refused_in_words(spec, tmp_path):
    """--config '' answered "cannot read config file : Is a directory" (the empty path is the current folder)."""
    outcome = run_case(["report", "--config", spec, "--quick", "--no-audit", "--out", tmp_path / "out"], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert "invalid --config: config file name is empty" in line and "directory" not in line, line


def test_the_api_refuses_a_config_file_that_names_a_field_twice(tmp_path):
    from tsdp.reports.run import load_config

    (tmp_path / "twice.json").write_text('{"L": 4, "L": 5}')
    with pytest.raises(ValueError, match="'L' twice"):
        load_config(str(tmp_path / "twice.json"))
    (tmp_path / "once.json").write_text('{"L": 4, "batch_size": 16}')
    assert load_config(str(tmp_path / "once.json"))[1].L == 4


def test_a_json_lines_entry_that_names_a_key_twice_is_refused(tmp_path):
    """{"target": [1, ..., 40], "target": [1000, ...]}: the last target was trained on, silently."""
    entry = '{"start": "2000-01-01", "target": %s, "target": %s}\n' % (list(range(1, 41)), [1000.0] * 40)
    (tmp_path / "twice.jsonl").write_text(entry * 16)
    outcome = run_case(["train", "--data", tmp_path / "twice.jsonl", "--epochs", "1", "--delta", "1e-5",
                        "--batch-size", "4", "--device", "cpu"], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert "twice.jsonl, line 1" in line and "'target' twice" in line, line


# ----------------------------------------------------------------------------- counts past the accountant's range


@pytest.mark.parametrize("argv, flag", [
    (["forecast", "epsilon", "--delta", "1e-5", "--releases", "1000000000"], "--releases"),
    (["check-accountant", "--tsdp", "--random", "0", "--top", "wor", "--bottom", "wr", "--steps", "100000000000000"],
     "--steps"),
])
def test_too_many_compositions_name_the_flag_typed_and_no_flag_the_command_lacks(argv, flag):
    outcome = run_case(argv, LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert f"invalid {flag}:" in line and "--discretization" not in line, line


def test_epsilon_still_says_that_a_coarser_discretisation_resolves_more():
    outcome = run_case(["epsilon", "--delta", "1e-5", "--steps", "100000000000000", "--discretization", "1e-3"],
                       LIMIT_S)
    line = error_line(outcome.err)
    assert outcome.code == 2 and "invalid --steps:" in line and "coarser discretisation" in line, line


# ----------------------------------------------------------------------------- forecast: a model file that is not finite


def test_a_model_file_with_non_finite_weights_names_the_file(model_file, tmp_path):
    """A model whose weights are NaN answered 'invalid --values: ... rescale the series' for the series 1..12."""
    import torch

    blob = torch.load(model_file, weights_only=True)
    blob["state_dict"] = {k: torch.full_like(v, float("nan")) for k, v in blob["state_dict"].items()}
    torch.save(blob, tmp_path / "nan.pt")
    outcome = run_case(["forecast", "predict", "--model-file", tmp_path / "nan.pt", "--values", *range(1, 13),
                        "--epsilon", "1", "--delta", "1e-5", "--seed", "0", "--samples", "20"], LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert "invalid --model-file" in line and "not finite" in line and "--values" not in line, line


# ----------------------------------------------------------------------------- help that says what a flag does


def test_calibrate_help_says_its_sigma_is_where_the_search_starts():
    """`tsdp calibrate --sigma` was described as "noise multiplier σ (default 1.0)", as if it fixed σ; calibrate
    searches σ and starts there: another start answers a σ that meets the same target."""
    code, out, _ = run_cli(["calibrate", "--help"])
    assert code == 0 and "noise multiplier σ where the search starts (default 1)" in " ".join(out.split())
    answers = []
    for start in ("1", "3"):
        code, out, err = run_cli(["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "1", "--sigma", start,
                                  "--json"])
        assert code == 0, err
        answers.append(json.loads(out))
    assert all(a["epsilon"] <= 1 for a in answers)
    assert abs(answers[0]["sigma"] / answers[1]["sigma"] - 1) < 2e-3  # both within the relative tolerance 1e-3

