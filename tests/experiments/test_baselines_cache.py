"""The experiment's baselines at scale: computed once per split and cached in the grid's folder, the same numbers on 1
or 2 statsforecast processes, a fitted-history cap that leaves the shipped data's baselines as they were, and the
pre-run estimate's bench ratio taken from a real run."""
import dataclasses
import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("statsforecast")

from tsdp.datasets.benchmarks import shipped_split  # noqa: E402
from tsdp.experiments.stored_baselines import CACHE_FILE, cache_key, cached_baselines  # noqa: E402
from tsdp.verify.file_cache import digest_of  # noqa: E402
from tsdp.bench.experiment import SeriesShape, synthetic_split  # noqa: E402
from tsdp.experiments.baselines import (BASELINES, baseline_crps, baseline_quantiles,  # noqa: E402
                                         fitted_history, quantile_crps)

TINY = SeriesShape(series=2, length=200, windows=2)


@pytest.fixture(scope="module")
def tiny():
    """4 histories of 152-176 values (season 24) and their baselines, computed without a cache."""
    split = synthetic_split(TINY)
    reference = {b: baseline_crps(b, split.test.histories, split.test.targets, 24, 24) for b in BASELINES}
    return split, reference


def test_the_cache_is_written_then_read_back_not_recomputed(tiny, tmp_path, monkeypatch):
    split, reference = tiny
    first = cached_baselines(split, tmp_path)
    assert not first.cached and first.crps == reference
    stored = json.loads((tmp_path / CACHE_FILE).read_text())
    assert stored["key"] == cache_key(split) and stored["crps"] == reference
    # a value stored with its digest under the same key is what comes back: the second call reads, it does not fit
    stored["crps"]["autoets"] = 123.0
    stored["digest"] = digest_of(stored["key"], "crps", stored["crps"])
    (tmp_path / CACHE_FILE).write_text(json.dumps(stored))
    with monkeypatch.context() as patched:
        patched.setattr("tsdp.experiments.baselines.baseline_crps",
                        lambda *a, **k: pytest.fail("a cache hit must not recompute"))
        second = cached_baselines(split, tmp_path)
    assert second.cached and second.crps == {**reference, "autoets": 123.0}
    # the same file edited by hand (the digest of another content) is recomputed, with a note naming the file
    stored["crps"]["autoets"] = -4242.42
    (tmp_path / CACHE_FILE).write_text(json.dumps(stored))
    with pytest.warns(UserWarning, match="digest does not match"):
        third = cached_baselines(split, tmp_path)
    assert not third.cached and third.crps == reference


def _changed(split, **spec):
    return dataclasses.replace(split, spec=dataclasses.replace(split.spec, **spec))


def test_changed_data_or_settings_miss_the_cache(tiny, tmp_path):
    split, reference = tiny
    cached_baselines(split, tmp_path)
    histories = list(split.test.histories)
    histories[3] = histories[3].copy()
    histories[3][-1] += 1.0  # one value of one history
    moved = dataclasses.replace(split, test=dataclasses.replace(split.test, histories=tuple(histories)))
    fewer = dataclasses.replace(split, test=dataclasses.replace(split.test, histories=split.test.histories[:3],
                                                                  targets=split.test.targets[:3]))
    for other in (moved, fewer, _changed(split, season=12), _changed(split, name="another")):
        assert cache_key(other) != cache_key(split)
        again = cached_baselines(other, tmp_path)
        assert not again.cached
        assert again.crps == {b: baseline_crps(b, other.test.histories, other.test.targets, 24, other.spec.season)
                              for b in BASELINES}
        assert json.loads((tmp_path / CACHE_FILE).read_text())["key"] == cache_key(other)
    # the code is part of the key: the sources of the baselines and of the CRPS, hashed
    from tsdp.experiments import baselines
    from tsdp.training import metrics

    sources = b"".join(open(m.__file__, "rb").read() for m in (baselines, metrics))
    assert cache_key(split)["code"] == hashlib.sha256(sources).hexdigest()


@pytest.mark.parametrize("content", ["{not json", json.dumps({"crps": {"autoets": 0.1}}), "NAN",
                                     "nan-value", "missing", "other-key"])
