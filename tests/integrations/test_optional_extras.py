"""The integrations keep the core install light: without pandas / opacus the core paths work and the extras'
paths fail with one message naming the extra to install (simulated by blocking the imports)."""
import importlib
import sys

import numpy as np
import pytest


def test_gluonts_json_lines_need_no_pandas_and_tables_name_the_extra(monkeypatch, tmp_path):
    """With pandas blocked: GluonTS JSON lines ("NaN" tail as GluonTS writes it) still load; a table asks for
    tsdp[data]."""
    from tsdp.datasets import formats as fmt

    monkeypatch.setitem(sys.modules, "pandas", None)
    (tmp_path / "d.json").write_text('{"start": "2020-01", "target": [1.5, 2.5, "NaN"]}\n'
                                     '{"start": "2020-01", "target": [3, 4, 5]}\n')
    data = fmt.load_gluonts_jsonl(tmp_path / "d.json")
    assert [s.tolist() for s in data.series] == [[1.5, 2.5], [3.0, 4.0, 5.0]]
    with pytest.raises(ImportError, match=r"tsdp\[data\]"):
        fmt.from_wide(object())
    assert np.isfinite(data.series[0]).all()


def test_opacus_accountant_without_opacus_names_the_extra(monkeypatch):
    """With opacus blocked, importing the accountant module fails with pip install 'tsdp[opacus]'."""
    monkeypatch.setitem(sys.modules, "opacus", None)
    monkeypatch.setitem(sys.modules, "opacus.accountants", None)
    monkeypatch.delitem(sys.modules, "tsdp.attacks.integrations.opacus_accountant", raising=False)
    with pytest.raises(ImportError, match=r"tsdp\[opacus\]"):
        importlib.import_module("tsdp.attacks.integrations.opacus_accountant")


def test_a_download_without_gluonts_names_the_extra_and_makes_nothing(monkeypatch, tmp_path, capsys):
    """With GluonTS blocked (its loaded submodules too), `--download` of an uncached benchmark: the loader raises
    the error naming tsdp[gluonts] before making any folder; `tsdp experiment` says it in one line, exit 2."""
    from tsdp.cli.main import main
    from tsdp.datasets.benchmarks import load_split
    from tsdp.theorems.errors import MissingExtraError

    for name in [m for m in sys.modules if m.split(".")[0] == "gluonts"] + ["gluonts"]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingExtraError, match=r"pip install 'tsdp\[gluonts\]'"):
        load_split("electricity", tmp_path / "cache", download=True)
    assert not (tmp_path / "cache").exists()
    capsys.readouterr()
    data_dir = tmp_path / "datasets"
    data_dir.mkdir()
    assert main(["experiment", "--dataset", "electricity", "--download", "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.endswith("downloading 'electricity' needs GluonTS: "
                                                       "pip install 'tsdp[gluonts]'"), err
    assert list(data_dir.iterdir()) == []
