"""The paper's traditional baselines from ``statsforecast`` (the ``tsdp[experiments]`` extra): seasonal naive and AutoETS.

Paper Appendix "Experimental Setup", "Traditional Baselines": the season length is one day
(24 hourly, 144 ten-minute steps; 1 for yearly data), AutoETS keeps statsforecast's defaults.
Seasonal naive is a point forecast (every quantile equal to it, as GluonTS's predictor that the
authors' code evaluates); AutoETS gives the quantiles q ∈ {0.1, ..., 0.9} from its prediction
intervals (q < 0.5: the lower end of the (100 - 200 q) % interval, q > 0.5: the upper end of the
(200 q - 100) % interval, q = 0.5: the mean), as GluonTS's statsforecast wrapper maps them. Both
score with :func:`tsdp.attacks.loop.metrics.weighted_quantile_loss` (the CRPS of the tables).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tsdp.theorems.errors import MissingExtraError

from .metrics import QUANTILES, weighted_quantile_loss

BASELINES = ("seasonal-naive", "autoets")


def _statsforecast():
    try:
        import pandas as pd
        from statsforecast import StatsForecast
        from statsforecast.models import AutoETS, SeasonalNaive
    except ImportError:
        raise MissingExtraError("the seasonal-naive and AutoETS baselines need statsforecast", "experiments") from None
    return pd, StatsForecast, AutoETS, SeasonalNaive


def baseline_quantiles(name: str, histories: Sequence[np.ndarray], forecast_length: int, season: int,
                       quantiles: Sequence[float] = QUANTILES) -> np.ndarray:
    """Quantile forecasts (len(quantiles), M, L_F) of baseline ``name`` (seasonal-naive | autoets) for every history."""
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
    pd, StatsForecast, AutoETS, SeasonalNaive = _statsforecast()
    model = SeasonalNaive(season_length=season) if name == "seasonal-naive" else AutoETS(season_length=season)
    frame = pd.DataFrame({
        "unique_id": np.repeat(np.arange(len(histories)), [len(h) for h in histories]),
        "ds": np.concatenate([np.arange(len(h)) for h in histories]),
        "y": np.concatenate([np.asarray(h, dtype=np.float64) for h in histories]),
    })
    column = str(model)
    if name == "seasonal-naive":
        out = StatsForecast(models=[model], freq=1, n_jobs=1).forecast(df=frame, h=forecast_length)
        point = _by_series(out, column, len(histories), forecast_length)
        return np.broadcast_to(point, (len(quantiles), *point.shape)).copy()
    levels = sorted({int(round(abs(200 * q - 100))) for q in quantiles if q != 0.5})
    out = StatsForecast(models=[model], freq=1, n_jobs=1).forecast(df=frame, h=forecast_length, level=levels)
    result = []
    for q in quantiles:
        if q == 0.5:
            result.append(_by_series(out, column, len(histories), forecast_length))
        else:
            side = "lo" if q < 0.5 else "hi"
            result.append(_by_series(out, f"{column}-{side}-{int(round(abs(200 * q - 100)))}", len(histories),
                                     forecast_length))
    return np.stack(result)


def _by_series(frame, column: str, m: int, forecast_length: int) -> np.ndarray:
    ordered = frame.sort_values(["unique_id", "ds"])
    return ordered[column].to_numpy(dtype=np.float64).reshape(m, forecast_length)


def quantile_crps(targets: np.ndarray, quantile_forecasts: np.ndarray, quantiles: Sequence[float] = QUANTILES) -> float:
    """Mean weighted quantile loss of quantile forecasts (len(quantiles), M, L_F) against ``targets`` (M, L_F)."""
    return float(np.mean([weighted_quantile_loss(targets, quantile_forecasts[i], q) for i, q in enumerate(quantiles)]))


def baseline_crps(name: str, histories: Sequence[np.ndarray], targets: np.ndarray, forecast_length: int,
                  season: int) -> float:
    """Test CRPS of baseline ``name`` on the windows (``histories``, ``targets``)."""
    return quantile_crps(targets, baseline_quantiles(name, histories, forecast_length, season))
