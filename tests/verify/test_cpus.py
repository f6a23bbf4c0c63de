"""The CPUs this process may use: worker counts are checked against its affinity, not the machine's cores."""
import pytest

from tsdp.theorems.config import ConfigError
from tsdp.verify import cpus


def test_check_workers_follows_the_affinity(monkeypatch):
    monkeypatch.setattr(cpus.os, "cpu_count", lambda: 64)  # the machine: many cores; this process: 2 of them
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert cpus.available_cpus() == 2
    assert cpus.check_workers("workers", 8) == 8
    with pytest.raises(ConfigError, match="invalid workers: must be <= 8"):
        cpus.check_workers("workers", 9)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigError, match="invalid jobs"):
            cpus.check_workers("jobs", bad)
