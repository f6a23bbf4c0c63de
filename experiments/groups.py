"""The grid's cells trained together: the cells of one model and column set that differ only in seed and ε.

The cells of a (level, top level, model, w, σ_F) block, private or not, share everything but their seed and
budget: the same configuration, data and training settings (:func:`tsdp.experiments.cells.cell_training`). A
:class:`CellGroup` trains them as one stacked program (:func:`tsdp.training.together.train_together`): each
cell keeps its seed (its initial model, its batches, its noise), its budget and stopping step, its checkpoints and
its file, written as :func:`tsdp.experiments.cells.run_cell` writes it (the same key, the same fields). A group is
one unit of the sharded engine; its progress is its cells. Cells whose budget buys no step are stored as such
without training (as alone). The private cells of a block form groups, and its cells without DP (ε = ∞) groups of
their own (they train another loop: no clipping, no noise).

A cell's numbers do not depend on the other cells of its group: every block of the stacked products is its own
cell's, and every other operation acts per row (:mod:`tsdp.training.together`), so a grid that resumes (and trains
only the cells missing from its folder) or runs on N workers gives every cell the numbers it gets in the whole grid,
bit for bit (tests/experiments/test_experiment.py checks it). Against the cell trained alone (``--cell-by-cell``,
:func:`tsdp.experiments.cells.run_cell`) the private cells, which train alone through
:func:`tsdp.training.train.train`, agree to float rounding; a cell without DP trains alone as a group of one (without
noise, over a thousand Adam steps, any rounding difference grows to per-cent differences in CRPS, measured on M1:
DeepAR, iTransformer, DLinear), so the two grids give it the same numbers, bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .cells import (CellResult, CellTask, buys_no_step, cell_config, cell_training, diverged_names_the_cell,
                    no_step_result, store_result, torch_threads, trained_result)
from .grid import Cell, GridSettings, cell_seed


def group_key(cell: Cell) -> Tuple:
    """What the cells of one group share: level, top level, model, w, σ_F and whether they train with DP.

    Args:
        cell: A grid cell.

    Returns:
        The tuple its group is keyed by.
    """
    return cell.level, cell.top, cell.model, cell.w, cell.sigma_forecast, math.isinf(cell.epsilon)


@dataclass(frozen=True)
class CellGroup:
    """Cells of one :func:`group_key` with their grid's settings and folder: the sharded engine's unit (``key``,
    ``trials``: its cells).

    Attributes:
        cells: The group's cells.
        settings: The grid's settings.
        folder: Where their files go (None: not stored).
        threads: torch intra-op threads of the run.
    """

    cells: Tuple[Cell, ...]
    settings: GridSettings
    folder: Optional[str] = None
    threads: int = CellTask.threads

    @property
    def key(self) -> str:
        return "+".join(c.key for c in self.cells)

    @property
    def trials(self) -> int:
        return len(self.cells)


@dataclass(frozen=True)
class GroupResult:
    """The results of a :class:`CellGroup`'s cells, in its order.

    Attributes:
        key: The group's key.
        trials: Its cells.
        results: Their results.
    """

    key: str
    trials: int
    results: Tuple[CellResult, ...]


def groups_of(cells: Sequence[Cell], settings: GridSettings, folder: Optional[str] = None,
              workers: int = 1) -> List[CellGroup]:
    """``cells`` in groups of one :func:`group_key` each (a block), in the order of each block's first cell. A block
    stays whole unless the blocks are fewer than ``workers``: then each is cut into ceil(workers / blocks) groups
    (fewer for fewer cells), its cells dealt to them in turn (cell i to group i mod parts), so that every worker has
    one and each group holds a share of every ε of the block, and of its steps (a cell's numbers do not depend on
    the other cells of its group).

    Whole blocks, because a group's stacked step costs far less than its cells' steps apart (the per-step work that
    does not grow with the runs is paid once): cutting a block for the workers costs more CPU than the second worker
    gives back while other blocks wait.

    Args:
        cells: The cells to run.
        settings: The grid's settings.
        folder: Where their files go (None: not stored).
        workers: The workers that run the groups (at least 1).

    Returns:
        The groups, each one unit of the sharded engine.
    """
    blocks: Dict[Tuple, List[Cell]] = {}
    for c in cells:
        blocks.setdefault(group_key(c), []).append(c)
    parts = -(-max(1, workers) // max(1, len(blocks)))
    groups = []
    for block in blocks.values():
        n = min(parts, len(block))
        groups += [CellGroup(tuple(block[i::n]), settings, folder) for i in range(n)]
    return groups


def run_group(group: CellGroup) -> GroupResult:
    """Train ``group``'s cells together (module docstring) and store each one's result when it names a folder. A
    cell whose training diverges fails the group as it fails alone (:func:`~tsdp.experiments.cells.run_cell`: the
    ConfigError naming ``data`` or ``v``), after every other cell's result is stored, as each is alone
    (:func:`tsdp.training.together.train_each_together`); a resumed grid then trains only the failed cells.

    Args:
        group: The cells, their grid's settings, folder and torch threads.

    Returns:
        Each cell's result, in the group's order.

    Raises:
        ConfigError: The first of its cells that diverged, as that cell alone raises it.
    """
    from tsdp.theorems.config import ConfigError
    from tsdp.training.together import Run, train_each_together

    settings = group.settings
    tasks = {c.key: CellTask(c, settings, group.folder, group.threads) for c in group.cells}
    spent = {e: buys_no_step(c, settings) for e, c in {c.epsilon: c for c in group.cells}.items()}  # one per ε
    idle = [c for c in group.cells if spent[c.epsilon]]
    results = {c.key: store_result(tasks[c.key], no_step_result(c, settings)) for c in idle}
    trained = [c for c in group.cells if c.key not in results]
    if trained:
        first = trained[0]
        runs = [Run(cell_seed(settings, c.seed_index), None if math.isinf(c.epsilon) else c.epsilon)
                for c in trained]
        with torch_threads(group.threads), diverged_names_the_cell(first, settings):
            out = train_each_together(cell_config(first, settings), runs, cell_training(first, settings))
        failed = [(c, r) for c, r in zip(trained, out) if isinstance(r, ConfigError)]
        for c, r in zip(trained, out):  # every other cell stored, as its unit alone would be
            if not isinstance(r, ConfigError):
                results[c.key] = store_result(tasks[c.key], trained_result(c, settings, r))
        if failed:  # a cell that diverged fails as it does alone
            c, error = failed[0]
            with diverged_names_the_cell(c, settings):
                raise error
    return GroupResult(group.key, group.trials, tuple(results[c.key] for c in group.cells))
