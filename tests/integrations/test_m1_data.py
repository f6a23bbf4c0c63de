"""The shipped real multi-series dataset: the Monash M1 yearly file, equal to aeon's copy, read without extras."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tsdp.datasets.formats import load_series
from tsdp.datasets.series import DataError
from tsdp.datasets.tsf import M1_YEARLY_TSF, m1_yearly, read_tsf


def _aeon_file() -> Path:
    spec = importlib.util.find_spec("aeon")
    if spec is None:
        pytest.skip("aeon (the reference copy) is not installed")
    return Path(spec.origin).parent / "datasets" / "data" / "m1_yearly_dataset" / "m1_yearly_dataset.tsf"


def test_shipped_m1_is_aeons_file_byte_for_byte():
    assert M1_YEARLY_TSF.read_bytes() == _aeon_file().read_bytes()


def test_shipped_m1_values_equal_aeons_loader():
    """aeon's own .tsf reader (an independent parser) gives the same 181 series, value for value."""
    frame, meta = _aeon_frame()
    ours = m1_yearly()
    assert ours.data.N == 181 == len(frame) and ours.horizon == 6 == meta["forecast_horizon"]
    for name, got in zip(ours.names, ours.data.series):
        np.testing.assert_array_equal(got, np.asarray(frame.loc[frame["series_name"] == name, "series_value"].iloc[0],
                                                      dtype=float))


def _aeon_frame():
    from aeon.datasets import load_from_tsf_file

    return load_from_tsf_file(str(_aeon_file()), return_type="tsf_default")


def test_m1_loads_without_extras_and_by_name():
    code = ("import sys; from tsdp.datasets.formats import load_series; d = load_series('m1-yearly'); "
            "print(d.N, d.series[0][0], 'pandas' in sys.modules, 'aeon' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["181", "3600.0", "False", "False"]


def test_tsf_reader_reads_a_file_and_refuses_malformed_ones(tmp_path):
    good = tmp_path / "x.tsf"
    good.write_text("# c\n@relation x\n@attribute series_name string\n@horizon 2\n@data\n"
                    "a:?,1,2,3\nb:4,5,6\n")
    f = read_tsf(good)
    assert f.names == ("a", "b") and f.horizon == 2
    np.testing.assert_array_equal(load_series(str(good)).series[0], [1, 2, 3])
    for body, words in [("@attribute series_name string\n@data\na:1,?,3\n", "missing value inside"),
                        ("@attribute series_name string\n@data\na:1,x\n", "not a number"),
                        ("@attribute series_name string\n", "no @data"),
                        ("@attribute series_name string\n@data\n", "no series"),
                        ("@data\na:1\n", "before any @attribute"),
                        ("@attribute series_name string\n@data\n1,2\n", "attribute field")]:
        bad = tmp_path / "bad.tsf"
        bad.write_text(body)
        with pytest.raises(DataError, match=words):
            read_tsf(bad)
