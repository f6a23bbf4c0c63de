"""`tsdp experiment`'s resume reads only what this grid would compute: a cell file that is damaged, edited, from
another cell, configuration, dataset or code version, or out of range is recomputed (and overwritten), never
reported; a folder where a cell file goes is one line naming it; files are written atomically."""
import gzip
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from tsdp.datasets.benchmarks import PAPER
from tsdp.datasets.series import DataError
from tsdp.experiments import cells as cells_module
from tsdp.verify import file_cache
from tsdp.verify.file_cache import digest_of
from tsdp.experiments.cells import CellTask, crps_ceiling, path_of, read_stored, run_cell
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.experiments.table import run_grid
from tsdp.cli.main import main

TINY = GridSettings(epochs=1, n_samples=10, device="cpu")
CELL = Cell("dlinear", 1.0, 0, "1-event", "wor")


def _strip(r):
    return {k: v for k, v in r.as_dict().items() if k != "seconds"}


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """The tiny cell computed once: its result and its file's text."""
    folder = tmp_path_factory.mktemp("good")
    (r,), _ = run_grid([CELL], TINY, folder=folder)
    assert r.steps > 0 and math.isfinite(r.crps)
    return r, path_of(folder, CELL).read_text()


def _resigned(d: dict) -> str:
    """A cell file whose digest matches its (edited) contents, so that the key and field checks alone must catch
    the edit."""
    d["digest"] = digest_of(d["key"], "result", d["result"])
    return json.dumps(d)


def _assert_recomputed(folder, good_result, settings=TINY, says=""):
    """The file under ``folder`` is not used (its problem says ``says``), the grid recomputes the cell to the
    good result, and the file it leaves reads back."""
    stored = read_stored(folder, CELL, settings)
    assert stored.result is None and says in stored.problem
    results, info = run_grid([CELL], settings, folder=folder)
    assert (info.run, info.resumed) == (1, 0)
    assert _strip(results[0]) == _strip(good_result)
    assert _strip(read_stored(folder, CELL, settings).result) == _strip(good_result)


def test_a_good_file_is_read_back_and_not_recomputed(tmp_path, good):
    r, text = good
    path_of(tmp_path, CELL).write_text(text)
    results, info = run_grid([CELL], TINY, folder=tmp_path)
    assert (info.run, info.resumed) == (0, 1) and results[0] == r


