"""A pytest-xdist worker ends within execnet's 5 s grace, so no SIGINT of execnet's lands in its end-of-session
collections (tests/conftest.py's ``pytest_unconfigure``).

A pytest run with ``-n 2`` of one hypothesis test (whose engine installs hypothesis's gc callback) and a plugin that
makes every full collection after the session's end take 2.5 s while the oldest generation holds the heap a run of
the suite keeps (0.3 M live objects allocated here): pytest's cleanup runs five of them, past the 5 s after which
execnet SIGINTs a worker, and "Exception ignored in: <function ...>" with a KeyboardInterrupt is printed, the function
being the gc callback that was running (hypothesis's gc_callback in the suite; checked here without the suite's
conftest). With it, the heap is frozen before those collections and the run ends clean.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

SLOW_GC = '''
import gc
import time

import pytest

KEPT = [[i] for i in range(300_000)]  # (lists: tracked by the gc) the heap a run of the suite keeps (torch, sympy, scipy, pandas)
ENDED = []


def _slow(phase, info):
    if ENDED and phase == "start" and info["generation"] == 2 and len(gc.get_objects(2)) > 100_000:
        time.sleep(2.5)


gc.callbacks.append(_slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session, exitstatus):
    yield
    ENDED.append(True)
'''

ONE_TEST = '''
from hypothesis import given, settings, strategies as st


@settings(max_examples=5)
@given(st.integers())
def test_runs(x):
    assert x == x
'''


def _run(tmp_path, *plugins):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(TESTS)]), OMP_NUM_THREADS="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider", "-p", "slow_gc",
                           *(arg for p in plugins for arg in ("-p", p)), "--rootdir", str(tmp_path), "-c", os.devnull,
                           str(tmp_path / "test_one.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_workers_end_before_execnet_interrupts_them(tmp_path):
    (tmp_path / "slow_gc.py").write_text(SLOW_GC)
    (tmp_path / "test_one.py").write_text(ONE_TEST)
    without = _run(tmp_path)  # the interrupt lands in a gc callback that is running: hypothesis's or the plugin's
    out = without.stdout + without.stderr
    if not ("Exception ignored in: <function" in out and "KeyboardInterrupt" in out):
        # the reproduction is a race against execnet's timer: on a loaded machine (the slow suite on two cores) the
        # interrupt was once not seen; without it the clean run below would pass whether or not the conftest helps
        pytest.skip("the interrupt without the conftest did not reproduce on this machine's load: "
                    "nothing to compare the conftest's run with")
    done = _run(tmp_path, "conftest")  # the suite's tests/conftest.py
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "1 passed" in out, out[-3000:]
    assert "Exception ignored" not in out and "KeyboardInterrupt" not in out, out[-3000:]
