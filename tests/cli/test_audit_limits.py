"""audit-fn's time limit (--timeout) and the bad inputs around it: one line, exit 2, nothing left running."""
import os
import subprocess
import sys
import time
import uuid

import pytest

from cli_run import error_line, processes_marked as _ours
from sweep import run_case, verdict

SMALL = ["--N", "16", "--L", "30", "--batch-size", "4"]

USER_FUNCTIONS = '''
import multiprocessing
import time


def _sleep_forever():
    time.sleep(10 ** 6)


def sleeps(series):
    time.sleep(10 ** 6)


def sleeps_with_workers(series):
    for _ in range(2):
        multiprocessing.get_context("fork").Process(target=_sleep_forever).start()
    time.sleep(10 ** 6)


def swallows(series):
    while True:
        try:
            time.sleep(10 ** 6)
        except BaseException:
            pass


class Zero:
    def __call__(self, context, forecast):
        import torch
        return torch.zeros(context.shape[0])


def no_optimizer(series):
    return Zero()


def must_not_run(series):
    raise RuntimeError("the training ran")


def holds_the_interpreter(series):
    return sum(range(10 ** 13))  # one C routine: no signal handler runs until it returns
'''


@pytest.fixture
def user_module(user_module_of):
    return user_module_of(USER_FUNCTIONS)


def _audit_fn(module, train, *extra):
    return ["audit-fn", "--train", f"{module}:{train}", "--canaries", "10", "--delta", "1e-5", *SMALL, *extra]


@pytest.mark.parametrize("canary", ["spike", "gradient"])
def test_timeout_stops_a_train_that_sleeps_forever(user_module, canary):
    """One line naming the train and the flag, exit 2, within the limit plus 5 s (the imports done before, as in a
    long-lived process), the train's processes ended."""
    import multiprocessing

    before = {p.pid for p in multiprocessing.active_children()}  # pools other tests of this worker keep alive
    warm = run_case(_audit_fn(user_module, "no_optimizer", "--canary", "spike"), 60)  # the clock measures the
    assert warm.code == 0, warm.err[-1500:]  # audit, not the imports (done here, as in a long-lived process)
    outcome = run_case(_audit_fn(user_module, "sleeps_with_workers", "--canary", canary, "--timeout", "1"), 60)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert f"--train: your train function {user_module}.sleeps_with_workers did not finish within the time limit " \
           "of 1 s (--timeout 1)" in line
    assert outcome.seconds < 1 + 5
    assert [p for p in multiprocessing.active_children() if p.pid not in before] == []


def test_timeout_over_runs_in_this_process_reports_the_runs(user_module):
    """--runs 2 on one worker (in this process): the first run out of time ends the audit, nothing is certified."""
    outcome = run_case(_audit_fn(user_module, "sleeps", "--canary", "spike", "--timeout", "1", "--runs", "2"), 60)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert "(--timeout 1): stopped in run 0; 0 of 2 runs had finished, none is certified" in line


@pytest.mark.parametrize("value", ["0", "-1", "nan", "-inf", "inf", "1e308", "1e-320", "-1e-320", "soon"])
def test_bad_timeouts_are_one_line(user_module, value):
    outcome = run_case(_audit_fn(user_module, "sleeps", f"--timeout={value}"), 60)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    assert "--timeout" in error_line(outcome.err)


def test_timeout_is_refused_on_a_cluster(user_module):
    pytest.importorskip("dask.distributed", reason="the cluster extra (Dask distributed) is not installed")
    outcome = run_case(_audit_fn(user_module, "sleeps", "--timeout", "1", "--runs", "2", "--cluster", "auto"), 60)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    assert "--timeout: not with --cluster" in error_line(outcome.err)


def _subprocess(module_dir, argv, mark):
    env = dict(os.environ, TSDP_TEST_MARK=mark, OMP_NUM_THREADS="1")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tsdp.cli", *argv], cwd=module_dir, env=env, capture_output=True,
                          text=True, timeout=300)
    return proc, time.monotonic() - started


@pytest.mark.slow
def test_timeout_with_worker_processes_ends_them_and_reports_the_runs(user_module, tmp_path):
    """--runs 3 --workers 2: the first run out of time ends the audit, its line says how many runs had finished,
    and no process of the audit is left (the workers and what the train started in them)."""
    mark = uuid.uuid4().hex
    proc, _ = _subprocess(tmp_path, _audit_fn(user_module, "sleeps_with_workers", "--canary", "spike",
                                              "--timeout", "2", "--runs", "3", "--workers", "2"), mark)
    assert proc.returncode == 2, proc.stderr[-1500:]
    line = error_line(proc.stderr)
    assert "did not finish within the time limit of 2 s (--timeout 2)" in line
    assert "of 3 runs had finished, none is certified" in line
    assert "Traceback" not in proc.stderr
    time.sleep(0.5)
    assert _ours(mark) == []


