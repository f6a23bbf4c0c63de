"""One cell of the privacy-utility grid: a training run, accounted by the sound accountant, stored atomically.

A private cell trains with the dataset's σ (paper Appendix "DP Training Parameters") until the
sound ε(δ) of the next step would exceed the cell's budget, or to the epochs cap
(:func:`tsdp.training.train.train`); it records the steps that ran and the ε they spent (an
**upper** bound, the accountant's ε of exactly those steps). ε = ∞ trains without clipping or noise
for the epochs cap, as a group of one (:func:`train_cell`). A budget that buys no step is recorded as 0 steps,
ε 0 and no CRPS (NaN). The reported CRPS is the last iterate's, covered by the ε; the checkpoint with
the lowest validation loss (the paper's choice) is reported beside it and is **not** covered: its
validation windows are the ends of the same private series (THEOREMS.md errata).

Here a cell trains alone (:func:`run_cell`); its result (:mod:`.result`) goes to its file
(:mod:`.store`: its key, its checks, reading it back; :func:`store_result` writes it), its set-up is :mod:`.configuration`'s. The names of those
modules are re-exported here, where the grid's callers have always found them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence

from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.verify.file_cache import digested_text, write_atomic

from .configuration import (cell_config, cell_training, diverged_names_the_cell, epochs_cap, level_v, split_of,
                            torch_threads)
from .result import CellResult
from .store import (TRAINING_CODE, CellKey, Stored, cell_key, check_result, code_fingerprint, crps_ceiling,
                    data_fingerprint, load_done, path_of, read_stored, source_fingerprint)
from .grid import Cell, GridSettings, cell_seed

if TYPE_CHECKING:
    from tsdp.training.result import TrainResult
    from tsdp.training.together import GroupSettings

__all__ = ["TRAINING_CODE", "CellKey", "CellResult", "CellTask", "Stored", "buys_no_step", "cell_config", "cell_key",
           "cell_training", "check_result", "code_fingerprint", "crps_ceiling", "data_fingerprint",
           "diverged_names_the_cell", "epochs_cap", "level_v", "load_done", "no_step_result", "path_of", "read_stored",
           "run_cell", "source_fingerprint", "split_of", "store_result", "torch_threads", "train_cell",
           "train_seeds", "trained_result"]


@dataclass(frozen=True)
class CellTask:
    """A cell with its grid's settings and the folder its result goes to (None: not stored): the sharded engine's
    unit (``key``, ``trials``).

    Attributes:
        cell: The grid cell.
        settings: The grid's settings.
        folder: Where its file goes (None: not stored).
        threads: torch intra-op threads of its run.
    """

    cell: Cell
    settings: GridSettings
    folder: Optional[str] = None
    threads: int = 1
    """torch intra-op threads of the run (the same on every executor, so a cell is the same number anywhere)."""

    @property
    def key(self) -> str:
        return self.cell.key

    trials = 1


def train_cell(cell: Cell, settings: GridSettings, config: TrainingConfig) -> "TrainResult":
    """Train ``cell``'s model alone on ``config`` (:func:`cell_config`, or a variant of it: another batch size Λ) with
    the grid's settings and the paper's optimiser (:func:`cell_training`): DP-SGD to the cell's ε
    (:func:`tsdp.training.train.train`), or without DP for ε = ∞ as a group of one (:func:`train_seeds` with its
    one seed): the program that trains it among the other cells of its group, so that its numbers are those it gets
    in the grid trained together, bit for bit (:mod:`tsdp.experiments.groups`).

    Args:
        cell: The grid cell (model, ε, seed index).
        settings: The grid's settings.
        config: The training configuration to run.

    Returns:
        The :class:`tsdp.training.train.TrainResult` (test CRPS of the last iterate, steps, ε spent).
    """
    if math.isinf(cell.epsilon):
        return train_seeds(cell, settings, config, [cell.seed_index])[0]
    seed, training = cell_seed(settings, cell.seed_index), cell_training(cell, settings)
    with diverged_names_the_cell(cell, settings):
        from tsdp.training.train import train

        return train(config, cell.model, seed=seed, **training.keywords(cell.epsilon))


def train_seeds(cell: Cell, settings: GridSettings, config: TrainingConfig, seed_indices: Sequence[int],
                training: Optional["GroupSettings"] = None) -> List["TrainResult"]:
    """Train ``cell``'s model without DP (ε = ∞) on ``config`` at each of ``seed_indices`` (the seeds of the grid's
    cells of those indices, :func:`~tsdp.experiments.grid.cell_seed`) together, as one group
    (:func:`tsdp.training.together.train_together`): each run's numbers are those it gets trained alone as a group
    of one, bit for bit, in one stacked program (the non-private claims C10 and C12 train their seeds so,
    :mod:`tsdp.reports.non_private`).

    Args:
        cell: The grid cell (its model and top level; ε = ∞).
        settings: The grid's settings.
        config: The training configuration to run.
        seed_indices: The seed indices, one run each.
        training: What the runs share (None: :func:`cell_training`'s: the grid's epochs cap, a validation every
            epoch).

    Returns:
        Each run's :class:`tsdp.training.result.TrainResult`, in the order of ``seed_indices``.

    Raises:
        ConfigError: Naming ``epsilon`` for a private cell (DP-SGD trains a cell alone, :func:`train_cell`), or as
            :func:`diverged_names_the_cell` says for a training that diverged.
    """
    from tsdp.training.together import Run, train_together

    if not math.isinf(cell.epsilon):
        raise ConfigError("epsilon", "seeds trained together here train without DP (ε = ∞)", cell.epsilon)
    with diverged_names_the_cell(cell, settings):
        return train_together(config, [Run(cell_seed(settings, i)) for i in seed_indices],
                              training or cell_training(cell, settings))


def run_cell(task: CellTask) -> CellResult:
    """Train ``task.cell`` alone (module docstring) and store its result when the task names a folder.

    Args:
        task: The cell, its grid's settings, its folder and torch threads.

    Returns:
        The cell's result (0 steps and no CRPS when its budget buys no step).
    """
    cell, settings = task.cell, task.settings
    if buys_no_step(cell, settings):
        return store_result(task, no_step_result(cell, settings))
    with torch_threads(task.threads):
        r = train_cell(cell, settings, cell_config(cell, settings))
    return store_result(task, trained_result(cell, settings, r))


def _level_fields(cell: Cell, settings: GridSettings) -> dict:
    return {"w": cell.w, "sigma_forecast": cell.sigma_forecast, "v": level_v(cell, settings)}


def buys_no_step(cell: Cell, settings: GridSettings) -> bool:
    """Whether ``cell`` is private and its budget buys no step within the epochs cap (the sound accountant).

    Args:
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        True when the sound accountant's ε of one step already exceeds the budget.
    """
    from tsdp.verify.accountant import max_steps
    from tsdp.verify.pld import PldSettings

    if math.isinf(cell.epsilon):
        return False
    config = cell_config(cell, settings)
    cap = epochs_cap(settings) * config.steps_per_epoch
    pld = PldSettings(settings.discretization)
    return max_steps(config, cell.epsilon, settings.delta, cap=cap, settings=pld) == 0


def no_step_result(cell: Cell, settings: GridSettings) -> CellResult:
    """The result of a cell whose budget buys no step: nothing is trained, nothing is spent (ε 0, no CRPS).

    Args:
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        Its result: 0 steps, ε spent 0, NaN CRPS.
    """
    return CellResult(
        key=cell.key, model=cell.model, epsilon=cell.epsilon, seed_index=cell.seed_index, level=cell.level,
        top=cell.top, seed=cell_seed(settings, cell.seed_index), sigma=cell_config(cell, settings).sigma, steps=0,
        epochs=0.0, epsilon_spent=0.0, theorem=None, crps=math.nan, selected_crps=math.nan, selected_step=0,
        seconds=0.0, device=settings.device, **_level_fields(cell, settings))


def trained_result(cell: Cell, settings: GridSettings, r: "TrainResult") -> CellResult:
    """The result of ``cell`` from its training's :class:`~tsdp.training.result.TrainResult` ``r``.

    Args:
        cell: The grid cell.
        settings: The grid's settings.
        r: What its training returned (alone or trained together).

    Returns:
        The cell's result.
    """
    private = not math.isinf(cell.epsilon)
    return CellResult(
        key=cell.key, model=cell.model, epsilon=cell.epsilon, seed_index=cell.seed_index, level=cell.level,
        top=cell.top, seed=cell_seed(settings, cell.seed_index),
        sigma=cell_config(cell, settings).sigma if private else None, steps=r.steps, epochs=r.epochs,
        epsilon_spent=r.epsilon, theorem=r.theorem, crps=r.crps, selected_crps=r.selection.selected_crps,
        selected_step=r.selection.selected_step, seconds=r.seconds, device=r.device, **_level_fields(cell, settings))


def store_result(task: CellTask, result: CellResult) -> CellResult:
    """``result``, written atomically to the task's folder when it names one, with its key and digest.

    Args:
        task: The cell, its settings and folder.
        result: Its result.

    Returns:
        ``result``.
    """
    if task.folder is not None:
        key, stored = cell_key(task.cell, task.settings).as_dict(), result.stored()
        write_atomic(path_of(task.folder, task.cell), digested_text(key, "result", stored))
    return result
