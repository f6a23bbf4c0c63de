"""`tsdp bench startup`: process start-up against `python -c pass` (here on commands of known cost, to keep it cheap)."""
import json

import pytest

from tsdp.bench import rounds as bench_rounds
from tsdp.bench import startup as bench_startup
from tsdp.cli.main import main

import published_json

SLEEP = 0.2


def test_the_bench_times_fresh_processes_against_the_baseline(monkeypatch):
    """A command that sleeps 0.2 s more than the baseline takes at least that much longer in every round (a bench that
    timed nothing, or the wrong process, could not see it); the baseline's own ratio is 1; one thread per process."""
    monkeypatch.setattr(bench_startup, "COMMANDS", {bench_startup.BASELINE: ["-c", "pass"],
                                                    "sleep": ["-c", f"import time; time.sleep({SLEEP})"]})
    r = bench_startup.bench_startup(rounds=7)
    base, sleep = r.commands
    assert base.command == bench_startup.BASELINE and base.ratio == bench_rounds.Spread(1.0, 1.0, 1.0)
    assert base.extra_s == 0.0
    assert sleep.seconds.min >= SLEEP and sleep.extra_s >= SLEEP - 0.05
    assert sleep.ratio.median > 1.0
    assert r.threads["OMP_NUM_THREADS"] == "1" and r.environment.before.machine
    table = bench_startup.format_bench(r)
    assert "python -c pass" in table and "sleep" in table and table == bench_startup.format_bench(r.as_dict())
    json.dumps(r.as_dict())


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    published = published_json.published("startup")
    bench = published_json.rebuilt(bench_startup.StartupBench, published)
    published_json.assert_gives_back(bench, published)
    assert bench_startup.format_bench(bench) == bench_startup.format_bench(published)


def test_a_failing_command_is_an_error_not_a_time(monkeypatch):
    monkeypatch.setattr(bench_startup, "COMMANDS", {bench_startup.BASELINE: ["-c", "pass"],
                                                    "fails": ["-c", "raise SystemExit(3)"]})
    with pytest.raises(RuntimeError, match="exited 3"):
        bench_startup.bench_startup(rounds=7)


@pytest.mark.parametrize("argv,flag", [(["--rounds", "3"], "--rounds"), (["--discretization", "0.1"], "--discretization")])
def test_bad_flags_are_one_line(argv, flag, capsys):
    assert main(["bench", "startup"] + argv) == 2
    err = capsys.readouterr().err.strip()
    assert flag in err and "\n" not in err, err
