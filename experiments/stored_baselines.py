"""The grid's baselines, computed once per split and kept in the grid's folder (``baselines.json``).

The file holds the test CRPS of every baseline and the key it was computed under: the data's fingerprint
(SHA-256 of every test history's and target's float64 values, with their lengths), the dataset's name,
season, forecast length and number of test windows, each baseline's fitted history
(:func:`tsdp.experiments.baselines.fitted_history`), the quantiles, and the code (SHA-256 of the
sources of the baselines and of the CRPS, statsforecast's version). A file that does not parse, whose key differs, or
whose CRPS is missing or not finite is recomputed, never reported; the file is written to a temporary name
and renamed (atomic), as the cells are.
"""
from __future__ import annotations

import functools
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Optional

import numpy as np

CACHE_FILE = "baselines.json"


@dataclass(frozen=True)
class BaselineScores:
    """Test CRPS of each baseline, whether it was read from the grid's folder, and the seconds it took."""

    crps: Dict[str, float]
    cached: bool
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def fingerprint(split) -> str:
    """SHA-256 of the split's test windows: every history's length and float64 values, then the targets."""
    digest = hashlib.sha256()
    for h in split.test.histories:
        values = np.ascontiguousarray(h, dtype=np.float64)
        digest.update(np.int64(values.size).tobytes())
        digest.update(values.tobytes())
    digest.update(np.ascontiguousarray(split.test.targets, dtype=np.float64).tobytes())
    return digest.hexdigest()


def cache_key(split) -> dict:
    """Everything the baselines of ``split`` depend on (module docstring), as JSON (MissingExtraError without
    statsforecast)."""
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


def read_cached(path: Path, key: dict) -> Optional[Dict[str, float]]:
    """The CRPS stored at ``path`` under ``key``, or None (absent, unreadable, another key, a missing or
    non-finite value)."""
    from tsdp.experiments.baselines import BASELINES

    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        crps = stored["crps"]
        if stored["key"] != key or set(crps) != set(BASELINES):
            return None
        values = {b: float(crps[b]) for b in BASELINES}
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return values if all(math.isfinite(v) for v in values.values()) else None


def cached_baselines(split, folder=None, *, n_jobs: int = 1, progress: bool = False) -> BaselineScores:
    """Test CRPS of every baseline on ``split``: read from ``folder``'s :data:`CACHE_FILE` when its key is
    :func:`cache_key`'s, else computed (statsforecast with ``n_jobs`` processes, a tqdm bar when ``progress``)
    and stored there (``folder`` None: computed, not stored)."""
    from tsdp.experiments.baselines import BASELINES, baseline_crps

    from .cells import _write_atomic

    started = time.perf_counter()
    key = cache_key(split)
    path = None if folder is None else Path(folder) / CACHE_FILE
    if path is not None:
        stored = read_cached(path, key)
        if stored is not None:
            return BaselineScores(stored, True, time.perf_counter() - started)
    spec = split.spec
    crps = {b: baseline_crps(b, split.test.histories, split.test.targets, spec.forecast_length, spec.season,
                             n_jobs=n_jobs, progress=progress) for b in BASELINES}
    if path is not None and all(math.isfinite(v) for v in crps.values()):
        _write_atomic(path, json.dumps({"key": key, "crps": crps}, indent=1, sort_keys=True))
    return BaselineScores(crps, False, time.perf_counter() - started)
