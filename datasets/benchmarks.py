"""The paper's forecasting benchmarks and their split (paper Appendix "Experimental Setup").

``traffic``, ``electricity`` and ``solar_10_minutes`` come from GluonTS's dataset repository in its
on-disk layout (``<root>/<name>/metadata.json``, ``train/`` and ``test/`` folders of JSON lines,
optionally gzipped), as the authors' code loads them; the split is GluonTS's train/test, and the
last k·L_F steps of every training series (k forecast windows: 7 for traffic and electricity, 1 for
solar, as the official code; the appendix text says 5) are held out for validation.
The test set is GluonTS's: every test entry is one window whose last L_F values are the targets.
The dataset's ``metadata.json`` gives the step ("freq"), so every series keeps its start
(:class:`~tsdp.datasets.series.SeriesStart`), and every window the start of the series its history is a
prefix of (:attr:`Windows.starts`), from which DeepAR's time features are computed.

The data is read from the cache folder (``root``, GluonTS's default ``~/.gluonts/datasets``); when
it is missing, :func:`load_split` downloads it through GluonTS (``download=True``) or says in one
line what to download and where it goes. Without a benchmark named, experiments run on the real
dataset shipped with tsdp (:data:`tsdp.datasets.tsf.SHIPPED`, the M1 yearly series): the last
L_F values of every series are its test window, the L_F before them its validation window
(its series are 15 to 58 years long: five windows would leave nothing to train on), and series
too short to keep L_F training values after both are left out (the split says how many).

Each dataset's defaults (:class:`DatasetSpec`) are the paper's, each with its source: L_F, L_C, the
batch size Λ, the noise multiplier σ, DeepAR's lags, the season length of the baselines and the
maximum epochs; C = 1e-4 and Adam (learning rate 1e-3, weight decay 1e-8) for all (:data:`CLIP`,
:data:`LR`, :data:`WEIGHT_DECAY`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Tuple

import numpy as np

from .gluonts_folders import (METADATA, blamed_on_metadata, default_root, download as _download, missing_message,
                              read_folder, read_freq)
from .series import DataError, SeriesData
from .splits import ForecastSplit, Windows, check_time_features, hold_out, last_windows

__all__ = ["CLIP", "LR", "WEIGHT_DECAY", "LONG_LAGS", "SHORT_LAGS", "DatasetSpec", "PAPER", "SHIPPED_SPEC", "UserData",
           "user_lags", "user_split", "shipped_split", "load_split", "dataset_names", "split_for",
           # their homes are splits and gluonts_folders; importable from here as before
           "ForecastSplit", "Windows", "check_time_features", "hold_out", "last_windows", "METADATA", "default_root",
           "missing_message", "read_freq"]

CLIP = 1e-4
"""The paper's clipping norm C (all datasets)."""
LR = 1e-3
WEIGHT_DECAY = 1e-8
LONG_LAGS = (1, 2, 3, 4, 5, 6, 7, 23, 24, 25, 47, 48, 49, 71, 72, 73, 95, 96, 97, 119, 120, 121, 143, 144, 145,
             167, 168, 169)
