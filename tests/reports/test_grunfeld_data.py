"""The report's real data: Grunfeld's panel ships with tsdp, equal to statsmodels' copy, read without extras.

The reference is statsmodels' own ``grunfeld`` dataset (installed by the test extra); the
shipped file must hold the same 220 (firm, year) rows with the same invest, value and capital,
and loading it must import neither pandas nor statsmodels (the README's main-job install has
neither).
"""
import subprocess
import sys

import numpy as np
import pytest

from tsdp.datasets.formats import GRUNFELD_TARGETS, grunfeld


@pytest.mark.parametrize("target", GRUNFELD_TARGETS)
def test_shipped_grunfeld_equals_statsmodels(target):
    """Every firm's 20 yearly values of ``target``, in statsmodels' firm order, exactly (the file keeps repr)."""
    sm = pytest.importorskip("statsmodels.datasets.grunfeld", reason="statsmodels (the reference) is not installed")
    frame = sm.load_pandas().data
    data, names = grunfeld(target)
    assert names == tuple(dict.fromkeys(frame["firm"])) and len(names) == 11
    for name, got in zip(names, data.series):
        rows = frame[frame["firm"] == name].sort_values("year")
        assert rows["year"].tolist() == list(range(1935, 1955))
        np.testing.assert_array_equal(got, rows[target].to_numpy(dtype=float))
    assert sum(data.lengths) == len(frame) == 220


def test_grunfeld_loads_without_pandas_or_statsmodels():
    """A fresh interpreter loads the panel (General Motors' 1935 investment 317.6) and imports neither."""
    code = ("import sys; from tsdp.datasets.formats import grunfeld; d, n = grunfeld(); "
            "print(d.series[0][0], n[0], 'pandas' in sys.modules, 'statsmodels' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["317.6", "General", "Motors", "False", "False"]


def test_unknown_target_is_refused():
    from tsdp.datasets.formats import DataError

    with pytest.raises(DataError, match="invest, value, capital"):
        grunfeld("output")
