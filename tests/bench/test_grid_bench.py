"""`tsdp bench grid`: the default grid trained together against cell by cell, its tables compared (no wall-clock
asserts: the figures are the bench's, the test checks what they are made of)."""
import json
import math

import pytest

from tsdp.bench.experiment import bench_grid, format_grid, table_difference
from tsdp.cli.main import main

import published_json


def _row(model, eps, mean, std=0.0, checkpoint="last"):
    return ["1-event", "wor", model, eps, checkpoint, mean, std]


def test_table_difference_is_relative_and_reads_as_the_printed_table():
    a = [_row("dlinear", 1.0, 0.1234), _row("dlinear", 0.5, math.nan, math.nan)]
    same = table_difference(a, [_row("dlinear", 1.0, 0.1234 * (1 + 1e-7)), _row("dlinear", 0.5, math.nan, math.nan)])
    assert same.rows == 2 and same.same_printed and math.isclose(same.max_relative, 1e-7, rel_tol=1e-3)
    moved = table_difference(a, [_row("dlinear", 1.0, 0.1239), _row("dlinear", 0.5, math.nan, math.nan)])
    assert not moved.same_printed and math.isclose(moved.max_relative, 0.0005 / 0.1239, rel_tol=1e-9)
    with pytest.raises(ValueError, match="not of the same cells"):
        table_difference(a, a[::-1])


@pytest.mark.slow
def test_the_grid_bench_runs_both_ways_and_finds_the_same_table():
    """Two simple-ff seeds at the default ε (1 epoch): 8 cells each way, the same steps, the same table at 3 decimals
    (the cells' equality to float rounding is tests/experiments/test_experiment.py's)."""
    r = bench_grid(models=("simple-ff",), seeds=2, epochs=1, n_samples=10, estimates=False)
    assert r.cells == 8 and r.cell_threads == 1 and r.workers == 1
    assert r.together.steps == r.cell_by_cell.steps > 0
    assert r.tables.rows == 8 and r.tables.same_printed and r.tables.max_relative < 1e-5
    assert r.speedup == r.cell_by_cell.seconds / r.together.seconds
    assert r.together.estimate is None and r.cell_by_cell.cpu_seconds > 0 and r.cpu_speedup > 0
    text = format_grid(r)
    assert "the same at the table's 3 decimals" in text and "8 cells (1-event; simple-ff; 2 seeds" in text
    assert text == format_grid(r.as_dict())
    json.dumps(r.as_dict())


@pytest.mark.parametrize("name", ["grid", "grid-workers-1"])
def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back(name):
    from tsdp.bench.experiment import GridBench

    published = published_json.published(name)
    bench = published_json.rebuilt(GridBench, published)
    published_json.assert_gives_back(bench, published)
    assert format_grid(bench) == format_grid(published)


@pytest.mark.parametrize("argv", [["--workers", "0"], ["--epochs", "0"], ["--rounds", "5"], ["--full"]])
def test_bad_or_foreign_flags_are_one_line(argv, capsys):
    assert main(["bench", "grid", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "invalid --" in err


@pytest.mark.slow  # starts two worker processes (a few seconds of imports each)
def test_the_pool_both_sides_run_on_is_started_before_either_is_timed():
    """warm_pool starts the engine's pool of 2 (the one run_grid then uses): the pool run_grid gets is that one, and
    its two processes answer."""
    import os

    from tsdp.bench.experiment import warm_pool
    from tsdp.executor.local import worker_pool

    assert warm_pool(2) == 2
    pool = worker_pool(2)
    answered = {pool.submit(os.getpid).result() for _ in range(4)}
    assert answered <= set(pool._processes) and len(pool._processes) == 2
