"""Long silent work shows a line on stderr that moves (tests never depend on its text
otherwise). The heartbeat of `tsdp bench accounting` redraws its phase and elapsed time every
second while the caller is blocked in a library call."""
import re
import time

import pytest


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_heartbeat_moves_while_the_caller_is_blocked(capsys):
    from tsdp.cli.output import Heartbeat

    with Heartbeat("bench") as beat:
        beat.phase("library construction")
        time.sleep(2.5)  # a blocked caller: only the heartbeat's thread draws
    err = capsys.readouterr().err
    assert "library construction [00:02]" in err
    assert err.count("library construction") >= 2  # redrawn, not drawn once


@pytest.mark.parametrize("violation", [False, True])
def test_a_bar_never_shares_a_line_with_what_follows_it_in_a_file(tmp_path, monkeypatch, violation):
    """stderr a file (a log): a bar's carriage returns do not end its line there, so a note or a message written after
    the bar (cleared or not) stands on a line of its own, as it does on a terminal."""
    import sys

    from tqdm import tqdm

    import tsdp.reports.run as run
    from tsdp.cli.main import main

    case = {"theorem": "T6", "bound": "T6", "steps": 1, "epsilon_lower": 4.2, "epsilon_sound": 3.7,
            "confidence": 0.95, "trials": 5000}

    def build(*a, **k):
        left = tqdm(total=3, desc="left on screen", mininterval=0)
        left.update(1)  # a bar still drawn (no clearing pass) when the note comes
        print("tsdp report: note: first", file=sys.stderr)
        left.close()
        bar = tqdm(total=3, desc="tsdp report", leave=False, mininterval=0)
        bar.update(2)
        bar.close()  # cleared: '\r' + spaces + '\r', which a file keeps on the line
        print("tsdp report: note: second", file=sys.stderr)
        return {"meta": {"elapsed_s": 1.0}, "accounting": {"theorem": "T6", "rows": []}, "claims": [],
                "consistency": {"summary": {"pass": 1, "fail": 0, "finding": 0}},
                "tightness": {"audit_status": "ran"}, "violation": violation, "violations": [case] if violation else []}

    monkeypatch.setattr(run, "build_report", build)
    with open(tmp_path / "err.log", "w") as log:
        monkeypatch.setattr(sys, "stderr", log)
        main(["report", "--out", str(tmp_path / "r")])
        monkeypatch.undo()
    lines = (tmp_path / "err.log").read_bytes().decode().split("\n")  # '\r' kept: a file's lines end at '\n' only
    assert "tsdp report: note: first" in lines and "tsdp report: note: second" in lines
    assert any(line.startswith("PRIVACY VIOLATION") for line in lines) is violation


def test_progress_in_a_log_is_one_line_per_finished_bar(tmp_path):
    """`tsdp epsilon ... 2> log` with the two PLD grids (sound and attained, drawn at once): the log holds one whole
    line per finished bar, no carriage return nor cursor escape (tqdm's redraws and its positioning of concurrent
    bars, which a file shows as interleaved fragments). A fresh process (in this one an earlier test's in-process
    `report --no-progress` once left TSDP_NO_PROGRESS set, which hid every later bar: tests/cli/test_progress_switch.py),
    stderr a real file, the grids built (a cache folder of its own), the bars' delay 0 (a sitecustomize), so every
    bar ends in a line."""
    import os
    import subprocess
    import sys

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import tsdp.verify.pld.limits as limits\nlimits.PROGRESS_DELAY_S = 0.0\n")
    env = {k: v for k, v in os.environ.items() if k != "TSDP_NO_PROGRESS"}
    env.update(TSDP_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    with open(tmp_path / "err.log", "w") as log:
        done = subprocess.run([sys.executable, "-m", "tsdp", "epsilon", "--delta", "1e-5", "--steps", "10",
                               "--instances", "2", "--batch-size", "64"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=log, timeout=300)
    assert done.returncode == 0
    text = (tmp_path / "err.log").read_text()
    assert "\r" not in text and "\x1b" not in text, text[:500]
    grids = [line for line in text.splitlines() if line.startswith("PLD grid")]
    assert len(grids) >= 2 and all(re.fullmatch(r"PLD grid: 100% (\d+)/\1 \[.*\]", line) for line in grids), grids


def test_a_terminal_still_sees_the_bar_redrawn_and_a_log_only_bars_that_outlived_their_delay(monkeypatch):
    """On a terminal the bar is tqdm's (redrawn with carriage returns); on a file a bar closed before its delay writes
    nothing, as it would never have appeared on a terminal."""
    import io

    from tsdp.verify.progress import progress_bar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen, log = Terminal(), io.StringIO()
    for stream in (screen, log):
        with progress_bar(total=3, desc="stage", file=stream, mininterval=0) as bar:
            bar.update(3)
        with progress_bar(total=3, desc="quick", file=stream, delay=60) as bar:
            bar.update(3)
    assert screen.getvalue().count("\rstage") >= 2 and "quick" not in screen.getvalue()
    assert re.fullmatch(r"stage: 100% 3/3 \[.*\]\n", log.getvalue()), log.getvalue()


def test_a_terminal_without_a_width_gets_the_logged_line():
    """A pseudo-terminal that reports 0 columns (a fresh pty, `script` run without a terminal, some CI and container
    shells): tqdm draws nothing on it at all, not even its counts, so the accountant's bars were invisible there in
    every accounting. It is written to as a log is: one line when the bar closes."""
    import os

    from tsdp.verify.progress import LoggedBar, progress_bar

    master, slave = os.openpty()
    try:
        assert os.get_terminal_size(slave).columns == 0  # a fresh pty has no size
        with os.fdopen(slave, "w", closefd=False) as stream:
            assert stream.isatty()
            bar = progress_bar(total=3, desc="PLD grid", file=stream, leave=False, delay=0)
            assert isinstance(bar, LoggedBar)
            bar.update(3)
            bar.close()
        text = os.read(master, 4096).decode()
        assert "PLD grid: 100% 3/3" in text and "\x1b" not in text
    finally:
        os.close(master)
        os.close(slave)