SHORT_LAGS = (1, 2, 3, 4, 5, 6, 7, 23, 24, 25)


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset's defaults: forecast length L_F, context length L_C, batch size Λ, noise multiplier σ,
    DeepAR's ``lags`` (its context is L_C + max lag - 1, :func:`tsdp.training.models.deepar_window`), the baselines'
    ``season`` length, the maximum ``epochs``, the validation windows held out at the end of every training
    series, the v of its label-noise table (``label_noise_v``: the largest change of one element under
    (1, v)-user-level privacy, in the data's units) and ``sources``: where each setting comes from.

    Attributes:
        name: The dataset's name.
        forecast_length: L_F.
        context_length: L_C.
        batch_size: Λ, windows per step.
        sigma: The noise multiplier σ.
        lags: DeepAR's lags.
        season: The baselines' season length (and of DeepAR's seasonal lags).
        epochs: The most epochs a cell trains.
        validation_windows: Validation windows of L_F at the end of every training series.
        label_noise_v: v of the label-noise table, in the data's units.
        source: Where the data comes from.
        sources: (setting, where its value comes from) pairs.
    """

    name: str
    forecast_length: int
    context_length: int
    batch_size: int
    sigma: float
    lags: Tuple[int, ...]
    season: int
    epochs: int
    validation_windows: int
    label_noise_v: float
    source: str
    sources: Tuple[Tuple[str, str], ...] = ()

    def as_dict(self) -> dict:
        """The settings, ``sources`` as a dict, with the grid-wide C, learning rate and weight decay."""
        from dataclasses import asdict

        d = asdict(self)
        d["sources"] = dict(self.sources)
        return {**d, "clip": CLIP, "lr": LR, "weight_decay": WEIGHT_DECAY}


_APPENDIX = 'paper Appendix "Experimental Setup"'
_OFFICIAL = "the authors' code (jan-schuchardt/dp_forecasting)"
_VALIDATION = (f"{_OFFICIAL}, src/dp_timeseries/data/datamodules.py: num_validation_windows = len(dataset_test) // "
               "len(dataset_train), the test set's rolling windows (the appendix text says 5)")
_COMMON = (("forecast_length", f"{_APPENDIX}, Datasets"), ("batch_size", f"{_APPENDIX}, DP Training Parameters"),
           ("sigma", f"{_APPENDIX}, DP Training Parameters"),
           ("lags", f"{_APPENDIX}, DP Training Parameters (they contribute to the context length)"),
           ("season", f"{_APPENDIX}, Traditional Baselines"), ("epochs", f"{_APPENDIX}, Standard Training Parameters"),
           ("label_noise_v", "captions of the paper's label-perturbation tables"))

PAPER = {
    "traffic": DatasetSpec(
        "traffic", forecast_length=24, context_length=192, batch_size=256, sigma=4.0, lags=LONG_LAGS, season=24,
        epochs=4000, validation_windows=7, label_noise_v=0.001,
        source="GluonTS dataset repository 'traffic' (Lai et al. 2018; PeMS)",
        sources=_COMMON + (("context_length", f"L_C = 192 = 8·L_F: {_OFFICIAL}, seml/configs/traffic/"
                                              "dp_train_standard_eval.yaml, estimator_kwargs.relative_context_length: 8 "
                                              "for every model (the appendix text says 4·L_F = 96)"),
                           ("validation_windows", f"7: {_VALIDATION}"))),
    "electricity": DatasetSpec(
        "electricity", forecast_length=24, context_length=24, batch_size=128, sigma=2.0, lags=SHORT_LAGS, season=24,
        epochs=8000, validation_windows=7, label_noise_v=0.1,
        source="GluonTS dataset repository 'electricity' (Lai et al. 2018; UCI)",
        sources=_COMMON + (("context_length", f"L_C = 1·L_F: {_APPENDIX}, DP Training Parameters (the config, "
                                              "seml/configs/electricity/dp_train_standard_eval.yaml, sweeps "
                                              "relative_context_length 1 and 2)"),
                           ("validation_windows", f"7: {_VALIDATION}"))),
    "solar_10_minutes": DatasetSpec(
        "solar_10_minutes", forecast_length=60, context_length=240, batch_size=128, sigma=4.0, lags=LONG_LAGS,
        season=144, epochs=16000, validation_windows=1, label_noise_v=0.01,
        source="GluonTS dataset repository 'solar_10_minutes' (NREL)",
        sources=_COMMON + (("context_length", f"L_C = 4·L_F: {_APPENDIX}, DP Training Parameters (the config, "
                                              "seml/configs/solar_10_minutes/dp_train_standard_eval.yaml, sweeps "
                                              "relative_context_length 2 and 4)"),
                           ("validation_windows", f"1: {_VALIDATION}"))),
}
"""The paper's three benchmarks: its Appendix "Experimental Setup" hyperparameters where the official code agrees,
the official code's where it differs (traffic's L_C = 192; validation windows 7, 7, 1), each setting's source in
``sources``; their label-noise v are the captions of its label-perturbation tables (traffic 0.001, electricity
0.1, solar_10_minutes 0.01). DeepAR reads L_C + max lag - 1 values (GluonTS's ``past_length``: 168 more for
traffic and solar, 24 for electricity), and the accountant sees that context, as the official code's does."""

SHIPPED_SPEC = DatasetSpec("m1-yearly", 6, 6, 8, 8.0, (1, 2, 3, 4, 5, 6), 1, 50, 1, 0.01,
                           "M1 yearly (Makridakis et al. 1982), Monash forecasting repository file shipped in aeon "
                           "1.6.0; CC BY 4.0")
