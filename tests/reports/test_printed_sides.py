"""Every thin name that prints a bound goes through the one home of rounding (tsdp.verify.rounded) and keeps its
side: a sound ε, δ or σ (an upper bound) reads back as at least the exact value, an attained or audited ε (a lower
bound) as at most it. Hypothesis over floats of any sign and size; each layer's text must equal the home's at the
layer's own digits, so no layer rounds on its own (the commands' and the report's whole outputs are swept in
tests/cli/test_printed_bounds_sweep.py and tests/reports/test_report_rounding.py)."""
import pytest
from hypothesis import example, given, strategies as st

from tsdp.cli.output import sigma_text
from tsdp.reports.claim_base import fmt4, lower4, upper4
from tsdp.reports.render import fmt, lower, upper
from tsdp.verify.rounded import rounded_down, rounded_nearest, rounded_up

FINITE = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)

UPPER = [("report table", upper, lambda x: rounded_up(x, 4)), ("report prose", upper4, lambda x: rounded_up(x, 4)),
         ("calibrated σ", sigma_text, lambda x: rounded_up(x, 6))]
LOWER = [("report table", lower, lambda x: rounded_down(x, 4)), ("report prose", lower4, lambda x: rounded_down(x, 4))]


@pytest.mark.parametrize("layer, printed, home", UPPER, ids=[u[0] for u in UPPER])
@given(x=FINITE)
def test_every_printed_sound_value_is_at_least_the_exact_one(layer, printed, home, x):
    text = printed(x)
    assert float(text) >= x, (layer, text, x)
    assert text == home(x), layer


@pytest.mark.parametrize("layer, printed, home", LOWER, ids=[u[0] for u in LOWER])
@given(x=FINITE)
def test_every_printed_attained_value_is_at_most_the_exact_one(layer, printed, home, x):
    text = printed(x)
    assert float(text) <= x, (layer, text, x)
    assert text == home(x), layer


@given(x=FINITE, digits=st.integers(1, 9))
def test_a_table_number_without_a_side_is_the_homes_nearest(x, digits):
    assert fmt(x, digits) == rounded_nearest(x, digits)


@given(x=FINITE)
@example(x=-0.0)
def test_a_prose_number_without_a_side_is_the_homes_nearest(x):
    assert fmt4(x) == rounded_nearest(x, 4)


def test_a_missing_value_is_each_layers_own_word():
    assert upper(None) == lower(None) == "n/a" and upper4(None) == lower4(float("inf")) == "none"
