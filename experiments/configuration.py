"""A cell's training set-up: its data split, epochs cap, configuration and what it shares with its group.

A private cell trains with the dataset's σ (paper Appendix "DP Training Parameters"); :func:`cell_config` is its
:class:`~tsdp.theorems.config.TrainingConfig`, :func:`cell_training` the settings it shares with the other cells of
its model and column set (:class:`tsdp.training.together.GroupSettings`).
"""
from __future__ import annotations

import functools
import math
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from tsdp.theorems.config import ConfigError, Top, TrainingConfig

from .grid import Cell, GridSettings, Level, level_config

if TYPE_CHECKING:
    from tsdp.datasets.benchmarks import ForecastSplit
    from tsdp.training.together import GroupSettings


@functools.lru_cache(maxsize=4)
def _split(dataset: Optional[str], data_dir: Optional[str], user=None):
    from tsdp.datasets.benchmarks import split_for

    return split_for(dataset, None if data_dir is None else Path(data_dir), user=user)


def split_of(settings: GridSettings) -> "ForecastSplit":
    """The grid's :class:`~tsdp.datasets.benchmarks.ForecastSplit`: its benchmark, the shipped data, or the user's
    file (``settings.user``); read once per process.

    Args:
        settings: The grid's settings (dataset, data folder, user's file).

    Returns:
        The split (cached per process).
    """
    return _split(settings.dataset, settings.data_dir, settings.user)


def epochs_cap(settings: GridSettings) -> int:
    """The epochs cap of every cell of the grid: the settings', else the dataset's.

    Args:
        settings: The grid's settings.

    Returns:
        The most epochs a cell trains.
    """
    return settings.epochs or split_of(settings).spec.epochs


def level_v(cell: Cell, settings: GridSettings) -> Optional[float]:
    """The v of ``cell``'s configuration: the grid's, else its dataset's (label noise); None for the other levels.

    Args:
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        v, or None when the cell's level is not label noise.
    """
    if cell.level != Level.LABEL_NOISE:
        return None
    if settings.v is not None:
        return settings.v
    return split_of(settings).spec.label_noise_v


def cell_config(cell: Cell, settings: GridSettings) -> TrainingConfig:
    """The training configuration of ``cell``: the split's series (N, variable lengths), the dataset's L_C, L_F,
    Λ and σ, the cell's top level (WR bottom level, λ = 1; shuffled epochs of floor(N λ / Λ) steps, the official
    code's, ``drop_last``) and privacy level (relation, w, v, σ_F). DeepAR's context is L_C + max lag - 1
    (:func:`tsdp.training.models.deepar_window`, GluonTS's ``past_length``): every value it reads is in the window the accountant sees.

    Args:
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        Its configuration (the one the sound accountant accounts).
    """
    from tsdp.training.models import deepar_window

    split = split_of(settings)
    spec, lengths = split.spec, split.train.lengths
    context = deepar_window(spec.context_length, spec.lags) if cell.model == "deepar" else spec.context_length
    config = TrainingConfig(N=split.train.N, L=min(lengths), lengths=None if len(set(lengths)) == 1 else lengths,
                            context_length=context, forecast_length=spec.forecast_length,
                            batch_size=spec.batch_size, sigma=spec.sigma, top=cell.top,
                            drop_last=cell.top == Top.SHUFFLE)  # the authors' epoch, (len(data) *
    # instances_per_sequence) // batch_size batches: jan-schuchardt/dp_forecasting, models/dp_estimator.py
    return level_config(config, cell, level_v(cell, settings))



@contextmanager
def diverged_names_the_cell(cell: Cell, settings: GridSettings):
    """A training of ``cell`` that diverges (:func:`tsdp.training.train.train`'s ConfigError naming ``lr``, which
    a grid does not set: the paper's) is refused naming what the grid does set: ``v`` when the cell's label noise
    σ_F·v is on, else ``data``.

    Args:
        cell: The grid cell being trained.
        settings: The grid's settings.

    Raises:
        ConfigError: Naming ``v`` or ``data`` for a training that diverged.
    """
    try:
        yield
    except ConfigError as exc:
        if exc.parameter != "lr":
            raise
        v = level_v(cell, settings)
        if cell.level == Level.LABEL_NOISE and cell.sigma_forecast > 0:
            raise ConfigError("v", f"the label noise σ_F·v = {cell.sigma_forecast * v:.3g} (sigma_forecast="
                                   f"{cell.sigma_forecast:g} times v={v:g}) makes the training of {cell.model} diverge: "
                                   "lower one of them", v) from None
        raise ConfigError("data", f"the training of {cell.model} diverged at the paper's learning rate: "
                                  f"{exc.constraint}") from None


def cell_training(cell: Cell, settings: GridSettings) -> "GroupSettings":
    """What ``cell``'s training shares with the other cells of its model and column set
    (:class:`tsdp.training.together.GroupSettings`: the split, δ, the epochs cap, the paper's clip norm, learning
    rate and weight decay, DP or not, the sample paths, the dataset's season and lags); its own part is its seed
    and budget.

    Args:
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        Its :class:`~tsdp.training.together.GroupSettings`.
    """
    from tsdp.datasets.benchmarks import CLIP, LR, WEIGHT_DECAY
    from tsdp.training.together import GroupSettings

    split = split_of(settings)
    private = not math.isinf(cell.epsilon)
    return GroupSettings(cell.model, split=split, delta=settings.delta if private else None,
                         epochs=epochs_cap(settings), private=private, discretization=settings.discretization,
                         clip=CLIP, lr=LR, weight_decay=WEIGHT_DECAY, device=settings.device,
                         season=split.spec.season, n_samples=settings.n_samples, lags=split.spec.lags)


@contextmanager
def torch_threads(threads: int):
    """torch's intra-op threads set to ``threads`` for the block (a cell is the same number on every executor).

    Args:
        threads: torch's intra-op threads inside the block (the old number is restored after it).
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)

