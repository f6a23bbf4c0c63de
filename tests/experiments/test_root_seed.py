"""`tsdp experiment`'s root seed is secret unless given (docs/DESIGN.md): two grids without --seed draw different
roots; a given root reproduces a grid; a rerun on the same --out without --seed reads the root back from the cell
files and trains nothing; a --seed the folder's cells do not record is one error line (exit 2) and leaves the cells
as they were. A folder written before the default was secret records its root (0 unless given) in the same key, so
it resumes the same way."""
import json
import shutil

import pytest

from tsdp.cli.main import main
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.experiments.store import RootSeedError, path_of, root_seed, stored_root_seeds
from tsdp.verify.file_cache import digest_of

ARGV = ["experiment", "--models", "dlinear", "--epsilons", "1", "--seeds", "1", "--tops", "wor", "--epochs", "1",
        "--samples", "10", "--device", "cpu"]
CELL = Cell("dlinear", 1.0, 0, "1-event", "wor")


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """One grid run without --seed: its folder and its JSON."""
    out = tmp_path_factory.mktemp("first") / "cells"
    return out, _grid(out)


def _grid(out, *extra, code=0):
    """Run the tiny grid into ``out`` (the first grid's baselines copied in: they do not depend on the seed) and
    return its JSON (None when it exits with ``code`` != 0)."""
    import io
    from contextlib import redirect_stdout

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert main(ARGV + ["--out", str(out), "--json", *extra]) == code
    return json.loads(buffer.getvalue()) if code == 0 else None


def _with_baselines(first_out, out):
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(first_out / "baselines.json", out / "baselines.json")
    return out


def test_grids_without_seed_draw_different_secret_roots(first, tmp_path):
    out, one = first
    two = _grid(_with_baselines(out, tmp_path / "two"))
    assert one["root_seed"]["source"] == two["root_seed"]["source"] == "fresh"
    assert one["root_seed"]["seed"] == one["settings"]["seed"] and two["root_seed"]["seed"] == two["settings"]["seed"]
    assert one["settings"]["seed"] != two["settings"]["seed"]  # 63 bits each: equal with probability 2^-63
    assert one["cells"][0]["seed"] != two["cells"][0]["seed"]
    assert GridSettings().seed != GridSettings().seed  # the library's default too


def test_the_printed_root_reproduces_the_grid(first, tmp_path):
    out, one = first
    again = _grid(_with_baselines(out, tmp_path / "again"), "--seed", str(one["settings"]["seed"]))
    assert again["root_seed"] == {"seed": one["settings"]["seed"], "source": "given"}
    assert again["run"]["run"] == 1 and again["rows"] == one["rows"]


def test_a_rerun_without_seed_resumes_with_the_stored_root(first):
    out, one = first
    again = _grid(out)
    assert again["root_seed"] == {"seed": one["settings"]["seed"], "source": "stored"}
    assert (again["run"]["run"], again["run"]["resumed"]) == (0, 1) and again["rows"] == one["rows"]
    same = _grid(out, "--seed", str(one["settings"]["seed"]))  # the stored root given: resumed as well
    assert same["root_seed"]["source"] == "given" and same["run"]["resumed"] == 1


def test_another_seed_on_a_stored_grid_is_one_line_and_leaves_its_cells(first, capsys):
    out, one = first
    before = path_of(out, CELL).read_bytes()
    capsys.readouterr()
    _grid(out, "--seed", str(one["settings"]["seed"] + 1), code=2)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid --seed" in err[0] and "another root seed" in err[0]
    assert path_of(out, CELL).read_bytes() == before


def test_the_text_output_prints_the_root(first, capsys):
    out, one = first
    capsys.readouterr()
    assert main(ARGV + ["--out", str(out)]) == 0
    seed = one["settings"]["seed"]
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"root seed {seed} (read back from the cell files): --seed {seed} reproduces the grid; keep it as private "
        f"as {out}")


def _copy_as(folder, text, name, seed):
    """The cell file ``text`` under ``folder`` as another cell ``name`` of root ``seed``, its digest renewed."""
    d = json.loads(text)
    d["key"]["name"], d["key"]["seed"] = name, seed
    d["digest"] = digest_of(d["key"], "result", d["result"])
    (folder / f"{name}.json").write_text(json.dumps(d))


def test_a_folder_of_an_old_default_grid_resumes_with_root_0(first, tmp_path):
    """A grid stored before the default was secret ran under root 0 and its cell keys say so (the key is
    unchanged): it is read back as 0, and --seed 0 or no --seed resume it."""
    out, _ = first
    old = tmp_path / "old"
    old.mkdir()
    _copy_as(old, path_of(out, CELL).read_text(), CELL.key, 0)
    assert root_seed(old).seed == 0 and root_seed(old).source == "stored"
    assert root_seed(old, 0).seed == 0
    with pytest.raises(RootSeedError, match="another root seed"):
        root_seed(old, 1)


def test_only_intact_cell_files_record_a_root(first, tmp_path):
    out, _ = first
    folder = tmp_path / "f"
    folder.mkdir()
    text = path_of(out, CELL).read_text()
    _copy_as(folder, text, "a", 5)
    _copy_as(folder, text, "b", 6)
    (folder / "c.json").write_text(text)  # its key names another file
    damaged = json.loads(text)
    damaged["key"]["name"], damaged["key"]["seed"] = "d", 8  # digest not renewed
    (folder / "d.json").write_text(json.dumps(damaged))
    (folder / "e.json").write_text("{")
    assert stored_root_seeds(folder) == {5, 6}
    assert stored_root_seeds(tmp_path / "absent") == frozenset()
    with pytest.raises(RootSeedError, match="2 root seeds"):
        root_seed(folder)
    assert root_seed(folder, 6).seed == 6
    fresh = root_seed(tmp_path / "absent")
    assert fresh.source == "fresh" and 0 <= fresh.seed < 2 ** 63
