"""A wide table's rows are read in time order, whatever order the file lists them in: the same series and starts as
the rows in time order, and as the long layout of the same data (which orders each item's rows by timestamp)."""
import numpy as np
import pytest

pd = pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")

from tsdp.datasets import formats as fmt  # noqa: E402
from tsdp.datasets.series import DataError  # noqa: E402


def _frame(index, rng):
    """Two columns over ``index`` (in time order): 'a' observed throughout, 'b' from its third row to its last but
    one (leading / trailing gaps, which the loader trims)."""
    n = len(index)
    a = rng.normal(10, 3, size=n)
    b = rng.normal(-5, 1, size=n)
    b[:2] = np.nan
    b[-1] = np.nan
    return pd.DataFrame({"a": a, "b": b}, index=index)


@pytest.mark.parametrize("kind", ["datetime", "numeric"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_wide_tables_rows_in_any_order_are_the_rows_in_time_order(tmp_path, kind, seed):
    rng = np.random.default_rng(seed)
    index = (pd.date_range("2021-03-01", periods=12, freq="D") if kind == "datetime"
             else pd.Index(np.arange(12) * 5.0 + 100.0))
    ordered = _frame(index, rng)
    shuffled = ordered.iloc[rng.permutation(len(ordered))]
    assert not shuffled.index.equals(ordered.index)

    want = fmt.from_wide(ordered)
    got = fmt.from_wide(shuffled)
    np.testing.assert_array_equal(want.series[0], ordered["a"].to_numpy())
    np.testing.assert_array_equal(want.series[1], ordered["b"].to_numpy()[2:-1])
    assert len(got.series) == 2
    for g, w in zip(got.series, want.series):
        np.testing.assert_array_equal(g, w)
    assert got.starts == want.starts

    # the same data as a CSV file, wide and long: the long layout sorts each item's rows by timestamp
    stamp = "timestamp"
    wide = shuffled.rename_axis(stamp).reset_index()
    wide.to_csv(tmp_path / "wide.csv", index=False)
    long = wide.melt(id_vars=[stamp], var_name="item_id", value_name="target")
    long.to_csv(tmp_path / "long.csv", index=False)
    from_file = fmt.load_series(str(tmp_path / "wide.csv"))
    reference = fmt.load_series(str(tmp_path / "long.csv"))
    for g, w, r in zip(from_file.series, want.series, reference.series):
        np.testing.assert_allclose(g, w, rtol=1e-15)
        np.testing.assert_array_equal(g, r)
    assert from_file.starts == reference.starts
    if kind == "datetime":
        assert from_file.starts[0].timestamp == "2021-03-01 00:00:00"
        assert from_file.starts[1].timestamp == "2021-03-03 00:00:00"


def test_an_unordered_wide_tables_error_names_the_files_row(tmp_path):
    """Rows are reordered for reading, not for naming: an inner gap is named by its row and line in the file."""
    path = tmp_path / "gap.csv"
    path.write_text("timestamp,a\n2021-01-03,3\n2021-01-01,1\n2021-01-02,\n2021-01-04,4\n")
    with pytest.raises(DataError) as info:
        fmt.load_series(str(path))
    assert "row 2 (line 4)" in str(info.value), str(info.value)


def test_an_unordered_wide_tables_text_value_is_named_by_its_files_row(tmp_path):
    path = tmp_path / "text.csv"
    path.write_text("timestamp,a\n2021-01-03,3\n2021-01-01,x\n2021-01-02,2\n2021-01-04,4\n")
    with pytest.raises(DataError) as info:
        fmt.load_series(str(path), layout="wide")
    assert "row 1 (line 3)" in str(info.value), str(info.value)
