"""Loading series the way users hold them: the same series from every format, one clear error per malformed input.

The reference is Grunfeld's investment panel as statsmodels ships it in its wheel (11 firms,
1935-1954), with a real-world irregularity added: two firms observed over a sub-range
(leading / trailing missing years). Every format is written by its own library (pandas,
pyarrow, GluonTS's JsonLinesWriter) and read back through tsdp.datasets.formats, and through
its one loader of every command, ``load_series``, with the layout detected.
"""

import numpy as np
import pytest

pd = pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")

from tsdp.datasets import formats as fmt  # noqa: E402
from tsdp.theorems.config import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def panel():
    """Grunfeld long frame (firm, year, invest), US Steel from 1938 on, IBM up to 1951; and the expected series."""
    sm = pytest.importorskip("statsmodels.datasets.grunfeld", reason="statsmodels (bundled datasets) is not installed")
    frame = sm.load_pandas().data[["firm", "year", "invest"]].copy()
    frame["year"] = frame["year"].astype(int)
    frame = frame[~((frame.firm == "US Steel") & (frame.year < 1938)) & ~((frame.firm == "IBM") & (frame.year > 1951))]
    frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)  # rows in any order
    firms = list(dict.fromkeys(frame.firm))  # series come in order of first appearance
    expected = [frame[frame.firm == f].sort_values("year").invest.to_numpy() for f in firms]
    return frame, firms, expected


def same(data, expected):
    assert data.N == len(expected)
    for got, want in zip(data.series, expected):
        np.testing.assert_array_equal(got, want)


def test_grunfeld_is_the_bundled_panel():
    """statsmodels' Grunfeld: 11 firms of 20 yearly values each, General Motors' 1935 investment 317.6."""
    data, names = fmt.grunfeld()
    assert data.N == 11 and set(data.lengths) == {20} and names[0] == "General Motors"
    assert data.series[0][0] == pytest.approx(317.6)


def test_every_format_loads_the_same_series(panel, tmp_path):
    """pandas long / wide, CSV long / wide, parquet long / wide, GluonTS ListDataset and JSON lines (plain and
    gzip, as GluonTS writes them), and the core CSV / JSON-lines readers give identical series (leading / trailing
    missing years trimmed)."""
    frame, firms, expected = panel
    long = frame.rename(columns={"firm": "item_id", "year": "timestamp", "invest": "target"})
    wide = frame.pivot(index="year", columns="firm", values="invest")[firms]
    same(fmt.from_long(long), expected)
    same(fmt.from_wide(wide), expected)

    long.to_csv(tmp_path / "long.csv", index=False)
    wide.reset_index().rename(columns={"year": "timestamp"}).to_csv(tmp_path / "wide.csv", index=False)
    long.to_parquet(tmp_path / "long.parquet")
    wide.reset_index().rename(columns={"year": "timestamp"}).to_parquet(tmp_path / "wide.parquet")
    for name in ("long.csv", "wide.csv", "long.parquet", "wide.parquet"):
        layout = name.split(".")[0]
        same(fmt.load_table(tmp_path / name, layout=layout), expected)

    gluonts = pytest.importorskip("gluonts", reason="gluonts is not installed")
    from gluonts.dataset.common import ListDataset
    from gluonts.dataset.jsonl import JsonLinesWriter

    entries = [{"start": pd.Period(str(wide.index[0]), "Y"), "target": wide[f].to_numpy(dtype=np.float32), "item_id": f}
               for f in firms]
    ds = ListDataset(entries, freq="YE")
    wide32 = [e.astype(np.float32).astype(np.float64) for e in expected]  # GluonTS holds float32 targets
    same(fmt.from_gluonts(ds), wide32)
    JsonLinesWriter(use_gzip=True).write_to_file(ds, tmp_path / "data.json.gz")
    JsonLinesWriter(use_gzip=False).write_to_file(ds, tmp_path / "data.json")
    same(fmt.load_gluonts_jsonl(tmp_path / "data.json.gz"), wide32)
    same(fmt.load_gluonts_jsonl(tmp_path / "data.json"), wide32)
    assert gluonts.__version__

    # the one loader of every command: the layout detected, the same series (headerless wide CSV too)
    for name in ("long.csv", "wide.csv", "long.parquet", "wide.parquet", "data.json.gz", "data.json"):
        same(fmt.load_series(tmp_path / name), wide32 if name.startswith("data") else expected)
    wide.to_csv(tmp_path / "noheader.csv", index=False, header=False)
    same(fmt.load_series(tmp_path / "noheader.csv"), expected)
    long.to_csv(tmp_path / "long.csv.gz", index=False)
    same(fmt.load_series(tmp_path / "long.csv.gz"), expected)
    frame.to_parquet(tmp_path / "named.parquet")
    same(fmt.load_series(tmp_path / "named.parquet", item_id="firm", timestamp="year", target="invest"), expected)


