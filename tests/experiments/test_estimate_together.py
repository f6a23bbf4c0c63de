"""The pre-run estimate of cells trained together: the stacked loop's cost model, and the estimate against the run it
estimated (a ratio within one run, not a wall-clock bound)."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsdp.experiments.estimate import estimate, grouped_loop_seconds
from tsdp.experiments.grid import GridSettings, plan
from tsdp.experiments.groups import groups_of
from tsdp.experiments.table import run_grid


@given(st.lists(st.integers(0, 50), min_size=1, max_size=8), st.floats(1e-4, 1.0), st.floats(1e-4, 1.0),
       st.integers(1, 16))
def test_the_grouped_loop_is_the_sum_over_steps_of_the_active_runs_cost(steps, one, full, runs):
    """Step t costs one + slope·(active_t - 1), active_t the runs with more than t steps: summed step by step here."""
    slope = (full - one) / (runs - 1) if runs > 1 else 0.0
    by_step = sum(one + slope * (sum(1 for n in steps if n > t) - 1) for t in range(max(steps)))
    assert math.isclose(grouped_loop_seconds(steps, one, full, runs), by_step, rel_tol=1e-9, abs_tol=1e-12)


def test_cells_without_dp_are_groups_apart_from_the_private_ones():
    cells = plan(models=("simple-ff", "dlinear"), epsilons=(1.0, 2.0, math.inf), seeds=2, tops=("wor",))
    groups = groups_of(cells, GridSettings())
    assert [(g.cells[0].model, math.isinf(g.cells[0].epsilon), len(g.cells)) for g in groups] == [
        ("simple-ff", False, 4), ("simple-ff", True, 2), ("dlinear", False, 4), ("dlinear", True, 2)]
    assert all(len({math.isinf(c.epsilon) for c in g.cells}) == 1 for g in groups)
    assert sorted(c.key for g in groups for c in g.cells) == sorted(c.key for c in cells)


@pytest.mark.slow
def test_the_estimate_of_cells_trained_together_is_within_3x_of_their_run():
    """Four private simple-ff cells (2 seeds × 2 budgets: one stacked group) and two without DP (a group of their
    own, probed apart): the estimate made as the grid runs them (together) is within 3x either way of the seconds the
    run then takes in this process."""
    cells = plan(models=("simple-ff",), epsilons=(1.0, 2.0, math.inf), seeds=2, tops=("wor",))
    settings = GridSettings(epochs=2, n_samples=10, device="cpu")
    together = estimate(cells, settings, together=True)
    _, info = run_grid(cells, settings, together=True)
    assert together.together and {name: [runs for runs, _ in probes] for name, probes in
                                  together.group_seconds_per_step.items()} == {"simple-ff": [1, 4],
                                                                               "simple-ff/no-dp": [1, 2]}
    ratio = together.seconds / info.seconds
    assert 1 / 3 <= ratio <= 3, ratio


@pytest.mark.parametrize("workers,sizes", [(1, [6]), (2, [3, 3]), (4, [2, 2, 1, 1]), (9, [1] * 6)])
def test_a_lone_block_is_dealt_to_the_workers(workers, sizes):
    """Six private cells of one block (2 budgets × 3 seeds), fewer blocks than workers: dealt in turn to one group
    per worker, cell i to group i mod groups, every cell once; with 2 groups each holds both budgets (a share of the
    block's steps)."""
    cells = plan(models=("dlinear",), epsilons=(1.0, 2.0), seeds=3, tops=("wor",))
    groups = groups_of(cells, GridSettings(), workers=workers)
    assert [len(g.cells) for g in groups] == sizes
    assert [list(g.cells) for g in groups] == [list(cells[i::len(sizes)]) for i in range(len(sizes))]
    if workers == 2:
        assert all({c.epsilon for c in g.cells} == {1.0, 2.0} for g in groups)


@pytest.mark.parametrize("workers,per_block", [(1, 1), (2, 1), (4, 1), (5, 2), (8, 2), (9, 3)])
def test_blocks_stay_whole_unless_fewer_than_the_workers(workers, per_block):
    """Four blocks (two models, private or not; 4, 2, 4 and 2 cells): whole groups for up to four workers; for more,
    each block cut into ceil(workers / 4) groups (at most its cells), so every worker has one, every cell once and in
    its own block's groups."""
    cells = plan(models=("simple-ff", "dlinear"), epsilons=(1.0, 2.0, math.inf), seeds=2, tops=("wor",))
    groups = groups_of(cells, GridSettings(), workers=workers)
    assert len(groups) == sum(min(per_block, n) for n in (4, 2, 4, 2)) >= min(workers, len(cells))
    assert all(len({(c.model, math.isinf(c.epsilon)) for c in g.cells}) == 1 for g in groups)
    assert sorted(c.key for g in groups for c in g.cells) == sorted(c.key for c in cells)
