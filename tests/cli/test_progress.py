"""Long silent work shows a line on stderr that moves (tests never depend on its text
otherwise). The heartbeat of `tsdp bench accounting` redraws its phase and elapsed time every
second while the caller is blocked in a library call."""
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
