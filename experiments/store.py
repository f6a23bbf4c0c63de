"""A cell's file: its key, its checks and reading it back (a killed grid resumes from it).

Results are one JSON file per cell under the grid's folder (named by :attr:`Cell.key`), written atomically
(:func:`tsdp.experiments.cells.store_result`, through :func:`tsdp.verify.file_cache.write_atomic`), so a killed grid resumes from the cells on disk without recomputing
them. Each file holds the cell's :class:`CellKey` (everything its result depends on: the cell, the grid's settings,
the dataset's hyperparameters, a fingerprint of the split's numbers and of the training code), the result and a
digest of both (:func:`tsdp.verify.file_cache.digested_text`). A file is used only when its key is this grid's, its
digest matches and every field has its type and range (:func:`read_stored`); any other file (cut by a kill, edited,
from another configuration, dataset or code version) is not reported: the grid recomputes the cell and overwrites
the file. The grid's root seed is secret unless given, so the cell files' keys are where it is kept: a rerun without
one reads it back (:func:`root_seed`), and ``tsdp experiment`` refuses a given root that the folder's cells do not
record rather than overwrite them (the folder holds one grid).
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence, Union

import numpy as np

from tsdp.datasets.benchmarks import DatasetSpec
from tsdp.datasets.series import DataError
from tsdp.theorems.errors import short_repr
from tsdp.verify.file_cache import DAMAGED, StoredFileError, read_digested
from tsdp.verify.json_data import Record

from .result import CellResult
from .configuration import cell_config, epochs_cap, level_v, split_of
from .grid import Cell, GridSettings, cell_seed, secret_seed

if TYPE_CHECKING:
    from tsdp.datasets.benchmarks import ForecastSplit

FLOAT32_MAX = float(np.finfo(np.float32).max)

TRAINING_CODE = ("training", "datasets", "verify", "theorems", "experiments/cells.py", "experiments/configuration.py",
                 "experiments/groups.py", "experiments/grid.py")
"""The sources a cell's result depends on (the training loop and models, the data split, the accountant, the
configuration): the code fingerprint of :class:`CellKey` hashes every .py file under them."""


TRAINING_LIBRARIES = ("torch", "numpy", "scipy", "dp-accounting")
"""The libraries whose compiled code computes a cell's numbers (its source is not hashed): their versions are in the
code fingerprint."""


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of :func:`source_fingerprint` of the :data:`TRAINING_CODE` sources of this tsdp and of the versions of
    the :data:`TRAINING_LIBRARIES`: a cell computed by other code (another tsdp version, an edited loop, another
    torch, numpy, scipy or dp-accounting) has another one.

    Returns:
        64 hex digits.
    """
    h = hashlib.sha256(source_fingerprint(Path(__file__).resolve().parents[1], TRAINING_CODE).encode())
    for name, version in library_versions():
        h.update(f"\n{name}=={version}".encode())
    return h.hexdigest()


def library_versions() -> tuple:
    """(name, installed version) of each of the :data:`TRAINING_LIBRARIES`.

    Returns:
        The pairs, in that order.
    """
    from importlib.metadata import version

    return tuple((name, version(name)) for name in TRAINING_LIBRARIES)


def source_fingerprint(root: Path, parts: Sequence[str]) -> str:
    """SHA-256 of the relative path and bytes of every .py file under the folders (or of the files) ``parts`` of
    ``root``, in path order.

    Args:
        root: The folder the parts are relative to.
        parts: Folders (every .py file under them) and files.

    Returns:
        64 hex digits.
    """
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


def data_fingerprint(split: "ForecastSplit") -> str:
    """SHA-256 of a :class:`~tsdp.datasets.benchmarks.ForecastSplit`'s numbers: every training series (after the
    hold-out), the validation targets, every test history and the test targets, each with its length (float64
    bytes), the series left out, and the calendar (the starts of the training series, validation and test windows,
    or their absence: DeepAR's time features are computed from them): the same data under another name or folder
    has the same one.

    Args:
        split: The split.

    Returns:
        64 hex digits.
    """
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
    return data_fingerprint(split_of(GridSettings(dataset=dataset, data_dir=data_dir, user=user)))


