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


@pytest.mark.parametrize("argv", [
    ["report", "--no-progress", "--config", "{bad}", "--out", "{out}"],  # stops at the config file: not JSON
    ["verify", "--no-progress", "--quick", "--select", "no check is named this"],  # stops: no check selected
])
def test_no_progress_sets_the_switch_for_the_run_and_its_workers(monkeypatch, tmp_path, argv):
    from cli_run import run_cli

    monkeypatch.delenv(limits.NO_PROGRESS_ENV, raising=False)
    bad = tmp_path / "config.json"
    bad.write_bytes(b"\xff\xfe not json")
    code, _, _ = run_cli([a.format(bad=bad, out=tmp_path / "out") for a in argv])
    assert code == 2
    assert os.environ.get(limits.NO_PROGRESS_ENV) == "1"
    monkeypatch.delenv(limits.NO_PROGRESS_ENV)
    code, _, _ = run_cli([a.format(bad=bad, out=tmp_path / "out") for a in argv if a != "--no-progress"])
    assert code == 2
    assert limits.NO_PROGRESS_ENV not in os.environ
