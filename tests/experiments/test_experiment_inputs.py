"""`tsdp experiment` inputs that used to end in a traceback: a label-noise v so large that training diverges (the
probe before the grid, and a cell inside the sharded engine), and a ConfigError raised in a worker process."""
import argparse
import pickle

import pytest

from tsdp.datasets.series import DataError
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.cli.main import main
from tsdp.theorems.config import ConfigError

HUGE_V = GridSettings(epochs=1, n_samples=10, device="cpu", v=1e30)
CELL = Cell("dlinear", 0.5, 0, "label-noise", "wor", sigma_forecast=1.0)


DIVERGING = ["experiment", "--levels", "label-noise", "--v", "1e30", "--sigma-forecast", "1", "--models", "dlinear",
             "--seeds", "1", "--tops", "wor", "--epochs", "1", "--samples", "10", "--device", "cpu"]


def test_a_v_that_makes_training_diverge_is_one_line_naming_v(capsys, tmp_path):
    assert main([*DIVERGING, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tsdp experiment: error: invalid --v:")
    assert "diverge" in err and "Traceback" not in err


def test_a_cell_that_diverges_in_the_engine_is_that_configerror_not_shard_error(tmp_path, monkeypatch, capsys):
    """Past the probe, the grid's cell raises ConfigError naming v; `tsdp experiment` turns the engine's ShardError
    (after its retries) back into it (the probe, which refuses first, replaced by a note that costs nothing)."""
    import tsdp.experiments.estimate as estimate
    from tsdp.experiments.cells import CellTask, run_cell

    with pytest.raises(ConfigError) as exc:
        run_cell(CellTask(CELL, HUGE_V))
    assert exc.value.parameter == "v" and "σ_F·v = 1e+30" in str(exc.value)
    estimated = []
    monkeypatch.setattr(estimate, "estimate", lambda pending, *a, **k: estimated.append(pending) or
                        argparse.Namespace(line=lambda: "no estimate", as_dict=dict))
    assert main([*DIVERGING, "--out", str(tmp_path)]) == 2
    assert [[c.model for c in pending] for pending in estimated] == [["dlinear"]]  # the grid ran past the estimate
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ": error: " in ln]  # beside the grid's note and progress bar
    assert line.startswith("tsdp experiment: error: invalid --v:") and "diverge" in line and "Traceback" not in err


@pytest.mark.parametrize("error", [ConfigError("v", "too large", 1e30), DataError("/x/test", "is missing")])
def test_a_configerror_survives_pickling(error):
    """Worker processes and Dask send a cell's exception back pickled: its class, parameter and message arrive."""
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and back.parameter == error.parameter and str(back) == str(error)


def test_boolean_targets_are_refused_naming_the_file(tmp_path):
    """JSON's true/false (and numpy's bool_) are not measurements: float() would read them as 1 and 0."""
    import json

    import numpy as np

    from tsdp.datasets.formats import from_gluonts, load_gluonts_jsonl

    path = tmp_path / "flags.json"
    path.write_text(json.dumps({"start": "2000-01-01", "target": [1.5, True, 2.0]}) + "\n")
    with pytest.raises(DataError) as exc:
        load_gluonts_jsonl(path)
    assert str(path) in str(exc.value) and "numeric" in str(exc.value)
    with pytest.raises(DataError):
        from_gluonts([{"target": np.array([True, False, True])}])
    assert from_gluonts([{"target": [1, 2.5, 3, "NaN"]}]).series[0].tolist() == [1.0, 2.5, 3.0]  # numbers still read


def test_an_out_that_cannot_be_a_folder_is_refused_before_the_data_is_read(tmp_path, capsys, monkeypatch):
    """--out naming a file is one line naming --out before the dataset is read (a benchmark's --download takes
    minutes): no read of the split happens first."""
    from tsdp.datasets import benchmarks

    reads = []
    real = benchmarks.split_for
    monkeypatch.setattr(benchmarks, "split_for", lambda *a, **k: reads.append(a) or real(*a, **k))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = main(["experiment", "--models", "dlinear", "--epsilons", "1", "--seeds", "1", "--epochs", "1", "--samples",
                 "10", "--device", "cpu", "--out", str(blocker)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("tsdp experiment: error: invalid --out:")
    assert reads == []
