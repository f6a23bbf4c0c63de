"""One cell of the privacy-utility grid: a training run, accounted by the sound accountant, stored atomically.

A private cell trains with the dataset's σ (paper Appendix "DP Training Parameters") until the
sound ε(δ) of the next step would exceed the cell's budget, or to the epochs cap
(:func:`tsdp.training.train.train`); it records the steps that ran and the ε they spent (an
**upper** bound, the accountant's ε of exactly those steps). ε = ∞ trains without clipping or noise
for the epochs cap. A budget that buys no step is recorded as 0 steps, ε 0 and no CRPS (NaN). The reported CRPS is the last iterate's, covered by the ε; the checkpoint with
the lowest validation loss (the paper's choice) is reported beside it and is **not** covered: its
validation windows are the ends of the same private series (THEOREMS.md errata).

Results are one JSON file per cell under the grid's folder (named by :attr:`Cell.key`), written to a
temporary file in the same folder, flushed to disk and renamed over the name (atomic), so a killed grid
resumes from the cells on disk without recomputing them. Each file holds the cell's :class:`CellKey`
(everything its result depends on: the cell, the grid's settings, the dataset's hyperparameters, a
fingerprint of the split's numbers and of the training code), the result and a digest of both. A file is
used only when its key is this grid's, its digest matches and every field has its type and range
(:func:`read_stored`); any other file (cut by a kill, edited, from another configuration, dataset or
code version) is not reported: the grid recomputes the cell and overwrites the file.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import stat
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Optional

import numpy as np

from tsdp.datasets.benchmarks import DatasetSpec
from tsdp.datasets.series import DataError
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.errors import short_repr

from .grid import Cell, GridSettings, cell_seed, level_config

FLOAT32_MAX = float(np.finfo(np.float32).max)


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

    def stored(self) -> dict:
        """The JSON form of a cell file: ε = ∞ and a NaN CRPS (no step) as null."""
        d = self.as_dict()
        d["epsilon"] = None if math.isinf(self.epsilon) else self.epsilon
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "CellResult":
        """The result a cell file's ``result`` holds (its JSON form, :meth:`stored`); :class:`ValueError` naming the
        field for a missing, unknown or mistyped field (ranges: :func:`check_result`)."""
        if not isinstance(d, dict):
            raise ValueError("the result is not a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        d = {**d}
        for f in fields(cls):
            if f.name not in d:
                raise ValueError(f"no field {f.name!r}")
            d[f.name] = _typed(f.name, d[f.name])
        d["epsilon"] = math.inf if d["epsilon"] is None else d["epsilon"]
        for k in ("crps", "selected_crps"):
            d[k] = math.nan if d[k] is None else d[k]
        return cls(**d)


_TYPES = {"key": (str,), "model": (str,), "level": (str,), "top": (str,), "device": (str,), "theorem": (str, None),
          "seed_index": (int,), "seed": (int,), "steps": (int,), "selected_step": (int,), "trials": (int,),
          "w": (int,), "epsilon": (float, None), "sigma": (float, None), "epsilon_spent": (float, None),
          "crps": (float, None), "selected_crps": (float, None), "v": (float, None), "epochs": (float,),
          "seconds": (float,), "sigma_forecast": (float,)}
"""Each stored field's JSON types (None: null; an int is a float's value too, a bool is neither)."""


def _typed(name: str, value):
    """``value`` of field ``name`` as its type (int to float), or ValueError naming the field."""
    allowed = _TYPES[name]
    if value is None and None in allowed:
        return None
    if not isinstance(value, bool):  # a JSON true/false is never a number here
        if isinstance(value, str) and str in allowed:
            return value
        if isinstance(value, int) and int in allowed:
            return value
        if isinstance(value, (int, float)) and float in allowed:
            return float(value)
    raise ValueError(f"field {name!r} is {value!r}, not " + " or ".join("null" if t is None else t.__name__
                                                                      for t in allowed))


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
    from tsdp.datasets.benchmarks import split_for

    return split_for(dataset, None if data_dir is None else Path(data_dir), user=user)


def split_of(settings: GridSettings):
    """The grid's :class:`~tsdp.datasets.benchmarks.ForecastSplit`: its benchmark, the shipped data, or the user's
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
    code's, ``drop_last``) and privacy level (relation, w, v, σ_F). DeepAR's context is L_C + max lag - 1
    (:func:`tsdp.training.models.deepar_window`, GluonTS's ``past_length``): every value it reads is in the window the accountant sees."""
    from tsdp.training.models import deepar_window

    split = split_of(settings)
    spec, lengths = split.spec, split.train.lengths
    context = deepar_window(spec.context_length, spec.lags) if cell.model == "deepar" else spec.context_length
    config = TrainingConfig(N=split.train.N, L=min(lengths), lengths=None if len(set(lengths)) == 1 else lengths,
                            context_length=context, forecast_length=spec.forecast_length,
                            batch_size=spec.batch_size, sigma=spec.sigma, top=cell.top,
                            drop_last=cell.top == "shuffle")  # the authors' epoch, (len(data) *
    # instances_per_sequence) // batch_size batches: jan-schuchardt/dp_forecasting, models/dp_estimator.py
    return level_config(config, cell, level_v(cell, settings))


TRAINING_CODE = ("training", "datasets", "verify", "theorems", "experiments/cells.py",
                 "experiments/grid.py")
"""The sources a cell's result depends on (the training loop and models, the data split, the accountant, the
configuration): the code fingerprint of :class:`CellKey` hashes every .py file under them."""


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """:func:`source_fingerprint` of the :data:`TRAINING_CODE` sources of this tsdp: a cell computed by other code
    (another tsdp version, an edited loop) has another one."""
    return source_fingerprint(Path(__file__).resolve().parents[1], TRAINING_CODE)


def source_fingerprint(root: Path, parts) -> str:
    """SHA-256 of the relative path and bytes of every .py file under the folders (or of the files) ``parts`` of
    ``root``, in path order."""
    files = []
    for part in parts:
        path = root / part
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.relative_to(root).as_posix()):
        name = f.relative_to(root).as_posix().encode()
        data = f.read_bytes()
        h.update(len(name).to_bytes(8, "little") + name + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def data_fingerprint(split) -> str:
    """SHA-256 of a :class:`~tsdp.datasets.benchmarks.ForecastSplit`'s numbers: every training series (after the
    hold-out), the validation targets, every test history and the test targets, each with its length (float64
    bytes), the series left out, and the calendar (the starts of the training series, validation and test windows,
    or their absence: DeepAR's time features are computed from them): the same data under another name or folder
    has the same one."""
    h = hashlib.sha256()
    parts = (split.train.series, (split.validation.targets,), split.test.histories, (split.test.targets,))
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        for a in part:
            a = np.ascontiguousarray(a, dtype=np.float64)
            h.update(repr(a.shape).encode() + a.tobytes())
    h.update(int(split.dropped).to_bytes(8, "little"))
    for starts in (split.train.starts, split.validation.starts, split.test.starts):
        calendar = None if starts is None else [[s.timestamp, s.freq] for s in starts]
        text = json.dumps(calendar, separators=(",", ":")).encode()
        h.update(len(text).to_bytes(8, "little") + text)
    return h.hexdigest()


@functools.lru_cache(maxsize=4)
def _data_fingerprint(dataset: Optional[str], data_dir: Optional[str], user=None) -> str:
    return data_fingerprint(_split(dataset, data_dir, user))


@dataclass(frozen=True)
class CellKey:
    """Everything a cell's result depends on, stored in its file and checked on read: the cell (``name``,
    model, ε (None: ∞), seed index, level, top level, w, σ_F, v), the grid's settings that change a number
    (δ, the epochs cap, the sample paths, the accountant's discretisation, the root seed), the dataset's name and
    hyperparameters (``spec``: L_F, L_C, Λ, σ, lags, ...), and fingerprints of the split's numbers (``data``) and of
    the training code (``code``). Not in it: the device and thread count (threads change only the floating-point
    rounding; a seed draws other batches and noise on CUDA than on CPU, the same experiment under the same ε, and
    the cell's file records its ``device``) and the data folder (the data fingerprint is the data)."""

    name: str
    model: str
    epsilon: Optional[float]
    seed_index: int
    level: str
    top: str
    w: int
    sigma_forecast: float
    v: Optional[float]
    dataset: str
    spec: DatasetSpec
    delta: float
    epochs: int
    n_samples: int
    discretization: float
    seed: int
    data: str
    code: str

    def as_dict(self) -> dict:
        """The JSON form (the spec's tuples as lists, as the file holds them)."""
        return json.loads(json.dumps(asdict(self)))


KEY_WORDS = {"name": "another cell's name", "model": "another model", "epsilon": "another budget ε",
             "seed_index": "another seed index", "level": "another privacy level", "top": "another top level",
             "w": "another w (--w)", "sigma_forecast": "another σ_F (--sigma-forecast)", "v": "another v (--v)",
             "dataset": "another dataset (--dataset)", "spec": "other dataset hyperparameters",
             "delta": "another δ (--delta)", "epochs": "another epochs cap (--epochs)",
             "n_samples": "another number of sample paths (--samples)",
             "discretization": "another discretisation (--discretization)", "seed": "another root seed (--seed)",
             "data": "other data (the split's numbers differ)",
             "code": "other training code (another tsdp version, or edited sources)"}
"""What a stored key that differs in each field was computed under (the note of a recomputed cell)."""


def cell_key(cell: Cell, settings: GridSettings) -> CellKey:
    """The :class:`CellKey` of ``cell`` in the grid of ``settings``."""
    split = split_of(settings)
    return CellKey(name=cell.key, model=cell.model, epsilon=None if math.isinf(cell.epsilon) else float(cell.epsilon),
                   seed_index=cell.seed_index, level=cell.level, top=cell.top, w=cell.w,
                   sigma_forecast=float(cell.sigma_forecast), v=level_v(cell, settings), dataset=split.spec.name,
                   spec=split.spec, delta=float(settings.delta), epochs=epochs_cap(settings),
                   n_samples=settings.n_samples, discretization=float(settings.discretization), seed=settings.seed,
                   data=_data_fingerprint(settings.dataset, settings.data_dir, settings.user), code=code_fingerprint())


def path_of(folder, cell: Cell) -> Path:
    """The file of ``cell``'s result under ``folder``."""
    return Path(folder) / f"{cell.key}.json"


def _digest(key: dict, result: dict) -> str:
    """SHA-256 of a cell file's key and result (canonical JSON): a file edited or damaged after writing fails it."""
    text = json.dumps({"key": key, "result": result}, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def check_result(r: CellResult, cell: Cell, settings: GridSettings, targets: np.ndarray) -> None:
    """ValueError naming the field unless ``r`` is a result ``cell`` can have in this grid: its own cell, seed and
    v; 0 <= steps <= the epochs cap's steps, epochs = steps per epoch; a private cell at the dataset's σ whose
    sound ε spent is finite, >= 0 and within its budget (0 without steps), a non-private one with none; a CRPS
    (both checkpoints) finite, >= 0 and at most :func:`crps_ceiling` of the test targets, NaN only when no step ran;
    0 <= selected step <= steps; finite seconds >= 0."""
    private = not math.isinf(cell.epsilon)
    config = cell_config(cell, settings)
    cap = epochs_cap(settings) * config.steps_per_epoch
    for name, value in (("key", cell.key), ("model", cell.model), ("epsilon", cell.epsilon),
                        ("seed_index", cell.seed_index), ("level", cell.level), ("top", cell.top), ("w", cell.w),
                        ("sigma_forecast", cell.sigma_forecast), ("v", level_v(cell, settings)),
                        ("seed", cell_seed(settings, cell.seed_index)), ("trials", 1),
                        ("sigma", config.sigma if private else None)):
        if getattr(r, name) != value:
            raise ValueError(f"field {name!r} is {getattr(r, name)!r}, not this cell's {value!r}")
    if not 0 <= r.steps <= cap:
        raise ValueError(f"steps {r.steps} outside 0..{cap} (the epochs cap)")
    if not math.isclose(r.epochs, r.steps / config.steps_per_epoch, rel_tol=1e-12, abs_tol=1e-12):
        raise ValueError(f"epochs {r.epochs!r} is not steps / steps per epoch ({r.steps / config.steps_per_epoch!r})")
    if private:
        spent = r.epsilon_spent
        if spent is None or not (math.isfinite(spent) and 0 <= spent <= cell.epsilon) or (r.steps == 0 and spent):
            raise ValueError(f"ε spent {spent!r} is not in [0, the budget {cell.epsilon:g}]" +
                             (" (0 without steps)" if r.steps == 0 else ""))
    elif r.epsilon_spent is not None:
        raise ValueError(f"ε spent {r.epsilon_spent!r} by a cell without DP (ε = ∞)")
    ceiling = crps_ceiling(targets)
    for name in ("crps", "selected_crps"):
        value = getattr(r, name)
        if math.isnan(value) and r.steps == 0 and private:
            continue
        if not (math.isfinite(value) and 0 <= value <= ceiling):
            raise ValueError(f"{name} {value!r} is not in [0, {ceiling:.3g}] (the largest a float32 forecast can "
                             "score on this test set)")
    if not 0 <= r.selected_step <= r.steps:
        raise ValueError(f"selected step {r.selected_step} outside 0..{r.steps}")
    if not (math.isfinite(r.seconds) and r.seconds >= 0):
        raise ValueError(f"seconds {r.seconds!r} is not finite and >= 0")


def crps_ceiling(targets: np.ndarray) -> float:
    """The largest CRPS (mean weighted quantile loss, :func:`tsdp.training.metrics.crps_from_samples`) any finite
    float32 forecast can score on ``targets``: each term 2|(y - ŷ_q)(1{y ≤ ŷ_q} - q)| <= 2(|y| + 3.4e38), so
    CRPS <= 2 + 2·n·3.4e38 / Σ|y| over the n targets (the models forecast in float32; an **upper** bound)."""
    t = np.asarray(targets, dtype=np.float64)
    return 2.0 + 2.0 * t.size * FLOAT32_MAX / float(np.sum(np.abs(t)))


@dataclass(frozen=True)
class Stored:
    """What a cell's file holds: ``result`` when it is this grid's valid result; else ``problem`` says why it is
    not used (None when there is no file)."""

    path: str
    result: Optional[CellResult] = None
    problem: Optional[str] = None

    def as_dict(self) -> dict:
        return {"path": self.path, "result": None if self.result is None else self.result.as_dict(),
                "problem": self.problem}


def read_stored(folder, cell: Cell, settings: GridSettings) -> Stored:
    """Read and check ``cell``'s file under ``folder`` (module docstring): the result, or why it is not used
    (unreadable or cut JSON, no key or digest, a key other than :func:`cell_key` naming the first field that
    differs, a digest that does not match, a field of the wrong type or range, :func:`check_result`). A folder or
    other non-file where the file goes raises :class:`DataError` naming the path (it cannot be overwritten)."""
    path = path_of(folder, cell)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return Stored(str(path))
    except OSError as exc:
        return Stored(str(path), problem=f"unreadable ({exc.strerror or exc})")
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise DataError(str(path), f"is {kind} where the result file of cell {cell.key} goes: remove it or give "
                                   "another folder (--out)")
    try:
        stored = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Stored(str(path), problem=f"unreadable ({type(exc).__name__}: {exc})")
    if not (isinstance(stored, dict) and set(stored) == {"key", "result", "digest"}):
        return Stored(str(path), problem="not a cell file of this tsdp version (no key, result and digest)")
    key, got = cell_key(cell, settings).as_dict(), stored["key"]
    if not isinstance(got, dict):
        return Stored(str(path), problem="its key is not a JSON object")
    for name in sorted(key, key=lambda n: n == "name"):  # the field that differs, the name (its consequence) last
        if name not in got:
            return Stored(str(path), problem=f"its key has no field {name!r}")
        if got[name] != key[name]:
            return Stored(str(path), problem=f"computed under {KEY_WORDS[name]}: stored {name} {short_repr(got[name])}, "
                                             f"this grid {short_repr(key[name])}")
    if set(got) != set(key):
        return Stored(str(path), problem=f"its key has unknown field {sorted(set(got) - set(key))[0]!r}")
    if stored["digest"] != _digest(got, stored["result"]):
        return Stored(str(path), problem="its digest does not match its contents (edited or damaged)")
    try:
        result = CellResult.from_dict(stored["result"])
        check_result(result, cell, settings, split_of(settings).test.targets)
    except ValueError as exc:
        return Stored(str(path), problem=str(exc))
    return Stored(str(path), result=result)


def load_done(folder, cell: Cell, settings: GridSettings) -> Optional[CellResult]:
    """The stored result of ``cell`` in the grid of ``settings``, or None: absent, or not used (:func:`read_stored`:
    the grid recomputes it and overwrites the file). A folder where the file goes raises :class:`DataError`."""
    return read_stored(folder, cell, settings).result


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, flush it to disk and rename it over ``path``: a reader sees
    the old file or the whole new one, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def diverged_names_the_cell(cell: Cell, settings: GridSettings):
    """A training of ``cell`` that diverges (:func:`tsdp.training.train.train`'s ConfigError naming ``lr``, which
    a grid does not set: the paper's) is refused naming what the grid does set: ``v`` when the cell's label noise
    σ_F·v is on, else ``data``."""
    try:
        yield
    except ConfigError as exc:
        if exc.parameter != "lr":
            raise
        v = level_v(cell, settings)
        if cell.level == "label-noise" and cell.sigma_forecast > 0:
            raise ConfigError("v", f"the label noise σ_F·v = {cell.sigma_forecast * v:.3g} (sigma_forecast="
                                   f"{cell.sigma_forecast:g} times v={v:g}) makes the training of {cell.model} diverge: "
                                   "lower one of them", v) from None
        raise ConfigError("data", f"the training of {cell.model} diverged at the paper's learning rate: "
                                  f"{exc.constraint}") from None


def cell_training(cell: Cell, settings: GridSettings):
    """What ``cell``'s training shares with the other cells of its model and column set
    (:class:`tsdp.training.together.GroupSettings`: the split, δ, the epochs cap, the paper's clip norm, learning
    rate and weight decay, DP or not, the sample paths, the dataset's season and lags); its own part is its seed
    and budget."""
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
    """torch's intra-op threads set to ``threads`` for the block (a cell is the same number on every executor)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train_cell(cell: Cell, settings: GridSettings, config: TrainingConfig):
    """Train ``cell``'s model alone on ``config`` (:func:`cell_config`, or a variant of it: another batch size Λ) with
    the grid's settings and the paper's optimiser (:func:`cell_training`): DP-SGD to the cell's ε, or without DP
    for ε = ∞.

    Args:
        cell: The grid cell (model, ε, seed index).
        settings: The grid's settings.
        config: The training configuration to run.

    Returns:
        The :class:`tsdp.training.train.TrainResult` (test CRPS of the last iterate, steps, ε spent).
    """
    from tsdp.training.train import train

    with diverged_names_the_cell(cell, settings):
        return train(config, cell.model, seed=cell_seed(settings, cell.seed_index),
                     **cell_training(cell, settings).keywords(None if math.isinf(cell.epsilon) else cell.epsilon))


def run_cell(task: CellTask) -> CellResult:
    """Train ``task.cell`` alone (module docstring) and store its result when the task names a folder."""
    cell, settings = task.cell, task.settings
    if buys_no_step(cell, settings):
        return store_result(task, no_step_result(cell, settings))
    with torch_threads(task.threads):
        r = train_cell(cell, settings, cell_config(cell, settings))
    return store_result(task, trained_result(cell, settings, r))


def _level_fields(cell: Cell, settings: GridSettings) -> dict:
    return {"w": cell.w, "sigma_forecast": cell.sigma_forecast, "v": level_v(cell, settings)}


def buys_no_step(cell: Cell, settings: GridSettings) -> bool:
    """Whether ``cell`` is private and its budget buys no step within the epochs cap (the sound accountant)."""
    from tsdp.verify.accountant import max_steps

    if math.isinf(cell.epsilon):
        return False
    config = cell_config(cell, settings)
    cap = epochs_cap(settings) * config.steps_per_epoch
    return max_steps(config, cell.epsilon, settings.delta, cap=cap, discretization=settings.discretization) == 0


def no_step_result(cell: Cell, settings: GridSettings) -> CellResult:
    """The result of a cell whose budget buys no step: nothing is trained, nothing is spent (ε 0, no CRPS)."""
    return CellResult(
        key=cell.key, model=cell.model, epsilon=cell.epsilon, seed_index=cell.seed_index, level=cell.level,
        top=cell.top, seed=cell_seed(settings, cell.seed_index), sigma=cell_config(cell, settings).sigma, steps=0,
        epochs=0.0, epsilon_spent=0.0, theorem=None, crps=math.nan, selected_crps=math.nan, selected_step=0,
        seconds=0.0, device=settings.device, **_level_fields(cell, settings))


def trained_result(cell: Cell, settings: GridSettings, r) -> CellResult:
    """The result of ``cell`` from its training's :class:`~tsdp.training.result.TrainResult` ``r``."""
    private = not math.isinf(cell.epsilon)
    return CellResult(
        key=cell.key, model=cell.model, epsilon=cell.epsilon, seed_index=cell.seed_index, level=cell.level,
        top=cell.top, seed=cell_seed(settings, cell.seed_index),
        sigma=cell_config(cell, settings).sigma if private else None, steps=r.steps, epochs=r.epochs,
        epsilon_spent=r.epsilon, theorem=r.theorem, crps=r.crps, selected_crps=r.selection.selected_crps,
        selected_step=r.selection.selected_step, seconds=r.seconds, device=r.device, **_level_fields(cell, settings))


def store_result(task: CellTask, result: CellResult) -> CellResult:
    """``result``, written atomically to the task's folder when it names one, with its key and digest."""
    if task.folder is not None:
        key, stored = cell_key(task.cell, task.settings).as_dict(), result.stored()
        text = json.dumps({"key": key, "result": stored, "digest": _digest(key, stored)}, indent=1, sort_keys=True,
                          allow_nan=False)
        _write_atomic(path_of(task.folder, task.cell), text)
    return result
