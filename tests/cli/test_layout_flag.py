"""--layout is a CSV / parquet table's layout: with a source that is not a table (the synthetic series, grunfeld,
m1-yearly, GluonTS JSON lines, a benchmark dataset) it was accepted and ignored; now every command that reads
series refuses it in one line naming --layout, exit 2, before any work (the long work of each command replaced by
a function that fails the test if called)."""
import json

import pytest

from cli_run import error_line, run_cli

SMALL = ["--N", "16", "--L", "8", "--batch-size", "4"]


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps({"target": [float(i + j) for i in range(120)]}) for j in range(4)))
    return path


@pytest.fixture
def no_long_work(monkeypatch):
    import importlib

    table, report, train = (importlib.import_module(m) for m in ("tsdp.experiments.table", "tsdp.reports.run",
                                                                 "tsdp.training.train"))  # the modules, not names

    def started(*a, **k):
        raise AssertionError("long work started before the bad --layout was refused")

    for module, name in ((table, "run_grid"), (report, "build_report"), (train, "train")):
        monkeypatch.setattr(module, name, started)


@pytest.mark.parametrize("layout", ["long", "wide"])
@pytest.mark.parametrize("argv", [
    ["train", "--epochs", "1", "--delta", "1e-5", *SMALL],
    ["train", "--epochs", "1", "--delta", "1e-5", "--data", "m1-yearly"],
    ["audit-fn", "--plan", "--canaries", "20", "--delta", "1e-5"],
    ["report", "--no-progress", "--no-audit"],
    ["report", "--no-progress", "--no-audit", "--data", "grunfeld"],
    ["experiment", "--quick"],
    ["experiment", "--quick", "--data", "JSONL"],
])
def test_layout_without_a_table_is_refused(argv, layout, jsonl, no_long_work, tmp_path):
    argv = [str(jsonl) if a == "JSONL" else a for a in argv]
    if argv[0] in ("report", "experiment"):
        argv += ["--out", str(tmp_path / "out")]
    code, out, err = run_cli([*argv, "--layout", layout])
    assert code == 2, err
    assert error_line(err).startswith("tsdp") and "invalid --layout: " in error_line(err)
    assert "table" in error_line(err)


def test_layout_still_reads_a_table(tmp_path):
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    from tsdp.datasets.formats import load_series

    path = tmp_path / "w.csv"
    path.write_text("a,b\n" + "\n".join(f"{i},{2 * i}" for i in range(12)))
    assert load_series(path, layout="wide").N == 2
