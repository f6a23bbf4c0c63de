"""verify.rounded.rounded_up: the text a person copies reads back as at least the number, within one unit of its
last digit (hypothesis over positive floats and digit counts)."""
from decimal import Decimal

from hypothesis import given, strategies as st

from tsdp.verify.rounded import rounded_up


@given(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False), st.integers(1, 9))
def test_rounded_up_reads_back_at_least_x_with_at_most_its_digits(x, digits):
    text = rounded_up(x, digits)
    value = Decimal(text)
    assert float(text) >= x
    assert len(value.normalize().as_tuple().digits) <= digits
    assert value <= Decimal(x) * (1 + Decimal(10) ** (1 - digits))
