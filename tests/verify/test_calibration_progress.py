"""calibrate's progress line counts its accountings in words ("7 accountings"), not as tqdm's rate unit glued to
the count ("7accounting"): the bar's text as drawn, captured from a real calibration."""
import io
import re
import sys


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_calibration_bar_reads_as_a_count_of_accountings(monkeypatch):
    """On a terminal (tsdp.verify.progress draws tqdm's bar there)."""
    import tsdp.verify.progress as progress
    from tsdp.theorems.config import TrainingConfig
    from tsdp.verify.calibration import calibrate_sigma

    drawn = _Terminal()

    class Shown(progress.tqdm):  # drawn at once, into ``drawn``, whatever the delay
        def __init__(self, *a, **k):
            super().__init__(*a, **{**k, "delay": 0, "mininterval": 0, "file": drawn})

    monkeypatch.setattr(progress, "tqdm", Shown)
    monkeypatch.setattr(sys, "stderr", drawn)
    r = calibrate_sigma(TrainingConfig(), 4.0, 1e-5, steps=10, discretization=1e-2)
    text = drawn.getvalue()
    assert r.sigma > 0 and "calibrating σ" in text
    assert not re.search(r"\daccounting", text)
    counts = [int(n) for n in re.findall(r"calibrating σ: (\d+) accountings", text)]
    assert counts and max(counts) >= 2