EDITS = {
    "nan-number": (lambda d: d["result"].update(crps=math.nan), "crps nan"),
    "nan-string": (lambda d: d["result"].update(crps="NaN"), "field 'crps' is 'NaN'"),
    "negative": (lambda d: d["result"].update(crps=-0.25), "crps -0.25"),
    "1e300": (lambda d: d["result"].update(selected_crps=1e300), "selected_crps 1e+300"),
    "over-budget": (lambda d: d["result"].update(epsilon_spent=1.5), "ε spent 1.5"),
    "negative-spent": (lambda d: d["result"].update(epsilon_spent=-0.1), "ε spent -0.1"),
    "result-key": (lambda d: d["result"].update(key="1-event_wor_dlinear_eps2.0_seed0"), "field 'key'"),
    "file-key": (lambda d: d["key"].update(name="1-event_wor_dlinear_eps2.0_seed0"), "another cell's name"),
    "code": (lambda d: d["key"].update(code="0" * 64), "other training code"),
    "steps": (lambda d: d["result"].update(steps=10 ** 9), "steps 1000000000"),
    "bool-steps": (lambda d: d["result"].update(steps=True), "field 'steps' is True"),
    "unknown-field": (lambda d: d["result"].update(extra=1), "unknown field 'extra'"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_file_with_a_matching_digest_is_recomputed(tmp_path, good, edit):
    """NaN as a number or a string, a negative CRPS, a CRPS above the largest a float32 forecast can score, ε spent
    above the budget or negative, another cell's name (in the result or the key), another code version, more steps
    than the epochs cap, a mistyped or unknown field: each is recomputed to the true result, even when the file's
    digest was made to match."""
    r, text = good
    d = json.loads(text)
    change, says = EDITS[edit]
    change(d)
    path_of(tmp_path, CELL).write_text(_resigned(d))
    _assert_recomputed(tmp_path, r, says=says)


def test_an_edit_without_a_new_digest_is_caught_by_the_digest(tmp_path, good):
    """A CRPS edited to a plausible number (in range, so only the digest can tell) is recomputed."""
    r, text = good
    d = json.loads(text)
    d["result"]["crps"] = r.crps / 2
    path_of(tmp_path, CELL).write_text(json.dumps(d))
    _assert_recomputed(tmp_path, r, says="digest")


@pytest.mark.parametrize("text,says", [("{truncated", "unreadable"), ("[]", "no key, result and digest"),
                                       ("\xff\xfe", "unreadable")])
def test_a_damaged_or_old_format_file_is_recomputed(tmp_path, good, text, says):
    path_of(tmp_path, CELL).write_bytes(text.encode("latin-1"))
    _assert_recomputed(tmp_path, good[0], says=says)


def test_a_file_of_the_format_before_keys_is_recomputed(tmp_path, good):
    """The flat result files of earlier versions carry no key: they are recomputed, not trusted (the file names
    are those of earlier versions)."""
    r, text = good
    assert CELL.key == "1-event_wor_dlinear_eps1.0_seed0"
    path_of(tmp_path, CELL).write_text(json.dumps(json.loads(text)["result"]))
    _assert_recomputed(tmp_path, r, says="no key")


@pytest.mark.parametrize("other,says", [
    (Cell("simple-ff", 1.0, 0, "1-event", "wor"), "another model"),
    (Cell("dlinear", 1.0, 0, "w-event", "wor", w=2), "another privacy level"),
    (Cell("dlinear", 1.0, 0, "1-event", "shuffle"), "another top level"),
])
def test_a_file_of_another_cell_under_this_cells_name_is_recomputed(tmp_path, good, other, says):
    run_cell(CellTask(other, TINY, str(tmp_path)))
    shutil.move(path_of(tmp_path, other), path_of(tmp_path, CELL))
    _assert_recomputed(tmp_path, good[0], says=says)


@pytest.mark.parametrize("change,says", [
    ({"seed": 1}, "--seed"), ({"delta": 1e-6}, "--delta"), ({"epochs": 2}, "--epochs"),
    ({"n_samples": 20}, "--samples"), ({"discretization": 2e-3}, "--discretization"),
])
def test_a_file_computed_under_other_settings_is_recomputed(tmp_path, good, change, says):
    """The same cell (same file name) computed under another --seed, --delta, --epochs, --samples or
    --discretization: its numbers are not this grid's (asserted: they differ), so it is recomputed."""
    other = GridSettings(**{**TINY.as_dict(), **change})
    foreign = run_cell(CellTask(CELL, other, str(tmp_path)))
    assert _strip(foreign) != _strip(good[0])
    _assert_recomputed(tmp_path, good[0], says=says)


def _gluonts(root, seed, n=130, length=240):
    """A small electricity folder in GluonTS's layout (see tests/experiments/test_experiment.py's fixture): training
    series long enough for electricity's 7 validation windows of L_F = 24 and a window to train on."""
    rng = np.random.default_rng(seed)
    f = PAPER["electricity"].forecast_length
    folder = root / "electricity"
    (folder / "train").mkdir(parents=True)
    (folder / "test").mkdir()
    (folder / "metadata.json").write_text(json.dumps({"freq": "1H", "prediction_length": f}))
    full = [50 + rng.normal(0, 5, length + f) for _ in range(n)]
    for part, cut in (("train", length), ("test", length + f)):
        with gzip.open(folder / part / "data.json.gz", "wt") as out:
            for s in full:
                out.write(json.dumps({"start": "2012-01-01 00:00", "target": s[:cut].tolist()}) + "\n")


def test_a_file_of_another_dataset_or_other_data_is_recomputed(tmp_path):
    """A cell of the same name from another dataset (electricity's, in the m1-yearly grid's folder), or from the same
    dataset name with other numbers (another data folder), is recomputed."""
    cell = Cell("dlinear", math.inf, 0, "1-event", "wor")
    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    _gluonts(a, 1)
    _gluonts(b, 2)
    out.mkdir()
    on_a = GridSettings(dataset="electricity", data_dir=str(a), epochs=1, n_samples=10, device="cpu", seed=0)
    on_b = GridSettings(dataset="electricity", data_dir=str(b), epochs=1, n_samples=10, device="cpu", seed=0)
    from_a = run_cell(CellTask(cell, on_a, str(out)))
    stored = read_stored(out, cell, on_b)
    assert stored.result is None and "other data" in stored.problem
    results, info = run_grid([cell], on_b, folder=out)
    assert info.run == 1 and results[0].crps != from_a.crps
    assert read_stored(out, cell, on_b).result == results[0]
    stored = read_stored(out, cell, TINY)  # the m1-yearly grid reads electricity's file
    assert stored.result is None and "another dataset" in stored.problem
    same_data = GridSettings(dataset="electricity", data_dir=str(tmp_path / "copy"), epochs=1, n_samples=10,
                             device="cpu", seed=0)
    shutil.copytree(b, tmp_path / "copy")  # the same numbers in another folder: the same cell
    assert read_stored(out, cell, same_data).result == results[0]


def test_crps_ceiling_is_the_largest_score_of_a_float32_forecast():
    """A forecast of float32's largest value at every quantile scores just below the ceiling (a second computation:
    the metric itself); the ceiling is finite for real targets."""
    from tsdp.training.metrics import crps_from_samples

    targets = np.array([[1.0, -2.0, 3.0]])
    worst = np.full((1, 10, 3), np.finfo(np.float32).max, dtype=np.float32)
    score = crps_from_samples(targets, worst)
    assert score <= crps_ceiling(targets) and score >= 0.5 * crps_ceiling(targets)


def test_a_folder_where_a_cell_file_goes_is_one_line_naming_it(tmp_path, capsys):
    """run_grid raises DataError naming the path before any training; the CLI exits 2 with that one line."""
    out = tmp_path / "out"
    path_of(out, CELL).mkdir(parents=True)
    with pytest.raises(DataError) as exc:
        run_grid([CELL], TINY, folder=out)
    assert str(path_of(out, CELL)) in str(exc.value) and "folder" in str(exc.value)
    code = main(["experiment", "--models", "dlinear", "--epsilons", "1", "--seeds", "1", "--tops", "wor", "--epochs",
                 "1", "--samples", "10", "--device", "cpu", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and str(path_of(out, CELL)) in err and "Traceback" not in err


def test_the_cli_notes_a_recomputed_file_and_reports_the_true_result(tmp_path, good, capsys):
    """A NaN CRPS written as a number is never reported: the CLI notes the file on stderr and reports the
    recomputed result (exit 0), and the file then holds it."""
    r, text = good
    d = json.loads(text)
    d["result"]["crps"] = math.nan
    out = tmp_path / "out"
    out.mkdir()
    path_of(out, CELL).write_text(_resigned(d))
    code = main(["experiment", "--models", "dlinear", "--epsilons", "1", "--seeds", "1", "--tops", "wor", "--epochs",
                 "1", "--samples", "10", "--device", "cpu", "--out", str(out), "--json"])
    captured = capsys.readouterr()
    assert code == 0
    note = [line for line in captured.err.splitlines() if "note:" in line]
    assert len(note) == 1 and str(path_of(out, CELL)) in note[0] and "recomputed" in note[0]
    payload = json.loads(captured.out)
    assert payload["run"]["run"] == 1 and payload["cells"][0]["crps"] == r.crps
    assert read_stored(out, CELL, TINY).result.crps == r.crps


def test_cell_files_are_written_atomically(tmp_path, good, monkeypatch):
    """The new file is complete and in the same folder (one file system: the rename is atomic) when it is renamed
    over the name; a write that fails before the rename leaves the old file as it was and no temporary file."""
    r, text = good
    path = path_of(tmp_path, CELL)
    path.write_text("old")
    real_replace = file_cache.os.replace
    seen = []

    def spy(src, dst):
        seen.append((src, dst, json.loads(open(src).read())))
        real_replace(src, dst)

    monkeypatch.setattr(file_cache.os, "replace", spy)
    cells_module.store_result(CellTask(CELL, TINY, str(tmp_path)), r)
    (src, dst, content), = seen
    assert str(dst) == str(path) and Path(src).parent == path.parent
    assert content == json.loads(path.read_text()) and read_stored(tmp_path, CELL, TINY).result == r

    path.write_text("old")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_cache.os, "replace", fail)
    with pytest.raises(OSError):
        cells_module.store_result(CellTask(CELL, TINY, str(tmp_path)), r)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_the_code_fingerprint_changes_with_any_training_source_and_only_with_them(tmp_path):
    """One changed byte, a new or renamed .py file change the fingerprint; a non-Python file does not; this tsdp's
    fingerprint covers its training loop, data split, accountant and grid modules."""
    from tsdp.experiments.cells import TRAINING_CODE, code_fingerprint, source_fingerprint

    (tmp_path / "loop" / "sub").mkdir(parents=True)
    (tmp_path / "loop" / "train.py").write_text("STEP = 1\n")
    (tmp_path / "loop" / "sub" / "models.py").write_text("x = 0\n")
    (tmp_path / "cells.py").write_text("")
    parts = ("loop", "cells.py")
    first = source_fingerprint(tmp_path, parts)
    assert source_fingerprint(tmp_path, parts) == first
    (tmp_path / "loop" / "notes.txt").write_text("not code")
    assert source_fingerprint(tmp_path, parts) == first
    (tmp_path / "loop" / "sub" / "models.py").write_text("x = 1\n")
    edited = source_fingerprint(tmp_path, parts)
    assert edited != first
    (tmp_path / "loop" / "sub" / "models.py").rename(tmp_path / "loop" / "sub" / "model.py")
    assert source_fingerprint(tmp_path, parts) not in (first, edited)
    assert {"training", "datasets", "verify", "theorems"} <= set(TRAINING_CODE)
    assert len(code_fingerprint()) == 64


def test_the_code_fingerprint_changes_with_the_version_of_a_library_that_computes_a_cell(monkeypatch):
    """Another torch (numpy, scipy, dp-accounting) computes other numbers from the same sources: another fingerprint,
    so a stored cell is recomputed after an upgrade."""
    import torch

    from tsdp.experiments import store

    assert dict(store.library_versions())["torch"] == torch.__version__
    store.code_fingerprint.cache_clear()
    before = store.code_fingerprint()
    versions = store.library_versions()
    for name in store.TRAINING_LIBRARIES:
        monkeypatch.setattr(store, "library_versions", lambda name=name: tuple(
            (n, "0.0-other" if n == name else v) for n, v in versions))
        store.code_fingerprint.cache_clear()
        assert store.code_fingerprint() != before, name
    monkeypatch.undo()
    store.code_fingerprint.cache_clear()
    assert store.code_fingerprint() == before
