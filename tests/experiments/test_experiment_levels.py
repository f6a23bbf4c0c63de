"""`tsdp experiment`'s level tables (w-event, w-user, label noise) in the paper's appendix layout: the paper's
defaults, one cell per w or σ_F, the ε each spends, resume, workers, the bold cells and bad input."""
import json
import math
import re

import pytest

from tsdp.datasets.benchmarks import PAPER, SHIPPED_SPEC
from tsdp.experiments.cells import CellTask, cell_config, path_of, run_cell
from tsdp.experiments.grid import LEVEL_EPSILONS, Cell, GridSettings, plan
from tsdp.experiments.table import Row, best_cells, run_grid
from tsdp.cli.main import main
from tsdp.verify import accounting

TINY = GridSettings(epochs=1, n_samples=10, device="cpu", seed=0)


def test_each_level_has_the_papers_columns_when_none_are_given():
    """w-event / w-user: w ∈ {1, 2, 4, 8} at ε = 4; label noise: σ_F ∈ {0, 1, 2, 5} at ε = 0.5; 1-event keeps
    ε ∈ {0.5, 1, 2, ∞}, also beside another level; the label-noise v of every dataset is its table's caption."""
    for level in ("w-event", "w-user"):
        cells = plan(models=("dlinear",), seeds=1, levels=(level,), tops=("wor",))
        assert [(c.epsilon, c.w, c.sigma_forecast) for c in cells] == [(4.0, w, 0.0) for w in (1, 2, 4, 8)]
    cells = plan(models=("dlinear",), seeds=1, levels=("label-noise",), tops=("wor",))
    assert [(c.epsilon, c.w, c.sigma_forecast) for c in cells] == [(0.5, 1, s) for s in (0.0, 1.0, 2.0, 5.0)]
    mixed = plan(models=("dlinear",), seeds=1, levels=("1-event", "w-user"), tops=("wor",))
    assert [c.epsilon for c in mixed if c.level == "1-event"] == [0.5, 1.0, 2.0, math.inf]
    assert {c.epsilon for c in mixed if c.level == "w-user"} == {4.0}
    given = plan(models=("dlinear",), epsilons=(1.0, 2.0), seeds=2, levels=("w-user",), tops=("wor",), w=(3, 1))
    assert [(c.epsilon, c.w, c.seed_index) for c in given] == [
        (e, w, s) for e in (1.0, 2.0) for w in (3, 1) for s in (0, 1)]
    assert len({c.key for c in given}) == len(given)
    assert {n: s.label_noise_v for n, s in PAPER.items()} == {"traffic": 0.001, "electricity": 0.1,
                                                             "solar_10_minutes": 0.01}
    assert SHIPPED_SPEC.label_noise_v == 0.01
    assert LEVEL_EPSILONS["label-noise"] == (0.5,)


def _tsdp_epsilon(capsys, config, steps: int) -> float:
    """`tsdp epsilon --json` of ``config`` after ``steps`` steps (the paper's 1e-3 discretisation, δ = 1e-7)."""
    argv = ["epsilon", "--json", "--sound-only", "--delta", "1e-7", "--discretization", "1e-3", "--steps", str(steps),
            "--N", str(config.N), "--context-length", str(config.context_length),
            "--forecast-length", str(config.forecast_length), "--batch-size", str(config.batch_size),
            "--sigma", repr(config.sigma), "--top", config.top, "--relation", config.relation, "--w", str(config.w),
            "--v", repr(config.v), "--sigma-forecast", repr(config.sigma_forecast)]
    argv += ["--drop-last"] if config.drop_last else []
    argv += ["--lengths", *map(str, config.lengths)] if config.lengths else ["--L", str(config.L)]
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["epsilon"]


