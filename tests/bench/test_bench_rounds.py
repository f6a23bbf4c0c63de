"""bench.rounds: interleaved order, per-round ratios, the recorded machine state."""
from __future__ import annotations

import json
import os

import pytest

from tsdp.bench import rounds as bench_rounds
from tsdp.cli.output import dumps


def test_interleave_runs_candidates_alternately_and_ratio_is_per_round(monkeypatch):
    calls = []
    clock = iter(range(1000))
    monkeypatch.setattr(bench_rounds.time, "perf_counter", lambda: float(next(clock)) ** 2 / 10)
    timed = bench_rounds.interleave({"A": lambda: calls.append("A") or "a", "B": lambda: calls.append("B") or "b"},
                                    rounds=7)
    assert calls == ["A", "B"] + ["A", "B"] * 7  # warm-up, then A, B, A, B, ...
    assert timed.results == {"A": "a", "B": "b"} and timed.rounds == 7
    # clock t_k = k²/10, two readings per call: A spans 4j..4j+1, B 4j+2..4j+3; k..k+1 lasts (2k+1)/10
    a = [(2 * k + 1) / 10 for k in range(0, 28, 4)]
    b = [(2 * k + 1) / 10 for k in range(2, 28, 4)]
    assert timed.seconds == {"A": pytest.approx(tuple(a)), "B": pytest.approx(tuple(b))}
    ratios = sorted(x / y for x, y in zip(b, a))
    got = bench_rounds.ratio(timed, "B", "A")
    assert got.as_dict() == pytest.approx({"median": ratios[3], "min": ratios[0], "max": ratios[-1]})
    assert list(got.as_dict()) == ["median", "min", "max"]  # the published order


def test_too_few_or_too_many_rounds_or_nothing_to_time_is_refused():
    with pytest.raises(ValueError, match=r"\[7, 1000\]"):
        bench_rounds.interleave({"A": lambda: None}, rounds=3)
    with pytest.raises(ValueError, match="rounds"):
        bench_rounds.interleave({"A": lambda: None}, rounds=bench_rounds.MAX_ROUNDS + 1)
    with pytest.raises(ValueError, match="nothing"):
        bench_rounds.interleave({}, rounds=7)


def test_environment_records_threads_cpus_and_load(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    env = bench_rounds.environment()
    assert env.threads["OMP_NUM_THREADS"] == "1" and "MKL_NUM_THREADS" not in env.threads
    assert env.cpus == len(os.sched_getaffinity(0))
    assert env.load == pytest.approx(tuple(os.getloadavg()), abs=0.5)
    assert list(env.as_dict()) == ["machine", "cpus", "threads", "load"]  # the published order
    conditions = bench_rounds.Conditions(env, env)
    line = bench_rounds.format_environment(conditions)
    assert "OMP_NUM_THREADS=1" in line and "load average" in line and env.machine in line
    assert line == bench_rounds.format_environment(json.loads(dumps(conditions.as_dict())))  # a published one reads alike
    spread = bench_rounds.spread([14.06, 11.0, 12.34])
    assert spread == bench_rounds.Spread(12.34, 11.0, 14.06)
    assert bench_rounds.format_spread(spread) == "12.3x (11.0-14.1)"
    assert bench_rounds.format_spread({"median": 12.34, "min": 11.0, "max": 14.06}) == "12.3x (11.0-14.1)"


def test_environment_records_the_variables_it_is_given(monkeypatch):
    """``environment(variables)`` reads the thread variables from the mapping given (a child's environment), and
    None reads this process's."""
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    child = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2", "PATH": "/bin"}
    assert bench_rounds.environment(child).threads == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2"}
    assert bench_rounds.environment().threads.get("OMP_NUM_THREADS") == "7"
    assert "MKL_NUM_THREADS" not in bench_rounds.environment().threads
    timed = bench_rounds.interleave({"a": lambda: None}, variables=child)
    assert timed.environment.before.threads == timed.environment.after.threads == {"OMP_NUM_THREADS": "1",
                                                                                   "MKL_NUM_THREADS": "2"}
