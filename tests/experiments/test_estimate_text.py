"""The pre-run estimate reads as a person reads a time: a short grid in seconds (never "about 0.0 min"), a long one in
minutes or hours, always within rounding of the seconds it stands for."""
import re

from hypothesis import given
from hypothesis import strategies as st

from tsdp.experiments.estimate import PlanEstimate, duration_text

UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}


@given(st.floats(min_value=1e-3, max_value=1e7))
def test_the_text_stands_for_the_seconds(seconds):
    """The number and unit read back to the seconds within the printed precision (2 significant digits or 1 decimal
    of the unit), and never as zero."""
    number, unit = re.fullmatch(r"([0-9.e+-]+) (s|min|h)", duration_text(seconds)).groups()
    value = float(number) * UNITS[unit]
    assert value > 0
    assert abs(value - seconds) <= max(0.05 * seconds, 0.05 * UNITS[unit])
    assert unit == ("s" if seconds < 120 else "min" if seconds < 7200 else "h")


def test_a_short_grid_is_estimated_in_seconds():
    estimate = PlanEstimate(cells=2, steps=10, seconds_per_step={}, seconds_per_cell={}, accounting_seconds=0.0,
                            seconds=2.4)
    assert "about 2.4 s in one process" in estimate.line() and "min" not in estimate.line()
