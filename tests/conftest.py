"""Shared pytest settings: hypothesis profiles (the default one is deterministic), the PLD cache off,
one torch thread per xdist worker, a short end-of-session collection, the ``one_thread`` and ``default_precision``
fixtures."""
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("default")

# The on-disk PLD cache (tsdp.verify.pld_cache) is off for the suite: tests that patch the
# numerics would otherwise read PLDs of another test; its own tests switch it on in a tmp folder.
os.environ["TSDP_CACHE_DIR"] = "off"

# Under pytest-xdist (`-n auto`, the default run) every worker process gets an equal share of the
# cores for torch's intra-op threads (set before torch is imported): two workers of two threads each
# on two cores spin against each other (OpenMP's busy wait) and run many times slower.
if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    from tsdp.verify.cpus import available_cpus  # no torch: imports os only

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ["OMP_NUM_THREADS"] = str(max(1, available_cpus() // workers))


def pytest_unconfigure(config):
    """Collect once, then freeze what is left (:func:`gc.freeze`) before pytest's own end-of-session cleanup, which
    runs a full collection five times to report unraisable exceptions: those five then scan only what the session's
    end allocates, not the heap that torch, sympy, scipy and pandas keep (0.4 M objects, 0.2-0.9 s a scan measured,
    more on a loaded machine). Under pytest-xdist the controller ends a worker's gateway once every worker has
    finished, and execnet sends a worker still busy 5 s later a SIGINT of its own: the five scans outlasted that
    (3.4 s measured after tests/training alone, on two cores), and the KeyboardInterrupt landed in hypothesis's gc
    callback, printed as "Exception ignored in: <function gc_cumulative_time.<locals>.gc_callback>". Garbage left
    by the tests is still collected (here), and any exception its finalizers raise is reported by pytest's cleanup.

    Args:
        config (pytest.Config): pytest's configuration.
    """
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture
def one_thread():
    """One torch intra-op thread for the test (small models on a shared 2-core machine: two threads slow them
    ~10x by oversubscription); torch is imported here, inside the fixture, never at collection."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def default_precision():
    """The test starts and ends in torch's initial float32 matmul precision state (the suite runs in it; tests that
    set "high", "medium" or a slot of the ``fp32_precision`` API leave it behind them)."""
    from float32_precision import reset_float32_precision  # imports torch: inside the fixture, never at collection

    reset_float32_precision()
    yield
    reset_float32_precision()