def test_a_corrupt_or_mismatched_file_is_recomputed_never_reported(tiny, tmp_path, content):
    split, reference = tiny
    key = cache_key(split)
    text = {"nan-value": json.dumps({"key": key, "crps": {"seasonal-naive": 0.1, "autoets": math.nan}}),
            "missing": json.dumps({"key": key, "crps": {"seasonal-naive": 0.1}}),
            "other-key": json.dumps({"key": {**key, "season": 1}, "crps": {"seasonal-naive": 0.1, "autoets": 0.2}}),
            }.get(content, content)
    (tmp_path / CACHE_FILE).write_text(text)
    result = cached_baselines(split, tmp_path)
    assert not result.cached and result.crps == reference
    assert json.loads((tmp_path / CACHE_FILE).read_text()) == {"key": key, "crps": reference,
                                                              "digest": digest_of(key, "crps", reference)}


def test_a_negative_crps_with_a_valid_digest_is_recomputed(tiny, tmp_path):
    """A CRPS is a mean weighted quantile loss, never negative: stored so, even with its digest, it is recomputed."""
    split, reference = tiny
    key, crps = cache_key(split), {**reference, "autoets": -4242.42}
    (tmp_path / CACHE_FILE).write_text(json.dumps({"key": key, "crps": crps, "digest": digest_of(key, "crps", crps)}))
    with pytest.warns(UserWarning, match="negative"):
        assert cached_baselines(split, tmp_path).crps == reference


def test_a_baseline_that_cannot_be_fitted_is_left_out_and_the_rest_stand(tiny, tmp_path, monkeypatch):
    """statsforecast's "no model able to be fitted" (AutoETS on values of 1e300) leaves that baseline out with a
    note; the other baseline is computed, nothing is stored; another error still raises."""
    split, reference = tiny
    real = baseline_crps

    def autoets_fails(name, *args, **kwargs):
        if name == "autoets":
            raise Exception("no model able to be fitted")  # statsforecast's ets.py raises exactly this
        return real(name, *args, **kwargs)

    monkeypatch.setattr("tsdp.experiments.baselines.baseline_crps", autoets_fails)
    with pytest.warns(UserWarning, match="autoets baseline cannot be fitted"):
        scores = cached_baselines(split, tmp_path)
    assert scores.crps == {"seasonal-naive": reference["seasonal-naive"]} and not (tmp_path / CACHE_FILE).exists()
    monkeypatch.setattr("tsdp.experiments.baselines.baseline_crps",
                        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("another failure")))
    with pytest.raises(RuntimeError, match="another failure"):
        cached_baselines(split, tmp_path)


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_one_and_two_processes_give_the_same_forecasts_as_one_statsforecast_call(monkeypatch):
    """10 histories in chunks of 2 per process (5 chunks on 1 process, 3 on 2): identical quantiles both ways, and
    identical to one plain statsforecast call over all of them (the reference: no chunks, no processes)."""
    from statsforecast import StatsForecast
    from statsforecast.models import AutoETS

    monkeypatch.setattr("tsdp.experiments.baselines.CHUNK_PER_JOB", 2)
    split = synthetic_split(SeriesShape(series=5, length=200, windows=2), seed=1)
    h, targets = split.test.histories, split.test.targets
    one = baseline_quantiles("autoets", h, 24, 24, n_jobs=1)
    two = baseline_quantiles("autoets", h, 24, 24, n_jobs=2)
    assert np.array_equal(one, two)
    assert quantile_crps(targets, one) == quantile_crps(targets, two)
    frame = pd.DataFrame({"unique_id": np.repeat(np.arange(len(h)), [len(x) for x in h]),
                          "ds": np.concatenate([np.arange(len(x)) for x in h]), "y": np.concatenate(h)})
    plain = StatsForecast(models=[AutoETS(season_length=24)], freq=1).forecast(df=frame, h=24, level=[80])
    plain = plain.sort_values(["unique_id", "ds"])
    assert np.allclose(one[4], plain["AutoETS"].to_numpy().reshape(len(h), 24), rtol=1e-12, atol=0)  # q = 0.5
    assert np.allclose(one[0], plain["AutoETS-lo-80"].to_numpy().reshape(len(h), 24), rtol=1e-12, atol=0)


