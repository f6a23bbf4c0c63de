"""--cluster at an address that accepts TCP connections but never answers (or hangs up) is refused in one line
within the connect timeout, for every command that takes --cluster (they share
:func:`tsdp.executor.cluster.check_cluster`); a real Dask scheduler passes the same check."""
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("dask.distributed")

from tsdp.executor import cluster  # noqa: E402
from tsdp.cli.main import main  # noqa: E402
from tsdp.theorems.config import ConfigError  # noqa: E402


class _Listener:
    """A server on 127.0.0.1 that accepts every connection and then stays silent (``close=False``) or hangs up."""

    def __init__(self, close: bool):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.close, self.held = close, []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.close:
                conn.close()
            else:
                self.held.append(conn)

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def fast_timeout(monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)


@pytest.mark.parametrize("close,says", [(False, "sends no Dask handshake"), (True, "without a Dask handshake")])
def test_a_server_that_accepts_and_never_answers_is_refused_within_the_timeout(fast_timeout, close, says):
    with _Listener(close) as server:
        started = time.monotonic()
        with pytest.raises(ConfigError) as exc:
            cluster.check_cluster(server.address)
        assert time.monotonic() - started < 5 and exc.value.parameter == "cluster" and says in str(exc.value)


USER = """
import torch


class Model:
    def __call__(self, context, forecast):
        return torch.zeros(context.shape[0])


def good(series):
    return Model()
"""


@pytest.mark.parametrize("argv", [
    ["experiment", "--models", "dlinear", "--seeds", "1", "--epochs", "1", "--samples", "10"],
    ["audit", "--trials", "100", "--delta", "1e-5"],
    ["audit-fn", "--train", "{USER}:good", "--canaries", "20", "--delta", "1e-5", "--canary", "spike", "--runs", "2"],
])
def test_every_cluster_command_refuses_a_silent_server_in_one_line(fast_timeout, tmp_path, capsys, user_module_of,
                                                                   argv):
    if "{USER}:good" in argv:
        argv = [a.replace("{USER}", user_module_of(USER)) for a in argv]
    if argv[0] == "experiment":
        argv = [*argv, "--out", str(tmp_path / "cells")]
    with _Listener(False) as server:
        started = time.monotonic()
        code = main([*argv, "--cluster", server.address])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if ": error: " in line]  # audit-fn's progress bar may come first
    assert code == 2 and len(errors) == 1 and "--cluster" in errors[0] and "handshake" in errors[0]
    assert "Traceback" not in err
    assert time.monotonic() - started < 60


SCHEDULER = """
import asyncio, sys
from distributed import Scheduler
async def main():
    async with Scheduler(host="127.0.0.1", port=0, dashboard_address=None) as s:
        print(s.address, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
asyncio.run(main())
"""


def test_a_real_dask_scheduler_passes_the_check():
    proc = subprocess.Popen([sys.executable, "-c", SCHEDULER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        address = proc.stdout.readline().strip()
        assert address.startswith("tcp://127.0.0.1:")
        cluster.check_cluster(address)  # no exception: the scheduler sent its handshake in time
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
