"""`tsdp forecast calibrate` at the edges a newcomer types: a non-finite target says it must be
finite (before: 'must be > 0 (got inf)', which inf is)."""
import pytest

from cli_run import error_line, run_cli


@pytest.mark.parametrize("argv, flag, value", [
    (["forecast", "calibrate", "--epsilon", "inf", "--delta", "1e-5"], "--epsilon", "inf"),
    (["forecast", "calibrate", "--epsilon", "nan", "--delta", "1e-5"], "--epsilon", "nan"),
    (["forecast", "calibrate", "--epsilon", "1", "--delta", "nan"], "--delta", "nan"),
    (["forecast", "calibrate", "--epsilon", "1", "--delta=-inf"], "--delta", "-inf"),
])
def test_a_non_finite_value_is_named_as_such(argv, flag, value):
    code, out, err = run_cli(argv)
    assert code == 2 and not out
    assert error_line(err) == f"tsdp forecast {argv[1]}: error: invalid {flag}: must be finite (not NaN or inf) " \
                              f"(got {value})"
