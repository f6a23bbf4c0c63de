"""`tsdp report --out DIR` replaces an earlier report only when the new one is complete.

A run that is interrupted (Ctrl-C) or fails leaves the old report in DIR byte for byte,
stale figures included, and puts what it computed in DIR.incomplete/ with its status; no
temporary directory is left behind.
"""
import json

import pytest

from cli_run import error_line, run_cli


def _old_report(out):
    out.mkdir()
    files = {"results.json": '{"meta": {"status": "complete"}}', "report.md": "# old", "index.html": "<p>old</p>",
             "c1.png": "png"}
    for name, text in files.items():
        (out / name).write_text(text)
    return files


def _siblings(out):
    return sorted(p.name for p in out.parent.iterdir())


@pytest.mark.parametrize("raised, code", [(KeyboardInterrupt, 130), (FileNotFoundError("planted"), None)])
def test_interrupted_or_failed_report_leaves_the_old_one(tmp_path, monkeypatch, raised, code):
    import tsdp.reports.run as run

    out = tmp_path / "report"
    old = _old_report(out)

    def broken(*args, **kwargs):
        raise raised

    monkeypatch.setattr(run, "accounting_section", broken)
    if code is None:  # not a user error: a bug keeps its traceback, the old report stays
        with pytest.raises(FileNotFoundError):
            run_cli(["report", "--no-audit", "--no-progress", "--out", str(out)])
    else:
        got, _, err = run_cli(["report", "--no-audit", "--no-progress", "--out", str(out)])
        assert got == code and "interrupted" in err
    assert {p.name: p.read_text() for p in out.iterdir()} == old
    partial = json.loads((tmp_path / "report.incomplete" / "results.json").read_text())
    assert partial["meta"]["status"] == ("interrupted" if code else "failed")
    assert _siblings(out) == ["report", "report.incomplete"]


def test_complete_report_replaces_the_old_one_whole(tmp_path):
    """publish of a complete staging directory: DIR holds exactly the new files (the stale PNG is gone)."""
    from tsdp.reports.run import publish, staging_dir

    out = tmp_path / "report"
    _old_report(out)
    staging = staging_dir(out)
    (staging / "results.json").write_text('{"meta": {"status": "complete"}}')
    (staging / "report.md").write_text("# new")
    assert (out / "report.md").read_text() == "# old"  # untouched while the new one is being written
    publish(staging, out, complete=True)
    assert sorted(p.name for p in out.iterdir()) == ["report.md", "results.json"]
    assert (out / "report.md").read_text() == "# new"
    assert _siblings(out) == ["report"]


@pytest.mark.parametrize("make", ["project", "dot", "root"])
def test_an_out_that_holds_something_else_is_refused_before_any_work(tmp_path, monkeypatch, make):
    """A complete report replaces --out DIR whole (renamed aside, then removed): DIR holding anything but an earlier
    report (a project, the working directory with `--out .`) was deleted after the run, and `--out /` (or `.`, whose
    name is empty) ran the report and then failed publishing it with a ValueError traceback. Refused now, one line
    naming --out, exit 2, nothing touched and no work done."""
    import tsdp.reports.run as run

    def no_work(*args, **kwargs):
        raise AssertionError("the report ran")

    monkeypatch.setattr(run, "accounting_section", no_work)
    project = tmp_path / "project"
    project.mkdir()
    (project / "thesis.tex").write_text("years of work")
    monkeypatch.chdir(project)
    out = {"project": str(project), "dot": ".", "root": "/"}[make]
    code, stdout, err = run_cli(["report", "--no-audit", "--no-progress", "--out", out])
    lines = [ln for ln in err.splitlines() if ": error: " in ln]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("tsdp report: error: invalid --out: "), err
    assert "Traceback" not in err
    assert (project / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in project.iterdir()) == ["thesis.tex"]


def test_an_earlier_report_or_an_empty_folder_is_still_accepted(tmp_path):
    from tsdp.reports.run import check_out_dir

    report = tmp_path / "report"
    _old_report(report)
    empty = tmp_path / "empty"
    empty.mkdir()
    for ok in (report, empty, tmp_path / "new" / "deeper"):
        check_out_dir(ok)


def _name_max(folder) -> int:
    import os

    return os.pathconf(folder, "PC_NAME_MAX")


@pytest.mark.parametrize("extra", [1, -1], ids=["over-the-limit", "staging-name-over-it"])
def test_an_out_whose_name_the_file_system_cannot_hold_is_refused_before_any_work(tmp_path, monkeypatch, extra):
    """--out with a name longer than the file system allows (NAME_MAX + 1: os.stat raised ENAMETOOLONG, a traceback)
    or one that fits but whose staging folder beside it (``.<name>.tmp-XXXXXXXX``, 14 bytes more) does not (NAME_MAX
    - 1: mkdtemp raised the same traceback once the report started): one line naming --out, exit 2, no work done,
    nothing made."""
    import tsdp.reports.run as run

    def no_work(*args, **kwargs):
        raise AssertionError("the report ran")

    monkeypatch.setattr(run, "accounting_section", no_work)
    out = tmp_path / ("r" * (_name_max(tmp_path) + extra))
    code, _, err = run_cli(["report", "--no-audit", "--no-progress", "--out", out])
    assert code == 2 and "Traceback" not in err, err
    assert error_line(err).startswith("tsdp report: error: invalid --out: "), err
    assert list(tmp_path.iterdir()) == []


def test_a_report_name_with_room_for_its_staging_folder_is_accepted(tmp_path):
    """The longest --out name the staging folder beside it leaves room for is still accepted."""
    from tsdp.reports.run import check_out_dir

    check_out_dir(tmp_path / ("r" * (_name_max(tmp_path) - 14)))


def test_a_refused_out_is_one_line_under_an_unwritable_home(tmp_path):
    """A refused --out is the one error line, also where HOME cannot be written: the report's modules imported
    matplotlib before the check, which then printed two lines of its own about its cache folder under HOME."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.write_text("HOME is a file: nothing can be made under it")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    done = subprocess.run([sys.executable, "-m", "tsdp", "report", "--no-audit", "--out", "/"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=dict(env, HOME=str(home)))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [error_line(done.stderr)], done.stderr


def test_a_published_report_folder_has_the_modes_of_any_new_folder(tmp_path):
    """The report's folder is its staging folder renamed: made by mkdtemp, it was 0700 whatever the umask (others
    could not read a report written to a shared folder, though every file in it was 0644). It now has the mode a
    plain new folder gets there."""
    import os

    from tsdp.reports.run import publish, staging_dir

    plain = tmp_path / "plain"
    plain.mkdir()
    out = tmp_path / "report"
    publish(staging_dir(out), out, complete=True)
    assert oct(out.stat().st_mode & 0o777) == oct(plain.stat().st_mode & 0o777)
    assert os.stat(plain).st_mode & 0o077, "a umask of 077 makes this test unable to fail"
