"""Sharded audits (attacks.montecarlo.shards on the executor): shard plans independent of workers, exact merge,
re-run of failed shards, identical results on 1 and 2 local processes and on a local Dask cluster (a worker killed
mid-run included)."""
import numpy as np
import pytest

from tsdp.theorems.config import TrainingConfig
from tsdp.attacks.montecarlo.audit import audit, audit_statistics
from tsdp.attacks.montecarlo.options import Statistic, TrialPlan
from tsdp.attacks.montecarlo.counts import ShardStats, merge
from tsdp.attacks.montecarlo.shards import plan_shards
from tsdp.executor.seams import _units_wrapped

from fault_injection import failing_once
from tsdp.attacks.montecarlo.constructions import build

SMALL = TrainingConfig(N=16, batch_size=4, L=6, context_length=2, forecast_length=1, sigma=0.8)
ALPHAS = [1.0, 3.0]


def _stats(construction, **where):
    """The same audit's statistics, run where ``where`` (workers, cluster) says."""
    return audit_statistics(construction, delta=1e-3, steps=1,
                            trials=TrialPlan(5000, seed=11, shard_size=1000, device="cpu", **where),
                            statistic=Statistic(alphas=ALPHAS))


def _same(a, b):
    """Identical certified numbers, counts included (the bound is a function of the counts)."""
    assert a.test == b.test
    assert np.array_equal(a.h_lower, b.h_lower)
    assert a.gof == b.gof


def test_shard_plan_is_a_prefix_and_independent_of_workers():
    """Shard i has the same seed and size in a plan of 5000 and of 9000 trials (fixed shard size)."""
    edges, y_edges = np.array([0.0]), np.array([0.0])
    short = plan_shards("T6", SMALL, 5000, 1, 3, edges, y_edges, shard_size=1000)
    long = plan_shards("T6", SMALL, 9000, 1, 3, edges, y_edges, shard_size=1000)
    assert [s.key for s in short] == [(w, i) for i in range(5) for w in "pq"]
    for a, b in zip(short, long):
        assert a.key == b.key and a.trials == b.trials == 1000
        assert np.array_equal(a.seed.generate_state(4), b.seed.generate_state(4))
    states = {tuple(s.seed.generate_state(2)) for s in long}
    assert len(states) == len(long)  # every shard its own stream
    assert plan_shards("T6", SMALL, 2500, 1, 3, edges, y_edges, shard_size=1000)[-1].trials == 500


def test_merge_adds_counts_exactly_and_refuses_a_gap():
    parts = {("p", i): ShardStats("p", i, 10, np.array([i, 2 * i, 1]), np.array([1, 1]), 0.0) for i in range(3)}
    total = merge(parts, "p")
    assert total.trials == 30 and total.counts.tolist() == [3, 6, 3] and total.y_counts.tolist() == [3, 3]
    assert merge(parts, "p", 2).counts.tolist() == [1, 2, 2]
    del parts[("p", 1)]
    with pytest.raises(KeyError):
        merge(parts, "p")


def test_failed_shard_is_rerun_and_the_result_equals_the_uninterrupted_run(tmp_path):
    construction = build("T6", SMALL)
    clean = _stats(construction)
    with _units_wrapped(failing_once(str(tmp_path / "marker"), world="q", index=2)):
        hit = _stats(construction)
    _same(clean, hit)
    assert hit.run.retries == 1 and clean.run.retries == 0
    assert hit.run.shards_run == hit.run.shards_planned == 10


@pytest.mark.slow  # spawns a pool whose workers die on import, several times over
def test_a_script_without_a_main_guard_gets_the_reason_not_just_a_broken_pool(tmp_path):
    """Workers are spawned: a script calling run_shards(workers=2) at module level re-runs in every worker, which
    dies at start-up. The audit stops (no shard dropped) and the error says what to do."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(
        "import numpy as np\n"
        "from tsdp.attacks.montecarlo.shards import plan_shards, run_shard\n"
        "from tsdp.executor.run import run_shards\n"
        "from tsdp.theorems.config import TrainingConfig\n"
        "cfg = TrainingConfig(N=16, batch_size=4, L=6, context_length=2, forecast_length=1, sigma=0.8)\n"
        "specs = plan_shards('T6', cfg, 200, 1, 0, np.array([0.0]), np.array([0.0]), shard_size=100)\n"
        "run_shards(specs, run_shard, workers=2, max_attempts=1)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("tsdp.executor.tracker.ShardError") and "if __name__ == \"__main__\":" in last, last


def test_the_shard_size_is_part_of_the_sample():
    """Control: the shard size is part of the plan (a different size is a different sample), workers are not."""
    construction = build("T6", SMALL)
    a = _stats(construction)
    b = audit_statistics(construction, delta=1e-3, steps=1,
                         trials=TrialPlan(5000, seed=11, shard_size=500, device="cpu"),
                         statistic=Statistic(alphas=ALPHAS))
    assert a.test.true_positives != b.test.true_positives or a.test.false_positives != b.test.false_positives


@pytest.mark.slow
def test_one_vs_two_processes_identical_and_a_killed_worker_changes_nothing(tmp_path):
    """2 spawned processes, one killed (os._exit) while running shard p1: counts and ε equal the 1-worker run's."""
    construction = build("T6", SMALL)
    one = _stats(construction)
    with _units_wrapped(failing_once(str(tmp_path / "marker"), world="p", index=1, mode="exit")):
        two = _stats(construction, workers=2)
    _same(one, two)
    assert two.run.executor == "processes" and two.run.retries >= 1
    r1 = audit("T6", SMALL, delta=1e-3, trials=TrialPlan(3000, seed=4, shard_size=1000),
               statistic=Statistic(alphas=ALPHAS))
    r2 = audit("T6", SMALL, delta=1e-3, trials=TrialPlan(3000, seed=4, shard_size=1000, workers=2),
               statistic=Statistic(alphas=ALPHAS))
    assert r1.epsilon_lower == r2.epsilon_lower and r1.test == r2.test and r1.profile == r2.profile


@pytest.mark.slow
def test_dask_local_cluster_one_vs_two_workers_identical_and_a_killed_worker_changes_nothing(tmp_path):
    """Dask LocalCluster with 1 and 2 worker processes; in the second, the worker running shard q3 dies
    (os._exit): Dask reschedules it and the counts and ε equal the in-process run's."""
    pytest.importorskip("dask.distributed")
    construction = build("T6", SMALL)
    here = _stats(construction)
    one = _stats(construction, workers=1, cluster="auto")
    with _units_wrapped(failing_once(str(tmp_path / "marker"), world="q", index=3, mode="exit")):
        two = _stats(construction, workers=2, cluster="auto")
    _same(here, one)
    _same(here, two)
    assert one.run.executor == two.run.executor == "dask"
    assert (tmp_path / "marker").exists()  # the worker was killed once


def test_cli_engine_flags(capsys):
    """`tsdp audit --workers/--shard-size/--cluster`: bad values exit 2 naming the flag; a sharded run reports its shards."""
    from tsdp.cli.main import main

    base = ["audit", "--trials", "2000", "--delta", "1e-3", "--N", "16", "--batch-size", "4", "--L", "6"]
    for extra, flag in ((["--workers", "0"], "--workers"), (["--shard-size", "0"], "--shard-size"),
                        (["--cluster", " "], "--cluster")):
        assert main(base + extra) == 2
        assert flag in capsys.readouterr().err
    assert main(base + ["--shard-size", "500", "--alpha", "1"]) == 0
    out = capsys.readouterr().out
    assert "run: 8/8 shards of 500 on in-process" in out and "attained ε bracket" in out
