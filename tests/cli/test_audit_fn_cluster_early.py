"""`tsdp audit-fn --runs R --cluster ADDRESS` checks the cluster (Dask installed, the scheduler answering) before your
module is imported and before any run: it imported and checked your train and drew the runs' progress bar, then said
that Dask is missing or the address refuses connections. Now the one stderr line, as `tsdp audit` and `tsdp
experiment` do."""
import sys

import pytest

from cli_run import error_line, run_cli

ARGV = ["audit-fn", "--train", "tsdp_no_such_module:train", "--canaries", "20", "--delta", "1e-5", "--canary", "spike",
        "--runs", "2"]


def test_an_address_that_refuses_connections_is_the_one_line_before_your_module(monkeypatch):
    pytest.importorskip("dask.distributed")
    code, out, err = run_cli([*ARGV, "--cluster", "tcp://127.0.0.1:1"])
    assert code == 2 and out == ""
    assert err.strip() == error_line(err) and "invalid --cluster: " in err, err


def test_without_dask_the_extra_is_named_before_your_module(monkeypatch):
    for name in [m for m in sys.modules if m == "distributed" or m.startswith(("dask", "distributed."))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    code, out, err = run_cli([*ARGV, "--cluster", "auto"])
    assert code == 2 and out == ""
    assert err.strip() == error_line(err) and "pip install 'tsdp[cluster]'" in err, err
