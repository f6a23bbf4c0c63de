"""The executor on units of work of its own (no torch, no audit): results keyed by unit whatever ran them, a failed
unit re-run and never dropped, a unit that always fails stopping the run, a fatal failure ending it at once, the stop
rule, and a worker process killed mid-run changing nothing."""
from __future__ import annotations

import contextvars
import json
from dataclasses import FrozenInstanceError, dataclass
from pathlib import Path

import pytest

from tsdp.executor.local import threads_per_worker
from tsdp.executor.run import ExecutorRun, run_shards
from tsdp.executor.seams import _units_wrapped, holding
from tsdp.executor.tracker import Aborted, ShardError
from tsdp.verify.cpus import available_cpus

from fault_injection import failing_once


@dataclass(frozen=True)
class Square:
    """A unit: the squares of ``trials`` consecutive integers from ``index * trials``."""

    world: str
    index: int
    trials: int

    @property
    def key(self):
        return self.world, self.index


@dataclass(frozen=True)
class Squares:
    key: tuple
    trials: int
    total: int


def squares(spec: Square) -> Squares:
    first = spec.index * spec.trials
    return Squares(spec.key, spec.trials, sum(i * i for i in range(first, first + spec.trials)))


class Fatal(Exception):
    pass


def fatal_at_two(spec: Square) -> Squares:
    if spec.index == 2:
        raise Fatal("out of time")
    return squares(spec)


UNITS = [Square(w, i, 10) for i in range(4) for w in "pq"]


def _totals(results):
    return {k: r.total for k, r in results.items()}


def test_results_are_keyed_by_unit_and_the_run_is_recorded():
    results, info = run_shards(UNITS, squares)
    assert _totals(results) == {("p", i): sum(j * j for j in range(10 * i, 10 * i + 10)) for i in range(4)} | \
        {("q", i): sum(j * j for j in range(10 * i, 10 * i + 10)) for i in range(4)}
    assert isinstance(info, ExecutorRun)
    assert (info.executor, info.workers, info.cluster, info.shards_planned, info.shards_run, info.retries,
            info.stopped_early) == ("in-process", 1, None, 8, 8, 0, False)


AUDIT_JSON = Path(__file__).parents[1] / "attacks" / "data" / "audit_json_before_typed_results.json"


def test_the_run_record_is_frozen_and_its_json_form_is_the_released_one():
    """The record's JSON form has the keys the released audit JSON's ``run`` block begins with (recorded from the
    dict-returning executor, its ``seconds`` left out there), in that order, with the attributes' values."""
    released = json.loads(AUDIT_JSON.read_text())["theory"]["run"]
    executor_keys = list(released)[:list(released).index("shard_size")]
    _, info = run_shards(UNITS, squares)
    form = info.as_dict()
    assert list(form) == executor_keys + ["seconds"]
    assert form == {k: getattr(info, k) for k in form} and form["seconds"] >= 0
    assert {k: released[k] for k in ("executor", "workers", "cluster", "retries", "stopped_early")} == \
        {k: form[k] for k in ("executor", "workers", "cluster", "retries", "stopped_early")}
    with pytest.raises(FrozenInstanceError):
        info.retries = 2


def test_a_caller_extends_the_run_record_keeping_the_executors_fields_first():
    @dataclass(frozen=True)
    class Planned(ExecutorRun):
        shard_size: int

    _, info = run_shards(UNITS, squares)
    planned = info.extended(Planned, shard_size=10)
    assert isinstance(planned, Planned) and planned.shard_size == 10
    assert planned.as_dict() == {**info.as_dict(), "shard_size": 10}
    assert list(planned.as_dict()) == list(info.as_dict()) + ["shard_size"]
    with pytest.raises(TypeError):
        info.extended(Planned)  # the caller's field has no default


def test_a_unit_that_fails_once_is_rerun_and_changes_no_result(tmp_path):
    clean, _ = run_shards(UNITS, squares)
    with _units_wrapped(failing_once(str(tmp_path / "marker"), world="q", index=2)):
        hit, info = run_shards(UNITS, squares)
    assert _totals(hit) == _totals(clean)
    assert info.retries == 1 and info.shards_run == 8 and (tmp_path / "marker").exists()


def test_a_unit_that_always_fails_stops_the_run_after_max_attempts():
    attempts = []

    def broken(spec):
        attempts.append(spec.key)
        raise RuntimeError("boom")

    with pytest.raises(ShardError, match="failed 3 times; last error: RuntimeError"):
        run_shards(UNITS, broken, max_attempts=3)
    assert attempts == [("p", 0)] * 3  # in process, the first unit is retried until the run stops


def test_a_fatal_failure_ends_the_run_at_once_naming_the_unit():
    with pytest.raises(Aborted) as stop:
        run_shards(UNITS, fatal_at_two, fatal=(Fatal,))
    assert isinstance(stop.value.cause, Fatal) and stop.value.key == ("p", 2)
    assert (stop.value.done, stop.value.planned, stop.value.done_trials) == (4, 8, 40)  # p0 q0 p1 q1 before p2


def test_the_stop_rule_ends_the_run_early_with_the_units_finished_so_far():
    results, info = run_shards(UNITS, squares, stop=lambda done: len(done) >= 3)
    assert list(results) == [("p", 0), ("q", 0), ("p", 1)]
    assert info.stopped_early and info.shards_run == 3 and info.shards_planned == 8


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_positive_integer(workers):
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        run_shards(UNITS, squares, workers=workers)


