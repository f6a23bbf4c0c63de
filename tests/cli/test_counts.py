"""Count flags read integral values in scientific notation (``--trials 1e6``) exactly and refuse other values in one
line naming the flag; every ``type=int`` flag of every command reads through the same parser."""
import argparse
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli_run import error_line, run_cli
from tsdp.cli.counts import count


@given(st.integers(min_value=-(2 ** 63 - 1), max_value=2 ** 63 - 1))
def test_a_count_reads_back_every_spelling_of_an_integer(n):
    """Plain digits, digit groups and exact scientific notation (mantissa·10^k) all read as n."""
    assert count(str(n)) == n
    assert count(f"{n:_}") == n
    assert count(format(Decimal(n), "E")) == n  # e.g. 1.000000E+6: integral, exact at any size


@given(st.integers(min_value=1, max_value=10 ** 6), st.integers(min_value=1, max_value=6))
def test_a_fraction_in_scientific_notation_is_refused(numerator, places):
    """m·10^-k that is not an integer (1.5e0, 25e-1) is refused; one that is (20e-1) is read."""
    text = f"{numerator}e-{places}"
    if numerator % 10 ** places:
        with pytest.raises(argparse.ArgumentTypeError, match="whole number"):
            count(text)
    else:
        assert count(text) == numerator // 10 ** places


@pytest.mark.parametrize("text", ["1.5e0", "0.5", "inf", "-inf", "nan", "1e", "ten", "", "1e6.5", "0x10"])
def test_non_integers_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be a whole number.*got"):
        count(text)


def test_large_counts_are_exact_and_bounded():
    """1e18 is 10^18 exactly (not the float nearest it); past 2^63 - 1 (1e19, 1e400, a 400-digit integer) a count is
    refused."""
    assert count("1e18") == 10 ** 18 and count(str(2 ** 63 - 1)) == 2 ** 63 - 1 and count("9.223372036854775807e18") == 2 ** 63 - 1 != int(9.223372036854775807e18)
    for text in ("1e19", "1e400", "-1e400", "1" + "0" * 400, str(2 ** 63)):
        with pytest.raises(argparse.ArgumentTypeError, match=r"2\^63"):
            count(text)


def test_every_int_flag_reads_counts():
    """No flag of any command is left on plain int (which refuses 1e6)."""
    from tsdp.cli.main import build_parser

    def actions(parser):
        for action in parser._actions:  # noqa: SLF001
            yield action
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                for sub in action.choices.values():
                    yield from actions(sub)

    every = list(actions(build_parser()))
    assert not [a.option_strings for a in every if a.type is int]
    assert sum(a.type is count for a in every) > 40  # the walk reached the commands' count flags


def test_scientific_counts_on_the_command_line():
    """`--steps 1e2` is `--steps 100` (the same answer); `--trials 1.5e0` is one line naming --trials."""
    same = [run_cli(["epsilon", "--steps", s, "--delta", "1e-5", "--json"]) for s in ("100", "1e2", "1_00")]
    assert same[0][0] == 0 and same[0][1] == same[1][1] == same[2][1]
    code, out, err = run_cli(["audit", "--trials", "1.5e0", "--delta", "1e-5"])
    assert code == 2 and out == "" and "argument --trials: must be a whole number" in error_line(err)