@pytest.mark.parametrize("cell,epochs", [
    (Cell("dlinear", 4.0, 0, "w-user", "wor", w=2), 2),
    (Cell("dlinear", 4.0, 0, "w-event", "shuffle", w=4), 2),
    (Cell("dlinear", 0.5, 0, "label-noise", "wor", sigma_forecast=2.0), 30),
    (Cell("dlinear", 0.5, 0, "label-noise", "wor", sigma_forecast=0.0), 30),
])
def test_each_level_cell_spends_what_tsdp_epsilon_says_within_its_budget(capsys, cell, epochs):
    """The ε a cell records is `tsdp epsilon` of its level's configuration (relation, w, v, σ_F) and steps, at most
    its budget; a run the budget stopped (not the epochs cap) could not take one more step."""
    settings = GridSettings(epochs=epochs, n_samples=10, device="cpu")
    r = run_cell(CellTask(cell, settings))
    config = cell_config(cell, settings)
    relation = "user" if cell.level in ("w-user", "label-noise") else "event"
    assert (config.relation, config.w, config.sigma_forecast) == (relation, cell.w, cell.sigma_forecast)
    assert config.v == (SHIPPED_SPEC.label_noise_v if cell.level == "label-noise" else 1.0)
    assert (r.w, r.sigma_forecast, r.v) == (cell.w, cell.sigma_forecast,
                                            SHIPPED_SPEC.label_noise_v if cell.level == "label-noise" else None)
    assert r.steps > 0
    assert r.epsilon_spent == _tsdp_epsilon(capsys, config, r.steps) <= cell.epsilon
    if r.steps < epochs * config.steps_per_epoch:
        more = accounting.epsilon(config, 1e-7, steps=r.steps + config.steps_per_epoch
                                  if config.top == "shuffle" else r.steps + 1, discretization=1e-3)
        assert more.epsilon > cell.epsilon


def test_label_noise_buys_no_steps_on_the_shipped_data():
    """Amplification by label perturbation (T11) needs every series to hold T ≥ L_C + L_F windows: in a shorter
    one an element lies in the forecast of more than the share φ of its windows. The shipped data's shortest series
    has T = 1, whose only window exposes its context elements with σ_C = 0, so T11 is refused there and the σ_F
    columns are accounted by T6: at ε = 0.5 they buy exactly the plain (1, v)-user level's steps, which equal
    1-event's (and fewer than a T11 bound applied out of its scope would promise)."""
    from tsdp.experiments.cells import cell_config
    from tsdp.experiments.estimate import planned_steps
    from tsdp.theorems.registry import select_bound

    settings = GridSettings(device="cpu")
    cells = [Cell("dlinear", 0.5, 0, "label-noise", "wor", sigma_forecast=s) for s in (0.0, 1.0, 2.0, 5.0)]
    steps = [planned_steps(c, settings) for c in cells]
    assert steps == [planned_steps(Cell("dlinear", 0.5, 0, "1-event", "wor"), settings)] * 4
    assert {select_bound(cell_config(c, settings))[0].id for c in cells} == {"T6"}


@pytest.mark.slow  # the 1-event grid's resume and 1-vs-2-worker test (tests/experiments/test_experiment.py) runs in the fast suite
def test_level_grid_resumes_and_two_workers_give_the_numbers_of_one(tmp_path):
    """w and σ_F cells are files of their own: a removed one is run again, the others read back; a grid with another
    v runs its label-noise cells again (v is not in their names); 2 worker processes give the numbers of 1."""
    cells = plan(models=("dlinear",), seeds=1, levels=("w-user", "label-noise"), tops=("wor",), w=(1, 2),
                 sigma_forecast=(0.0, 2.0))
    assert len(cells) == 4 and len({c.key for c in cells}) == 4
    first, info = run_grid(cells, TINY, folder=tmp_path)
    assert info.run == 4 and sorted(p.name for p in tmp_path.glob("*.json")) == sorted(
        f"{c.key}.json" for c in cells)
    path_of(tmp_path, cells[1]).unlink()
    again, info = run_grid(cells, TINY, folder=tmp_path)
    assert (info.run, info.resumed) == (1, 3)
    strip = lambda rs: [{k: v for k, v in r.as_dict().items() if k != "seconds"} for r in rs]  # noqa: E731
    assert strip(again) == strip(first)
    other_v = GridSettings(epochs=1, n_samples=10, device="cpu", v=0.5, seed=0)  # only v differs from TINY
    changed, info = run_grid(cells, other_v, folder=tmp_path)
    assert (info.run, info.resumed) == (2, 2)
    assert [r.v for r in changed] == [None, None, 0.5, 0.5]
    two, info = run_grid(cells, TINY, workers=2)
    assert info.executor == "processes" and strip(two) == strip(first)