@pytest.mark.slow  # spawns two worker processes, one of them twice (no torch: a few seconds)
def test_two_processes_give_the_same_results_when_a_worker_is_killed(tmp_path):
    clean, _ = run_shards(UNITS, squares)
    with _units_wrapped(failing_once(str(tmp_path / "marker"), world="p", index=1, mode="exit")):
        two, info = run_shards(UNITS, squares, workers=2)
    assert _totals(two) == _totals(clean)
    assert info.executor == "processes" and info.retries >= 1 and (tmp_path / "marker").exists()


def test_threads_per_worker_shares_the_cores_out_locally_and_leaves_a_remote_cluster_alone():
    cpus = available_cpus()
    assert threads_per_worker(1) is None  # this process: torch's own setting
    assert threads_per_worker(2) == max(1, cpus // 2)
    assert threads_per_worker(4 * cpus) == 1
    assert threads_per_worker(1, "auto") == cpus
    assert threads_per_worker(2, "tcp://127.0.0.1:8786") is None


def test_a_seam_holds_its_value_within_the_block_only():
    variable = contextvars.ContextVar("seam", default="own")
    with holding(variable, "replaced"):
        assert variable.get() == "replaced"
        with pytest.raises(KeyError):
            with holding(variable, "inner"):
                raise KeyError
        assert variable.get() == "replaced"  # restored after an error too
    assert variable.get() == "own"


@dataclass(frozen=True)
class Audit:
    """A unit keyed as the planted-bug bench's: (row, seed), two integers."""

    row: int
    seed: int
    trials: int = 1

    @property
    def key(self):
        return self.row, self.seed


def row_and_seed(spec: Audit) -> Squares:
    return Squares(spec.key, spec.trials, 1000 * spec.row + spec.seed)


@pytest.mark.slow  # starts a local Dask cluster of one process on 127.0.0.1 (a few seconds)
def test_dask_runs_units_whose_keys_print_alike_each_under_its_own_name():
    """(1, 23) and (12, 3) both read "123" with their parts run together: Dask took them for one task, so one unit's
    result stood for both (or the run failed); each must run as itself, as in this process."""
    pytest.importorskip("dask.distributed")
    units = [Audit(1, 23), Audit(12, 3), Audit(0, 5)]
    here, _ = run_shards(units, row_and_seed)
    dask, info = run_shards(units, row_and_seed, cluster="auto")
    assert _totals(dask) == _totals(here) == {(1, 23): 1023, (12, 3): 12003, (0, 5): 5}
    assert (info.executor, info.shards_run, info.retries) == ("dask", 3, 0)


def test_units_sharing_a_key_are_refused_before_any_runs():
    """Two units under one key would be run once and counted once while the record planned both (shards_planned 2,
    shards_run 1, not stopped early): the run is refused, naming the key, and nothing runs."""
    ran = []

    def counted(spec):
        ran.append(spec.key)
        return squares(spec)

    with pytest.raises(ValueError, match=r"two units share the key \('q', 1\)"):
        run_shards([Square("p", 0, 10), Square("q", 1, 10), Square("q", 1, 5)], counted)
    assert ran == []


class RuleError(Exception):
    """An error raised inside the stop rule itself (not by a unit)."""


def broken_rule(done):
    raise RuleError("the stop rule itself failed")


def test_an_error_in_the_stop_rule_is_raised_not_taken_for_a_failed_unit():
    """The stop rule (the sequential violation test) failing is the caller's error: it is raised. Before, it was taken
    for a failure of the unit that had just finished: counted as a re-run, swallowed, and the run went on to the end
    without the rule (every unit ran once, each 'failed' once)."""
    with pytest.raises(RuleError):
        run_shards(UNITS, squares, stop=broken_rule)


@pytest.mark.slow  # spawns two worker processes (no torch: a few seconds)
def test_an_error_in_the_stop_rule_is_raised_with_worker_processes():
    with pytest.raises(RuleError):
        run_shards(UNITS, squares, stop=broken_rule, workers=2)


@dataclass(frozen=True)
class Where:
    """A unit that reports where it ran: its Dask worker's address and its scheduler's."""

    index: int
    trials: int = 1

    @property
    def key(self):
        return "where", self.index


@dataclass(frozen=True)
class Addresses:
    key: tuple
    worker: str
    scheduler: str
    trials: int = 1


def addresses(spec: Where) -> Addresses:
    from distributed import get_worker

    worker = get_worker()
    return Addresses(spec.key, worker.address, worker.scheduler.address)


@pytest.mark.slow  # starts a local Dask cluster of two processes (a few seconds)
def test_the_auto_cluster_listens_on_this_machine_only():
    """cluster="auto": the scheduler and every worker listen on 127.0.0.1, never on an address other machines reach."""
    pytest.importorskip("dask.distributed")
    results, _ = run_shards([Where(i) for i in range(4)], addresses, workers=2, cluster="auto")
    for r in results.values():
        assert r.worker.startswith("tcp://127.0.0.1:") and r.scheduler.startswith("tcp://127.0.0.1:"), r


def test_an_interrupt_ends_the_pools_workers(monkeypatch):
    """Ctrl-C, or the CLI's SIGTERM (a KeyboardInterrupt), while units run on the pool: its processes are ended with
    the units in flight (they were left running; at exit the process waited for them, and a SIGKILL then orphaned
    them). A thread pool stands in for the processes: what is checked is that the pool is discarded with kill."""
    from concurrent.futures import ThreadPoolExecutor

    import tsdp.executor.local as local

    discarded = []
    monkeypatch.setattr(local, "worker_pool", lambda workers: ThreadPoolExecutor(workers))
    monkeypatch.setattr(local, "_discard_pool", lambda workers, kill=False: discarded.append((workers, kill)))

    def interrupted(spec):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_shards(UNITS, interrupted, workers=2)
    assert discarded == [(2, True)]
