"""Every bad input gets one line on stderr and exit 2 (a detected violation: exit 1).

Three parts:

* ``ROWS``: the inputs of an earlier sweep that crashed, hung, ran out of memory, printed a
  non-finite or meaningless number at exit 0, or were silently accepted - each with its
  expected exit code and the flag (or words) its one error line must name, run in-process
  under a time limit (:mod:`sweep`);
* the cases that need a file, a server or a subprocess (a saved model, a loopback server that
  does not speak Dask, a 3 GiB address-space cap, user functions), and the Python API, which
  refuses what the CLI refuses with the same words;
* ``test_sweep`` (slow): invalid and extreme values of every numeric flag of every command
  (:func:`sweep_cases`), each one refused in one line or answered with finite numbers within
  its time limit; a failure names its class (traceback, hang, oom, non-finite at exit 0, silent accept).
"""
import argparse
import json
import os
import socket
import sys
import threading
import time

import pytest

from cli_run import error_line, run_cli
from tsdp.cli.counts import count
from sweep import CONSTANT_MODEL, run_capped, run_case, verdict

SMALL = ["--N", "16", "--L", "8", "--batch-size", "4"]
EXPERIMENT = ["experiment", "--models", "dlinear", "--epsilons", "1", "--seeds", "1", "--tops", "wor", "--epochs", "1",
              "--samples", "10", "--device", "cpu"]
"""A cheap valid grid: one DLinear cell of one epoch on the shipped data (give it an --out)."""
LIMIT_S = 120  # per in-process case: refusals take well under 15 s on a loaded 2-core machine

USER_FUNCTIONS = CONSTANT_MODEL + '''
import sys


def good(series):
    return Model()


def raises(series):
    raise ValueError("boom")


def returns_none(series):
    return None


def returns_string(series):
    return "model"


class Wide(Model):
    def __call__(self, context, forecast):
        return torch.zeros(context.shape[0], 3)


def wide_model(series):
    return Wide()


class Words(Model):
    def __call__(self, context, forecast):
        return "abc"


def words_model(series):
    return Words()


def nan_model(series):
    return Model(float("nan"))


def inf_model(series):
    return Model(float("inf"))


def exits(series):
    sys.exit(3)


def two_args(series, other):
    return Model()


def loss_two_args(model, context):
    return torch.zeros(context.shape[0])


def loss_raises(model, context, forecast):
    raise RuntimeError("loss broke")


def loss_nan(model, context, forecast):
    return torch.full((context.shape[0],), float("nan"))
'''


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    out = {"dir": d / "a_dir", "file": d / "a_file", "x.csv": d / "x.csv", "deep.json": d / "deep.json",
           "n_float.json": d / "n_float.json", "n_int.json": d / "n_int.json", "big.csv": d / "big.csv",
           "data.csv": d / "data.csv"}
    out["dir"].mkdir()
    out["file"].write_text("x")
    out["x.csv"].write_text("a,b\n1,2\n")
    out["deep.json"].write_text("[" * 100_000 + "]" * 100_000)
    out["n_float.json"].write_text('{"N": 1e400}')
    out["n_int.json"].write_text('{"N": 1' + "0" * 400 + "}")
    rows = ["a,b"] + [f"{1.0e307 * (1 + i % 7):.6e},{1.5e308:.6e}" for i in range(60)]
    out["big.csv"].write_text("\n".join(rows) + "\n")
    out["data.csv"].write_text("a,b\n" + "\n".join(f"{i % 5},{(i * 3) % 7}" for i in range(30)) + "\n")
    out["bool.json"] = d / "bool.json"
    out["bool.json"].write_text("".join(json.dumps({"start": "2000-01-01", "target": [True, False] * 15}) + "\n"
                                        for _ in range(16)))
    out["cells"] = d / "cells"
    out["missing_parent"] = d / "no_such_dir" / "m.pt"
    out["under_file"] = out["file"] / "sub"
    out["long_name"] = d / ("m" * 300 + ".pt")  # longer than a name may be (ENAMETOOLONG from os.stat)
    out["loop"] = d / "loop"  # a symbolic link to itself (ELOOP from os.stat; RuntimeError from Path.resolve)
    out["loop"].symlink_to(out["loop"])
    return out


def F(key):
    """A path of the ``files`` fixture, resolved inside the test."""
    return ("FILE", key)


