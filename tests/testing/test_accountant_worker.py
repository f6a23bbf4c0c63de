"""The worker process an accountant runs in: every way a user's function can end arrives as a reply, a hang is
ended with what it started, and the next request gets a fresh worker."""
import os
import subprocess
import sys
import time

import pytest

from tsdp import TrainingConfig
from tsdp.executor.processes import GRACE_S
from tsdp.testing.worker import OUTPUT_MAX, AccountantWorker, terminal_view

CONFIG = TrainingConfig()


def _reply(fn, timeout=5.0):
    with AccountantWorker(fn, timeout) as worker:
        return worker.ask(CONFIG, 1, 1e-5)


def _exit_7(c, s, d):
    os._exit(7)


def _sys_exit(c, s, d):
    sys.exit("bye")


def _interrupt(c, s, d):
    raise KeyboardInterrupt("stop")


def _declines(c, s, d):
    raise NotImplementedError("not my scheme")


class _Unprintable(Exception):
    def __str__(self):
        raise ValueError("no text")

    __repr__ = __str__


def _raises_unprintable(c, s, d):
    raise _Unprintable()


def _returns_unprintable(c, s, d):
    return _Unprintable()


def _running(pid: int) -> bool:
    """Whether ``pid`` is alive and not a zombie (an ended child waiting for its new parent to reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("fn,expected", [
    (lambda c, s, d: c.N / 64, dict(kind="value", value=5.0)),  # a lambda: the worker is forked, nothing is pickled
    (lambda c, s, d: None, dict(kind="declined", message="returned None")),
    (_declines, dict(kind="declined", type_name="NotImplementedError", message="not my scheme")),
    (lambda c, s, d: 10 ** 400, dict(kind="too_large", shown="401 digits", type_name="int")),
    (lambda c, s, d: [1.0], dict(kind="not_real", shown="[1.0]", type_name="list")),
    (_sys_exit, dict(kind="exited", shown="'bye'")),
    (_interrupt, dict(kind="raised", type_name="KeyboardInterrupt", message="stop")),
    (_exit_7, dict(kind="died", exit_status=7)),
    (lambda c, s, d: input(), dict(kind="raised", type_name="EOFError")),  # stdin is /dev/null, not the command's
    (_raises_unprintable, dict(kind="raised", type_name="_Unprintable", message="<_Unprintable object whose str() raised>")),
    (_returns_unprintable, dict(kind="not_real", shown="<_Unprintable object whose repr() raised>")),
    (lambda c, s, d: __import__("fractions").Fraction(10 ** 400, 3), dict(kind="too_large", type_name="Fraction")),
])
def test_every_ending_is_a_reply(fn, expected):
    reply = _reply(fn)
    for key, value in expected.items():
        assert getattr(reply, key) == value, reply


def test_a_hang_is_ended_with_the_processes_it_started_and_the_next_call_gets_a_fresh_worker(tmp_path):
    """The accountant starts a child (`sleep 300`) and hangs: at the limit the worker and its child are gone
    within the SIGTERM grace; the next ask answers from a new process."""
    pid_file = tmp_path / "child.pid"

    def hangs_with_a_child(c, s, d):
        if c.N == 320:
            child = subprocess.Popen(["sleep", "300"])
            pid_file.write_text(str(child.pid))
            time.sleep(300)
        return float(os.getpid())

    with AccountantWorker(hangs_with_a_child, timeout=0.5) as worker:
        started = time.monotonic()
        assert worker.ask(CONFIG, 1, 1e-5).kind == "hung"
        assert time.monotonic() - started < 0.5 + 2 * GRACE_S + 1
        assert not _running(int(pid_file.read_text()))
        again = worker.ask(CONFIG.with_(N=321), 1, 1e-5)
    assert again.kind == "value" and again.value not in (os.getpid(),)


def test_output_is_captured_per_call_as_a_terminal_shows_it():
    def noisy(c, s, d):
        print("x" * (OUTPUT_MAX + 10))
        return 1.0

    with AccountantWorker(noisy, timeout=5.0) as worker:
        first = worker.ask(CONFIG, 1, 1e-5)
        second = worker.ask(CONFIG, 2, 1e-5)
    assert first.output == "x" * OUTPUT_MAX + f" ... ({OUTPUT_MAX + 11} bytes in all)"
    assert second.output == first.output  # emptied between calls, not appended
    assert terminal_view("step 1\r\x1b[Astep 2\rdone\n\nbar 50%\r        \rnext") == "done\nnext"


def test_the_worker_checks_its_time_limit_before_any_work():
    with pytest.raises(ValueError, match="invalid timeout: must be <= 1e"):
        AccountantWorker(lambda c, s, d: 1.0, timeout=1e10)


@pytest.mark.parametrize("how", ["subprocess", "fork", "orphan"])
def test_what_an_accountant_leaves_running_ends_with_a_passing_check(tmp_path, how):
    """An accountant that starts a process and answers at once (a subprocess, a forked child, an orphaned grandchild
    whose parent has exited): after the worker closes, nothing it started is running."""
    pid_file = tmp_path / "child.pid"

    def leaves_a_child(c, s, d):
        if how == "subprocess":
            pid_file.write_text(str(subprocess.Popen(["sleep", "300"]).pid))
        elif how == "fork":
            pid = os.fork()
            if pid == 0:
                time.sleep(300)
                os._exit(0)
            pid_file.write_text(str(pid))
        else:  # the shell prints the pid of a background sleep and exits: the sleep is re-parented
            out = subprocess.run(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
            pid_file.write_text(out.stdout.strip())
        return 1.0

    with AccountantWorker(leaves_a_child, timeout=30) as worker:
        reply = worker.ask(CONFIG, 1, 1e-5)
        assert reply.kind == "value" and reply.value == 1.0
        assert _running(int(pid_file.read_text()))  # it is running while the check runs
    assert not _running(int(pid_file.read_text()))


def _forks_and_returns_twice(config, steps, delta):
    """Forks and never tells the child to exit: both processes return from the accountant and both answer; a broken
    accountant that answers 0 past one step (below any attained ε) and 10^6 at one step."""
    os.fork()
    return 1e6 if steps == 1 else 0.0


def test_a_second_answer_to_one_request_is_reported_never_judged_as_the_next_cells():
    """An accountant whose forked child returns too sends two replies for one cell: the extra one is not the next
    cell's answer (read as such, ε = 10^6 of 1 step was judged 'sound' at 10 steps where the accountant answers 0, and
    the check passed); it is one AccountantError line naming the cell, and the forked child is ended with the worker."""
    from tsdp.testing import AccountantError, Cell, accountant, check_accountant

    fn = accountant(_forks_and_returns_twice, "forks")
    with pytest.raises(AccountantError, match=r"not to request 2 .* 10 step\(s\)"):
        check_accountant(fn, [Cell(CONFIG, 1), Cell(CONFIG, 10)], timeout=20)


def test_a_reply_that_is_not_the_requests_is_corrupt_and_the_worker_is_replaced():
    """A reply with another request's number, or an object that is not a reply, is 'corrupt' (the worker is ended;
    the next request starts a fresh one and is answered)."""
    from tsdp.testing.worker import CORRUPT, Reply

    with AccountantWorker(lambda c, s, d: 1.0, 5.0) as worker:
        for stale in (Reply("value", value=2.0, request=0), "not a reply"):
            worker._conn.recv = lambda stale=stale: stale  # what a stray process wrote on the pipe
            reply = worker.ask(CONFIG, 1, 1e-5)
            assert reply.kind == CORRUPT and reply.value is None
            assert worker._process is None
            fresh = worker.ask(CONFIG, 1, 1e-5)
            assert (fresh.kind, fresh.value) == ("value", 1.0)
