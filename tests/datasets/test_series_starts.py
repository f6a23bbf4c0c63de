"""Every loader keeps when each series starts (:class:`tsdp.datasets.series.SeriesStart`, GluonTS's ``start``):
tables with datetime timestamps, GluonTS entries with a step, Monash files, GluonTS dataset folders; the starts
follow the series through the split, and every window has the start of the series its history is a prefix of."""
import gzip
import json
import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

pd = pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")

from tsdp.datasets import formats as fmt  # noqa: E402
from tsdp.datasets.benchmarks import (PAPER, SHIPPED_SPEC, UserData, Windows, check_time_features,  # noqa: E402
                                      hold_out, last_windows, load_split, read_freq, shipped_split, user_split)
from tsdp.datasets.series import DataError, SeriesData, SeriesStart, normalize_freq  # noqa: E402
from tsdp.datasets.tsf import M1_YEARLY_TSF, YEARLY, m1_yearly, read_tsf  # noqa: E402


def one_error(call, *words):
    with pytest.raises(DataError) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    return info.value


# --- SeriesStart and SeriesData ----------------------------------------------------------------------------------

def test_shifted_moves_by_whole_steps():
    hourly = SeriesStart("2014-01-01 22:00:00", "h")
    assert hourly.shifted(3) == SeriesStart("2014-01-02 01:00:00", "h")
    assert hourly.shifted(0) is hourly
    assert SeriesStart("2020-01-01 00:00:00", "MS").shifted(14) == SeriesStart("2021-03-01 00:00:00", "MS")
    assert SeriesStart("2014-01-01 00:00:00", "10min").shifted(7) == SeriesStart("2014-01-01 01:10:00", "10min")
    assert SeriesStart("1972-01-01 00:00:00", YEARLY).shifted(2).timestamp == "1974-01-01 00:00:00"
    assert SeriesStart("2001-01-01 00:00:00", YEARLY).shifted(500).timestamp == "2501-01-01 00:00:00"
    assert hourly.as_dict() == {"timestamp": "2014-01-01 22:00:00", "freq": "h"}


@settings(max_examples=30, deadline=None)
@given(freq=st.sampled_from(["h", "D", "10min", "MS", "ME", "W-SUN", "QE-DEC", YEARLY, "4s", "30min"]),
       hours=st.integers(0, 24 * 3000), k1=st.integers(0, 500), k2=st.integers(0, 500))
def test_shifts_compose_and_are_the_periods_of_later_positions(freq, hours, k1, k2):
    start = SeriesStart(str(pd.Timestamp("2001-01-01") + pd.Timedelta(hours=hours)), freq)
    assert start.shifted(k1).period() == start.period() + k1
    assert start.shifted(k1).shifted(k2).period() == start.period() + k1 + k2


def test_old_aliases_are_normalised_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = {f: normalize_freq(f) for f in ("H", "T", "10T", "M", "Y", "Q", "D", "h", "10min", "MS", "W")}
    assert got == {"H": "h", "T": "min", "10T": "10min", "M": "ME", "Y": "YE-DEC", "Q": "QE-DEC", "D": "D",
                   "h": "h", "10min": "10min", "MS": "MS", "W": "W-SUN"}
    one_error(lambda: normalize_freq("fortnightly"), "not a pandas frequency")


def test_series_data_checks_its_starts():
    a, b = SeriesStart("2014-01-01 00:00:00", "h"), SeriesStart("2014-01-03 00:00:00", "h")
    data = SeriesData((np.ones(5), np.ones(6)), [a, b])
    assert data.starts == (a, b) and data.freq == "h"
    assert SeriesData((np.ones(5),)).freq is None
    one_error(lambda: SeriesData((np.ones(5), np.ones(6)), (a,)), "one start per series", "got 1 for 2")
    one_error(lambda: SeriesData((np.ones(5), np.ones(6)), (a, SeriesStart("2014-01-01", "D"))), "same step")
    one_error(lambda: SeriesData((np.ones(5),), ("2014-01-01",)), "not a SeriesStart")
    one_error(lambda: SeriesStart("", "h"), "timestamp")
    assert data.select([1]).starts == (b,) and data.select([1]).lengths == (6,)


