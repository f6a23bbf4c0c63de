"""verify.rounded: the text a person copies reads back on the safe side of the number (at least it for an upper
bound, at most it for a lower bound), within one unit of its last digit (hypothesis over floats, digit counts and
both formats: significant digits and digits after the point)."""
import math
from decimal import Decimal

from hypothesis import given, strategies as st

from tsdp.verify.rounded import DIGITS, rounded_down, rounded_nearest, rounded_up

FINITE = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)


@given(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False), st.integers(1, 9))
def test_rounded_up_reads_back_at_least_x_with_at_most_its_digits(x, digits):
    text = rounded_up(x, digits)
    value = Decimal(text)
    assert float(text) >= x
    assert len(value.normalize().as_tuple().digits) <= digits
    assert value <= Decimal(x) * (1 + Decimal(10) ** (1 - digits))


@given(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False), st.integers(1, 9))
def test_rounded_down_reads_back_at_most_x_with_at_most_its_digits(x, digits):
    text = rounded_down(x, digits)
    value = Decimal(text)
    assert float(text) <= x
    assert len(value.normalize().as_tuple().digits) <= digits
    assert value >= Decimal(x) * (1 - Decimal(10) ** (1 - digits))


@given(FINITE, st.integers(1, 9))
def test_both_directions_hold_for_any_sign_in_significant_digits(x, digits):
    up, down = rounded_up(x, digits), rounded_down(x, digits)
    assert float(down) <= x <= float(up)
    assert not up.startswith("-0") or float(up) != 0  # never a negative zero


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False), st.integers(0, 6))
def test_digits_after_the_point_bracket_x_within_one_unit(x, decimals):
    up, down = rounded_up(x, decimals, fixed=True), rounded_down(x, decimals, fixed=True)
    assert float(down) <= x <= float(up)
    unit = Decimal(10) ** -decimals
    assert Decimal(up) - Decimal(down) <= unit
    for text in (up, down):  # Python's f format: exactly ``decimals`` digits after the point
        assert len(text.partition(".")[2]) == decimals


def test_non_finite_values_are_printed_as_python_prints_them():
    assert rounded_up(math.inf, 4) == "inf" and rounded_down(-math.inf, 4) == "-inf"
    assert rounded_up(math.nan, 4) == "nan"


def test_a_value_just_above_its_nearest_text_goes_up_and_one_just_below_goes_down():
    x = 1.00004  # nearest to 4 significant digits: "1", below x
    assert rounded_up(x, 4) == "1.001" and rounded_down(x, 4) == "1"
    y = 2.99996  # nearest: "3", above y
    assert rounded_up(y, 4) == "3" and rounded_down(y, 4) == "2.999"
    assert rounded_up(0.12344, 4, fixed=True) == "0.1235" and rounded_down(0.12346, 4, fixed=True) == "0.1234"


@given(FINITE, st.booleans())
def test_tsdps_printed_precision_brackets_x_in_both_formats(x, fixed):
    """The default precision (DIGITS) every command and page prints: sound text ≥ x ≥ attained text."""
    if fixed and abs(x) > 1e15:
        x = math.copysign(1e15, x)  # f format of a huge float: digits beyond a float's precision say nothing
    assert float(rounded_down(x, fixed=fixed)) <= x <= float(rounded_up(x, fixed=fixed))
    assert rounded_up(x, fixed=fixed) == rounded_up(x, DIGITS, fixed=fixed)


@given(FINITE, st.integers(1, 9), st.booleans())
def test_rounded_nearest_is_pythons_nearest_text_and_zero_is_0(x, digits, fixed):
    text = rounded_nearest(x, digits, fixed=fixed)
    python = format(x, f".{digits}{'f' if fixed else 'g'}")
    assert text == ("0" if float(python) == 0 else python)
    assert float(rounded_down(x, digits, fixed=fixed)) <= float(text) <= float(rounded_up(x, digits, fixed=fixed))


def test_a_gap_that_rounds_to_zero_prints_0_never_a_negative_zero():
    assert rounded_nearest(-1e-9, fixed=True) == "0" and rounded_nearest(-0.0) == "0"
    assert rounded_nearest(math.inf) == "inf" and rounded_nearest(math.nan, fixed=True) == "nan"
