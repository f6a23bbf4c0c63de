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