def test_split_and_hold_out_keep_the_starts():
    starts = (SeriesStart("2014-01-01 00:00:00", "h"), SeriesStart("2014-02-01 05:00:00", "h"))
    data = SeriesData((np.arange(40.0), np.arange(50.0)), starts)
    train, targets = data.split(4)
    assert train.starts == starts and train.lengths == (36, 46) and targets.shape == (2, 4)

    spec = replace(PAPER["electricity"], forecast_length=4, validation_windows=3)
    test = last_windows(data.series, 2, 4, starts)
    assert test.starts == (starts[0], starts[0], starts[1], starts[1])
    split = hold_out(spec, train, test)
    assert split.train.starts == starts and split.train.lengths == (24, 34)
    assert split.validation.starts == (starts[0],) * 3 + (starts[1],) * 3
    # each validation history is a prefix of its training series: position i of the history is position i of
    # the series, so the window's first target is at start.shifted(len(history))
    for history, series in zip(split.validation.histories, [train.series[0]] * 3 + [train.series[1]] * 3):
        np.testing.assert_array_equal(history, series[:len(history)])
    assert [len(h) for h in split.validation.histories] == [24, 28, 32, 34, 38, 42]
    one_error(lambda: Windows(test.histories, test.targets, starts), "one start per history", "got 2 for 4")


# --- tables ------------------------------------------------------------------------------------------------------

def test_long_csv_with_datetimes_starts_at_the_first_observed_value(tmp_path):
    """Item 'b' has two leading missing values: its series, and its start, begin two hours later."""
    stamps = [str(t) for t in pd.date_range("2014-01-01 22:00", periods=5, freq="h")]
    rows = [("a", t, v) for t, v in zip(stamps, [1, 2, 3, 4, 5])] + \
           [("b", t, v) for t, v in zip(stamps, ["", "", 7, 8, 9])]
    path = tmp_path / "long.csv"
    path.write_text("item_id,timestamp,target\n" + "".join(f"{i},{t},{v}\n" for i, t, v in rows[::-1]))
    data = fmt.load_series(path)
    by_item = dict(zip(["b", "a"], zip(data.series, data.starts)))  # items in order of their first rows
    np.testing.assert_array_equal(by_item["b"][0], [7, 8, 9])
    assert by_item["b"][1] == SeriesStart("2014-01-02 00:00:00", "h")
    assert by_item["a"][1] == SeriesStart("2014-01-01 22:00:00", "h")
    assert data.freq == "h"


def test_long_frame_with_a_given_alias_and_monthly_dates():
    frame = pd.DataFrame({"item_id": ["x"] * 4, "timestamp": pd.date_range("2020-11-01", periods=4, freq="MS"),
                          "target": [np.nan, 1.0, 2.0, 3.0]})
    assert fmt.from_long(frame).starts == (SeriesStart("2020-12-01 00:00:00", "MS"),)
    assert fmt.from_long(frame, freq="MS").starts == (SeriesStart("2020-12-01 00:00:00", "MS"),)


def test_wide_frame_with_a_datetime_index():
    index = pd.date_range("2014-01-01", periods=6, freq="10min")
    frame = pd.DataFrame({"a": [np.nan, np.nan, 1, 2, 3, 4.0], "b": [1, 2, 3, 4, 5, np.nan]}, index=index)
    data = fmt.from_wide(frame)
    assert data.starts == (SeriesStart("2014-01-01 00:20:00", "10min"), SeriesStart("2014-01-01 00:00:00", "10min"))
    # two rows: nothing to infer from, the index's own step is used
    two = frame.iloc[2:4]
    assert fmt.from_wide(two).starts[0] == SeriesStart("2014-01-01 00:20:00", "10min")