def one_error(call, *patterns):
    with pytest.raises(ConfigError) as info:
        call()
    assert isinstance(info.value, fmt.DataError)
    message = str(info.value)
    assert "\n" not in message
    for p in patterns:
        assert p in message, message
    return message


def test_malformed_inputs_give_one_clear_error(panel, tmp_path):
    """No target column, a non-numeric value, an empty series, a duplicate timestamp, a missing value inside a
    series (NaN cell or missing row), a missing item id: one DataError each, naming source, column / series, row."""
    frame, _, _ = panel
    long = frame.sort_values(["firm", "year"]).reset_index(drop=True)
    kw = dict(item_id="firm", timestamp="year", target="invest")
    one_error(lambda: fmt.from_long(long, item_id="firm", timestamp="year", target="value"), "column 'value'")
    bad = long.astype({"invest": object})
    bad.loc[5, "invest"] = "abc"
    one_error(lambda: fmt.from_long(bad, **kw), "column 'invest'", "row 5", "'abc'")
    bad.to_csv(tmp_path / "bad.csv", index=False)
    one_error(lambda: fmt.load_table(tmp_path / "bad.csv", layout="long", **kw), "bad.csv", "line 7", "'abc'")
    empty = long.copy()
    empty.loc[empty.firm == "IBM", "invest"] = np.nan
    one_error(lambda: fmt.from_long(empty, **kw), "series 'IBM'", "empty")
    dup = pd.concat([long, long.iloc[[3]]], ignore_index=True)
    one_error(lambda: fmt.from_long(dup, **kw), f"series {long.firm[3]!r}", f"timestamp {long.year[3]} more than once")
    hole = long.copy()
    hole.loc[hole.index[(hole.firm == "Chrysler") & (hole.year == 1940)], "invest"] = np.nan
    one_error(lambda: fmt.from_long(hole, **kw), "series 'Chrysler'", "missing value inside", "row")
    gap = long[~((long.firm == "Chrysler") & (long.year == 1940))]
    one_error(lambda: fmt.from_long(gap, **kw), "series 'Chrysler'", "misses the timestamp 1940")
    noid = long.copy()
    noid.loc[7, "firm"] = None
    one_error(lambda: fmt.from_long(noid, **kw), "column 'firm'", "row 7")
    wide = long.pivot(index="year", columns="firm", values="invest")
    wide.iloc[4, 2] = np.nan
    one_error(lambda: fmt.from_wide(wide), f"series {wide.columns[2]!r}", "row 4")
    one_error(lambda: fmt.from_wide(wide.iloc[:0]), "no series")
    one_error(lambda: fmt.from_wide(wide.drop(index=1945)), "DataFrame, index", "misses the timestamp 1945")
    one_error(lambda: fmt.from_gluonts([{"start": "2000", "target": [1.0, "x"]}]), "entry 0", "numeric")
    one_error(lambda: fmt.from_gluonts([{"start": "2000"}]), "entry 0", "'target'")
    (tmp_path / "broken.json").write_text('{"target": [1, 2]}\n{"target": [1, \n')
    one_error(lambda: fmt.load_gluonts_jsonl(tmp_path / "broken.json"), "broken.json, line 2", "not JSON")
    (tmp_path / "bad.txt").write_text("1,2\n")
    one_error(lambda: fmt.load_series(tmp_path / "bad.txt"), "bad.txt", "unknown data format")
    one_error(lambda: fmt.load_series(tmp_path / "missing.csv"), "missing.csv", "no such file")
    one_error(lambda: fmt.load_series(tmp_path), "not a regular file")
    one_error(lambda: fmt.load_series("synthetic"), "needs a training configuration")