"""The shipped real dataset's defaults (not the paper's: L_F is the Monash horizon 6, yearly data has no season;
170 short series need a small batch Λ = 8 and σ = 8 for ε = 0.5 at δ = 1e-7 to buy any steps: 70, and 982 at ε = 2).
Its label-noise v = 0.01 is the resolution of the file (every value has at most two decimals), 0.4 % of the mean
of its smallest-scale series (2.43) and 1.5e-5 of the median series' mean (679): like the paper's v, one
individual's change is small against every series' scale."""


@dataclass(frozen=True)
class UserData:
    """A user's series (``tsdp experiment --data``): the source the one loader reads
    (:func:`tsdp.datasets.formats.load_series`, with its table options) and the grid's settings for it.

    Attributes:
        source: The file (or a name :func:`~tsdp.datasets.formats.load_series` reads).
        forecast_length: L_F.
        context_length: L_C.
        batch_size: Λ.
        sigma: The noise multiplier σ.
        season: The season length (baselines, DeepAR's seasonal lags: :func:`user_lags`).
        epochs: The most epochs a cell trains.
        test_windows: Test windows of L_F at the end of every series.
        validation_windows: Validation windows of L_F before them.
        label_noise_v: v of the label-noise level.
        layout: The table layout ("auto", "long", "wide").
        item_id: A long table's item id column (None: the default).
        timestamp: A table's time column (None: the default).
        target: A long table's value column (None: the default).
        freq: The step of the timestamps (None: inferred, or none for JSON lines).
    """

    source: str
    forecast_length: int
    context_length: int
    batch_size: int
    sigma: float
    season: int
    epochs: int
    test_windows: int = 1
    validation_windows: int = 1
    label_noise_v: float = 1.0
    layout: str = "auto"
    item_id: Optional[str] = None
    timestamp: Optional[str] = None
    target: Optional[str] = None
    freq: Optional[object] = None

    @property
    def spec(self) -> DatasetSpec:
        """The file's :class:`DatasetSpec`: these settings and DeepAR's lags :func:`user_lags`."""
        flag = "tsdp experiment --data flags"
        return DatasetSpec(
            Path(self.source).name, self.forecast_length, self.context_length, self.batch_size, self.sigma,
            user_lags(self.season), self.season, self.epochs, self.validation_windows, self.label_noise_v,
            f"user file {Path(self.source).name}",  # not its folder: the same data elsewhere is the same grid
            sources=tuple((k, flag) for k in ("forecast_length", "context_length", "batch_size", "sigma", "season",
                                              "epochs", "validation_windows", "label_noise_v")))


def user_lags(season: int) -> Tuple[int, ...]:
    """DeepAR's lags on a user's series, GluonTS's pattern of short lags and one seasonal triple.

    Args:
        season: The season length (1: no seasonal lags).

    Returns:
        1-7 and season - 1, season, season + 1, sorted and distinct (for season 24 electricity's :data:`SHORT_LAGS`).
    """
    return tuple(sorted({*range(1, 8), *(l for l in (season - 1, season, season + 1) if season > 1 and l >= 1)}))


def user_split(user: UserData) -> ForecastSplit:
    """The split of a user's file: the last ``test_windows``·L_F values of every series are its test windows
    (rolling, each with every earlier value as history, as GluonTS's test set), the ``validation_windows``·L_F
    before them its validation windows (:func:`hold_out`), the rest its training series; a series too short to keep
    L_F training values after both is left out (``dropped``). The series keep their starts where the file has a
    calendar (training series, validation and test windows: the start of their series).

    Args:
        user: The file and the grid's settings for it.

    Returns:
        The split.

    Raises:
        DataError: An unreadable file, no series left, or an L_F, L_C or season longer than the longest series
            (naming the setting).
    """
    from .formats import load_series

    data = load_series(user.source, layout=user.layout, item_id=user.item_id, timestamp=user.timestamp,
                       target=user.target, freq=user.freq)
    series = data.series
    spec, f, t = user.spec, user.forecast_length, user.test_windows
    longest = max(len(s) for s in series)
    for name, value in (("forecast_length", f), ("context_length", user.context_length), ("season", user.season)):
        if value > longest:
            raise DataError(name, f"must be at most the longest series' length, {longest} (got {value})")
    keep = [i for i, s in enumerate(series) if len(s) >= (t + spec.validation_windows + 1) * f]
    kept = [np.asarray(series[i], dtype=float) for i in keep]
    starts = None if data.starts is None else tuple(data.starts[i] for i in keep)
    if not kept:
        raise DataError("data", f"no series of {user.source} is long enough to hold out {t} test and "
                                f"{spec.validation_windows} validation windows of L_F = {f} and keep L_F to train "
                                f"on ({(t + spec.validation_windows + 1) * f} values; the longest has "
                                f"{max(len(s) for s in series)})")
    train = SeriesData(tuple(s[: len(s) - t * f] for s in kept), starts)
    return hold_out(spec, train, last_windows(kept, t, f, starts), dropped=len(series) - len(kept))