def _resolve(argv, files):
    return [str(files[a[1]]) if isinstance(a, tuple) else str(a) for a in argv]


BIG_INT = str(10**30)
# (argv, expected exit code, words the one error line must hold)
ROWS = [
    (["epsilon", "--sigma", "1e-320", "--delta", "1e-5", "--steps", "1"], 2, "--sigma: must be >= 1e-150"),
    (["profile", "--epsilon", "1e308", "--dps", "30"], 2, "--epsilon"),
    (["train", "--save", F("dir"), "--epochs", "1", "--delta", "1e-5", *SMALL], 2, "--save"),
    (["train", "--save", F("missing_parent"), "--epochs", "1", "--delta", "1e-5", *SMALL], 2, "--save"),
    (["train", "--save", F("long_name"), "--epochs", "1", "--delta", "1e-5", *SMALL], 2, "--save"),
    (["train", "--save", F("loop"), "--epochs", "1", "--delta", "1e-5", *SMALL], 2, "--save"),
    (["audit", "--cluster", "host:xyz", "--trials", "100", "--delta", "1e-5"], 2, "--cluster"),
    (["audit", "--cluster", "ftp://127.0.0.1:80", "--trials", "100", "--delta", "1e-5"], 2, "--cluster"),
    (["audit", "--cluster", "tcp://127.0.0.1:1", "--trials", "100", "--delta", "1e-5"], 2, "--cluster"),
    (["audit", "--trials", "1e30", "--delta", "1e-5"], 2, "--trials"),
    (["audit", "--trials", BIG_INT, "--delta", "1e-5"], 2, "--trials"),
    (["audit", "--trials", str(2**40), "--delta", "1e-5"], 2, "shards"),
    (["train", "--warmup-steps", str(10**12), "--warmup-sigma", "1", "--epochs", "1", "--delta", "1e-5"], 2,
     "--warmup-steps"),
    (["train", "--epochs", str(10**9), "--delta", "1e-5"], 2, "--epochs"),
    (["calibrate", "--tolerance", "1e-300", "--epsilon", "1", "--delta", "1e-5", "--steps", "1"], 2, "--tolerance"),
    (["forecast", "epsilon", "--context-length", "1000000", "--w", "1000000", "--delta", "1e-5"], 2, "--w"),
    (["forecast", "epsilon", "--context-length", BIG_INT, "--delta", "1e-5"], 2, "--context-length"),
    (["report", "--config", F("deep.json")], 2, "nests too deeply"),
    (["report", "--config", F("n_float.json")], 2, "'N'"),
    (["report", "--config", F("n_int.json")], 2, "401 digits"),
    (["report", "--out", F("under_file"), "--no-audit"], 2, "--out"),
    (["report", "--out", F("file"), "--no-audit"], 2, "--out"),
    (["report", "--out", F("long_name"), "--no-audit"], 2, "--out"),
    (["report", "--out", F("loop"), "--no-audit"], 2, "--out"),
    (["report", "--out", "/proc/tsdp-report", "--no-audit"], 2, "--out"),
    (["epsilon", "--delta", "1e-300", "--steps", "1"], 2, "--delta: 1e-300 is below the smallest δ"),
    (["audit", "--trials", "100", "--delta", "1e-300"], 2, "--delta: 1e-300 is below the smallest δ"),
    (["train", "--epochs", "1", "--delta", "1e-300", *SMALL], 2, "--delta: 1e-300 is below the smallest δ"),
    (["forecast", "epsilon", "--delta", "1e-300"], 2, "--delta: 1e-300 is below the smallest δ"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-300", "--epochs", "1",
      *SMALL], 2, "--delta: 1e-300 is below the smallest δ"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--data", F("big.csv"), "--N", "2", "--L", "59",
      "--batch-size", "1"], 2, "--data"),
    (["epsilon", "--epochs", "1000000000", "--delta", "1e-5"], 2, "--epochs"),
    (["profile", "--alpha", "2", "--L", "5", "--lengths", "30", "40"], 2, "--L"),
    (["profile", "--alpha", "2", "--seed", "-1"], 2, "unrecognized"),
    (["verify", "--seed", str(2**63)], 2, "--seed"),
    (["train", "--context-length", "0", "--epochs", "1", "--delta", "1e-5", *SMALL], 2, "--context-length"),
    (["train", "--data", F("bool.json"), "--epochs", "1", "--delta", "1e-5", "--N", "16", "--L", "24",
      "--batch-size", "4"], 2, "bool.json"),
    (["train", "--sigma", "5", "--epsilon", "1", "--warmup-steps", "200", "--warmup-sigma", "0.7", "--epochs", "1",
      "--delta", "1e-5", "--device", "cpu"], 2, "--warmup-steps"),
    (["train", "--sigma", "1", "--epsilon", "1", "--warmup-steps", "1", "--warmup-sigma", "5", "--epochs", "1",
      "--delta", "1e-5", "--device", "cpu"], 2, "--epsilon"),  # one step at σ = 1 alone is over budget: not the warm-up
    ([*EXPERIMENT, "--out", ""], 2, "--out"),
    ([*EXPERIMENT, "--out", F("file")], 2, "--out"),
    ([*EXPERIMENT, "--out", F("under_file")], 2, "--out"),
    ([*EXPERIMENT, "--out", F("long_name")], 2, "--out"),
    ([*EXPERIMENT, "--out", F("loop")], 2, "--out"),
    ([*EXPERIMENT, "--out", F("cells"), "--samples", "1000000000"], 2, "--samples"),
    ([*EXPERIMENT, "--out", F("cells"), "--levels", "label-noise", "--v", "1e30", "--sigma-forecast", "1"], 2,
     "--v"),
    ([*EXPERIMENT, "--out", F("cells"), "--data-dir", F("dir"), "--dataset", "traffic"], 2, "get_dataset('traffic')"),
]