def _row(model, level, column, mean, eps=4.0):
    extra = {"w": column} if level != "label-noise" else {"sigma_forecast": column, "v": 0.01}
    return Row(model, eps, level, "wor", "last", mean, 0.0, 1, (1,), (eps,), True, (False,), **extra)


def test_bold_cells_are_the_papers_best_per_w_column_and_best_sigma_per_row():
    """w tables: the lowest mean of each w column, the baselines included (the paper's electricity table bolds
    AutoETS at w = 8); label noise: each model's lowest σ_F, ties all marked; 1-event tables none."""
    base = {"seasonal-naive": 0.070, "autoets": 0.064}
    rows = [_row("dlinear", "w-user", 1, 0.061), _row("simple-ff", "w-user", 1, 0.064),
            _row("dlinear", "w-user", 8, 0.066), _row("simple-ff", "w-user", 8, 0.074),
            _row("dlinear", "label-noise", 0.0, 0.064, 0.5), _row("dlinear", "label-noise", 2.0, 0.061, 0.5),
            _row("dlinear", "label-noise", 5.0, 0.061, 0.5), _row("deepar", "label-noise", 0.0, 0.071, 0.5),
            _row("deepar", "label-noise", 2.0, 0.069, 0.5),
            Row("dlinear", 1.0, "1-event", "wor", "last", 0.01, 0.0, 1, (1,), (1.0,), True, (False,))]
    marks = {(b.level, b.model, b.column) for b in best_cells(rows, base)}
    assert marks == {("w-user", "dlinear", 1), ("w-user", "autoets", 8), ("label-noise", "dlinear", 2.0),
                     ("label-noise", "dlinear", 5.0), ("label-noise", "deepar", 2.0)}


def _table_lines(text: str, title_start: str):
    """The header and model lines of the table whose title starts with ``title_start``, each split into cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title_start))
    block = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        block.append(re.split(r"\s{2,}", line.strip()))
    return lines[start], block


def test_level_tables_layout_and_json_with_the_papers_defaults(tmp_path, capsys):
    """`--levels w-user label-noise` with no values: the w table has columns w = 1 2 4 8 at ε = 4 and the label-noise
    table σ_F = 0 1 2 5 at ε = 0.5 with the shipped data's v = 0.01; JSON rows carry the 1-event keys plus w, or σ_F
    and v; the '*' cells of the text are the JSON's ``best``, which are the lowest means of their column / row."""
    argv = ["experiment", "--levels", "w-user", "label-noise", "--models", "dlinear", "--seeds", "1", "--tops", "wor",
            "--epochs", "1", "--samples", "10", "--device", "cpu", "--out", str(tmp_path / "cells")]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["v"] == 0.01 and out["run"]["cells"] == 8
    keys = {"model", "epsilon", "crps_mean", "crps_std", "seeds", "steps", "epsilon_spent", "checkpoint"}
    w_rows = [r for r in out["rows"] if r["level"] == "w-user"]
    ln_rows = [r for r in out["rows"] if r["level"] == "label-noise"]
    assert all(keys | {"w"} <= set(r) and "sigma_forecast" not in r for r in w_rows)
    assert all(keys | {"sigma_forecast", "v"} <= set(r) and "w" not in r for r in ln_rows)
    assert sorted({r["w"] for r in w_rows}) == [1, 2, 4, 8] and {r["epsilon"] for r in w_rows} == {4.0}
    assert sorted({r["sigma_forecast"] for r in ln_rows}) == [0, 1, 2, 5] and {r["epsilon"] for r in ln_rows} == {0.5}
    last = lambda rows: [r for r in rows if r["checkpoint"] == "last"]  # noqa: E731
    expect = set()
    for w in (1, 2, 4, 8):
        column = {r["model"]: r["crps_mean"] for r in last(w_rows) if r["w"] == w} | out["baselines"]
        expect |= {("w-user", m, w) for m, v in column.items() if v == min(column.values())}
    row = {r["sigma_forecast"]: r["crps_mean"] for r in last(ln_rows)}
    expect |= {("label-noise", "dlinear", s) for s, v in row.items() if v == min(row.values())}
    assert {(b["level"], b["model"], b["column"]) for b in out["best"]} == expect

    assert main(argv) == 0  # the text table, every cell read back
    text = capsys.readouterr().out
    title, block = _table_lines(text, "w-user, top level wor, ε = 4")
    same = {x["column"]: x["same_as"] for x in out["same_runs"] if x["level"] == "w-user"}
    assert same == {2: 1, 4: 1, 8: 1}  # one window start (T = 1): every w is the same accounting and run
    assert block[0] == ["model", "w = 1"] + [f"w = {w} [= w = 1]" for w in (2, 4, 8)]
    assert [b[0] for b in block[1:]] == ["DLinear", "DLinear [sel]", "Seasonal", "AutoETS"]
    names = {"DLinear": "dlinear", "Seasonal": "seasonal-naive", "AutoETS": "autoets"}
    starred = {("w-user", names[b[0]], w) for b in block[1:] if b[0] in names
               for w, cell in zip((1, 2, 4, 8), b[1:]) if cell.endswith("*")}
    title, block = _table_lines(text, "label-noise, (1, v)-user-level privacy with v = 0.01, top level wor, ε = 0.5")
    assert block[0] == ["model", "σ_F = 0", "σ_F = 1", "σ_F = 2", "σ_F = 5"]
    assert [b[0] for b in block[1:]] == ["DLinear", "DLinear [sel]", "Seasonal", "AutoETS"]
    starred |= {("label-noise", "dlinear", s) for s, cell in zip((0, 1, 2, 5), block[1][1:]) if cell.endswith("*")}
    assert not any(cell.endswith("*") for b in block[2:] for cell in b[1:])  # [sel] and baselines are not ranked
    assert starred == expect