def shipped_split(spec: DatasetSpec = SHIPPED_SPEC) -> ForecastSplit:
    """The shipped M1 yearly data split as the module docstring says (every series, window and history with its
    series' start: the file's start years).

    Args:
        spec: The settings (L_F, validation windows) of the split.

    Returns:
        The split; the series too short for it are counted in ``dropped``.
    """
    from .tsf import m1_yearly

    data = m1_yearly().data
    f, k = spec.forecast_length, spec.validation_windows
    kept = data.select([i for i, s in enumerate(data.series) if len(s) >= (k + 2) * f])
    train = SeriesData(tuple(s[:-f] for s in kept.series), kept.starts)
    test = Windows(tuple(s[:-f] for s in kept.series), np.stack([s[-f:] for s in kept.series]), kept.starts)
    return hold_out(spec, train, test, dropped=data.N - kept.N)


def load_split(name: str, root: Optional[Path] = None, *, download: bool = False) -> ForecastSplit:
    """The paper's split of benchmark ``name`` from GluonTS's on-disk layout under ``root`` (module docstring).

    The step in the folder's ``metadata.json`` (:func:`read_freq`) gives every series its start (training
    series and validation windows: the training entries'; test windows: the test entries'); without it the
    split has no starts.

    Args:
        name: traffic, electricity or solar_10_minutes (:data:`PAPER`).
        root: GluonTS's cache folder (None: :func:`~tsdp.datasets.gluonts_folders.default_root`).
        download: Fetch a missing dataset through GluonTS (the ``gluonts`` extra; it is cached there after the first
            download).

    Returns:
        The split, with ``step_source`` the folder's ``metadata.json`` where it names the step.

    Raises:
        DataError: An unknown name; a missing dataset (without ``download``) or a failed download, saying what to
            download and where it goes; a malformed folder; a step error, naming ``metadata.json``.
        MissingExtraError: ``download`` of a missing dataset without GluonTS (the ``gluonts`` extra).
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
    freq = read_freq(folder)
    with blamed_on_metadata(folder, freq):  # the step of the entries' starts is metadata.json's, typed by nobody
        train = read_folder(folder / "train", freq)
        test_data = read_folder(folder / "test", freq)
    test_series = test_data.series
    f = spec.forecast_length
    if min(len(s) for s in test_series) <= f:
        raise DataError(str(folder / "test"), f"a test entry is not longer than L_F = {f}")
    test = Windows(tuple(s[:-f] for s in test_series), np.stack([s[-f:] for s in test_series]), test_data.starts)
    return replace(hold_out(spec, train, test), step_source=None if freq is None else str(folder / METADATA))


def dataset_names() -> Tuple[str, ...]:
    """Every name :func:`split_for` accepts: the shipped dataset first, then the paper's benchmarks."""
    return (SHIPPED_SPEC.name, *PAPER)


def split_for(name: Optional[str], root: Optional[Path] = None, *, download: bool = False,
              user: Optional[UserData] = None) -> ForecastSplit:
    """The split of a dataset, or of a user's file.

    Args:
        name: A name of :func:`dataset_names` (None: the shipped real dataset).
        root: GluonTS's cache folder of the benchmarks (None: the default).
        download: Fetch a missing benchmark (:func:`load_split`).
        user: A user's file and settings (:func:`user_split`); ``name`` is then not read.

    Returns:
        The split.

    Raises:
        DataError: As :func:`load_split` and :func:`user_split`.
    """
    if user is not None:
        return user_split(user)
    if name is None or name == SHIPPED_SPEC.name:
        return shipped_split()
    return load_split(name, root, download=download)
