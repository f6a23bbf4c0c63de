"""DeepAR's covariates (:mod:`tsdp.datasets.time_features`) against GluonTS's own pipeline: ``DeepAREstimator``'s
transformation (``AddTimeFeatures``, ``AddAgeFeature``, ``VstackFeatures``) and its test-mode ``InstanceSplitter``
(the window of ``past_length`` values before the forecast and the L_F after it, padded before the series' start),
on every step GluonTS has time features for."""
import numpy as np
import pytest

pytest.importorskip("lightning")
deepar = pytest.importorskip("gluonts.torch.model.deepar")
common = pytest.importorskip("gluonts.dataset.common")

from tsdp.datasets.series import SeriesStart, normalize_freq
from tsdp.datasets.time_features import calendar_features, window_covariates

LF = 3


@pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning")  # GluonTS's own reading of "M", "Q", "Y"
@pytest.mark.parametrize("freq", ["h", "10min", "30min", "s", "D", "B", "W", "M", "Q", "Y"])
@pytest.mark.parametrize("length", [40, 3])
def test_window_covariates_equal_gluonts(freq, length):
    """The test window of a series of ``length`` values (3: the window starts in the padding) gets GluonTS's
    ``past_time_feat`` followed by its ``future_time_feat``, exactly (both float32 of the same formulas)."""
    estimator = deepar.DeepAREstimator(freq=freq, prediction_length=LF, context_length=4, lags_seq=[1, 2, 5])
    splitter = estimator._create_instance_splitter(estimator.create_lightning_module(), "test")
    data = common.ListDataset([{"start": "2015-02-27 23:10:00", "target": np.arange(length, dtype=float) + 1}],
                              freq=freq)
    entry = next(iter(splitter.apply(estimator.create_transformation().apply(data, is_train=False), is_train=False)))
    theirs = np.concatenate([entry["past_time_feat"], entry["future_time_feat"]], axis=0)
    start = SeriesStart(str(next(iter(data))["start"]), normalize_freq(freq))  # as tsdp's loaders store it
    ours = window_covariates([start], [length + LF], theirs.shape[0])[0]
    assert ours.shape == theirs.shape == (8 + LF, len(calendar_features(freq)) + 1)
    np.testing.assert_array_equal(ours, theirs)
