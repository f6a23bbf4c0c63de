"""A shuffled grid cell whose budget ends inside an epoch, trained together and resumed: its steps and sound ε are the
accountant's for exactly the steps it ran (its partial last epoch accounted as such, ``tsdp epsilon``'s number), one
more step would exceed the budget, and a resumed grid gives the recomputed cell the numbers of the whole grid."""
import math

from tsdp.experiments.cells import cell_config, path_of
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.experiments.table import run_grid
from tsdp.verify import accounting

SETTINGS = GridSettings(epochs=30, n_samples=10, device="cpu")
DELTA = 1e-7
CELLS = [Cell("dlinear", 2.0, s, "1-event", "shuffle") for s in range(2)]


def _strip(r):
    return {k: v for k, v in r.as_dict().items() if k != "seconds"}


def test_a_shuffled_cell_stopped_inside_an_epoch_spends_the_epsilon_of_its_steps_and_resumes_to_the_same_numbers(
        tmp_path):
    """The shipped data's shuffled epoch is 21 steps (drop_last); at ε = 2 the budget buys 46 steps, 4 into the
    third epoch, so the ledger's last entry is a partial epoch. Both seeds (one group) stop there with the ε of 46
    steps (1e-12), within the budget, and 47 would exceed it. A cell file removed (a killed grid) is recomputed to
    the same result, field for field, the other cell read back."""
    config = cell_config(CELLS[0], SETTINGS)
    first, info = run_grid(CELLS, SETTINGS, folder=tmp_path)
    assert info.run == 2
    for r in first:
        assert r.steps % config.steps_per_epoch != 0  # a partial last epoch: the case under test
        spent = accounting.epsilon(config, DELTA, steps=r.steps, discretization=SETTINGS.discretization,
                                   estimates=("sound",)).epsilon
        assert math.isclose(r.epsilon_spent, spent, rel_tol=1e-12) and r.epsilon_spent <= 2.0
        assert accounting.epsilon(config, DELTA, steps=r.steps + 1, discretization=SETTINGS.discretization,
                                  estimates=("sound",)).epsilon > 2.0
        assert r.epochs == r.steps / config.steps_per_epoch
    path_of(tmp_path, CELLS[1]).unlink()
    again, info = run_grid(CELLS, SETTINGS, folder=tmp_path)
    assert (info.run, info.resumed) == (1, 1)
    assert [_strip(r) for r in again] == [_strip(r) for r in first]
