"""The tables' CRPS (mean weighted quantile loss over q = 0.1..0.9) equals GluonTS's evaluator on the same forecasts,
and the statsforecast baselines are what they claim to be."""
import numpy as np
import pytest

from tsdp.training.metrics import QUANTILES, crps_from_samples, point_crps, seasonal_naive

gluonts_eval = pytest.importorskip("gluonts.evaluation", reason="GluonTS (the reference) is not installed")


def _gluonts_mean_wql(targets, forecasts):
    import pandas as pd

    evaluator = gluonts_eval.Evaluator(quantiles=QUANTILES, num_workers=0)
    start = pd.Period("2000-01-01", freq="h")
    series = [pd.DataFrame(t, index=pd.period_range(start, periods=len(t), freq="h")) for t in targets]
    agg, _ = evaluator(series, forecasts, num_series=len(targets))
    return agg["mean_wQuantileLoss"]


def test_crps_from_samples_equals_gluonts_evaluator():
    """Sample paths of 12 series (S = 50, L_F = 5): the same number to 1e-12, so the tables read like GluonTS's."""
    import pandas as pd
    from gluonts.model.forecast import SampleForecast

    rng = np.random.default_rng(7)
    targets = rng.gamma(2.0, 3.0, size=(12, 5))
    samples = targets[:, None, :] + rng.normal(0, 2.0, size=(12, 50, 5))
    start = pd.Period("2000-01-01", freq="h")
    forecasts = [SampleForecast(samples[i], start_date=start) for i in range(12)]
    ours = crps_from_samples(targets, samples)
    assert ours == pytest.approx(_gluonts_mean_wql(targets, forecasts), rel=1e-12)


def test_baselines_quantiles_score_as_gluonts_scores_them():
    """AutoETS's quantile forecasts on the shipped data: tsdp's wQL mean equals GluonTS's evaluator on them."""
    import pandas as pd
    from gluonts.model.forecast import QuantileForecast

    from tsdp.datasets.benchmarks import shipped_split
    from tsdp.experiments.baselines import baseline_quantiles, quantile_crps

    split = shipped_split()
    hist, targets = split.test.histories[:20], split.test.targets[:20]
    q = baseline_quantiles("autoets", hist, 6, 1)
    assert np.all(np.diff(q, axis=0) >= -1e-9)  # quantiles ordered
    start = pd.Period("2000-01-01", freq="h")
    forecasts = [QuantileForecast(q[:, i, :], start_date=start, forecast_keys=[str(x) for x in QUANTILES])
                 for i in range(len(hist))]
    assert quantile_crps(targets, q) == pytest.approx(_gluonts_mean_wql(targets, forecasts), rel=1e-12)


def test_statsforecast_seasonal_naive_is_the_seasonal_naive_forecast():
    """statsforecast's SeasonalNaive repeats the last season: equal to tsdp's own seasonal_naive (season 24)."""
    from tsdp.experiments.baselines import baseline_crps, baseline_quantiles

    rng = np.random.default_rng(3)
    hist = [rng.normal(10, 2, size=n) for n in (50, 73, 96)]
    q = baseline_quantiles("seasonal-naive", hist, 24, 24)
    np.testing.assert_allclose(q[4], seasonal_naive(hist, 24, 24), rtol=0, atol=1e-12)
    targets = rng.normal(10, 2, size=(3, 24))
    assert baseline_crps("seasonal-naive", hist, targets, 24, 24) == pytest.approx(
        point_crps(targets, seasonal_naive(hist, 24, 24)), rel=1e-12)