@pytest.mark.slow
def test_a_train_that_swallows_the_stop_ends_the_process(user_module, tmp_path):
    mark = uuid.uuid4().hex
    proc, _ = _subprocess(tmp_path, _audit_fn(user_module, "swallows", "--canary", "spike", "--timeout", "1"), mark)
    assert proc.returncode == 2 and "kept running" in error_line(proc.stderr), proc.stderr[-1500:]
    assert _ours(mark) == []


@pytest.mark.parametrize("flag,value", [("--timeout", "nan"), ("--timeout", "-1"), ("--timeout", "inf"),
                                        ("--workers", "1000"), ("--workers", "0")])
def test_plan_checks_the_flags_it_does_not_use(flag, value):
    """--plan trains nothing, yet a bad --timeout or --workers is still one line naming it (not silently accepted)."""
    outcome = run_case(["audit-fn", "--plan", "--canaries", "100", "--delta", "1e-5", flag, value], 60)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    assert flag in error_line(outcome.err)


@pytest.mark.parametrize("scheme", [["--top", "poisson"], ["--top", "pooled"]])
@pytest.mark.parametrize("runs", ["1", "2"])
def test_a_scheme_without_a_claimed_curve_is_refused_before_training(user_module, scheme, runs):
    """The f-DP test needs tsdp's sound ε as the claimed curve; a Poisson top level and pooled windows (k = 2 here)
    have none. The refusal comes before the train runs and names the analysis that works."""
    outcome = run_case(_audit_fn(user_module, "must_not_run", *scheme, "--runs", runs), 60)
    assert verdict(outcome, 2) == "", (outcome.code, outcome.err[-1500:])
    line = error_line(outcome.err)
    assert line.startswith("tsdp audit-fn: error: invalid --top:") and "--analysis steinke" in line, line
    assert "the training ran" not in outcome.err and "--theorem" not in line


def test_the_api_refuses_a_scheme_without_a_claimed_curve_before_training():
    from tsdp import TrainingConfig
    from tsdp.attacks.canary.user_training import audit_training
    from tsdp.theorems.config import ConfigError

    calls = []
    with pytest.raises(ConfigError, match="analysis='steinke'"):
        audit_training(lambda series: calls.append(1), [[0.0] * 30] * 16, TrainingConfig(N=16, L=30, batch_size=4,
                       top="poisson"), canaries=10, delta=1e-5)
    assert calls == []


@pytest.mark.parametrize("canary", [pytest.param("spike", marks=pytest.mark.slow), "gradient"])
def test_timeout_stops_a_train_stuck_in_one_c_routine(user_module, tmp_path, canary):
    """sum(range(10**13)) holds the interpreter, so the alarm's handler never runs: the command, run as a user runs
    it, ends the stuck run from its supervising process within limit + hard exit + STUCK_S (+ start-up), one line
    naming the function and --timeout, exit 2, nothing of it left running."""
    from tsdp.attacks.canary.time_limit import HARD_EXIT_S, STUCK_S

    mark = uuid.uuid4().hex
    proc, seconds = _subprocess(tmp_path, _audit_fn(user_module, "holds_the_interpreter", "--canary", canary,
                                                    "--timeout", "1"), mark)
    assert proc.returncode == 2, proc.stderr[-1500:]
    line = error_line(proc.stderr)
    assert line.startswith("tsdp audit-fn: error: invalid --timeout: your function ") and \
        f"{user_module}:holds_the_interpreter did not finish within the time limit of 1 s" in line, line
    assert "Traceback" not in proc.stderr
    assert seconds < 1 + HARD_EXIT_S + STUCK_S + 30  # the imports of a fresh interpreter on a loaded machine
    time.sleep(0.5)
    assert _ours(mark) == []


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_a_supervised_command_keeps_its_exit_code_and_output(user_module, tmp_path):
    """Under --timeout the command runs in a supervised child: its output and exit code reach the caller unchanged
    (a finished audit exits 0 and prints its bound; a bad flag found in the child is still one line, exit 2)."""
    proc, _ = _subprocess(tmp_path, _audit_fn(user_module, "no_optimizer", "--canary", "spike", "--timeout", "60"),
                          uuid.uuid4().hex)
    assert proc.returncode == 0 and "ε lower bound" in proc.stdout, proc.stderr[-1500:]
    proc, _ = _subprocess(tmp_path, _audit_fn(user_module, "no_optimizer", "--timeout", "60", "--confidence", "2"),
                          uuid.uuid4().hex)
    assert proc.returncode == 2 and error_line(proc.stderr).startswith("tsdp audit-fn: error: invalid --confidence")
