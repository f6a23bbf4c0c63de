"""`tsdp audit-fn --canary spike` reads only the window geometry (--context-length, --forecast-length) and the size of
'synthetic' (--N, --L, --lengths; --batch-size keeps a small N valid) of the configuration: spikes go into your data and are scored on the returned model.
Every other configuration flag it took and ignored, printing a bound as if it had been honoured (--sigma-context 1:
an augmented claim, T11, that covers no spike canary); each is now refused in one line naming it, exit 2, before your
module is imported."""
import pytest

from cli_run import error_line, run_cli
from sweep import CONSTANT_MODEL
from tsdp.cli.config_args import CONFIG_FLAGS

SPIKE = ["audit-fn", "--canaries", "20", "--delta", "1e-5", "--canary", "spike"]
USED = {"--N", "--L", "--lengths", "--context-length", "--forecast-length", "--batch-size"}  # Λ: keeps a small N valid
VALUES = {"--top": "shuffle", "--bottom": "poisson", "--relation": "user", "--drop-last": None, "--sigma-context": "1",
          "--sigma-forecast": "1", "--sigma": "2", "--instances": "2", "--w": "2", "--v": "2"}


def test_every_unused_flag_has_a_case():
    assert {f.flag for f in CONFIG_FLAGS} - USED == set(VALUES)


@pytest.mark.parametrize("flag", sorted(VALUES))
def test_spike_canaries_refuse_the_configuration_flags_they_do_not_use(flag):
    typed = [flag] if VALUES[flag] is None else [flag, VALUES[flag]]
    code, out, err = run_cli([*SPIKE, "--train", "tsdp_no_such_module:train", *typed])
    line = error_line(err)
    assert code == 2 and out == "" and "Traceback" not in err
    assert line.startswith(f"tsdp audit-fn: error: invalid {flag}: "), line
    if flag in ("--sigma-context", "--sigma-forecast"):
        assert "augmentation" in line
    else:
        assert "--canary spike does not use it" in line


def test_no_augmentation_typed_is_honoured(user_module_of):
    module = user_module_of(CONSTANT_MODEL + "\n\ndef good(series):\n    return Model()\n")
    code, out, err = run_cli([*SPIKE, "--train", f"{module}:good", "--sigma-context", "0", "--sigma-forecast", "0"])
    assert code == 0, err


def test_the_plan_refuses_them_too():
    code, _, err = run_cli([*SPIKE, "--plan", "--sigma-context", "1"])
    assert code == 2 and "invalid --sigma-context: " in error_line(err)


def test_the_flags_spike_canaries_use_are_taken(user_module_of):
    module = user_module_of(CONSTANT_MODEL + "\n\ndef good(series):\n    return Model()\n")
    code, out, err = run_cli([*SPIKE, "--train", f"{module}:good", "--N", "16", "--L", "12", "--batch-size", "4", "--context-length", "2",
                              "--forecast-length", "2"])
    assert code == 0, err
    assert "spike canary audit of" in out


@pytest.mark.parametrize("typed", [["--N", "11"], ["--L", "5"], ["--lengths", "5", "6"], ["--batch-size", "4"]])
def test_the_sizes_of_synthetic_are_refused_with_a_file(typed):
    """--N, --L, --lengths and --batch-size size 'synthetic' only: spike canaries read a file as it is. With
    --data grunfeld they were ignored silently, and --N 11 (grunfeld's own count) was refused naming --batch-size,
    which the audit does not use."""
    code, out, err = run_cli([*SPIKE, "--train", "tsdp_no_such_module:train", "--data", "grunfeld", *typed])
    assert code == 2 and out == "" and "Traceback" not in err
    assert error_line(err).startswith(f"tsdp audit-fn: error: invalid {typed[0]}: "), err
    assert "'synthetic'" in error_line(err)
