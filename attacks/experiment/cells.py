"""One cell of the privacy-utility grid: a training run, accounted by the sound accountant, stored atomically.

A private cell trains with the dataset's σ (paper Appendix "DP Training Parameters") until the
sound ε(δ) of the next step would exceed the cell's budget, or to the epochs cap
(:func:`tsdp.attacks.loop.train.train`); it records the steps that ran and the ε they spent (an
**upper** bound, the accountant's ε of exactly those steps). ε = ∞ trains without clipping or noise
for the epochs cap. A budget that buys no step is recorded as 0 steps, ε 0 and no CRPS (NaN). The reported CRPS is the last iterate's, covered by the ε; the checkpoint with
the lowest validation loss (the paper's choice) is reported beside it and is **not** covered: its
validation windows are the ends of the same private series (THEOREMS.md errata).

Results are one JSON file per cell under the grid's folder (named by :attr:`Cell.key`), written to a
temporary name and renamed (atomic), so a killed grid resumes from the cells on disk without recomputing
them. A stored label-noise cell whose v is not the grid's is run again (v is the grid's, not in the name).
"""
from __future__ import annotations

import functools
import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from tsdp.theorems.config import TrainingConfig

from .grid import Cell, GridSettings, cell_seed, level_config


@dataclass(frozen=True)
class CellResult:
    """What one cell measured: test CRPS of the last iterate (``crps``, covered by ``epsilon_spent``) and of the
    lowest-validation checkpoint (``selected_crps``, not covered), the steps that ran and the sound ε they spent;
    the level's ``w`` and ``sigma_forecast`` (1 and 0 where the level has none) and ``v`` (label noise only)."""

    key: str
    model: str
    epsilon: float
    seed_index: int
    level: str
    top: str
    seed: int
    sigma: Optional[float]
    steps: int
    epochs: float
    epsilon_spent: Optional[float]
    theorem: Optional[str]
    crps: float
    selected_crps: float
    selected_step: int
    seconds: float
    device: str
    trials: int = 1
    w: int = 1
    sigma_forecast: float = 0.0
    v: Optional[float] = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "CellResult":
        d = dict(d)
        d["epsilon"] = math.inf if d["epsilon"] is None else float(d["epsilon"])
        for k in ("crps", "selected_crps"):
            d[k] = math.nan if d[k] is None else float(d[k])
        return cls(**d)


@dataclass(frozen=True)
class CellTask:
    """A cell with its grid's settings and the folder its result goes to (None: not stored): the sharded engine's
    unit (``key``, ``trials``)."""

    cell: Cell
    settings: GridSettings
    folder: Optional[str] = None
    threads: int = 1
    """torch intra-op threads of the run (the same on every executor, so a cell is the same number anywhere)."""

    @property
    def key(self) -> str:
        return self.cell.key

    trials = 1


@functools.lru_cache(maxsize=4)
def _split(dataset: Optional[str], data_dir: Optional[str], user=None):
    from tsdp.attacks.data.benchmarks import split_for

    return split_for(dataset, None if data_dir is None else Path(data_dir), user=user)


def split_of(settings: GridSettings):
    """The grid's :class:`~tsdp.attacks.data.benchmarks.ForecastSplit`: its benchmark, the shipped data, or the user's
    file (``settings.user``); read once per process."""
    return _split(settings.dataset, settings.data_dir, settings.user)


def epochs_cap(settings: GridSettings) -> int:
    """The epochs cap of every cell of the grid: the settings', else the dataset's."""
    return settings.epochs or split_of(settings).spec.epochs


def level_v(cell: Cell, settings: GridSettings) -> Optional[float]:
    """The v of ``cell``'s configuration: the grid's, else its dataset's (label noise); None for the other levels."""
    if cell.level != "label-noise":
        return None
    if settings.v is not None:
        return settings.v
    return split_of(settings).spec.label_noise_v


