"""--confidence of the three audit commands: one rule (in (0.5, 1), :func:`tsdp.theorems.validate.check_confidence`),
one error line naming the flag, exit 2, before any work (audit-fn: before your module is imported). `tsdp audit`
refused 0.5 while audit-fn took 0.3 and audit-model had no --confidence at all (its bound was certified at 0.95
whatever the user wanted)."""
import pytest

from cli_run import error_line, run_cli

COMMANDS = {
    "audit": ["audit", "--trials", "100", "--delta", "1e-5"],
    "audit-fn --plan": ["audit-fn", "--plan", "--canaries", "100", "--delta", "1e-5"],
    "audit-fn": ["audit-fn", "--train", "tsdp_no_such_module:train", "--canaries", "20", "--delta", "1e-5"],
    "audit-model": ["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5",
                    "--epochs", "1"],
}
BAD = ["0.5", "0", "1", "-1", "nan", "inf", "0.3", "x"]


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_audit_command_refuses_a_confidence_outside_half_to_one(command, value):
    code, out, err = run_cli([*COMMANDS[command], "--confidence", value])
    line = error_line(err)
    assert code == 2 and out == ""
    assert line.startswith(f"tsdp {command.split()[0]}: error: ")
    if value == "x":  # argparse's own line: not a number
        assert "argument --confidence: invalid float value: 'x'" in line
    else:
        assert f"invalid --confidence: must be in (0.5, 1)" in line, line
    assert "Traceback" not in err


def test_the_api_refuses_the_same_values_with_the_same_words():
    from tsdp.attacks.montecarlo.options import Confidence
    from tsdp.theorems.config import ConfigError
    from tsdp.theorems.validate import check_confidence

    for value in (0.5, 0.0, 1.0, -1.0, float("nan")):
        with pytest.raises(ConfigError, match=r"must be in \(0\.5, 1\)"):
            Confidence(value)
        with pytest.raises(ConfigError, match=r"must be in \(0\.5, 1\)"):
            check_confidence(value)
    assert check_confidence(0.95) == 0.95 and Confidence(0.5000001).level == 0.5000001


def test_audit_model_takes_its_confidence():
    """audit-model's --confidence reaches the audit (it had no such flag: the bound held at 0.95 always)."""
    import tsdp.attacks.canary.trained_model as tm

    seen = {}

    class Stop(Exception):
        pass

    def audit_model(*args, **kwargs):
        seen.update(kwargs)
        raise Stop

    import unittest.mock

    with unittest.mock.patch.object(tm, "audit_model", audit_model), pytest.raises(Stop):
        from tsdp.cli.main import main
        main([*COMMANDS["audit-model"], "--confidence", "0.9"])
    assert seen["confidence"] == 0.9


@pytest.mark.parametrize("value", ["1", "95", "1e400"])
def test_a_confidence_of_one_or_more_is_told_why(value):
    """At 1 or above the reason is not the lower end's ('at 0.5 or below ...', which `--confidence 95` was told):
    certainty is out of reach, and a percent is not a probability."""
    line = error_line(run_cli([*COMMANDS["audit-fn --plan"], "--confidence", value])[2])
    assert "invalid --confidence: must be in (0.5, 1)" in line and "0.5 or below" not in line, line
    assert "e.g. 0.95" in line, line


@pytest.mark.parametrize("value", ["0.9999999999999999", "0.999999999999"])
def test_a_confidence_just_below_one_is_never_printed_as_100_percent(value):
    """The plan printed 'confidence 100%' for --confidence 0.9999999999999999 (and anything above 1 - 5e-12):
    percent_text's float-noise rounding reached 100; a lower bound on a probability below 1 reads below 100%."""
    from tsdp.attacks.montecarlo.verdict import percent_text

    code, out, err = run_cli([*COMMANDS["audit-fn --plan"], "--confidence", value])
    assert code == 0 and "confidence 99.99%" in out and "100%" not in out, out
    assert percent_text(float(value)) == "99.99%" and percent_text(1.0) == "100%"