@dataclass(frozen=True)
class CellKey:
    """Everything a cell's result depends on, stored in its file and checked on read: the cell (``name``,
    model, ε (None: ∞), seed index, level, top level, w, σ_F, v), the grid's settings that change a number
    (δ, the epochs cap, the sample paths, the accountant's discretisation, the root seed), the dataset's name and
    hyperparameters (``spec``: L_F, L_C, Λ, σ, lags, ...), and fingerprints of the split's numbers (``data``) and of
    the training code and the versions of the libraries that run it (``code``). Not in it: the device and thread count (threads change only the floating-point
    rounding; a seed draws other batches and noise on CUDA than on CPU, the same experiment under the same ε, and
    the cell's file records its ``device``) and the data folder (the data fingerprint is the data).

    Attributes:
        name: The cell's name (:attr:`Cell.key`).
        model: Its model.
        epsilon: Its budget (None: ∞).
        seed_index: Its seed index.
        level: Its privacy level.
        top: Its top level.
        w: Its w.
        sigma_forecast: Its σ_F.
        v: Its v (label noise only).
        dataset: The dataset's name.
        spec: The dataset's hyperparameters.
        delta: δ.
        epochs: The epochs cap.
        n_samples: Sample paths per forecast.
        discretization: The accountant's discretisation.
        seed: The grid's root seed.
        data: The split's fingerprint (:func:`data_fingerprint`).
        code: The training code's fingerprint (:func:`code_fingerprint`).
    """

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
    """The :class:`CellKey` of ``cell`` in the grid of ``settings``.

    Args:
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        Its key.
    """
    split = split_of(settings)
    return CellKey(name=cell.key, model=cell.model, epsilon=None if math.isinf(cell.epsilon) else float(cell.epsilon),
                   seed_index=cell.seed_index, level=cell.level, top=cell.top, w=cell.w,
                   sigma_forecast=float(cell.sigma_forecast), v=level_v(cell, settings), dataset=split.spec.name,
                   spec=split.spec, delta=float(settings.delta), epochs=epochs_cap(settings),
                   n_samples=settings.n_samples, discretization=float(settings.discretization), seed=settings.seed,
                   data=_data_fingerprint(settings.dataset, settings.data_dir, settings.user), code=code_fingerprint())


def path_of(folder: Union[str, Path], cell: Cell) -> Path:
    """The file of ``cell``'s result under ``folder``.

    Args:
        folder: The grid's folder.
        cell: The grid cell.

    Returns:
        ``<folder>/<cell key>.json``.
    """
    return Path(folder) / f"{cell.key}.json"