def _row_id(row):
    return " ".join(a if isinstance(a, str) else a[1] for a in row[0])[:80]


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_known_bad_inputs(row, files):
    argv, code, words = row
    if argv[0] == "experiment" and "--v" in argv:  # --v is checked with the data, after the baselines' extra
        pytest.importorskip("statsforecast", reason="the experiments extra (statsforecast) is not installed")
    outcome = run_case(_resolve(argv, files), LIMIT_S)
    assert verdict(outcome, code) == "", (outcome.code, outcome.out[-500:], outcome.err[-1500:])
    line = error_line(outcome.err)
    assert words in line, line
    assert "nan" not in line.split("(got")[0], line  # "give --delta >= nan" was the old answer


def test_train_refuses_a_context_of_0_before_calibrating_sigma(monkeypatch):
    """With --epsilon and no --sigma, σ's calibration runs (with a progress bar on a terminal) before training; a
    context length of 0, which the accountant allows, is refused before it: one line, no calibration."""
    import importlib

    training = importlib.import_module("tsdp.training.train")

    calls = []
    monkeypatch.setattr(training, "fit_budget", lambda *a, **k: calls.append(a))
    code, _, err = run_cli(["train", "--context-length", "0", "--epochs", "1", "--epsilon", "2", "--delta", "1e-5",
                            *SMALL])
    assert code == 2 and "--context-length" in err and "\n" not in err.strip(), err
    assert calls == []


def test_epochs_error_names_epochs_not_steps():
    code, _, err = run_cli(["epsilon", "--epochs", "1000000000", "--delta", "1e-5"])
    assert code == 2 and "--steps" not in error_line(err)


def test_smallest_delta_is_usable():
    """The δ the refusal names is answered with a finite ε."""
    code, _, err = run_cli(["epsilon", "--delta", "1e-300", "--steps", "1"])
    smallest = error_line(err).split("give δ >= ")[1].split()[0]
    code, out, err = run_cli(["epsilon", "--delta", smallest, "--steps", "1", "--json"])
    assert code == 0, err
    assert json.loads(out)["epsilon"] is not None


# ----------------------------------------------------------------------------- saved model (forecast)


