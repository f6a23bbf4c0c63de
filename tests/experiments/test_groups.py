"""The grid's groups (:func:`tsdp.experiments.groups.groups_of`) over any mix of cells and workers: every cell in
exactly one group, each group inside one block, each block cut as its docstring says."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsdp.experiments.grid import Cell, GridSettings, plan
from tsdp.experiments.groups import CellGroup, groups_of, run_group

POOL = plan(models=("simple-ff", "dlinear"), epsilons=(0.5, 1.0, math.inf), seeds=3,
            levels=("1-event", "w-user", "label-noise"), tops=("wor", "shuffle"), w=(1, 2), sigma_forecast=(0.0, 1.0))
CELLS = st.lists(st.booleans(), min_size=len(POOL), max_size=len(POOL)).flatmap(
    lambda keep: st.permutations([c for c, k in zip(POOL, keep) if k]))
"""Any subset of the pool (whole blocks among them), in any order."""


def _block(c: Cell) -> tuple:
    """What the cells of one block share (the groups module's docstring): all but seed and budget, and DP or not."""
    return c.level, c.top, c.model, c.w, c.sigma_forecast, math.isinf(c.epsilon)


@given(CELLS, st.integers(1, 64))
def test_every_cell_is_run_once_in_a_group_of_its_own_block(cells, workers):
    """Any subset of a mixed grid (levels, top levels, w, σ_F, private or not), in any order, for 1 to 64 workers:
    the groups hold every cell exactly once, none empty, each within one block (level, top level, model, w, σ_F and
    DP or not) and in the cells' order; a block is whole when the blocks are at least the workers, else cut into
    min(ceil(workers / blocks), its cells) groups whose sizes differ by at most one."""
    groups = groups_of(cells, GridSettings(), workers=workers)
    position = {c: i for i, c in enumerate(cells)}
    flat = [c for g in groups for c in g.cells]
    assert len(flat) == len(cells) and set(flat) == set(cells)
    blocks = {}
    for c in cells:
        blocks.setdefault(_block(c), []).append(c)
    by_block = {}
    for g in groups:
        assert g.cells and len({_block(c) for c in g.cells}) == 1
        order = [position[c] for c in g.cells]
        assert order == sorted(order)
        by_block.setdefault(_block(g.cells[0]), []).append(len(g.cells))
    for key, block in blocks.items():
        sizes = by_block[key]
        parts = 1 if len(blocks) >= workers else min(-(-workers // len(blocks)), len(block))
        assert len(sizes) == parts and max(sizes) - min(sizes) <= 1


@pytest.mark.slow  # about 14 s on a loaded 2-core machine (DeepAR 10 s): each cell trained in a group and alone
@pytest.mark.parametrize("model", ["deepar", "itransformer"])
def test_a_cells_numbers_do_not_depend_on_its_group(model):
    """The stacked recurrent and attention layers (DeepAR, iTransformer): every cell of a group of three seeds and
    three budgets that stop at 5, 10 and 21 steps (the stack shrinks twice) has, bit for bit, the numbers it has in a
    group of its own, as a grid resumed or on more workers than blocks trains it; so have cells without DP."""
    settings = GridSettings(epochs=1, n_samples=10, device="cpu")
    private = (Cell(model, 1.0, 1, "1-event", "wor"), Cell(model, 0.15, 2, "1-event", "wor"),
               Cell(model, 0.2, 0, "1-event", "wor"))
    plain = (Cell(model, math.inf, 1, "1-event", "wor"), Cell(model, math.inf, 0, "1-event", "wor"))
    for group, steps in ((private, [21, 5, 10]), (plain, [21, 21])):
        together = run_group(CellGroup(group, settings)).results
        alone = [run_group(CellGroup((c,), settings)).results[0] for c in group]
        assert [r.steps for r in together] == steps
        strip = lambda r: {k: v for k, v in r.as_dict().items() if k != "seconds"}  # noqa: E731
        assert [strip(r) for r in together] == [strip(r) for r in alone]


@pytest.mark.slow  # about 8 s: the group, then each other cell alone
def test_a_cell_that_diverges_fails_the_group_as_alone_after_the_others_are_stored(tmp_path, monkeypatch):
    """One cell of a group diverges (its run's ConfigError naming lr, as the training's check raises it): the group
    raises what the cell raises alone in the grid (naming data), after storing every other cell's result, the
    result that cell gets in a group of its own."""
    import tsdp.training.together as together
    from tsdp.experiments.store import load_done
    from tsdp.theorems.config import ConfigError

    settings = GridSettings(epochs=1, n_samples=10, device="cpu")
    cells = (Cell("simple-ff", 1.0, 0, "1-event", "wor"), Cell("simple-ff", 0.5, 1, "1-event", "wor"),
             Cell("simple-ff", 2.0, 2, "1-event", "wor"))
    real = together.train_each_together

    def second_diverges(config, runs, group_settings):
        out = real(config, runs, group_settings)
        out[1] = ConfigError("lr", "the training diverged: 1 parameter tensor(s) of the model are not finite", 1e-3)
        return out

    monkeypatch.setattr(together, "train_each_together", second_diverges)
    with pytest.raises(ConfigError, match="invalid data: the training of simple-ff diverged"):
        run_group(CellGroup(cells, settings, str(tmp_path)))
    monkeypatch.undo()
    assert load_done(tmp_path, cells[1], settings) is None
    strip = lambda r: {k: v for k, v in r.as_dict().items() if k != "seconds"}  # noqa: E731
    for c in (cells[0], cells[2]):
        assert strip(load_done(tmp_path, c, settings)) == strip(run_group(CellGroup((c,), settings)).results[0])
