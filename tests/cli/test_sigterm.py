"""SIGTERM (SLURM, Kubernetes, `timeout`, systemd) stops a command as Ctrl-C does: its cleanup runs, it exits 143 with
one line, no staging folder or process of it is left; tsdp used as a library leaves its caller's handler alone."""
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from cli_run import processes_marked, run_cli


pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not os.path.isdir("/proc"),
                                reason="POSIX signals and /proc (Linux) are what is tested")


def _start(argv, cwd, mark):
    env = dict(os.environ, TSDP_TEST_MARK=mark, OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "tsdp", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _until(found, proc, what, seconds=120):
    """Poll ``found()`` until true (the command is where the test wants it), failing if the command ended first."""
    deadline = time.monotonic() + seconds
    while not found():
        if proc.poll() is not None:
            pytest.fail(f"the command ended before {what}: {proc.communicate()[1][-1500:]}")
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(0.05)


def _terminated(proc, command):
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, (proc.returncode, err[-1500:])
    assert err.splitlines()[-1] == f"tsdp {command}: terminated by SIGTERM", err[-1500:]
    assert "Traceback" not in err, err[-1500:]
    return err


def test_sigterm_publishes_a_report_as_interrupted_and_leaves_no_staging_folder_or_process(tmp_path):
    """Killed by SIGTERM, the report left its ``.rep.tmp-XXXXXXXX`` staging folder (and its claim processes) behind;
    now the partial report is published as Ctrl-C publishes it, and nothing of the run is left."""
    mark = uuid.uuid4().hex
    proc = _start(["report", "--quick", "--no-audit", "--no-progress", "--workers", "2", "--out", "rep"], tmp_path,
                  mark)
    _until(lambda: any(p.name.startswith(".rep.tmp-") for p in tmp_path.iterdir()), proc, "staging folder")
    _until(lambda: len(processes_marked(mark)) >= 3, proc, "claim processes")  # the command and its two side processes
    _terminated(proc, "report")  # at once: a SIGTERM while the pool starts waits until it has (executor.processes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rep"]
    assert json.loads((tmp_path / "rep" / "results.json").read_text())["meta"]["status"] == "interrupted"
    time.sleep(0.5)
    assert processes_marked(mark) == []


SLOW_SPAWN = '''
import os
import time
from multiprocessing import util

_spawnv_passfds = util.spawnv_passfds


def _slow(path, args, passfds):
    """A spawned worker's start-up data written a second late: a SIGTERM lands in that window."""
    pid = _spawnv_passfds(path, args, passfds)
    if "--multiprocessing-fork" in args and os.environ.get("TSDP_TEST_SPAWNED"):
        open(os.environ["TSDP_TEST_SPAWNED"], "a").close()
        time.sleep(1.0)
    return pid


util.spawnv_passfds = _slow
'''


@pytest.mark.parametrize("argv, command", [
    (["audit", "--trials", "2000", "--delta", "1e-5", "--workers", "2"], "audit"),
    (["report", "--quick", "--no-audit", "--no-progress", "--workers", "2", "--out", "rep"], "report"),
])
def test_sigterm_while_workers_start_is_one_line_and_leaves_no_worker(tmp_path, argv, command):
    """A SIGTERM that lands while a worker is spawned, before its start-up data is written (the window made a second
    wide by a sitecustomize that delays the write), printed the worker's EOFError traceback (multiprocessing's, reading
    data that never came) after the command's line; now the stop waits until the workers have started: the one line,
    exit 143, and no process of the run left."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_SPAWN)
    spawned = tmp_path / "spawned"
    mark = uuid.uuid4().hex
    env = dict(os.environ, TSDP_TEST_MARK=mark, OMP_NUM_THREADS="1", TSDP_TEST_SPAWNED=str(spawned),
               PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, "-m", "tsdp", *argv], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _until(spawned.exists, proc, "a worker spawned")
    err = _terminated(proc, command)
    assert "EOFError" not in err, err[-1500:]
    time.sleep(0.5)
    assert processes_marked(mark) == []


USER_FUNCTIONS = '''
import multiprocessing
import pathlib
import time


def _sleep_forever():
    time.sleep(10 ** 6)


def sleeps_with_workers(series):
    for _ in range(2):
        multiprocessing.get_context("fork").Process(target=_sleep_forever).start()
    pathlib.Path("training").touch()
    time.sleep(10 ** 6)
'''


def test_sigterm_reaches_a_supervised_command_and_ends_what_it_started(user_module_of, tmp_path):
    """audit-fn runs a user's train in a child process watched by the command's process: a SIGTERM to that process
    (``kill PID``, a container's stop) left the child, and what the train started, running; now the child stops as on
    Ctrl-C and everything below it is ended."""
    module = user_module_of(USER_FUNCTIONS)
    mark = uuid.uuid4().hex
    proc = _start(["audit-fn", "--train", f"{module}:sleeps_with_workers", "--canaries", "10", "--delta", "1e-5",
                   "--N", "16", "--L", "30", "--batch-size", "4", "--canary", "spike"], tmp_path, mark)
    _until((tmp_path / "training").exists, proc, "the train ran")
    _until(lambda: len(processes_marked(mark)) >= 4, proc, "the train's processes")  # command, its child, the train's two
    _terminated(proc, "audit-fn")
    time.sleep(0.5)
    assert processes_marked(mark) == []


def test_a_sigterm_while_processes_start_is_raised_when_they_have_started():
    """In a starting_processes block the CLI's handler holds the SIGTERM: the block runs to its end, then Terminated
    is raised (once); outside one it is raised at once."""
    from tsdp.cli.termination import Terminated, terminate_as_interrupt
    from tsdp.executor.processes import starting_processes

    reached = []
    with pytest.raises(Terminated), terminate_as_interrupt():
        with starting_processes():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)  # the handler has run: it held the stop
            reached.append("end of block")
        reached.append("after the block")
    assert reached == ["end of block"]
    with pytest.raises(Terminated), terminate_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        pytest.fail("not raised at once")


def test_the_command_line_restores_the_handler_it_replaced(monkeypatch, tmp_path):
    """tsdp.cli.main.main in a process: SIGTERM during the command stops it (143, one line), and the caller's handler
    is back afterwards."""
    import tsdp.reports.run as run

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr(run, "accounting_section", terminated)
    received = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        code, _, err = run_cli(["report", "--no-audit", "--no-progress", "--workers", "1", "--out", tmp_path / "r"])
        assert (code, err.splitlines()[-1]) == (143, "tsdp report: terminated by SIGTERM"), err
        assert received == []
        os.kill(os.getpid(), signal.SIGTERM)
        assert received == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_the_library_leaves_the_callers_handler_alone(monkeypatch, tmp_path):
    """build_report called as a library: a SIGTERM during it reaches the caller's own handler, not tsdp's."""
    import tsdp.reports.run as run
    from tsdp.theorems.config import DEFAULT_CONFIG

    class Stop(Exception):
        pass

    received = []

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise Stop

    monkeypatch.setattr(run, "accounting_section", signalled)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        with pytest.raises(Stop):
            run.build_report(DEFAULT_CONFIG, out_dir=tmp_path / "r", progress=False, audits=False, workers=1)
        assert received == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_repeated_sigterm_lets_the_cleanup_finish_and_a_fork_gets_the_old_handler():
    """Inside the command the first SIGTERM raises Terminated and a second, during its cleanup, is ignored (SLURM
    signals every process; a supervised child gets its parent's too); a process forked meanwhile is not the command:
    it has the handler from before."""
    from tsdp.cli.termination import Terminated, stop_status, terminate_as_interrupt

    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        cleaned = False
        with pytest.raises(Terminated) as stop:
            with terminate_as_interrupt():
                child = os.fork()
                if child == 0:
                    os._exit(0 if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL else 1)
                assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)
                finally:
                    os.kill(os.getpid(), signal.SIGTERM)  # the second: ignored while the cleanup runs
                    cleaned = True
        assert cleaned and stop_status(stop.value) == (143, "terminated by SIGTERM")
        assert stop_status(KeyboardInterrupt()) == (130, "interrupted")
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)