@pytest.mark.parametrize("extra, words", [
    (["--samples", "100000000"], "--samples: 100000000 sample paths"),
    (["--samples", "0"], "--samples"),
    (["--samples", "-1"], "--samples"),
    (["--samples", BIG_INT], "--samples"),
])
def test_forecast_predict_samples(model_file, extra, words):
    argv = ["forecast", "predict", "--model-file", model_file, "--values", *map(str, range(10)), "--epsilon", "1",
            "--delta", "1e-5", *extra]
    outcome = run_case(argv, LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err
    assert words in error_line(outcome.err)


@pytest.mark.parametrize("samples", ["0", "-1", "100000000"])
def test_forecast_tradeoff_samples(model_file, files, samples):
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")  # --data data.csv is read before --samples
    argv = ["forecast", "tradeoff", "--model-file", model_file, "--data", files["data.csv"], "--samples", samples]
    outcome = run_case([str(a) for a in argv], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err
    assert "--samples" in error_line(outcome.err)


def test_forecast_predict_not_a_model(files):
    argv = ["forecast", "predict", "--model-file", files["x.csv"], "--values", *map(str, range(10)), "--epsilon", "1",
            "--delta", "1e-5"]
    outcome = run_case([str(a) for a in argv], LIMIT_S)
    assert verdict(outcome, 2) == ""
    line = error_line(outcome.err)
    assert "--model-file" in line and "not a model file" in line and len(line) < 400, line


@pytest.mark.slow  # a capped child process importing torch
def test_forecast_predict_samples_refused_under_a_3_gib_cap(model_file):
    """An out-of-memory crash that was: 10^8 sample paths under a 3 GiB address-space cap are refused with their size."""
    argv = ["forecast", "predict", "--model-file", model_file, "--values", *map(str, range(10)), "--epsilon", "1",
            "--delta", "1e-5", "--samples", "100000000", "--device", "cpu"]
    outcome = run_capped(argv, limit=300, memory=3 * 2**30)
    assert verdict(outcome, 2) == "", outcome.err[-2000:]
    assert "GiB" in error_line(outcome.err)


# ----------------------------------------------------------------------------- --cluster


@pytest.fixture
def not_dask():
    """A loopback server that answers every connection with bytes that are not Dask's protocol."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            try:
                conn.sendall(b"\xff" * 64)
                time.sleep(0.5)
            except OSError:
                pass
            finally:
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    server.close()


def test_cluster_that_is_not_dask(not_dask):
    outcome = run_case(["audit", "--cluster", not_dask, "--trials", "100", "--delta", "1e-5"], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "--cluster" in error_line(outcome.err)


@pytest.mark.parametrize("command", ["audit", "experiment"])
def test_cluster_without_dask(monkeypatch, tmp_path, command):
    """A missing extra: one line naming the pip command."""
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    argv = ["audit", "--trials", "100", "--delta", "1e-5"] if command == "audit" else [*EXPERIMENT, "--out",
                                                                                          str(tmp_path)]
    outcome = run_case([*argv, "--cluster", "auto"], LIMIT_S)
    assert verdict(outcome, 2) == ""
    assert "pip install 'tsdp[cluster]'" in error_line(outcome.err)


def test_experiment_cluster_that_is_not_dask(not_dask, tmp_path):
    outcome = run_case([*EXPERIMENT, "--out", str(tmp_path), "--cluster", not_dask], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "--cluster" in error_line(outcome.err)


def test_experiment_without_statsforecast_is_refused_before_training(monkeypatch, tmp_path):
    """The baselines come after the grid: without the experiments extra nothing trains, one line names it."""
    monkeypatch.setitem(sys.modules, "statsforecast", None)
    outcome = run_case([*EXPERIMENT, "--out", str(tmp_path)], LIMIT_S)
    assert verdict(outcome, 2) == ""
    assert "pip install 'tsdp[experiments]'" in error_line(outcome.err) and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extra, flag", [
    (["--seeds", "0"], "--seeds"),
    (["--levels", "w-event", "--w", "0"], "--w"),
    (["--levels", "label-noise", "--v", "1e31"], "--v"),
    (["--samples", "5"], "--samples"),
    (["--data", "/nonexistent.csv"], "--data"),
    (["--data-dir", "/nonexistent"], "--data-dir"),
    (["--workers", "0"], "--workers"),
    (["--cluster", "tcp://127.0.0.1:0"], "--cluster"),
    (["--trials-typo"], "--trials-typo"),
])
def test_experiment_checks_its_flags_before_the_missing_extra(monkeypatch, tmp_path, extra, flag):
    """Without statsforecast a bad flag is still named (the flags are checked first, then the extra)."""
    monkeypatch.setitem(sys.modules, "statsforecast", None)
    outcome = run_case([*EXPERIMENT, "--out", str(tmp_path / "grid"), *extra], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert flag in line and "tsdp[experiments]" not in line


@pytest.mark.parametrize("command", [["train", "--epochs", "1", "--epsilon", "1", "--delta", "1e-5"],
                                     ["audit-model", "--model", "simple-ff", "--canaries", "10", "--epsilon", "1",
                                      "--delta", "1e-5"]])
@pytest.mark.parametrize("extra, flag", [(["--batch-size", "0"], "--batch-size"), (["--instances", "0"], "--instances"),
                                         (["--sigma", "-1"], "--sigma"), (["--top", "deterministic", "--drop-last"],
                                                                          "--drop-last")])
def test_a_data_file_without_the_data_extra_names_the_bad_flag_first(monkeypatch, tmp_path, command, extra, flag):
    """A CSV --data needs pandas (the data extra): without it a bad configuration flag is still named first (the
    flags' own constraints are checked before the file is read), and a good one gets the extra's line."""
    monkeypatch.setitem(sys.modules, "pandas", None)
    table = tmp_path / "series.csv"
    table.write_text("a,b\n1,2\n3,4\n")
    outcome = run_case([*command, "--data", str(table), *extra], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert flag in line and "tsdp[data]" not in line, line
    outcome = run_case([*command, "--data", str(table)], LIMIT_S)
    assert verdict(outcome, 2) == "" and "tsdp[data]" in error_line(outcome.err)


# ----------------------------------------------------------------------------- audit-fn: the user's functions


@pytest.fixture
def user_module(user_module_of):
    return user_module_of(USER_FUNCTIONS)


def _audit_fn(module, train, *extra):
    return ["audit-fn", "--train", f"{module}:{train}", "--canaries", "20", "--delta", "1e-5", "--canary", "spike",
            *extra]


@pytest.mark.parametrize("train, loss, words", [
    ("raises", None, "--train: your train function {m}.raises raised ValueError: boom"),
    ("returns_none", None, "--train: your train function {m}.returns_none returned None"),
    ("returns_string", None, "--train: your train function {m}.returns_string returned a model that raised TypeError: "
                             "'str' object is not callable"),
    ("wide_model", None, "returned a model that gave 120 losses for 40 windows (one per window needed)"),
    ("words_model", None, "returned a model that gave str, not per-window losses"),
    ("nan_model", None, "returned a model that gave 40 non-finite loss(es)"),
    ("inf_model", None, "returned a model that gave 40 non-finite loss(es)"),
    ("exits", None, "--train: your train function {m}.exits called sys.exit(3)"),
    ("two_args", None, "--train: your train function {m}.two_args must take 1 positional argument"),
    ("good", "loss_two_args", "--loss: your loss function {m}.loss_two_args must take 3 positional argument"),
    ("good", "loss_raises", "--loss: your loss function {m}.loss_raises raised RuntimeError: loss broke"),
    ("good", "loss_nan", "--loss: your loss function {m}.loss_nan gave 40 non-finite loss(es)"),
])
def test_user_function_failures(user_module, train, loss, words):
    extra = [] if loss is None else ["--loss", f"{user_module}:{loss}"]
    outcome = run_case(_audit_fn(user_module, train, *extra), LIMIT_S)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    assert words.format(m=user_module) in error_line(outcome.err)


def test_debug_shows_the_user_functions_traceback(user_module):
    code, _, err = run_cli(["--debug", *_audit_fn(user_module, "raises")])
    assert code == 2
    assert "Traceback" in err and 'raise ValueError("boom")' in err
    assert "boom" in error_line(err)


# ----------------------------------------------------------------------------- the Python API


def test_api_refuses_what_the_cli_refuses_with_the_same_words():
    from tsdp.theorems.config import ConfigError, TrainingConfig

    with pytest.raises(ConfigError) as api:
        TrainingConfig(sigma=1e-320)
    _, _, err = run_cli(["profile", "--alpha", "2", "--sigma", "1e-320"])
    assert error_line(err) == "tsdp profile: error: " + str(api.value).replace("invalid sigma:", "invalid --sigma:")


def test_api_refuses_a_delta_below_the_resolution():
    from tsdp.theorems.config import TrainingConfig
    from tsdp.verify.accountant import DeltaTooSmallError, PldAccountant
    from tsdp.verify.events import training_event

    acc = PldAccountant().compose(training_event(TrainingConfig(), steps=1))
    with pytest.raises(DeltaTooSmallError) as exc:
        acc.get_epsilon(1e-300)
    assert 0 < acc.get_epsilon(exc.value.smallest) < float("inf")


def test_api_lengths_and_numpy_scalars():
    import numpy as np

    from tsdp.theorems.config import ConfigError, TrainingConfig

    with pytest.raises(ConfigError, match="invalid L: must be the shortest of lengths, 30"):
        TrainingConfig(L=5, lengths=[30, 40])
    assert TrainingConfig(lengths=[30, 40]).L == 30
    c = TrainingConfig(N=np.int64(320), batch_size=np.int32(32), sigma=np.float32(0.5), v=np.float64(1))
    assert type(c.N) is int and type(c.sigma) is float and c.sigma == 0.5
    assert c == TrainingConfig(sigma=0.5)
    with pytest.raises(ConfigError, match="invalid N: must be an integer"):
        TrainingConfig(N=np.bool_(True))


# ----------------------------------------------------------------------------- stale report staging


def test_stale_staging_folders_are_removed(tmp_path):
    """A killed run's `.report.tmp-*` (owner dead, or no owner and old) goes; a live run's stays."""
    import subprocess

    from tsdp.reports.run import STALE_STAGING_S, staging_dir

    final = tmp_path / "report"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folders = {name: tmp_path / f".report.tmp-{name}" for name in ("dead", "old", "young", "live")}
    for f in folders.values():
        f.mkdir()
    (folders["dead"] / ".owner-pid").write_text(str(dead.pid))
    (folders["live"] / ".owner-pid").write_text(str(os.getpid()))
    old = time.time() - STALE_STAGING_S - 10
    os.utime(folders["old"], (old, old))
    fresh = staging_dir(final)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([fresh.name, ".report.tmp-young", ".report.tmp-live"])


# ----------------------------------------------------------------------------- the sweep (slow)

INT_VALUES = ["-1", BIG_INT, "1e400", "2.5e0"]  # 1e400: a count past the float range, read exactly
FLOAT_VALUES = ["nan", "-inf", "1e308", "-1e-320"]
BASES = {  # a cheap valid invocation of every command
    "profile": ["profile", "--alpha", "2"],
    "epsilon": ["epsilon", "--delta", "1e-5", "--steps", "1"],
    "calibrate": ["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "1"],
    "verify": ["verify", "--quick", "--select", "P6"],
    "train": ["train", "--epochs", "1", "--delta", "1e-5", *SMALL],
    "audit": ["audit", "--trials", "100", "--delta", "1e-5"],
    "audit-model": ["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5",
                    "--epochs", "1", *SMALL],
    "bench": ["bench", "accounting"],
    "report": ["report", "--quick", "--no-audit", "--no-progress"],
    "forecast epsilon": ["forecast", "epsilon", "--delta", "1e-5"],
    "forecast calibrate": ["forecast", "calibrate", "--epsilon", "1", "--delta", "1e-5"],
    "experiment": [*EXPERIMENT, "--out", "{OUT}"],
}


def _numeric_flags(argv):
    """(flag, type) of every int or float option of the (sub-)command ``argv`` starts with."""
    from tsdp.cli.main import build_parser

    parser = build_parser()
    for word in argv:
        if word.startswith("-"):
            break
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
        parser = sub.choices[word]
        if not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):  # noqa: SLF001
            break
    for action in parser._actions:  # noqa: SLF001
        if action.type in (count, float) and action.option_strings:
            yield action.option_strings[0], action.type


def sweep_cases():
    """Every numeric flag of every command in ``BASES`` with each extreme value of its type (the base's own
    value of that flag replaced)."""
    cases = []
    for base in BASES.values():
        for flag, kind in _numeric_flags(base):
            for value in INT_VALUES if kind is count else FLOAT_VALUES:
                argv = list(base)
                if flag in argv:
                    i = argv.index(flag)
                    del argv[i:i + 2]
                cases.append(argv + [f"{flag}={value}"])
    return cases


SWEEP = sweep_cases()


def test_sweep_size():
    assert len(SWEEP) >= 300
    assert {argv[0] for argv in SWEEP} >= {"profile", "epsilon", "calibrate", "train", "audit", "audit-model",
                                          "report", "forecast", "bench", "verify", "experiment"}


@pytest.mark.slow
@pytest.mark.parametrize("argv", SWEEP, ids=[" ".join(a) for a in SWEEP])
def test_sweep(argv, tmp_path):
    """An extreme value: refused in one line (exit 2), or answered with finite numbers, within the limit."""
    outcome = run_case([str(tmp_path) if a == "{OUT}" else a for a in argv], 300)
    assert verdict(outcome) == "", (outcome.code, outcome.out[-500:], outcome.err[-1500:])
