"""Forecast metrics (paper Appendix "Metrics"): CRPS as mean weighted quantile loss, seasonal naive baseline."""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

QUANTILES = tuple(np.round(np.arange(1, 10) / 10, 1))


def crps_scale(target: np.ndarray) -> float:
    """Σ |y| over all series and steps of the test targets: the CRPS's denominator.

    Args:
        target: The test targets (N, L_F).

    Returns:
        Σ |y|.

    Raises:
        ValueError: It is 0 (every target is zero: the scaled CRPS is undefined, not a number to report).
    """
    scale = float(np.sum(np.abs(np.asarray(target, dtype=np.float64))))
    if not scale > 0:
        raise ValueError(f"every test target (the last L_F steps of each series, {np.size(target)} values) is 0: the "
                         "CRPS, scaled by their total |y|, is undefined")
    return scale


def weighted_quantile_loss(target: np.ndarray, quantile_forecast: np.ndarray, q: float) -> float:
    """GluonTS wQL_q = 2 Σ |(y - ŷ_q)(1{y ≤ ŷ_q} - q)| / Σ |y| over all series and steps (:func:`crps_scale`).

    Args:
        target: The targets y (N, L_F).
        quantile_forecast: The q-quantile forecasts ŷ_q (N, L_F).
        q: The quantile level.

    Returns:
        wQL_q.

    Raises:
        ValueError: Every target is 0 (:func:`crps_scale`).
    """
    target = np.asarray(target, dtype=np.float64)
    pred = np.asarray(quantile_forecast, dtype=np.float64)
    loss = 2.0 * np.sum(np.abs((target - pred) * ((target <= pred) - q)))
    return float(loss / crps_scale(target))


BYTES_PER_SAMPLE_STEP = 256
"""A generous bound on the memory of one sample path's step of one series while a model draws it (float32 values,
the model's intermediates, the float64 copy that ranks the quantiles): what forecasting checks against
``TSDP_MEMORY_LIMIT``, and what sets how many windows one draw of :func:`tsdp.training.evaluation.evaluate` takes."""


def sample_quantiles(samples: np.ndarray, quantiles: Sequence[float] = QUANTILES) -> np.ndarray:
    """The q-quantiles (Q, N, L_F) of sample paths ``samples`` (N, S, L_F) as GluonTS's ``SampleForecast`` takes them:
    the sorted sample of rank round((S - 1) q) (round half to even). A window's quantiles are its own samples' only,
    so windows may be drawn and ranked in chunks.

    Args:
        samples: Sample paths (N, S, L_F).
        quantiles: The quantile levels.

    Returns:
        The quantiles (Q, N, L_F).
    """
    ordered = np.sort(np.asarray(samples, dtype=np.float64), axis=1)
    return ordered[:, quantile_ranks(ordered.shape[1], quantiles), :].transpose(1, 0, 2)


def quantile_ranks(n_samples: int, quantiles: Sequence[float] = QUANTILES) -> List[int]:
    """The ranks (0-based, in the sorted sample) of the q-quantiles of ``n_samples`` samples as GluonTS's
    ``SampleForecast`` takes them: round((S - 1) q), half to even.

    Args:
        n_samples: S.
        quantiles: The quantile levels.

    Returns:
        One rank per level.
    """
    return [int(np.round((n_samples - 1) * q)) for q in quantiles]


def crps_from_quantiles(target: np.ndarray, qs: np.ndarray, quantiles: Sequence[float] = QUANTILES) -> float:
    """CRPS ≈ mean over q of wQL_q from quantile forecasts.

    Args:
        target: The targets (N, L_F).
        qs: The quantile forecasts (Q, N, L_F) of :func:`sample_quantiles`.
        quantiles: Their levels.

    Returns:
        The CRPS.
    """
    return float(np.mean([weighted_quantile_loss(target, qs[i], q) for i, q in enumerate(quantiles)]))


def crps_from_samples(target: np.ndarray, samples: np.ndarray, quantiles: Sequence[float] = QUANTILES) -> float:
    """CRPS ≈ mean over q ∈ {0.1, ..., 0.9} of wQL_q, with ŷ_q the q-quantile of the S sample paths as GluonTS's
    ``SampleForecast`` takes it (:func:`sample_quantiles`), so the number is GluonTS evaluator's
    ``mean_wQuantileLoss`` on the same samples (a test compares them).

    Args:
        target: The targets (N, L_F).
        samples: Sample paths (N, S, L_F).
        quantiles: The quantile levels.

    Returns:
        The CRPS.
    """
    return crps_from_quantiles(target, sample_quantiles(samples, quantiles), quantiles)


def seasonal_naive(history: Sequence[np.ndarray], forecast_length: int, season: int) -> np.ndarray:
    """Seasonal naive forecast (N, L_F): ŷ[t] = the value one season before, repeating the last season; a history
    shorter than ``season`` forecasts its mean. This is GluonTS's ``SeasonalNaivePredictor``, the seasonal baseline of
    the paper's code (a test compares them; statsforecast's ``SeasonalNaive`` agrees where a history holds a season
    and forecasts NaN where it does not).

    Args:
        history: Each series' history (1-D).
        forecast_length: L_F.
        season: The season's length.

    Returns:
        The forecast (N, L_F).
    """
    out = np.empty((len(history), forecast_length))
    for n, h in enumerate(history):
        h = np.asarray(h, dtype=np.float64)
        out[n] = h[len(h) - season + np.arange(forecast_length) % season] if len(h) >= season else np.mean(h)
    return out


def point_crps(target: np.ndarray, point_forecast: np.ndarray, quantiles: Sequence[float] = QUANTILES) -> float:
    """Mean weighted quantile loss of a point forecast (every quantile equal to it).

    Args:
        target: The targets (N, L_F).
        point_forecast: The forecast (N, L_F).
        quantiles: The quantile levels.

    Returns:
        The CRPS of the point forecast.
    """
    return float(np.mean([weighted_quantile_loss(target, point_forecast, q) for q in quantiles]))
