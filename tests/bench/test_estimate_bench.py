"""`tsdp bench estimate` and `tsdp bench baselines`: the estimate's ratio is taken from a real run of the grid it
estimated; bad flags are one line."""
import json

import pytest

from tsdp.bench import experiment as bench
from tsdp.bench.experiment import SeriesShape, bench_estimate, format_estimate, synthetic_split
from tsdp.experiments.estimate import planned_steps
from tsdp.experiments.grid import GridSettings, plan
from tsdp.cli.main import main
from tsdp.cli.output import dumps

import published_json


def test_the_ratio_is_the_estimate_over_the_measured_run():
    """Two DLinear cells (ε = 1 and ∞, 1 epoch): the steps the estimate planned are the steps the cells ran, the
    measured wall time holds every cell's own training clock, and the ratio is the estimate over that wall time
    (no bound on wall-clock figures: the machine is shared)."""
    r = bench_estimate(models=("dlinear",), epochs=1, n_samples=10)
    cells = plan(models=("dlinear",), epsilons=(1.0, float("inf")), seeds=1, tops=("wor",))
    settings = GridSettings(epochs=1, n_samples=10)
    assert list(r.steps.values()) == [planned_steps(c, settings) for c in cells]
    assert r.estimate.steps == sum(r.steps.values()) > 0
    assert r.measured_seconds >= sum(r.cell_seconds.values()) > 0
    assert r.ratio == r.estimate.seconds / r.measured_seconds
    assert set(r.estimate.seconds_per_step) == {"dlinear/dp", "dlinear/no-dp"}
    assert all(v > 0 for v in r.estimate.seconds_per_step.values())
    assert f"ratio {r.ratio:.2f}" in format_estimate(r) and format_estimate(r) == format_estimate(r.as_dict())
    # the JSON form: the published file's keys in its order, the estimate as its own record's JSON form with every key
    # of the published estimate block, in its order
    form, published = json.loads(dumps(r.as_dict())), published_json.published("estimate")
    assert list(form) == list(published) and list(form["estimate"]) == list(published["estimate"])
    assert form["estimate"] == json.loads(dumps(r.estimate.as_dict())) and form["models"] == ["dlinear"]


def test_the_estimate_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    """The whole published file, the estimate block included (its trained-together fields too), is the JSON form of
    the record built from it, and both render the same text."""
    import dataclasses

    from tsdp.bench.experiment import EstimateBench
    from tsdp.experiments.estimate import PlanEstimate

    published = published_json.published("estimate")
    estimate = published_json.rebuilt(PlanEstimate, published["estimate"])
    assert list(estimate.as_dict()) == [f.name for f in dataclasses.fields(PlanEstimate)]
    record = EstimateBench(**{**{f.name: published[f.name] for f in dataclasses.fields(EstimateBench)},
                              "estimate": estimate, "models": tuple(published["models"])})
    published_json.assert_gives_back(record, published)
    assert format_estimate(record) == format_estimate(published)


def test_the_baselines_bench_computes_then_reads_back_the_same_numbers(monkeypatch):
    """A 2-series set (4 histories): the bench's CRPS are the baselines computed directly, the second call is a cache
    hit with the same numbers, and the CPU seconds are counted."""
    pytest.importorskip("statsforecast")
    from tsdp.experiments.baselines import BASELINES, baseline_crps

    shape = SeriesShape(series=2, length=200, windows=2)
    monkeypatch.setattr(bench, "SMALL", shape)
    r = bench.bench_baselines(workers=1)
    split = synthetic_split(shape)
    assert r.histories == 4 and r.cache_hit and r.cpu_seconds > 0 and r.goal_seconds is None
    assert r.crps == {b: baseline_crps(b, split.test.histories, split.test.targets, 24, 24) for b in BASELINES}
    assert "hit, same CRPS" in bench.format_baselines(r) and bench.format_baselines(r) == bench.format_baselines(
        r.as_dict())
    json.dumps(r.as_dict())


def test_the_baselines_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    published = published_json.published("baselines")
    record = published_json.rebuilt(bench.BaselinesBench, published)
    assert isinstance(record.shape, SeriesShape)
    published_json.assert_gives_back(record, published)
    assert bench.format_baselines(record) == bench.format_baselines(published)


def test_the_probe_trains_at_the_cells_threads_and_restores_them(monkeypatch):
    """The probe's runs see the cells' torch threads (CellTask.threads), whatever the process had; it gives them back."""
    import importlib

    import torch

    from tsdp.experiments.cells import CellTask
    from tsdp.experiments.estimate import probe
    from tsdp.experiments.grid import Cell

    loop_train = importlib.import_module("tsdp.training.train")  # the module (the package re-exports train)
    seen, real = [], loop_train.train
    monkeypatch.setattr(loop_train, "train", lambda *a, **k: (seen.append(torch.get_num_threads()), real(*a, **k))[1])
    before = torch.get_num_threads()
    torch.set_num_threads(CellTask.threads + 1)
    try:
        per_step, fixed = probe(Cell("dlinear", 1.0, 0, "1-event", "wor"), GridSettings(epochs=1, n_samples=10), True)
        assert torch.get_num_threads() == CellTask.threads + 1
    finally:
        torch.set_num_threads(before)
    assert seen == [CellTask.threads, CellTask.threads] and per_step > 0 and fixed > 0


@pytest.mark.parametrize("argv,flag", [
    (["baselines", "--workers", "0"], "--workers"), (["estimate", "--full"], "--full"),
    (["loop", "--workers", "2"], "--workers"), (["baselines", "--rounds", "9"], "--rounds"),
])
def test_bad_bench_flags_are_one_line(capsys, argv, flag):
    code = main(["bench", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and flag in err and len(err.splitlines()) == 1 and "Traceback" not in err