def test_datetime_long_format_infers_its_step_and_refuses_a_gap():
    """Daily datetime stamps: the step 'D' is inferred; a missing day inside an item is a missing value, refused;
    an irregular index without freq asks for freq."""
    days = pd.date_range("2024-01-01", periods=6, freq="D")
    frame = pd.DataFrame({"item_id": ["a"] * 6 + ["b"] * 6, "timestamp": list(days) * 2, "target": np.arange(12.0)})
    same(fmt.from_long(frame), [np.arange(6.0), np.arange(6.0, 12.0)])
    one_error(lambda: fmt.from_long(frame.drop(index=8)), "series 'b'", "misses the timestamp")
    odd = frame.copy()
    odd["timestamp"] = list(pd.to_datetime(["2024-01-01", "2024-01-02", "2024-01-05", "2024-01-06", "2024-01-20",
                                            "2024-02-03"])) * 2
    one_error(lambda: fmt.from_long(odd), "column 'timestamp'", "pass freq")


def test_layout_is_detected_where_unambiguous_and_the_error_names_the_flag(panel, tmp_path):
    """Auto layout: an item id column (default name, or named) makes a table long; all-numeric columns make it
    wide; a repeated timestamp without an item id column asks for --item-id; a text column that is no named
    column asks for --item-id / --timestamp; explicit --layout overrides; wide refuses --item-id / --target."""
    frame, _, expected = panel
    long = frame.rename(columns={"firm": "item_id", "year": "timestamp", "invest": "target"})
    assert fmt.detect_layout(long) == "long"
    assert fmt.detect_layout(frame, item_id="firm") == "long"
    assert fmt.detect_layout(long.pivot(index="timestamp", columns="item_id", values="target").reset_index()) == "wide"
    for options, flag, pattern in (
            ({"frame": long.drop(columns="item_id")}, "item_id", "--item-id COLUMN"),
            ({"frame": frame}, "layout", "--item-id firm --timestamp COLUMN --target COLUMN")):
        with pytest.raises(fmt.DataError) as info:
            fmt.detect_layout(options["frame"], source="t.csv")
        assert info.value.parameter == flag and pattern in str(info.value) and "t.csv" in str(info.value)
    long.to_parquet(tmp_path / "long.parquet")
    same(fmt.load_series(tmp_path / "long.parquet", layout="long"), expected)
    one_error(lambda: fmt.load_series(tmp_path / "long.parquet", layout="wide", item_id="item_id"), "--layout long")
    one_error(lambda: fmt.load_series(tmp_path / "long.parquet", layout="sideways"), "auto, long, wide")
    one_error(lambda: fmt.load_series(tmp_path / "long.parquet", item_id="firm"), "no item_id column 'firm'")


def test_the_loader_reads_synthetic_and_grunfeld_by_name():
    """'synthetic' is the configuration's seeded data (as the training loop's own generator), 'grunfeld' the
    bundled panel, of the --target column given."""
    from tsdp.datasets.series import synthetic_for
    from tsdp.theorems.config import TrainingConfig

    config = TrainingConfig(N=3, L=10, batch_size=2)
    same(fmt.load_series("synthetic", config=config, seed=4), synthetic_for(config, seed=4).series)
    pytest.importorskip("statsmodels")
    same(fmt.load_series("grunfeld"), fmt.grunfeld()[0].series)
    same(fmt.load_series("grunfeld", target="value"), fmt.grunfeld("value")[0].series)