def test_wide_csv_with_date_text(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("timestamp,a,b\n2021-03-01,1,\n2021-03-02,2,5\n2021-03-03,3,6\n")
    data = fmt.load_series(path)
    assert data.starts == (SeriesStart("2021-03-01 00:00:00", "D"), SeriesStart("2021-03-02 00:00:00", "D"))


def test_numbers_as_timestamps_give_no_starts():
    long = pd.DataFrame({"item_id": ["x"] * 4, "timestamp": [1, 2, 3, 4], "target": [1.0, 2, 3, 4]})
    assert fmt.from_long(long).starts is None
    dated = long.assign(timestamp=pd.date_range("2020-01-01", periods=4, freq="D"))
    assert fmt.from_long(dated, freq="D").starts is not None
    assert fmt.from_wide(pd.DataFrame({"a": [1.0, 2, 3]})).starts is None  # a RangeIndex
    assert fmt.from_wide(pd.DataFrame({"a": [1.0, 2, 3]}, index=[10, 20, 30])).starts is None
    assert fmt.grunfeld()[0].starts[0] == SeriesStart("1935-01-01 00:00:00", YEARLY)


# --- GluonTS entries and JSON lines ------------------------------------------------------------------------------

def _write_jsonl(path, entries):
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for e in entries:
            f.write(json.dumps(e) + "\n")


def test_json_lines_with_and_without_a_freq(tmp_path):
    path = tmp_path / "data.json.gz"
    _write_jsonl(path, [{"start": "2014-01-01 00:00:00", "target": ["NaN", "NaN", "NaN", 1, 2], "item_id": "a"},
                        {"start": "2014-01-05 12:00:00", "target": [3, 4, 5]}])
    assert fmt.load_gluonts_jsonl(path).starts is None  # a bare file does not say its step
    got = fmt.load_gluonts_jsonl(path, freq="H")
    assert got.starts == (SeriesStart("2014-01-01 03:00:00", "h"), SeriesStart("2014-01-05 12:00:00", "h"))
    assert fmt.load_series(path, freq="D").starts == (SeriesStart("2014-01-04 00:00:00", "D"),
                                                      SeriesStart("2014-01-05 00:00:00", "D"))
    assert fmt.load_series(path).starts is None


def test_json_lines_starts_as_gluonts_writes_periods(tmp_path):
    """GluonTS's JsonLinesWriter writes a start as str(Period): weekly "2012-01-02/2012-01-08", monthly "2014-01"."""
    path = tmp_path / "w.jsonl"
    _write_jsonl(path, [{"start": "2012-01-02/2012-01-08", "target": ["NaN", 1, 2]}])
    assert fmt.load_gluonts_jsonl(path, freq="W").starts == (SeriesStart("2012-01-09 00:00:00", "W-SUN"),)
    _write_jsonl(path, [{"start": "2014-01", "target": [1, 2]}])
    assert fmt.load_gluonts_jsonl(path, freq="M").starts == (SeriesStart("2014-01-01 00:00:00", "ME"),)


def test_an_entry_without_a_start_leaves_the_dataset_without_starts():
    entries = [{"start": "2014-01-01", "target": [1.0, 2.0]}, {"target": [3.0, 4.0]}]
    assert fmt.from_gluonts(entries, freq="D").starts is None


def test_a_bad_start_is_one_error_naming_file_and_entry(tmp_path):
    path = tmp_path / "bad.jsonl"
    _write_jsonl(path, [{"start": "2014-01-01", "target": [1, 2]}, {"start": "yesterday-ish", "target": [3, 4]}])
    assert fmt.load_gluonts_jsonl(path).starts is None  # without a step the text is not read
    one_error(lambda: fmt.load_gluonts_jsonl(path, freq="h"), str(path), "entry 1", "yesterday-ish", "'h'")
    one_error(lambda: fmt.load_gluonts_jsonl(path, freq="every now and then"), "not a pandas frequency")
    one_error(lambda: fmt.from_gluonts([{"start": 5, "target": [1.0]}], freq="D"), "entry 0", "no time")


def test_list_dataset_starts_carry_their_step():
    gluonts_common = pytest.importorskip("gluonts.dataset.common")
    dataset = gluonts_common.ListDataset(
        [{"start": "2014-01-01 00:00:00", "target": [np.nan, 1.0, 2.0, 3.0]},
         {"start": "2014-01-02 05:00:00", "target": [4.0, 5.0]}], freq="h")
    assert isinstance(next(iter(dataset))["start"], pd.Period)
    data = fmt.from_gluonts(dataset)
    assert data.starts == (SeriesStart("2014-01-01 01:00:00", "h"), SeriesStart("2014-01-02 05:00:00", "h"))
    assert data.starts[1].period() == list(dataset)[1]["start"]
    monthly = gluonts_common.ListDataset([{"start": "2014-01-01", "target": [np.nan, 1.0]}], freq="ME")
    assert fmt.from_gluonts(monthly).starts == (SeriesStart("2014-02-01 00:00:00", "ME"),)


# --- Monash .tsf -------------------------------------------------------------------------------------------------

def test_shipped_m1_has_181_yearly_starts_as_the_file_says():
    data = m1_yearly().data
    assert len(data.starts) == 181 and data.freq == YEARLY and m1_yearly().freq == YEARLY
    first = next(line for line in M1_YEARLY_TSF.read_text().splitlines() if line.startswith("T1:"))
    assert first.split(":")[1] == "1972-01-01 00-00-00"
    assert data.starts[0] == SeriesStart("1972-01-01 00:00:00", YEARLY)
    assert data.starts[0].period() == pd.Period("1972", "Y")
    split = shipped_split()
    assert len(split.train.starts) == split.train.N and len(split.test.starts) == split.test.count
    assert split.validation.starts == split.train.starts  # one validation window per series


def test_tsf_starts_move_past_leading_gaps_and_need_a_known_frequency(tmp_path):
    head = "@relation x\n@attribute series_name string\n@attribute start_timestamp date\n"
    good = tmp_path / "x.tsf"
    good.write_text(head + "@frequency monthly\n@data\na:2000-01-01 00-00-00:?,?,1,2\nb:2001-06-01 00-00-00:3,4\n")
    assert read_tsf(good).data.starts == (SeriesStart("2000-03-01 00:00:00", "ME"),
                                          SeriesStart("2001-06-01 00:00:00", "ME"))
    hourly = tmp_path / "h.tsf"
    hourly.write_text(head + "@frequency half_hourly\n@data\na:2000-01-01 23-30-00:1,2\n")
    assert read_tsf(hourly).data.starts == (SeriesStart("2000-01-01 23:30:00", "30min"),)
    odd = tmp_path / "odd.tsf"
    odd.write_text(head + "@frequency fortnightly\n@data\na:2000-01-01 00-00-00:1,2\nb:whenever:3\n")
    assert read_tsf(odd).data.starts is None
    untimed = tmp_path / "u.tsf"
    untimed.write_text("@attribute series_name string\n@frequency daily\n@data\na:1,2\n")
    assert read_tsf(untimed).data.starts is None
    bad = tmp_path / "bad.tsf"
    bad.write_text(head + "@frequency daily\n@data\na:2000-01-01 00-00-00:1\nb:sometime:2\n")
    one_error(lambda: read_tsf(bad), str(bad), "line 7", "sometime")


# --- GluonTS dataset folders -------------------------------------------------------------------------------------

def _gluonts_folder(root, freq="H"):
    """A tiny electricity-shaped folder: 2 hourly training series of 200 values (the second with 3 leading NaN),
    their 2 test entries 24 values longer, metadata.json with ``freq``."""
    folder = root / "electricity"
    (folder / "train").mkdir(parents=True)
    (folder / "test").mkdir()
    if freq is not None:
        (folder / "metadata.json").write_text(json.dumps({"freq": freq, "prediction_length": 24}))
    starts = ["2012-01-01 00:00:00", "2012-03-01 05:00:00"]
    rng = np.random.default_rng(0)
    train = [rng.uniform(1, 2, 200).tolist(), ["NaN"] * 3 + rng.uniform(1, 2, 197).tolist()]
    _write_jsonl(folder / "train" / "data.json", [{"start": s, "target": t} for s, t in zip(starts, train)])
    test = [t + rng.uniform(1, 2, 24).tolist() for t in train]
    _write_jsonl(folder / "test" / "data.json.gz", [{"start": s, "target": t} for s, t in zip(starts, test)])
    return folder


def test_gluonts_folder_with_metadata_gives_starts(tmp_path):
    _gluonts_folder(tmp_path, "H")
    assert read_freq(tmp_path / "electricity") == "h"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "H" is read without pandas' FutureWarning
        split = load_split("electricity", tmp_path)
    first, second = SeriesStart("2012-01-01 00:00:00", "h"), SeriesStart("2012-03-01 08:00:00", "h")
    assert split.train.starts == (first, second)
    assert split.validation.starts == (first,) * 7 + (second,) * 7
    assert split.test.starts == (first, second) and split.train.lengths == (200 - 7 * 24, 197 - 7 * 24)
    assert [len(h) for h in split.test.histories] == [200, 197]


def test_gluonts_folder_without_metadata_has_no_starts_and_a_bad_one_is_refused(tmp_path):
    _gluonts_folder(tmp_path, None)
    assert read_freq(tmp_path / "electricity") is None
    assert load_split("electricity", tmp_path).train.starts is None
    (tmp_path / "electricity" / "metadata.json").write_text("{not json")
    one_error(lambda: load_split("electricity", tmp_path), "metadata.json", "JSON")
    (tmp_path / "electricity" / "metadata.json").write_text(json.dumps({"freq": "sometimes"}))
    one_error(lambda: load_split("electricity", tmp_path), "metadata.json", "'sometimes'")


@pytest.mark.parametrize("freq, problem", [("ms", "no GluonTS time features"), ("L", "no GluonTS time features"),
                                           ("BH", "no pandas periods")])
def test_a_metadata_step_that_cannot_work_is_blamed_on_metadata_json(tmp_path, freq, problem):
    """A folder's step (metadata.json's "freq", typed by nobody) that DeepAR cannot read (a millisecond step: no
    time features) or that no GluonTS start can have (business hours: no periods) is one error naming metadata.json,
    not the step's parameter; a model without covariates still reads the millisecond folder."""
    metadata = str(_gluonts_folder(tmp_path, freq) / "metadata.json")
    if problem == "no pandas periods":
        error = one_error(lambda: load_split("electricity", tmp_path), problem)
    else:
        split = load_split("electricity", tmp_path)
        assert split.freq == "ms" and split.step_source == metadata and split.train.N == 2
        error = one_error(lambda: check_time_features(split), problem, "DeepAR")
    assert error.parameter == metadata and "\n" not in str(error)


def test_a_step_with_time_features_passes_and_the_data_own_step_keeps_its_parameter(tmp_path):
    _gluonts_folder(tmp_path, "H")
    check_time_features(load_split("electricity", tmp_path))  # hourly: GluonTS's four features
    path = tmp_path / "ms.csv"
    path.write_text("item_id,timestamp,target\n" + "".join(f"a,2020-01-01 00:00:00.{j:03d},{j}\n" for j in range(20)))
    split = user_split(UserData(str(path), forecast_length=2, context_length=2, batch_size=1, sigma=1.0, season=1,
                                epochs=1))
    assert split.step_source is None and split.freq == "ms"
    assert one_error(lambda: check_time_features(split), "no GluonTS time features").parameter == "freq"


@pytest.mark.parametrize("source", ["metadata.json", "--data", "--freq"])
def test_experiment_refuses_deepar_on_a_millisecond_step_naming_its_source(tmp_path, capsys, source):
    """`tsdp experiment` with DeepAR on data at a millisecond step: one line naming where the step came from (a
    --dataset folder's metadata.json; the --data file whose timestamps are at it; --freq where it was typed), never a
    flag that was not typed, before any cell or baseline (nothing is written to --out), even where no budget buys a
    step (then no cell would have read the step, and the baselines ran for minutes before exiting 0)."""
    from tsdp.cli.main import main

    out = tmp_path / "out"
    grid = ["--models", "deepar", "--epsilons", "0.001", "--seeds", "1", "--out", str(out)]
    if source == "metadata.json":
        blamed = str(_gluonts_folder(tmp_path, "ms") / "metadata.json")
        argv = ["experiment", "--dataset", "electricity", "--data-dir", str(tmp_path), *grid]
    else:
        path = tmp_path / "ms.csv"
        path.write_text("item_id,timestamp,target\n" + "".join(
            f"{k},2020-01-01 00:00:00.{j:03d},{j % 7 + 1}\n" for k in "ab" for j in range(40)))
        blamed = source
        argv = ["experiment", "--data", str(path), "--forecast-length", "4", "--season", "2", *grid,
                *(["--freq", "ms"] if source == "--freq" else [])]
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and not out.exists(), err
    assert err[0].startswith(f"tsdp experiment: error: invalid {blamed}:") and "no GluonTS time features" in err[0]
    assert "--freq" not in err[0] or source == "--freq"


def test_user_split_keeps_the_starts(tmp_path):
    path = tmp_path / "user.csv"
    stamps = pd.date_range("2020-01-01", periods=30, freq="D")
    rows = [("a", t, i) for i, t in enumerate(stamps)] + [("b", t, i) for i, t in enumerate(stamps[:5])]
    path.write_text("item_id,timestamp,target\n" + "".join(f"{n},{t},{v}\n" for n, t, v in rows))
    split = user_split(UserData(str(path), forecast_length=5, context_length=5, batch_size=1, sigma=1.0, season=7,
                                epochs=1, test_windows=2))
    start = SeriesStart("2020-01-01 00:00:00", "D")
    assert split.dropped == 1 and split.train.starts == (start,)
    assert split.validation.starts == (start,) and split.test.starts == (start, start)


def test_the_data_fingerprint_holds_the_calendar():
    from tsdp.experiments.cells import data_fingerprint

    split = shipped_split(SHIPPED_SPEC)  # one validation window: training series + its targets = the series
    full = SeriesData(tuple(np.concatenate([s, t]) for s, t in zip(split.train.series, split.validation.targets)))
    plain = hold_out(SHIPPED_SPEC, full, Windows(split.test.histories, split.test.targets), dropped=split.dropped)
    assert [a.tolist() for a in plain.train.series] == [a.tolist() for a in split.train.series]
    assert data_fingerprint(plain) != data_fingerprint(split)
    assert data_fingerprint(shipped_split(SHIPPED_SPEC)) == data_fingerprint(split)


# --- old offset aliases on every pandas release ------------------------------------------------------------------

OLD_ALIASES = {"H": "h", "1H": "h", "2H": "2h", "T": "min", "10T": "10min", "S": "s", "L": "ms", "U": "us", "N": "ns",
               "BH": "bh", "M": "ME", "BM": "BME", "Q": "QE-DEC", "BQ": "BQE-DEC", "A": "YE-DEC", "Y": "YE-DEC",
               "BA": "BYE-DEC", "BY": "BYE-DEC", "AS": "YS-JAN", "A-DEC": "YE-DEC", "Q-NOV": "QE-NOV"}
"""Aliases pandas 2.2 deprecated and pandas 3 refuses, and the offset each names (pandas 2.2's own renaming)."""


@pytest.fixture
def pandas_3_aliases(monkeypatch):
    """pandas' alias parser as pandas 3 has it: an alias pandas 2.2 deprecated is an error, not a FutureWarning (so
    the old-alias paths are tested on the pandas 2 installed here; CI runs them on pandas 3 too)."""
    from pandas.tseries import frequencies

    real = frequencies.to_offset

    def strict(freq, *args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            try:
                return real(freq, *args, **kwargs)
            except FutureWarning:
                raise ValueError(f"Invalid frequency: {freq}") from None

    monkeypatch.setattr(frequencies, "to_offset", strict)
    with pytest.raises(ValueError, match="Invalid frequency"):  # the simulation refuses what pandas 3 refuses
        frequencies.to_offset("H")
    return strict


@pytest.mark.parametrize("old, offset", sorted(OLD_ALIASES.items()))
def test_old_aliases_name_their_offset_without_pandas_reading_them(pandas_3_aliases, old, offset):
    """tsdp renames an old alias before pandas reads it: the offset pandas 2 gave the old name, on pandas 3 too."""
    assert normalize_freq(old) == offset == pandas_3_aliases(offset).freqstr


@pytest.mark.filterwarnings("error::FutureWarning")
def test_old_aliases_load_as_on_pandas_2(pandas_3_aliases, tmp_path):
    """`--freq H` on GluonTS JSON lines and a folder whose metadata.json says "1H" (as electricity's and traffic's
    do) load with the starts pandas 2 gave them; a table's --freq "T" reads its minutes."""
    path = tmp_path / "data.json.gz"
    _write_jsonl(path, [{"start": "2014-01-01 00:00:00", "target": ["NaN", 1, 2]}])
    assert fmt.load_series(path, freq="H").starts == (SeriesStart("2014-01-01 01:00:00", "h"),)
    _gluonts_folder(tmp_path, "1H")
    assert read_freq(tmp_path / "electricity") == "h"
    split = load_split("electricity", tmp_path)
    assert split.train.starts == (SeriesStart("2012-01-01 00:00:00", "h"), SeriesStart("2012-03-01 08:00:00", "h"))
    frame = pd.DataFrame({"item_id": ["x"] * 4, "timestamp": pd.date_range("2020-01-01", periods=4, freq="min"),
                          "target": [1.0, 2.0, 3.0, 4.0]})
    assert fmt.from_long(frame, freq="T").starts == (SeriesStart("2020-01-01 00:00:00", "min"),)
