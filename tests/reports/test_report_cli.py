"""`tsdp report` input errors: a bad --config file exits 2 with a message naming the problem,
before any computation (each case well under a second)."""
import json

import pytest

from tsdp.cli.main import main


def _run(capsys, *argv):
    code = main(["report", "--no-progress", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("content, needle", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "must hold a JSON object"),
    ('{"batch": 3}', "unknown field(s) batch"),
    ('{"sigma": -1.0}', "invalid sigma: must be > 0"),
    ('{"batch_size": 1000}', "more than N = 320"),
    ('{"top": "sideways"}', "invalid top"),
])
def test_bad_config_file_exits_2_naming_the_problem(tmp_path, capsys, content, needle):
    f = tmp_path / "cfg.json"
    f.write_text(content)
    code, err = _run(capsys, "--config", str(f), "--out", str(tmp_path / "out"))
    assert code == 2
    assert needle in err
    assert "Traceback" not in err
    assert not (tmp_path / "out" / "results.json").exists()


def test_missing_config_file(tmp_path, capsys):
    code, err = _run(capsys, "--config", str(tmp_path / "nope.json"))
    assert code == 2 and "cannot read config file" in err and "nope.json" in err


def test_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code, err = _run(capsys, "--out", str(f))
    assert code == 2 and "is not a directory" in err


def test_negative_seed(capsys):
    code, err = _run(capsys, "--seed", "-1")
    assert code == 2 and "--seed" in err


def test_load_config_reads_fields(tmp_path):
    from tsdp.reports.run import load_config

    f = tmp_path / "half.json"
    f.write_text(json.dumps({"L": 4, "batch_size": 160}))
    name, cfg = load_config(str(f))
    assert name == "half" and float(cfg.r) == 0.5 and cfg.batch_size == 160


def test_interrupt_writes_a_partial_report_and_exits_130(tmp_path, monkeypatch, capsys):
    """Ctrl-C (KeyboardInterrupt) during the computation: results.json, report.md and index.html are
    still written, marked interrupted, with the unfinished sections null; the CLI exits 130."""
    import tsdp.reports.run as run

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "accounting_section", interrupted)
    code, err = _run(capsys, "--no-audit", "--out", str(tmp_path))
    assert code == 130 and "interrupted" in err
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["meta"]["status"] == "interrupted"
    assert res["accounting"] is None and res["claims"] is None
    assert "Not computed" in (tmp_path / "report.md").read_text()
    assert "Not computed" in (tmp_path / "index.html").read_text()


def test_without_out_the_report_goes_to_reports_out_of_the_current_folder(tmp_path, monkeypatch, capsys):
    """No --out: the report is written under the current folder's reports/out/<name>/, never beside the installed
    package (site-packages for a wheel); interrupted at once (as above), so only its partial files are written."""
    import tsdp.reports.run as run

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "accounting_section", interrupted)
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, "--no-audit")
    assert code == 130, err
    assert json.loads((tmp_path / "reports" / "out" / "default" / "results.json").read_text())["meta"]["name"] == \
        "default"


def test_an_unwritable_default_folder_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """No --out where reports/out/ cannot be made (a file named reports: a read-only folder for root too): exit 2,
    one line naming the folder and --out, before any work."""
    (tmp_path / "reports").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, "--no-audit")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("tsdp report: error: cannot write the report to reports/out/default/") and \
        "--out" in lines[0], lines[0]
