"""How a grid ran (:class:`tsdp.experiments.run_info.GridRun`) is a frozen record whose JSON form is the ``run`` block
``tsdp experiment --json`` wrote when it was a dict: the blocks below were recorded from that dict-merging code
(``tsdp experiment --quick --models simple-ff --epsilons 1 --seeds 1 --epochs 1 --levels 1-event --tops wor --json``,
run once and then again on the same folder; ``seconds`` left out, a wall time)."""
from dataclasses import FrozenInstanceError

import pytest

from tsdp.experiments.grid import Cell, GridSettings
from tsdp.experiments.run_info import GridRun
from tsdp.experiments.table import run_grid

RELEASED_FIRST = {"executor": "in-process", "workers": 1, "cluster": None, "shards_planned": 1, "shards_run": 1,
                  "retries": 0, "stopped_early": False, "seconds": None, "cells": 1, "resumed": 0, "run": 1,
                  "together": True}
RELEASED_RESUMED = {"executor": "none", "workers": 1, "cells": 1, "resumed": 1, "run": 0, "together": True,
                    "seconds": None}
TINY = GridSettings(epochs=1, n_samples=10, device="cpu")
CELL = Cell("simple-ff", 1.0, 0, "1-event", "wor")


def _without_seconds(form: dict) -> dict:
    return {k: (None if k == "seconds" else v) for k, v in form.items()}


def test_the_json_form_flattens_the_executors_record_and_keeps_its_key_order():
    """Built from a real executor record (one trivial unit) and from none: the released keys, in order."""
    from tsdp.executor.run import run_shards

    class Unit:
        key, trials = "only", 1

    _, engine = run_shards([Unit()], lambda unit: unit)
    ran = GridRun(engine, 1, cells=1, resumed=0, run=1, together=True, seconds=engine.seconds + 1.0)
    assert _without_seconds(ran.as_dict()) == RELEASED_FIRST and list(ran.as_dict()) == list(RELEASED_FIRST)
    assert ran.as_dict()["seconds"] == ran.seconds != engine.seconds
    resumed = GridRun(None, 1, cells=1, resumed=1, run=0, together=True, seconds=0.5)
    assert resumed.as_dict() == {**RELEASED_RESUMED, "seconds": 0.5}
    assert list(resumed.as_dict()) == list(RELEASED_RESUMED)


@pytest.mark.slow  # trains one tiny cell (~10 s on a shared machine)
def test_a_grid_run_and_its_resumption_give_the_released_run_blocks(tmp_path):
    _, first = run_grid([CELL], TINY, folder=tmp_path)
    _, again = run_grid([CELL], TINY, folder=tmp_path)
    for info, released in ((first, RELEASED_FIRST), (again, RELEASED_RESUMED)):
        form = info.as_dict()
        assert list(form) == list(released)  # the keys in the released order
        assert _without_seconds(form) == released
        assert form["seconds"] == info.seconds > 0  # the grid's seconds, not the executor's
        assert (info.executor, info.cells, info.resumed, info.run, info.together) == \
            (released["executor"], released["cells"], released["resumed"], released["run"], released["together"])
    assert first.engine.shards_run == 1 and first.engine.seconds <= first.seconds and again.engine is None
    with pytest.raises(FrozenInstanceError):
        first.run = 2