def check_result(r: CellResult, cell: Cell, settings: GridSettings, targets: np.ndarray) -> None:
    """ValueError naming the field unless ``r`` is a result ``cell`` can have in this grid: its own cell, seed and
    v; 0 <= steps <= the epochs cap's steps, epochs = steps per epoch; a private cell at the dataset's σ whose
    sound ε spent is finite, >= 0 and within its budget (0 without steps), a non-private one with none; a CRPS
    (both checkpoints) finite, >= 0 and at most :func:`crps_ceiling` of the test targets, NaN only when no step ran;
    0 <= selected step <= steps; finite seconds >= 0.

    Args:
        r: The result read back.
        cell: The cell it is stored for.
        settings: The grid's settings.
        targets: The test targets (:func:`crps_ceiling`).

    Raises:
        ValueError: Naming the first field out of its type or range.
    """
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
    CRPS <= 2 + 2·n·3.4e38 / Σ|y| over the n targets (the models forecast in float32; an **upper** bound).

    Args:
        targets: The test targets.

    Returns:
        The ceiling.
    """
    t = np.asarray(targets, dtype=np.float64)
    return 2.0 + 2.0 * t.size * FLOAT32_MAX / float(np.sum(np.abs(t)))


@dataclass(frozen=True)
class Stored(Record):
    """What a cell's file holds: ``result`` when it is this grid's valid result; else ``problem`` says why it is
    not used (None when there is no file).

    Attributes:
        path: The file.
        result: Its result when usable.
        problem: Why not, when there is a file that is not used.
    """

    path: str
    result: Optional[CellResult] = None
    problem: Optional[str] = None



def read_stored(folder: Union[str, Path], cell: Cell, settings: GridSettings) -> Stored:
    """Read and check ``cell``'s file under ``folder`` (module docstring): the result, or why it is not used
    (unreadable or cut JSON, no key or digest, a key other than :func:`cell_key` naming the first field that
    differs, a digest that does not match, a field of the wrong type or range, :func:`check_result`). A folder or
    other non-file where the file goes raises :class:`DataError` naming the path (it cannot be overwritten).

    Args:
        folder: The grid's folder.
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        What the file holds (:class:`Stored`).

    Raises:
        DataError: Something other than a file where the file goes.
    """
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
        stored = read_digested(path, "result")
    except FileNotFoundError:
        return Stored(str(path))
    except StoredFileError as exc:
        problem = str(exc)
        return Stored(str(path), problem=problem if problem.startswith("unreadable") else
                      f"not a cell file of this tsdp version ({problem})")
    key, got = cell_key(cell, settings).as_dict(), stored.key
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
    if not stored.intact():
        return Stored(str(path), problem=DAMAGED)
    try:
        result = CellResult.from_dict(stored.body)
        check_result(result, cell, settings, split_of(settings).test.targets)
    except ValueError as exc:
        return Stored(str(path), problem=str(exc))
    return Stored(str(path), result=result)


def load_done(folder: Union[str, Path], cell: Cell, settings: GridSettings) -> Optional[CellResult]:
    """The stored result of ``cell`` in the grid of ``settings``, or None: absent, or not used (:func:`read_stored`:
    the grid recomputes it and overwrites the file). A folder where the file goes raises :class:`DataError`.

    Args:
        folder: The grid's folder.
        cell: The grid cell.
        settings: The grid's settings.

    Returns:
        The usable stored result, or None.

    Raises:
        DataError: Something other than a file where the file goes.
    """
    return read_stored(folder, cell, settings).result


class RootSeedError(ValueError):
    """A root seed given for a grid folder whose cells record another (:func:`root_seed`)."""


@dataclass(frozen=True)
class RootSeed(Record):
    """The root seed of a grid (:attr:`GridSettings.seed`) and where it came from: ``given`` (the caller's),
    ``stored`` (read back from the cell files of the grid's folder, so the grid resumes) or ``fresh`` (a new secret
    one, :func:`~tsdp.experiments.grid.secret_seed`). It reproduces the grid, so it is as private as the folder.

    Attributes:
        seed: The root seed.
        source: ``given``, ``stored`` or ``fresh``.
    """

    seed: int
    source: str


def stored_root_seeds(folder: Union[str, Path]) -> frozenset:
    """The root seeds that the cell files under ``folder`` record in their keys (:class:`CellKey` ``seed``): every
    ``<name>.json`` that parses as a cell file whose key names it (``name`` its stem) and whose digest matches.
    Other files (the baselines' cache, damaged or foreign files) record none. A grid stored before root seeds were
    secret records the root it ran under (0 unless --seed was given) the same way.

    Args:
        folder: The grid's folder (absent: none).

    Returns:
        The distinct root seeds.
    """
    seeds = set()
    for path in sorted(Path(folder).glob("*.json")) if Path(folder).is_dir() else ():
        try:
            stored = read_digested(path, "result")
        except (FileNotFoundError, StoredFileError):
            continue
        key = stored.key
        if (isinstance(key, dict) and key.get("name") == path.stem and type(key.get("seed")) is int
                and stored.intact()):
            seeds.add(key["seed"])
    return frozenset(seeds)


def root_seed(folder: Union[str, Path], given: Optional[int] = None) -> RootSeed:
    """The root seed of the grid stored (or to be stored) under ``folder``: the one its cell files record
    (:func:`stored_root_seeds`), so that a rerun without a seed resumes; ``given`` when it is that one or the folder
    records none; a fresh secret one when neither (docs/DESIGN.md: a root others know voids the released ε).

    Args:
        folder: The grid's folder.
        given: The caller's root seed (None: the stored one, else a fresh one). A given root the cells record
            keeps ``source`` ``given``.

    Returns:
        The :class:`RootSeed`.

    Raises:
        RootSeedError: ``given`` is not a root the folder's cells record (refused rather than overwriting the
            folder's cells), or ``given`` is None and the cells record several roots (which one to resume is
            unknown).
    """
    stored = stored_root_seeds(folder)
    if given is not None:
        if stored and given not in stored:
            raise RootSeedError(f"{folder} holds the cells of a grid of another root seed: leave out --seed to resume "
                                "that grid (its root is read back from its cell files), or give another --out")
        return RootSeed(given, "given")
    if len(stored) > 1:
        raise RootSeedError(f"{folder} holds cells of {len(stored)} root seeds: give --seed with the one to resume "
                            "(the cells of the others are recomputed), or give another --out")
    if stored:
        return RootSeed(next(iter(stored)), "stored")
    return RootSeed(secret_seed(), "fresh")
