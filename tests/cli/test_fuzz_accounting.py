"""A hypothesis fuzz of `tsdp epsilon` and `tsdp profile` over random flag values.

Invalid values (any float, NaN, inf, strings, negative or huge integers): never a traceback;
exit 2 with one line naming a flag, or an answer. Valid values: the sound ε (upper bound)
is >= the attained ε (lower bound), non-increasing in σ and non-decreasing in the number of
steps; H_α is in [0, 1] and non-increasing in α. A coarse --discretization keeps each
accounting call well under a second.
"""
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from cli_run import error_line, run_cli

COARSE = ["--discretization", "0.02"]
REL = 1e-9  # float slack of the monotonicity comparisons

junk = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10**30, max_value=10**30).map(str),
    st.sampled_from(["", "abc", "1e308", "-1e308", "1e-308", "0", "-0", "nan", "inf", "-inf", "1,5", "0x10"]),
)
flags = st.sampled_from(["--delta", "--steps", "--epochs", "--sigma", "--N", "--batch-size", "--instances",
                         "--discretization", "--tail-mass-truncation", "--epsilon", "--L", "--w", "--v"])


def _ok_or_one_line(code, out, err):
    assert "Traceback" not in err
    assert code in (0, 2), (code, err)
    if code == 2:
        assert error_line(err).startswith("tsdp")
    else:
        json.loads(out)


@settings(max_examples=40)
@given(flag=flags, value=junk)
def test_epsilon_random_flag_values_never_traceback(flag, value):
    """One flag at a random value (written ``--flag=value``, so -1e308 is a value), the others valid."""
    given_flags = {"--delta": "1e-5", "--steps": "3", "--discretization": "0.02"}
    if flag == "--epsilon":
        del given_flags["--delta"]
    given_flags[flag] = value
    _ok_or_one_line(*run_cli(["epsilon", "--json", *(f"{k}={v}" for k, v in given_flags.items())]))


@settings(max_examples=20)
@given(alpha=st.lists(junk, min_size=1, max_size=3), theorem=st.sampled_from([None, "T1", "T6", "T9", "T13", "T99"]))
def test_profile_random_values_never_traceback(alpha, theorem):
    argv = ["profile", "--json", *(["--theorem", theorem] if theorem else [])]
    argv += [f"--alpha={a}" for a in alpha[:1]] + [f"--epsilon={a}" for a in alpha[1:]]
    _ok_or_one_line(*run_cli(argv))


def _eps(sigma, steps, delta):
    code, out, err = run_cli(["epsilon", "--delta", repr(delta), "--steps", str(steps), "--sigma", repr(sigma),
                              *COARSE, "--json"])
    assert code == 0, err
    r = json.loads(out)
    return r["epsilon"], r["epsilon_attained"]


@settings(max_examples=12)
@given(sigma=st.floats(0.4, 4.0), factor=st.floats(1.05, 3.0), steps=st.integers(1, 30), more=st.integers(1, 30),
       delta=st.floats(1e-8, 1e-2))
def test_valid_epsilon_is_ordered_and_monotone(sigma, factor, steps, more, delta):
    sound, attained = _eps(sigma, steps, delta)
    assert math.isfinite(sound) and sound >= 0
    assert attained is None or attained <= sound * (1 + REL)
    sound_more_noise, _ = _eps(sigma * factor, steps, delta)
    assert sound_more_noise <= sound * (1 + REL) + 1e-12
    sound_more_steps, _ = _eps(sigma, steps + more, delta)
    assert sound_more_steps >= sound * (1 - REL) - 1e-12


@settings(max_examples=10)
@given(alphas=st.lists(st.floats(0.0, 1e6), min_size=2, max_size=6), sigma=st.floats(0.05, 10.0))
def test_valid_profile_in_unit_interval_and_non_increasing(alphas, sigma):
    alphas = sorted(alphas)
    code, out, err = run_cli(["profile", "--sigma", repr(sigma), "--json", "--alpha", *map(repr, alphas)])
    assert code == 0, err
    delta = json.loads(out)["delta"]
    assert all(0 <= d <= 1 for d in delta)
    assert all(b <= a + 1e-12 for a, b in zip(delta, delta[1:]))
