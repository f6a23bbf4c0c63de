"""The tables' CRPS (mean weighted quantile loss over q = 0.1..0.9) equals GluonTS's evaluator on the same forecasts,
and the baselines are what they claim to be (seasonal naive GluonTS's predictor, AutoETS's quantiles scored as GluonTS
scores them)."""
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


def _gluonts_seasonal_naive(histories, forecast_length, season):
    """GluonTS's SeasonalNaivePredictor (the official code's seasonal baseline) on each history: its one sample path."""
    import pandas as pd
    from gluonts.model.seasonal_naive import SeasonalNaivePredictor

    predictor = SeasonalNaivePredictor(prediction_length=forecast_length, season_length=season)
    start = pd.Period("2000-01-01", freq="h")
    return np.stack([predictor.predict_item({"start": start, "target": h}).samples[0] for h in histories])


def test_seasonal_naive_is_gluontss_predictor_on_short_and_long_histories():
    """Histories shorter than, as long as and longer than the season (24), L_F 30 > season: tsdp's seasonal naive, and
    every quantile of the grid's seasonal-naive baseline, are GluonTS's forecast (float32 there), the mean of a
    history shorter than a season included; its CRPS is finite (statsforecast's SeasonalNaive forecasts NaN there)."""
    from tsdp.experiments.baselines import baseline_crps, baseline_quantiles

    rng = np.random.default_rng(11)
    hist = [rng.normal(10, 2, size=n) for n in (1, 5, 23, 24, 25, 60)]
    want = _gluonts_seasonal_naive(hist, 30, 24)
    np.testing.assert_allclose(seasonal_naive(hist, 30, 24), want, rtol=1e-6, atol=0)
    q = baseline_quantiles("seasonal-naive", hist, 30, 24)
    assert q.shape == (len(QUANTILES), len(hist), 30)
    for level in q:
        np.testing.assert_allclose(level, want, rtol=1e-6, atol=0)
    targets = rng.normal(10, 2, size=(len(hist), 30))
    crps = baseline_crps("seasonal-naive", hist, targets, 30, 24)
    assert np.isfinite(crps) and crps == pytest.approx(point_crps(targets, want), rel=1e-6)


def test_statsforecasts_seasonal_naive_agrees_where_it_is_defined():
    """On histories at least a season long statsforecast's SeasonalNaive (a second implementation) is tsdp's forecast."""
    import pandas as pd
    from statsforecast import StatsForecast
    from statsforecast.models import SeasonalNaive

    rng = np.random.default_rng(3)
    hist = [rng.normal(10, 2, size=n) for n in (24, 50, 73, 96)]
    frame = pd.DataFrame({"unique_id": np.repeat(np.arange(len(hist)), [len(h) for h in hist]),
                          "ds": np.concatenate([np.arange(len(h)) for h in hist]), "y": np.concatenate(hist)})
    out = StatsForecast(models=[SeasonalNaive(season_length=24)], freq=1).forecast(df=frame, h=30)
    theirs = out.sort_values(["unique_id", "ds"])["SeasonalNaive"].to_numpy().reshape(len(hist), 30)
    np.testing.assert_allclose(seasonal_naive(hist, 30, 24), theirs, rtol=0, atol=1e-12)
