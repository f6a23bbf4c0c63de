"""`tsdp bench plan`: the plan's answer and its time per cell (two cells here, 30 steps: cheap)."""
import pytest

from tsdp.attacks.canary.fdp_bound import plan
from tsdp.attacks.canary.planning import PlanSearch
from tsdp.attacks.canary.gradient import participation_probability
from tsdp.attacks.canary.user_training import analyses_of
from tsdp.bench.plan import bench_plan, format_bench
from tsdp.theorems.config import TrainingConfig

import published_json


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_the_bench_records_each_cells_answer_and_time():
    r = bench_plan(epsilons=(1.0,), canaries=(100,), tops=("wor",), steps=30)
    plain, stepped = r.cells
    assert plain.canaries_needed == plan(100, 1e-5, 0.95, claimed_epsilon=1.0, scores=2,
                                            search=PlanSearch(m_max=10 ** 7),
                                            analyses=analyses_of("gradient", "fdp")).canaries_needed == 28
    q = participation_probability(TrainingConfig(top="wor"), 30)
    assert stepped.participation == pytest.approx(q) and q < 1 and plain.participation == 1
    assert stepped.canaries_needed > plain.canaries_needed
    assert all(c.seconds > 0 and c.cpu_s >= 0 for c in r.cells) and "--top wor --steps" in stepped.command
    text = format_bench(r)
    assert text == format_bench(r.as_dict())
    assert "within the goal of 10 s: " in text and " of 2 cells by wall time" in text and "--top wor --steps 30" in text


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    from tsdp.bench.plan import PlanBench

    published = published_json.published("plan")
    bench = published_json.rebuilt(PlanBench, published)
    published_json.assert_gives_back(bench, published)
    assert format_bench(bench) == format_bench(published)


def test_the_recorded_threads_are_the_ones_the_timed_commands_ran_under(monkeypatch):
    """The commands run in child processes with :data:`tsdp.bench.startup.THREADS`; the record's thread variables
    (before and after) are the children's, not this process's (here OMP_NUM_THREADS=7 and MKL_NUM_THREADS=5, which
    the children override to 1, and OMP_WAIT_POLICY=PASSIVE, which they inherit)."""
    import subprocess
    import json

    from tsdp.bench import plan as bench_plan_module
    from tsdp.bench.rounds import THREAD_VARIABLES

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.setenv("MKL_NUM_THREADS", "5")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    seen = []

    def fake_run(argv, env, **kwargs):  # the command's answer, without starting it
        seen.append(dict(env))
        return subprocess.CompletedProcess(argv, 0, json.dumps({"canaries_needed": 3, "participation": 1.0}), "")

    monkeypatch.setattr(bench_plan_module.subprocess, "run", fake_run)
    r = bench_plan(epsilons=(1.0,), canaries=(100,), tops=(), steps=30)
    assert len(seen) == 1
    ran_under = {v: seen[0][v] for v in THREAD_VARIABLES if v in seen[0]}
    assert ran_under["OMP_NUM_THREADS"] == "1" and ran_under["MKL_NUM_THREADS"] == "1"
    assert ran_under["OMP_WAIT_POLICY"] == "PASSIVE"
    assert r.environment.before.threads == ran_under and r.environment.after.threads == ran_under