def cell_config(cell: Cell, settings: GridSettings) -> TrainingConfig:
    """The training configuration of ``cell``: the split's series (N, variable lengths), the dataset's L_C, L_F,
    Λ and σ, the cell's top level (WR bottom level, λ = 1; shuffled epochs of floor(N λ / Λ) steps, the official
    code's, ``drop_last``) and privacy level (relation, w, v, σ_F). DeepAR's context is L_C + max lag
    (:func:`tsdp.attacks.loop.models.deepar_window`): every value it reads is in the window the accountant sees."""
    from tsdp.attacks.loop.models import deepar_window

    split = split_of(settings)
    spec, lengths = split.spec, split.train.lengths
    context = deepar_window(spec.context_length, spec.lags) if cell.model == "deepar" else spec.context_length
    config = TrainingConfig(N=split.train.N, L=min(lengths), lengths=None if len(set(lengths)) == 1 else lengths,
                            context_length=context, forecast_length=spec.forecast_length,
                            batch_size=spec.batch_size, sigma=spec.sigma, top=cell.top,
                            drop_last=cell.top == "shuffle")
    return level_config(config, cell, level_v(cell, settings))


def path_of(folder, cell: Cell) -> Path:
    return Path(folder) / f"{cell.key}.json"


def load_done(folder, cell: Cell, settings: Optional[GridSettings] = None) -> Optional[CellResult]:
    """The stored result of ``cell``, or None (absent, unreadable, or a label-noise cell stored with another v than
    ``settings``' : it is run again)."""
    path = path_of(folder, cell)
    try:
        done = CellResult.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if settings is not None and done.v != level_v(cell, settings):
        return None
    return done


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_cell(task: CellTask) -> CellResult:
    """Train ``task.cell`` (module docstring) and store its result when the task names a folder."""
    import torch

    from tsdp.attacks.data.benchmarks import CLIP, LR, WEIGHT_DECAY
    from tsdp.attacks.loop.train import train

    cell, settings = task.cell, task.settings
    split = split_of(settings)
    config = cell_config(cell, settings)
    epochs = epochs_cap(settings)
    private = not math.isinf(cell.epsilon)
    seed = cell_seed(settings, cell.seed_index)
    level = {"w": cell.w, "sigma_forecast": cell.sigma_forecast, "v": level_v(cell, settings)}
    from tsdp.verify.accountant import max_steps

    cap = epochs * config.steps_per_epoch
    if private and max_steps(config, cell.epsilon, settings.delta, cap=cap, discretization=settings.discretization) == 0:
        return _store(task, CellResult(  # the budget buys no step: nothing is trained, nothing is spent
            key=cell.key, model=cell.model, epsilon=cell.epsilon, seed_index=cell.seed_index, level=cell.level,
            top=cell.top, seed=seed, sigma=config.sigma, steps=0, epochs=0.0, epsilon_spent=0.0, theorem=None,
            crps=math.nan, selected_crps=math.nan, selected_step=0, seconds=0.0, device=settings.device, **level))
    threads = torch.get_num_threads()
    torch.set_num_threads(task.threads)
    try:
        r = train(config, cell.model, None, split=split, epsilon=cell.epsilon if private else None,
                  delta=settings.delta if private else None, epochs=epochs, private=private,
                  discretization=settings.discretization, clip=CLIP, lr=LR, weight_decay=WEIGHT_DECAY,
                  device=settings.device, seed=seed, progress=False, season=split.spec.season,
                  n_samples=settings.n_samples, lags=split.spec.lags)
    finally:
        torch.set_num_threads(threads)
    result = CellResult(
        key=cell.key, model=cell.model, epsilon=cell.epsilon, seed_index=cell.seed_index, level=cell.level,
        top=cell.top, seed=seed, sigma=config.sigma if private else None, steps=r.steps, epochs=r.epochs,
        epsilon_spent=r.epsilon, theorem=r.theorem, crps=r.crps, selected_crps=r.selection.selected_crps,
        selected_step=r.selection.selected_step, seconds=r.seconds, device=r.device, **level)
    return _store(task, result)


def _store(task: CellTask, result: CellResult) -> CellResult:
    """``result``, written atomically to the task's folder when it names one (NaN CRPS as null)."""
    if task.folder is not None:
        d = result.as_dict()
        d["epsilon"] = None if math.isinf(result.epsilon) else result.epsilon
        d = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}
        _write_atomic(path_of(task.folder, task.cell), json.dumps(d, indent=1, sort_keys=True))
    return result
