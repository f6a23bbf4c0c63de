"""DeepAR's covariates (:mod:`tsdp.datasets.time_features`) from their definitions: the calendar features as
GluonTS normalises them (index / (count - 1) - 0.5) computed here with the standard library's calendar, the age
feature log10(2 + i), 0 before the series' start (tests/integrations/test_gluonts_time_features.py compares them with
GluonTS's own pipeline)."""
import datetime as dt

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("pandas")

from tsdp.datasets.series import DataError, SeriesStart
from tsdp.datasets.time_features import calendar_features, covariate_count, position_covariates, window_covariates


def _hourly_reference(moment: dt.datetime) -> list:
    """hour of day, day of week, day of month, day of year (GluonTS's hourly features) of ``moment``."""
    return [moment.hour / 23 - 0.5, moment.weekday() / 6 - 0.5, (moment.day - 1) / 30 - 0.5,
            (moment.timetuple().tm_yday - 1) / 365 - 0.5]


@settings(max_examples=40, deadline=None)
@given(first=st.integers(-50, 20000), length=st.integers(1, 60), hours=st.integers(0, 24 * 800))
def test_hourly_covariates_from_the_calendar(first, length, hours):
    origin = dt.datetime(2011, 12, 30, 0) + dt.timedelta(hours=hours)
    got = position_covariates(SeriesStart(origin.strftime("%Y-%m-%d %H:%M:%S"), "h"), first, length)
    assert got.shape == (length, 5) and got.dtype == np.float32
    for row, i in zip(got, range(first, first + length)):
        if i < 0:
            assert not row.any()  # GluonTS's padding: every covariate 0
        else:
            expected = _hourly_reference(origin + dt.timedelta(hours=i)) + [np.log10(2.0 + i)]
            np.testing.assert_allclose(row, expected, rtol=2e-7, atol=1e-7)


def test_feature_sets_by_step():
    assert calendar_features(None) == () and covariate_count(None) == 1
    assert calendar_features("Y") == () and covariate_count("Y") == 1
    assert calendar_features("h") == ("hour_of_day", "day_of_week", "day_of_month", "day_of_year")
    assert calendar_features("10min")[0] == "minute_of_hour" and covariate_count("10min") == 6
    assert calendar_features("MS") == calendar_features("ME") == ("month_of_year",)


def test_without_calendar_only_the_age():
    got = position_covariates(None, -2, 5)
    np.testing.assert_allclose(got[:, 0], [0, 0, np.log10(2.0), np.log10(3.0), np.log10(4.0)], rtol=1e-7)
    np.testing.assert_array_equal(window_covariates(None, [5, 3], 4)[1, :, 0], got[1:, 0])  # ends at 3: -1..2
    assert window_covariates(None, [], 7, "h").shape == (0, 7, 5)


def test_month_begin_step():
    """A month-start step (pandas has no period for it; GluonTS neither) gets the month of year of each month."""
    got = position_covariates(SeriesStart("2019-11-01", "MS"), 0, 3)
    np.testing.assert_allclose(got[:, 0], [10 / 11 - 0.5, 11 / 11 - 0.5, 0 / 11 - 0.5], rtol=1e-6)


@pytest.mark.parametrize("freq", ["fortnightly", "2q7"])
def test_bad_step_is_one_error(freq):
    with pytest.raises(DataError, match="freq"):
        calendar_features(freq)


def test_yearly_data_needs_no_pandas(monkeypatch):
    """The shipped M1 data is yearly (tsf's "YE-DEC"): its covariates, the age alone, are computed without pandas,
    so DeepAR trains on it from a plain install; a step with calendar features says which extra it needs."""
    import sys

    from tsdp.theorems.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    got = position_covariates(SeriesStart("1990-01-01 00:00:00", "YE-DEC"), -1, 3)
    np.testing.assert_allclose(got[:, 0], [0.0, np.log10(2.0), np.log10(3.0)], rtol=1e-7)
    assert calendar_features("2YS-JAN") == ()
    with pytest.raises(MissingExtraError, match="data"):
        calendar_features("h")