@pytest.mark.parametrize("argv,flag", [
    (["--levels", "w-user", "--w", "-1"], "--w"), (["--levels", "w-user", "--w", "0"], "--w"),
    (["--levels", "w-user", "--w", "nan"], "--w"), (["--levels", "w-user", "--w", "inf"], "--w"),
    (["--levels", "w-user", "--w", "1.5e0"], "--w"), (["--levels", "w-user", "--w", "1e5"], "--w"),
    (["--levels", "w-event", "--w", "10001"], "--w"),
    (["--levels", "w-user", "--w", "2", "2"], "--w"), (["--levels", "w-user", "--w"], "--w"),
    (["--w", "2"], "--w"), (["--levels", "label-noise", "--w", "2"], "--w"),
    (["--levels", "label-noise", "--sigma-forecast", "-1"], "--sigma-forecast"),
    (["--levels", "label-noise", "--sigma-forecast", "nan"], "--sigma-forecast"),
    (["--levels", "label-noise", "--sigma-forecast", "inf"], "--sigma-forecast"),
    (["--levels", "label-noise", "--sigma-forecast", "1e300"], "--sigma-forecast"),
    (["--levels", "label-noise", "--sigma-forecast", "0", "0.0"], "--sigma-forecast"),
    (["--levels", "label-noise", "--sigma-forecast", "x"], "--sigma-forecast"),
    (["--sigma-forecast", "1"], "--sigma-forecast"), (["--levels", "w-user", "--sigma-forecast", "1"], "--sigma-forecast"),
    (["--levels", "label-noise", "--v", "0"], "--v"), (["--levels", "label-noise", "--v", "nan"], "--v"),
    (["--levels", "label-noise", "--v", "inf"], "--v"), (["--levels", "label-noise", "--v", "1e300"], "--v"),
    (["--v", "0.01"], "--v"), (["--epsilons", "1", "1.0"], "--epsilons"),
    (["--levels", "w-user", "w-user"], "--levels"), (["--models", "dlinear", "dlinear"], "--models"),
    (["--tops", "wor", "wor"], "--tops"),
])
def test_bad_input_of_the_level_flags_is_one_line(tmp_path, capsys, argv, flag):
    """Every bad value of --w, --sigma-forecast, --v (and repeated values of the list flags): one line naming the
    flag, exit 2, nothing trained (no cell file)."""
    try:
        code = main(["experiment", *argv, "--out", str(tmp_path / "cells")])
    except SystemExit as exc:  # argparse's own type errors
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and flag in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("cells/*.json"))
