"""Edges a newcomer types: a NaN or infinite value is named as such (before: 'must be > 0 (got inf)', which inf is),
and `tsdp forecast calibrate` at δ equal to its total variation answers as its --help says."""
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


@pytest.mark.parametrize("r, w, context_length, releases, delta", [
    ("0.5", "1", "1", "1", "0.5"),  # 1 - (1 - r)^(m k) = 1/2 exactly
    ("0.5", "1", "1", "2", "0.75"),  # two releases: 3/4
    ("0.5", "3", "2", "1", "0.75"),  # m = min(w, L_C) = 2: 3/4
    ("0.25", "1", "1", "3", "0.578125"),  # 1 - (3/4)^3 = 37/64
])
def test_at_delta_equal_to_the_total_variation_every_sigma_meets_the_target(r, w, context_length, releases, delta):
    """`--help`: at δ ≥ 1 - (1 - r)^(m k) every σ > 0 meets the target. At δ equal to it (a float these r make exact)
    the run is (0, δ)-DP at every σ; before, the limit's rounding up (1e-12 relative, for the log-space product) put
    it just above δ, the search ran and the command exited 2 with 'met even at σ = 0.001'."""
    import json
    from fractions import Fraction

    argv = ["forecast", "calibrate", "--epsilon", "1", "--delta", delta, "--r", r, "--w", w, "--context-length",
            context_length, "--releases", releases]
    exact = 1 - (1 - Fraction(r)) ** (min(int(w), int(context_length)) * int(releases))  # T15's limit, composed
    assert exact == Fraction(delta)
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert out.startswith(f"every σ > 0 meets the target: δ = {delta} ≥ {delta},")
    code, out, _ = run_cli([*argv, "--json"])
    got = json.loads(out)
    assert code == 0 and got["every_sigma"] is True and got["epsilon"] == 0
    assert Fraction(got["total_variation"]) == exact  # the exact limit is a float here: no rounding up needed


@pytest.mark.parametrize("argv, flag, value", [
    (["train", "--model", "simple-ff", "--epsilon", "1", "--delta", "1e-5", "--clip", "inf"], "--clip", "inf"),
    (["train", "--model", "simple-ff", "--epsilon", "1", "--delta", "1e-5", "--lr", "nan"], "--lr", "nan"),
    (["train", "--model", "simple-ff", "--epsilon", "inf", "--delta", "1e-5"], "--epsilon", "inf"),
    (["train", "--model", "simple-ff", "--steps", "3", "--delta", "1e-5", "--sigma", "inf"], "--sigma", "inf"),
])
def test_train_names_a_non_finite_value_as_such(argv, flag, value):
    """`tsdp train` said 'must be > 0 (got inf)' for these too."""
    code, out, err = run_cli(argv)
    assert code == 2 and not out
    assert error_line(err) == f"tsdp train: error: invalid {flag}: must be finite and > 0 (got {value})"


@pytest.mark.parametrize("path, why", [("{tmp}/missing.pt", "no such file"), ("{tmp}", "is a folder, not a file")])
def test_a_model_file_that_is_not_there_says_so(tmp_path, path, why):
    """`forecast predict --model-file` at a path with no file said it 'is not a model file written by this version's
    `tsdp train --save` (a model saved by another version may have other layers; FileNotFoundError ...)'."""
    path = path.format(tmp=tmp_path)
    code, out, err = run_cli(["forecast", "predict", "--model-file", path, "--values", "1", "2", "--epsilon", "1",
                              "--delta", "1e-5"])
    assert code == 2 and not out
    assert error_line(err) == f"tsdp forecast predict: error: invalid --model-file: {path}: {why}"


@pytest.mark.parametrize("argv, words", [
    (["epsilon", "--delta", "1e-5", "--steps", "1"], "1 training step -> 1 composition of the per-step bound"),
    (["epsilon", "--delta", "1e-5", "--epochs", "1", "--top", "deterministic"],
     "1 epoch -> 1 composition of the per-epoch bound"),
    (["epsilon", "--delta", "1e-5", "--steps", "2"], "2 training steps -> 2 compositions of the per-step bound"),
    (["calibrate", "--epsilon", "1", "--delta", "0.6", "--steps", "1"], "; 1 composition"),
])
def test_one_is_counted_in_the_singular(argv, words):
    """'1 training steps -> 1 compositions' read as a slip to a newcomer."""
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert words in out and "1 compositions" not in out and "1 training steps" not in out
