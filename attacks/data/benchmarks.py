"""The paper's forecasting benchmarks and their split (paper Appendix "Experimental Setup").

``traffic``, ``electricity`` and ``solar_10_minutes`` come from GluonTS's dataset repository in its
on-disk layout (``<root>/<name>/metadata.json``, ``train/`` and ``test/`` folders of JSON lines,
optionally gzipped), as the authors' code loads them; the split is GluonTS's train/test, and the
last 5·L_F steps of every training series (five forecast windows) are held out for validation.
The test set is GluonTS's: every test entry is one window whose last L_F values are the targets.

The data is read from the cache folder (``root``, GluonTS's default ``~/.gluonts/datasets``); when
it is missing, :func:`load_split` downloads it through GluonTS (``download=True``) or says in one
line what to download and where it goes. Without a benchmark named, experiments run on the real
dataset shipped with tsdp (:data:`tsdp.attacks.data.tsf.SHIPPED`, the M1 yearly series): the last
L_F values of every series are its test window, the L_F before them its validation window
(its series are 15 to 58 years long: five windows would leave nothing to train on), and series
too short to keep L_F training values after both are left out (the split says how many).

Each dataset's defaults (:class:`DatasetSpec`) are the paper's: L_F, L_C = 1·L_F or 4·L_F, the
batch size Λ, the noise multiplier σ, DeepAR's lags, the season length of the baselines and the
maximum epochs; C = 1e-4 and Adam (learning rate 1e-3, weight decay 1e-8) for all (:data:`CLIP`,
:data:`LR`, :data:`WEIGHT_DECAY`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from .series import DataError, SeriesData

CLIP = 1e-4
"""The paper's clipping norm C (all datasets)."""
LR = 1e-3
WEIGHT_DECAY = 1e-8
VALIDATION_WINDOWS = 5
"""Forecast windows held out for validation at the end of every training series (the paper's 5·L_F steps)."""

LONG_LAGS = (1, 2, 3, 4, 5, 6, 7, 23, 24, 25, 47, 48, 49, 71, 72, 73, 95, 96, 97, 119, 120, 121, 143, 144, 145,
             167, 168, 169)
