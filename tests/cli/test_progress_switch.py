"""``--no-progress`` hides the accountant's own progress bars too (verify.pld.limits.NO_PROGRESS_ENV), in this process
and in the workers it starts (they inherit the environment): before, `tsdp report --no-progress` still drew the
"PLD grid" bars of the accounting under it."""
import os

import pytest

from tsdp.verify.pld import limits


@pytest.mark.parametrize("value, hidden", [(None, False), ("", False), ("0", False), ("1", True), ("yes", True)])
def test_the_accountant_bars_follow_the_switch(monkeypatch, value, hidden):
    if value is None:
        monkeypatch.delenv(limits.NO_PROGRESS_ENV, raising=False)
    else:
        monkeypatch.setenv(limits.NO_PROGRESS_ENV, value)
    with limits._progress(3, "PLD grid") as bar:
        assert bar.disable is hidden


@pytest.mark.parametrize("command, work", [("report", "tsdp.reports.run.build_report"),
                                           ("verify", "tsdp.verify.checks.runner.verify")])
@pytest.mark.parametrize("before", [None, "0"])
def test_no_progress_sets_the_switch_for_the_run_and_its_workers_only(monkeypatch, tmp_path, command, work, before):
    """The switch is set while the command's work runs (the workers it starts inherit it) and put back as it was when
    the command returns, an error included: before, `main([..., "--no-progress"])` left it set in the caller's
    process, and every later accounting there drew no bar (the test suite's in-process runs: a PLD grid bar test
    drew nothing after an earlier test had run `report --no-progress`)."""
    import importlib

    from cli_run import run_cli

    from tsdp.theorems.config import ConfigError

    if before is None:
        monkeypatch.delenv(limits.NO_PROGRESS_ENV, raising=False)
    else:
        monkeypatch.setenv(limits.NO_PROGRESS_ENV, before)
    seen = []

    def work_that_stops(*args, **kwargs):
        seen.append(os.environ.get(limits.NO_PROGRESS_ENV))
        with limits._progress(3, "PLD grid") as bar:
            seen.append(bar.disable)
        raise ConfigError("seed", "stopped here by the test")

    module, name = work.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), name, work_that_stops)
    argv = {"report": ["report", "--no-progress", "--no-audit", "--out", tmp_path / "out"],
            "verify": ["verify", "--no-progress", "--quick"]}[command]
    code, _, err = run_cli(argv)
    assert code == 2 and "stopped here by the test" in err
    assert seen == ["1", True]  # hidden in the run
    assert os.environ.get(limits.NO_PROGRESS_ENV) == before  # as it was after it
    with limits._progress(3, "PLD grid") as bar:
        assert not bar.disable
    seen.clear()
    code, _, _ = run_cli([a for a in argv if a != "--no-progress"])
    assert code == 2 and seen == [before, False]  # without the flag the switch is left alone
