"""The grid's baselines, computed once per split and kept in the grid's folder (``baselines.json``).

The file holds the test CRPS of every baseline and the key it was computed under: the data's fingerprint
(SHA-256 of every test history's and target's float64 values, with their lengths), the dataset's name,
season, forecast length and number of test windows, each baseline's fitted history
(:func:`tsdp.experiments.baselines.fitted_history`), the quantiles, and the code (SHA-256 of the
sources of the baselines and of the CRPS, statsforecast's version), and a digest of both (SHA-256 of their canonical
JSON), as a cell file has. A file that does not parse, whose key differs, whose digest does not match (edited or
damaged), or whose CRPS is missing, not finite or negative is recomputed with a note (a ``UserWarning``: the CLI's
note line), never reported; the file is written to a temporary name and renamed (atomic), as the cells are. A
baseline statsforecast cannot fit on the data ("no model able to be fitted", e.g. AutoETS on values of 1e300; "tiny
datasets", AutoETS on a history of at most 6 values), or
whose CRPS is not a number, is left out of the scores with a note, and the grid goes on; nothing is stored then.
"""
from __future__ import annotations

import functools
import hashlib
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional, Tuple, Union

import numpy as np

from tsdp.verify.file_cache import (DAMAGED, StoredFileError, digested_text, read_digested,
                                    write_atomic)
from tsdp.verify.json_data import Record

if TYPE_CHECKING:
    from tsdp.datasets.benchmarks import ForecastSplit

CACHE_FILE = "baselines.json"
UNFITTABLE = "no model able to be fitted"
"""statsforecast's words (a bare Exception) when no model of a baseline fits the data."""
TOO_SHORT = "tiny datasets"
"""statsforecast's words (a NotImplementedError) when a history is too short to fit ETS: n <= its parameters + 4
values (6 for the smallest model)."""


@dataclass(frozen=True)
class BaselineScores(Record):
    """Test CRPS of each baseline, whether it was read from the grid's folder, and the seconds it took.

    Attributes:
        crps: Test CRPS per baseline.
        cached: Whether they were read from the grid's folder.
        seconds: The seconds it took.
    """

    crps: Dict[str, float]
    cached: bool
    seconds: float


def fingerprint(split: "ForecastSplit") -> str:
    """SHA-256 of the split's test windows: every history's length and float64 values, then the targets.

    Args:
        split: The split.

    Returns:
        64 hex digits.
    """
    digest = hashlib.sha256()
    for h in split.test.histories:
        values = np.ascontiguousarray(h, dtype=np.float64)
        digest.update(np.int64(values.size).tobytes())
        digest.update(values.tobytes())
    digest.update(np.ascontiguousarray(split.test.targets, dtype=np.float64).tobytes())
    return digest.hexdigest()


def cache_key(split: "ForecastSplit") -> dict:
    """Everything the baselines of ``split`` depend on (module docstring), as JSON (MissingExtraError without
    statsforecast).

    Args:
        split: The split.

    Returns:
        The key (JSON data).
    """
    from tsdp.experiments import baselines
    from tsdp.training import metrics

    spec = split.spec
    return {"data": fingerprint(split), "dataset": spec.name, "season": spec.season,
            "forecast_length": spec.forecast_length, "test_windows": split.test.count,
            "fitted_history": {b: baselines.fitted_history(b, spec.season) for b in baselines.BASELINES},
            "quantiles": list(metrics.QUANTILES), "statsforecast": baselines.statsforecast_version(), "code": code_hash()}


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """SHA-256 of the sources of the baselines and of the CRPS, read once per process (the code that runs, even
    when the files change under it)."""
    from tsdp.experiments import baselines
    from tsdp.training import metrics

    return hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (baselines, metrics))).hexdigest()


def read_cached(path: Path, key: dict) -> Tuple[Optional[Dict[str, float]], Optional[str]]:
    """(the CRPS stored at ``path`` under ``key``, None) or (None, why not: None when there is no file): unreadable,
    another key, a digest that does not match, a missing, non-finite or negative value.

    Args:
        path: The cache file.
        key: The key it must hold (:func:`cache_key`).

    Returns:
        (CRPS per baseline, None) or (None, the reason it is not used; None when there is no file).
    """
    from tsdp.experiments.baselines import BASELINES

    try:
        stored = read_digested(path, "crps")
        crps = stored.body
        if stored.key != key:
            return None, "computed under another key (data, settings or code)"
        if not stored.intact():
            return None, DAMAGED
        values = {b: float(crps[b]) for b in BASELINES}
    except FileNotFoundError:
        return None, None
    except StoredFileError as exc:
        problem = str(exc)
        return None, problem if problem.startswith("unreadable") else f"not a baselines file ({problem})"
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return None, f"unreadable ({type(exc).__name__}: {exc})"
    if set(crps) != set(BASELINES) or not all(math.isfinite(v) and v >= 0 for v in values.values()):
        return None, "a CRPS that is missing, not finite or negative"
    return values, None


def cached_baselines(split: "ForecastSplit", folder: Optional[Union[str, Path]] = None, *, n_jobs: int = 1, progress: bool = False) -> BaselineScores:
    """Test CRPS of every baseline on ``split``: read from ``folder``'s :data:`CACHE_FILE` when its key is
    :func:`cache_key`'s, else computed (statsforecast with ``n_jobs`` processes, a tqdm bar when ``progress``)
    and stored there (``folder`` None: computed, not stored).

    Args:
        split: The split.
        folder: The grid's folder (None: not stored).
        n_jobs: statsforecast's processes.
        progress: Whether to show a tqdm bar.

    Returns:
        The CRPS, whether they were read back, and the seconds.

    Raises:
        MissingExtraError: statsforecast is not installed.
    """
    from tsdp.experiments.baselines import BASELINES, baseline_crps

    started = time.perf_counter()
    key = cache_key(split)
    path = None if folder is None else Path(folder) / CACHE_FILE
    if path is not None:
        stored, problem = read_cached(path, key)
        if stored is not None:
            return BaselineScores(stored, True, time.perf_counter() - started)
        if problem is not None:
            warnings.warn(f"{path}: {problem}; recomputed", UserWarning, stacklevel=2)
    spec = split.spec
    crps = {}
    for b in BASELINES:
        try:
            value = baseline_crps(b, split.test.histories, split.test.targets, spec.forecast_length, spec.season,
                                  n_jobs=n_jobs, progress=progress)
        except Exception as exc:  # statsforecast raises a bare Exception when no model fits
            words = next((w for w in (UNFITTABLE, TOO_SHORT) if w in str(exc)), None)
            if words is None or (words == TOO_SHORT and not isinstance(exc, NotImplementedError)):
                raise
            why = "" if words == UNFITTABLE else f", a test history of {min(map(len, split.test.histories))} values"
            warnings.warn(f"the {b} baseline cannot be fitted on this data (statsforecast: {words}{why}): it is left "
                          "out of the table", UserWarning, stacklevel=2)
            continue
        if not math.isfinite(value):  # a NaN forecast: no number to compare against (C7 would judge against NaN)
            warnings.warn(f"the {b} baseline's CRPS on this data is {value} (a forecast that is not a number): it is "
                          "left out of the table", UserWarning, stacklevel=2)
            continue
        crps[b] = value
    if path is not None and set(crps) == set(BASELINES):
        write_atomic(path, digested_text(key, "crps", crps))
    return BaselineScores(crps, False, time.perf_counter() - started)