SHORT_LAGS = (1, 2, 3, 4, 5, 6, 7, 23, 24, 25)


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset's defaults: forecast length L_F, L_C = ``context_factor``·L_F, batch size Λ, noise multiplier σ,
    DeepAR's ``lags``, the baselines' ``season`` length, the maximum ``epochs``, the validation windows and the v
    of its label-noise table (``label_noise_v``: the largest change of one element under (1, v)-user-level
    privacy, in the data's units)."""

    name: str
    forecast_length: int
    context_factor: int
    batch_size: int
    sigma: float
    lags: Tuple[int, ...]
    season: int
    epochs: int
    validation_windows: int
    label_noise_v: float
    source: str

    @property
    def context_length(self) -> int:
        return self.context_factor * self.forecast_length

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return {**asdict(self), "context_length": self.context_length, "clip": CLIP, "lr": LR,
                "weight_decay": WEIGHT_DECAY}


PAPER = {
    "traffic": DatasetSpec("traffic", 24, 4, 256, 4.0, LONG_LAGS, 24, 4000, VALIDATION_WINDOWS, 0.001,
                           "GluonTS dataset repository 'traffic' (Lai et al. 2018; PeMS)"),
    "electricity": DatasetSpec("electricity", 24, 1, 128, 2.0, SHORT_LAGS, 24, 8000, VALIDATION_WINDOWS, 0.1,
                               "GluonTS dataset repository 'electricity' (Lai et al. 2018; UCI)"),
    "solar_10_minutes": DatasetSpec("solar_10_minutes", 60, 4, 128, 4.0, LONG_LAGS, 144, 16000, VALIDATION_WINDOWS, 0.01,
                                    "GluonTS dataset repository 'solar_10_minutes' (NREL)"),
}
"""The paper's three benchmarks with its Appendix "Experimental Setup" hyperparameters; their label-noise v are
the captions of its label-perturbation tables (traffic 0.001, electricity 0.1, solar_10_minutes 0.01)."""

SHIPPED_SPEC = DatasetSpec("m1-yearly", 6, 1, 8, 8.0, (1, 2, 3, 4, 5, 6), 1, 50, 1, 0.01,
                           "M1 yearly (Makridakis et al. 1982), Monash forecasting repository file shipped in aeon "
                           "1.6.0; CC BY 4.0")
"""The shipped real dataset's defaults (not the paper's: L_F is the Monash horizon 6, yearly data has no season;
170 short series need a small batch Λ = 8 and σ = 8 for ε = 0.5 at δ = 1e-7 to buy any steps: 70, and 982 at ε = 2).
Its label-noise v = 0.01 is the resolution of the file (every value has at most two decimals), 0.4 % of the mean
of its smallest-scale series (2.43) and 1.5e-5 of the median series' mean (679): like the paper's v, one
individual's change is small against every series' scale."""


def default_root() -> Path:
    """GluonTS's dataset cache: ``$GLUONTS_DATASETS`` or ``~/.gluonts/datasets``."""
    return Path(os.environ.get("GLUONTS_DATASETS", Path.home() / ".gluonts" / "datasets"))


@dataclass(frozen=True)
class Windows:
    """Forecast windows: each a history (every value before it) and its L_F targets (M, L_F)."""

    histories: Tuple[np.ndarray, ...]
    targets: np.ndarray

    @property
    def count(self) -> int:
        return len(self.histories)

    def contexts(self, context_length: int) -> np.ndarray:
        """The last L_C values of every history, front-padded with zeros like Algorithm 4: (M, L_C)."""
        out = np.zeros((self.count, context_length))
        for i, h in enumerate(self.histories):
            tail = h[-context_length:]
            out[i, context_length - len(tail):] = tail
        return out


@dataclass(frozen=True)
class ForecastSplit:
    """Training series, validation windows (their ends, held out) and test windows of one dataset."""

    spec: DatasetSpec
    train: SeriesData
    validation: Windows
    test: Windows
    dropped: int = 0

    def as_dict(self) -> dict:
        return {"dataset": self.spec.name, "train_series": self.train.N, "train_min_length": min(self.train.lengths),
                "train_max_length": max(self.train.lengths), "validation_windows": self.validation.count,
                "validation_steps_per_series": self.spec.validation_windows * self.spec.forecast_length,
                "test_windows": self.test.count, "forecast_length": self.spec.forecast_length,
                "context_length": self.spec.context_length, "dropped_series": self.dropped}


def hold_out(spec: DatasetSpec, train: SeriesData, test: Windows, dropped: int = 0) -> ForecastSplit:
    """Hold out the last ``spec.validation_windows``·L_F steps of every training series as validation windows."""
    f, k = spec.forecast_length, spec.validation_windows
    if min(train.lengths) < (k + 1) * f:
        raise DataError(spec.name, f"a training series of length {min(train.lengths)} cannot hold out {k}·L_F = "
                                   f"{k * f} validation steps and keep L_F = {f} to train on")
    histories, targets = [], []
    for s in train.series:
        for j in range(k, 0, -1):
            end = len(s) - (j - 1) * f
            histories.append(s[: end - f])
            targets.append(s[end - f: end])
    fitted = SeriesData(tuple(s[: len(s) - k * f] for s in train.series))
    return ForecastSplit(spec, fitted, Windows(tuple(histories), np.stack(targets)), test, dropped)


def shipped_split(spec: DatasetSpec = SHIPPED_SPEC) -> ForecastSplit:
    """The shipped M1 yearly data split as the module docstring says."""
    from .tsf import m1_yearly

    series = m1_yearly().data.series
    f, k = spec.forecast_length, spec.validation_windows
    kept = [s for s in series if len(s) >= (k + 2) * f]
    train = SeriesData(tuple(s[:-f] for s in kept))
    test = Windows(tuple(s[:-f] for s in kept), np.stack([s[-f:] for s in kept]))
    return hold_out(spec, train, test, dropped=len(series) - len(kept))


def _read_folder(folder: Path) -> SeriesData:
    from .formats import load_gluonts_jsonl

    if not folder.is_dir():
        raise DataError(str(folder), f"is {'not a folder' if folder.exists() else 'missing'}: a GluonTS dataset "
                                     "folder holds train/ and test/ folders of JSON lines (download it again, "
                                     "or point --data-dir at a complete copy)")
    files = sorted(p for p in folder.iterdir() if p.name.endswith((".json", ".json.gz", ".jsonl", ".jsonl.gz")))
    if not files:
        raise DataError(str(folder), "holds no JSON lines file (data.json or data.json.gz)")
    parts = [load_gluonts_jsonl(p).series for p in files]
    return SeriesData(tuple(s for part in parts for s in part))


def missing_message(name: str, root: Path) -> str:
    """The one line that says what to download and where it goes."""
    return (f"dataset {name!r} is not cached at {root / name} and cannot be downloaded here: on a machine with "
            f"internet run  python -c \"from gluonts.dataset.repository import get_dataset; get_dataset('{name}')\"  "
            f"and copy ~/.gluonts/datasets/{name} to {root / name} (or point --data-dir at its parent)")


def _download(name: str, root: Path) -> None:
    """Download ``name`` through GluonTS into a temporary folder under ``root`` and rename it to ``root/name`` once
    it holds train/ and test/: a failed download leaves nothing behind (GluonTS itself would take any folder at
    ``root/name``, even an empty one, for a finished download). DataError saying what to download otherwise."""
    import shutil
    import tempfile

    target = root / name
    if target.exists() and not (target.is_dir() and not any(target.iterdir())):
        raise DataError(str(target), "exists without a train/ folder (a download cut short, or another file): "
                                     "remove it and download again")
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.download-", dir=root))
    except OSError as exc:
        raise DataError("data_dir", f"cannot write the download to {root} ({exc.strerror or exc})") from None
    try:
        from gluonts.dataset.repository import get_dataset

        get_dataset(name, path=tmp)
        got = tmp / name
        if not ((got / "train").is_dir() and (got / "test").is_dir()):
            raise DataError("dataset", f"GluonTS's download of {name!r} holds no train/ and test/ folders")
        if target.is_dir():
            target.rmdir()  # empty (checked above)
        os.rename(got, target)
    except Exception:  # noqa: BLE001 - offline, a proxy, a failed recipe: the one line says what to do
        raise DataError("dataset", missing_message(name, root)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_split(name: str, root: Optional[Path] = None, *, download: bool = False) -> ForecastSplit:
    """The paper's split of benchmark ``name`` from GluonTS's on-disk layout under ``root`` (module docstring).

    ``download``: fetch a missing dataset through GluonTS (the ``gluonts`` extra; it is cached
    there after the first download). A missing dataset otherwise, or a failed download, is one
    :class:`DataError` whose message says what to download and where it goes.
    """
    if name not in PAPER:
        raise DataError("dataset", f"must be one of {', '.join(PAPER)} or {'m1-yearly'!r} (got {name!r})")
    spec = PAPER[name]
    root = Path(root) if root is not None else default_root()
    folder = root / name
    if not (folder / "train").is_dir():
        if not download:
            raise DataError("dataset", missing_message(name, root))
        _download(name, root)
    train = _read_folder(folder / "train")
    test_series = _read_folder(folder / "test").series
    f = spec.forecast_length
    if min(len(s) for s in test_series) <= f:
        raise DataError(str(folder / "test"), f"a test entry is not longer than L_F = {f}")
    test = Windows(tuple(s[:-f] for s in test_series), np.stack([s[-f:] for s in test_series]))
    return hold_out(spec, train, test)


def dataset_names() -> Tuple[str, ...]:
    """Every name :func:`split_for` accepts: the shipped dataset first, then the paper's benchmarks."""
    return (SHIPPED_SPEC.name, *PAPER)


def split_for(name: Optional[str], root: Optional[Path] = None, *, download: bool = False) -> ForecastSplit:
    """The split of ``name`` (None: the shipped real dataset)."""
    if name is None or name == SHIPPED_SPEC.name:
        return shipped_split()
    return load_split(name, root, download=download)
