"""The paper's traditional baselines: seasonal naive and AutoETS from ``statsforecast`` (the ``tsdp[experiments]`` extra).

Paper Appendix "Experimental Setup", "Traditional Baselines": the season length is one day
(24 hourly, 144 ten-minute steps; 1 for yearly data), AutoETS keeps statsforecast's defaults.
Seasonal naive is a point forecast (every quantile equal to it), GluonTS's ``SeasonalNaivePredictor`` that the
authors' code evaluates (:func:`tsdp.training.metrics.seasonal_naive`: the last season repeated, the mean of a
history shorter than a season, where statsforecast's ``SeasonalNaive`` forecasts NaN; tests compare it with both);
AutoETS gives the quantiles q ∈ {0.1, ..., 0.9} from its prediction
intervals (q < 0.5: the lower end of the (100 - 200 q) % interval, q > 0.5: the upper end of the
(200 q - 100) % interval, q = 0.5: the mean), as GluonTS's statsforecast wrapper maps them. Both
score with :func:`tsdp.training.metrics.weighted_quantile_loss` (the CRPS of the tables).

Fitted history: seasonal naive reads only the last season of a history, so it is given exactly that
(the same forecast). AutoETS is fitted on the last :func:`fitted_history` values of each history
(:data:`ETS_SEASONS` seasons, at least :data:`ETS_MIN_HISTORY` values): its cost grows linearly with the
history (0.5 ms per value at season 24 on one core), and electricity's 2,247 test histories of ~26k
values would take hours in full. statsforecast's ETS needs more than one season to fit a seasonal
model and three seasons for its decomposition start; 10 seasons (10 days of hourly data, 240 values)
leave it 8 values per parameter and state (~30 at season 24). Every shipped series is shorter than
the cap, so their baselines are the uncapped ones (a test compares them).

Series are forecast in chunks, each by ``statsforecast`` with ``n_jobs`` processes (the command's
workers), with a tqdm bar on stderr; a series' forecast does not depend on the chunk or the process
that fits it, so ``n_jobs`` does not change the numbers.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tsdp.theorems.errors import MissingExtraError

from tsdp.training.metrics import QUANTILES, seasonal_naive, weighted_quantile_loss

BASELINES = ("seasonal-naive", "autoets")
ETS_SEASONS = 10
"""AutoETS is fitted on the last ``ETS_SEASONS`` seasons of each history (module docstring)."""
ETS_MIN_HISTORY = 240
"""... and on at least this many values (yearly data: the cap is 240 years)."""
CHUNK_PER_JOB = 16
"""Series per statsforecast call and process: the progress bar moves once per chunk."""


def fitted_history(name: str, season: int) -> int:
    """How many of a history's last values baseline ``name`` is fitted on (module docstring): the season for
    seasonal naive (all it reads), max(:data:`ETS_SEASONS`·season, :data:`ETS_MIN_HISTORY`) for AutoETS.

    Args:
        name: The baseline.
        season: The season length.

    Returns:
        The values fitted on.
    """
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
    return season if name == "seasonal-naive" else max(ETS_SEASONS * season, ETS_MIN_HISTORY)


def _statsforecast():
    try:
        import pandas as pd
        from statsforecast import StatsForecast
        from statsforecast.models import AutoETS
    except ImportError:
        raise MissingExtraError("the seasonal-naive and AutoETS baselines need statsforecast", "experiments") from None
    return pd, StatsForecast, AutoETS


def statsforecast_version() -> str:
    """The installed statsforecast's version (part of the stored baselines' key).

    Raises:
        MissingExtraError: statsforecast (or pandas) is not installed: the ``experiments`` extra.
    """
    _statsforecast()
    import statsforecast

    return statsforecast.__version__


def baseline_quantiles(name: str, histories: Sequence[np.ndarray], forecast_length: int, season: int,
                       quantiles: Sequence[float] = QUANTILES, *, n_jobs: int = 1, progress: bool = False,
                       capped: bool = True) -> np.ndarray:
    """Quantile forecasts (len(quantiles), M, L_F) of baseline ``name`` (seasonal-naive | autoets) for every history.

    ``n_jobs``: statsforecast's processes; ``progress``: a tqdm bar on stderr; ``capped``: fit on the last
    :func:`fitted_history` values of each history (False: on all of it).

    Args:
        name: The baseline.
        histories: The windows' histories.
        forecast_length: L_F.
        season: The season length.
        quantiles: The quantile levels.
        n_jobs: statsforecast's processes.
        progress: Whether to show a tqdm bar.
        capped: Whether to fit on the fitted history only.

    Returns:
        The quantile forecasts.
    """
    cap = fitted_history(name, season)  # refuses an unknown name
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    pd, StatsForecast, AutoETS = _statsforecast()
    from tsdp.verify.progress import progress_bar

    fitted = [np.asarray(h[-cap:] if capped else h, dtype=np.float64) for h in histories]
    if name == "seasonal-naive":  # a point forecast: every quantile is it
        point = seasonal_naive(fitted, forecast_length, season)
        return np.broadcast_to(point, (len(quantiles), *point.shape)).copy()
    model = AutoETS(season_length=season)
    column = str(model)
    levels = sorted({int(round(abs(200 * q - 100))) for q in quantiles if q != 0.5})
    columns = [column if q == 0.5 else f"{column}-{'lo' if q < 0.5 else 'hi'}-{int(round(abs(200 * q - 100)))}"
               for q in quantiles]
    chunk = CHUNK_PER_JOB * n_jobs
    out = np.empty((len(quantiles), len(fitted), forecast_length))
    with progress_bar(total=len(fitted), disable=not progress, desc=f"baseline {name}", unit="series") as bar:
        for start in range(0, len(fitted), chunk):
            part = fitted[start:start + chunk]
            frame = pd.DataFrame({
                "unique_id": np.repeat(np.arange(len(part)), [len(h) for h in part]),
                "ds": np.concatenate([np.arange(len(h)) for h in part]),
                "y": np.concatenate(part),
            })
            forecast = StatsForecast(models=[model], freq=1, n_jobs=min(n_jobs, len(part))).forecast(
                df=frame, h=forecast_length, **({"level": levels} if levels else {}))
            ordered = forecast.sort_values(["unique_id", "ds"])
            for i, c in enumerate(columns):
                out[i, start:start + len(part)] = ordered[c].to_numpy(dtype=np.float64).reshape(len(part),
                                                                                              forecast_length)
            bar.update(len(part))
    return out


def quantile_crps(targets: np.ndarray, quantile_forecasts: np.ndarray, quantiles: Sequence[float] = QUANTILES) -> float:
    """Mean weighted quantile loss of quantile forecasts (len(quantiles), M, L_F) against ``targets`` (M, L_F).

    Args:
        targets: The targets (M, L_F).
        quantile_forecasts: The forecasts (len(quantiles), M, L_F).
        quantiles: The quantile levels.

    Returns:
        The CRPS.
    """
    return float(np.mean([weighted_quantile_loss(targets, quantile_forecasts[i], q) for i, q in enumerate(quantiles)]))


def baseline_crps(name: str, histories: Sequence[np.ndarray], targets: np.ndarray, forecast_length: int,
                  season: int, *, n_jobs: int = 1, progress: bool = False, capped: bool = True) -> float:
    """Test CRPS of baseline ``name`` on the windows (``histories``, ``targets``); ``n_jobs``, ``progress``,
    ``capped``: :func:`baseline_quantiles`'s.

    Args:
        name: The baseline.
        histories: The windows' histories.
        targets: The targets.
        forecast_length: L_F.
        season: The season length.
        n_jobs: statsforecast's processes.
        progress: Whether to show a tqdm bar.
        capped: Whether to fit on the fitted history only.

    Returns:
        The CRPS.
    """
    return quantile_crps(targets, baseline_quantiles(name, histories, forecast_length, season, n_jobs=n_jobs,
                                                     progress=progress, capped=capped))
