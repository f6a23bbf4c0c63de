"""Time limits on a user's code: the time_limit block, and audit_training with a time limit on a train that never ends."""
import multiprocessing
import os
import time

import pytest

from tsdp.attacks.canary.time_limit import Expired, check_timeout, time_limit
from tsdp.executor.processes import children
from tsdp.theorems.config import ConfigError, TrainingConfig


def _sleep_forever():
    time.sleep(10 ** 6)


def test_a_block_past_its_limit_is_stopped_even_if_it_catches_exceptions():
    started = time.monotonic()
    with pytest.raises(Expired):
        with time_limit(0.3):
            for _ in range(100):
                try:
                    time.sleep(10 ** 6)
                except Exception:  # noqa: BLE001 - user code that swallows every error does not swallow the limit
                    pass
    assert time.monotonic() - started < 2.0


def test_a_block_within_its_limit_runs_to_its_end_and_disarms():
    with time_limit(5.0):
        total = sum(range(1000))
    assert total == 499500
    time.sleep(0.1)  # no alarm left armed behind


def test_an_outer_limit_keeps_its_remaining_time():
    with pytest.raises(Expired) as outer:
        with time_limit(0.8):
            with time_limit(5.0):
                pass
            time.sleep(10)
    assert outer.value.args == (0.8,)


def test_processes_the_stopped_code_started_are_ended():
    context = multiprocessing.get_context("fork")
    before = children()
    started = []
    with pytest.raises(Expired):
        with time_limit(0.5):
            for _ in range(2):
                p = context.Process(target=_sleep_forever)
                p.start()
                started.append(p)
            time.sleep(10 ** 6)
    assert all(not p.is_alive() for p in started)
    assert set(children()) - set(before) == set()


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), 1e308, 1e-320, "soon", True])
def test_bad_timeouts_are_refused_naming_timeout(bad):
    with pytest.raises(ConfigError, match="invalid timeout"):
        check_timeout(bad)


def test_audit_training_stops_a_train_that_sleeps_forever_within_the_limit_plus_5_s():
    """audit_training(timeout=1) on a train that never returns (and starts two worker processes): TimeLimitError
    naming the train, raised within 1 + 5 s of the call, and no process of the train left."""
    from tsdp.attacks.canary.user_training import AuditOptions, TimeLimitError, audit_training
    from tsdp.datasets.series import synthetic

    context = multiprocessing.get_context("fork")
    workers = []

    def train(series):
        for _ in range(2):
            workers.append(context.Process(target=_sleep_forever))
            workers[-1].start()
        time.sleep(10 ** 6)

    config = TrainingConfig(N=16, L=30, context_length=2, forecast_length=1, batch_size=4)
    data = synthetic(16, 30, seed=0)
    before = children()
    started = time.monotonic()
    for canary in ("spike", "gradient"):
        workers.clear()
        with pytest.raises(TimeLimitError, match=r"your train function .*train did not finish within the time limit "
                                                 r"of 1 s \(timeout=1\)"):
            audit_training(train, data, config, canaries=10, delta=1e-5, canary=canary,
                           options=AuditOptions(timeout=1))
        assert all(not w.is_alive() for w in workers) and len(workers) == 2
    assert time.monotonic() - started < 2 * (1 + 5)
    assert set(children()) - set(before) == set()
    import torch

    p = torch.zeros(3, requires_grad=True)  # the canaries' optimizer hooks went with the stopped run
    p.grad = torch.ones(3)
    torch.optim.SGD([p], lr=1.0).step()
    assert torch.equal(p.detach(), -torch.ones(3))
    assert os.getpid()  # this process lives on: only the train's processes were ended
