"""`tsdp calibrate` prints σ rounded up: the σ a user copies from its line spends at most the target."""
import json
import re

import pytest

from cli_run import run_cli
from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accounting import epsilon


@pytest.mark.parametrize("target,epochs", [(2.0, 10), (0.7, 3), (5.0, 1)])
def test_the_printed_sigma_is_at_least_the_calibrated_one_and_keeps_the_budget(target, epochs):
    """The text's σ (six significant digits) is ≥ the JSON's exact σ, within one unit of its last digit, and the
    sound ε recomputed at the printed σ (the same steps, δ and grid) is ≤ the target."""
    argv = ["calibrate", "--epsilon", target, "--delta", "1e-5", "--epochs", epochs, "--top", "deterministic"]
    code, out, _ = run_cli(argv)
    assert code == 0
    printed = float(re.match(r"σ = (\S+) gives", out).group(1))
    code, out_json, _ = run_cli(argv + ["--json"])
    exact = json.loads(out_json)["sigma"]
    assert exact <= printed <= exact * (1 + 1e-5)
    spent = epsilon(TrainingConfig(top="deterministic", sigma=printed), 1e-5, epochs=epochs).epsilon
    assert spent <= target


@pytest.mark.parametrize("truncation", ["0", "1e-9"])
def test_a_sigma_calibrated_at_another_tail_truncation_keeps_the_budget_as_train_accounts_it(truncation):
    """The target is the sound ε of 10 steps at σ = 1 accounted with ``--tail-mass-truncation`` (discretisation 0.002:
    no coarse search), so σ = 1 meets it with no room. `tsdp train` accounts with the default truncation (its ledger is
    ``PldAccountant("sound")`` over ``training_event``), which keeps less of the tail than 0 (measured: 1.6e-11 more
    ε at σ = 1); the calibrated σ must spend at most the target both as train accounts it and at the flag's own
    truncation, and the printed ε is the larger of the two."""
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    config, grid = TrainingConfig(), 0.002
    target = epsilon(config, 1e-5, steps=10, estimates=("sound",), discretization=grid,
                     tail_mass_truncation=float(truncation)).epsilon
    code, out, err = run_cli(["calibrate", "--epsilon", repr(target), "--delta", "1e-5", "--steps", "10",
                              "--discretization", grid, "--tail-mass-truncation", truncation, "--json"])
    assert code == 0, err
    result = json.loads(out)
    sigma = result["sigma"]
    as_train = PldAccountant("sound", discretization=grid).compose(
        training_event(config.with_(sigma=sigma), steps=10)).get_epsilon(1e-5)
    as_asked = epsilon(config.with_(sigma=sigma), 1e-5, steps=10, estimates=("sound",), discretization=grid,
                       tail_mass_truncation=float(truncation)).epsilon
    assert as_train <= target and as_asked <= target, (sigma, as_train, as_asked, target)
    assert result["epsilon"] == max(as_train, as_asked)


def test_the_help_names_the_accountants_default_truncation_and_bad_values_are_refused_by_calibrate():
    """The help's default is the accountant's (one home: verify.pld), and calibrate refuses a truncation outside
    [0, 1) or not finite with one error line naming the flag (exit 2)."""
    from cli_run import error_line
    from tsdp.verify.pld import DEFAULT_TAIL_MASS_TRUNCATION

    code, out, _ = run_cli(["calibrate", "--help"])
    assert code == 0 and f"(default {DEFAULT_TAIL_MASS_TRUNCATION:g}," in " ".join(out.split())
    for bad in ("-1", "1", "nan", "inf"):
        code, _, err = run_cli(["calibrate", "--epsilon", "3", "--delta", "1e-5", "--steps", "10",
                                "--tail-mass-truncation", bad])
        assert code == 2 and "--tail-mass-truncation" in error_line(err), (bad, err)


@pytest.mark.parametrize("schedule", [["--steps", "10"], ["--epochs", "2", "--top", "deterministic"],
                                      ["--epochs", "1", "--top", "shuffle"], ["--steps", "10", "--bottom", "poisson"],
                                      ["--steps", "10", "--instances", "2"],
                                      ["--epochs", "2", "--top", "deterministic", "--instances", "2"],
                                      ["--epochs", "1", "--top", "shuffle", "--instances", "2", "--batch-size", "64"],
                                      ["--steps", "10", "--top", "pooled", "--theorem", "T13"],
                                      ["--steps", "10", "--sigma-context", "1", "--sigma-forecast", "1"],
                                      ["--steps", "10", "--theorem", "T11", "--sigma-context", "0.5",
                                       "--sigma-forecast", "2"]])
def test_a_delta_above_the_total_variation_says_every_sigma_meets_the_target(schedule, monkeypatch):
    """δ = 0.6 is above the probability that the changed element is used at all (at most 0.35 in each of these runs):
    the line says every σ meets the target, with that probability, and never offers the search's floor σ = 0.01 as the
    calibrated answer; --json says it in ``every_sigma`` with the bound in ``total_variation``. The answer needs no
    search: no accounting runs (it fails if one does), so no note about a σ's PLD grid is printed beside it, and the
    JSON's counts are 0 with ε = 0 at the floor σ."""
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.calibration import SIGMA_MIN

    def no_accounting(*args, **kwargs):
        raise AssertionError("an accounting ran")

    monkeypatch.setattr(PldAccountant, "get_epsilon", no_accounting)
    argv = ["calibrate", "--epsilon", "1", "--delta", "0.6", *schedule]
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert "note" not in err, err
    head = out.splitlines()[0]
    assert head.startswith("every σ > 0 meets the target: δ = 0.6 ≥ ") and "gives" not in head, head
    code, out_json, err = run_cli(argv + ["--json"])
    assert code == 0 and "note" not in err, err
    result = json.loads(out_json)
    assert result["every_sigma"] is True and 0 < result["total_variation"] <= 0.35
    assert float(re.search(r"≥ (\S+),", head).group(1)) >= result["total_variation"]
    assert (result["sigma"], result["epsilon"], result["sigma_rejected"]) == (SIGMA_MIN, 0.0, None)
    assert (result["evaluations"], result["coarse_evaluations"], result["coarse_discretization"]) == (0, 0, None)


def test_the_search_floor_is_named_as_such():
    """ε = 1e9 at δ = 1e-5 is met at the search's floor σ = 0.01 with δ far below the total variation: the line says the
    floor is where the search stopped, not that it is the smallest σ."""
    code, out, err = run_cli(["calibrate", "--epsilon", "1e9", "--delta", "1e-5", "--steps", "10"])
    assert code == 0, err
    assert out.splitlines()[0].startswith("σ = 0.01 (the search's floor; smaller σ not searched) gives sound ε = ")