def test_the_cap_leaves_the_shipped_datas_baselines_unchanged():
    """M1 yearly (the shipped data, and the default experiment's): its longest history (52 years) is under AutoETS's
    cap and seasonal naive reads one season, so capped and uncapped CRPS are the same number."""
    split = shipped_split()
    h, t = split.test.histories, split.test.targets
    assert max(len(x) for x in h) < fitted_history("autoets", split.spec.season)
    for b in BASELINES:
        assert baseline_crps(b, h, t, 6, split.spec.season) == baseline_crps(b, h, t, 6, split.spec.season,
                                                                             capped=False)


def test_seasonal_naive_given_its_last_season_forecasts_as_from_the_whole_history():
    """The cap that does cut (histories of 152-176 values, season 24, kept: 24) leaves seasonal naive's forecast
    equal."""
    split = synthetic_split(TINY)
    h = split.test.histories
    assert min(len(x) for x in h) > fitted_history("seasonal-naive", 24)
    assert np.array_equal(baseline_quantiles("seasonal-naive", h, 24, 24),
                          baseline_quantiles("seasonal-naive", h, 24, 24, capped=False))
    # and it is the last season repeated (the method's definition)
    assert np.array_equal(baseline_quantiles("seasonal-naive", h, 24, 24)[0], np.stack([x[-24:] for x in h]))


def test_a_baseline_without_a_finite_crps_is_left_out_never_judged(tiny, tmp_path, monkeypatch):
    """A baseline whose CRPS comes out NaN is left out with a note (as one that cannot be fitted), so that neither
    the table nor C7 (whose better baseline is the smaller CRPS: min() with a NaN first keeps the NaN, and every
    margin against it is NaN, no win) compares against it; nothing is stored."""
    from tsdp.experiments.table import Score, c7_verdict

    split, reference = tiny
    real = baseline_crps
    monkeypatch.setattr("tsdp.experiments.baselines.baseline_crps",
                        lambda name, *a, **k: math.nan if name == "seasonal-naive" else real(name, *a, **k))
    with pytest.warns(UserWarning, match="seasonal-naive baseline"):
        scores = cached_baselines(split, tmp_path)
    assert scores.crps == {"autoets": reference["autoets"]} and not (tmp_path / CACHE_FILE).exists()
    ev = c7_verdict([Score("simple-ff", 0.5, "wor", reference["autoets"] / 2, 0.0, 1)], scores.crps, "m1-yearly")
    assert ev.verdict == "reproduced" and ev.baseline == "autoets"


def test_autoets_on_histories_too_short_to_fit_is_left_out_not_a_traceback(tmp_path):
    """statsforecast's ETS refuses a history of n <= its parameters + 4 values (NotImplementedError "tiny datasets",
    n <= 6 for the smallest model): a user's file of short series (a test history of 3 values here) leaves AutoETS
    out with a note, as a baseline that cannot be fitted, and keeps seasonal naive (GluonTS's rule: the last season),
    instead of a traceback after the whole grid has trained."""
    from tsdp.datasets.benchmarks import UserData, user_split
    from tsdp.training.metrics import point_crps, seasonal_naive

    path = tmp_path / "short.csv"
    path.write_text("a,b\n" + "".join(f"{1 + i},{10 + 2 * i}\n" for i in range(5)))
    split = user_split(UserData(str(path), forecast_length=1, context_length=1, batch_size=1, sigma=4.0, season=1,
                                epochs=1))
    assert [len(h) for h in split.test.histories] == [4, 4]
    with pytest.raises(NotImplementedError, match="tiny datasets"):  # statsforecast itself
        baseline_quantiles("autoets", split.test.histories, 1, 1)
    with pytest.warns(UserWarning, match="autoets baseline cannot be fitted"):
        scores = cached_baselines(split, tmp_path)
    want = point_crps(split.test.targets, seasonal_naive(split.test.histories, 1, 1))
    assert scores.crps == {"seasonal-naive": want} and not (tmp_path / CACHE_FILE).exists()
