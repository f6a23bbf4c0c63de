"""`tsdp audit-fn` (gradient canaries) and `tsdp audit-model` refuse an augmented claim (T11) in one error line, exit
2, before the user's code is loaded or a model trained: the canaries are not the neighbours T11 covers
(tests/attacks/test_canary_augmentation.py)."""
import pytest

from cli_run import error_line, run_cli

NEVER = '''
raise AssertionError("the user's module was imported for a claim the audit cannot test")
'''


@pytest.mark.parametrize("flag", ["--sigma-context", "--sigma-forecast"])
def test_audit_fn_refuses_an_augmented_claim(flag, user_module_of):
    module = user_module_of(NEVER)
    code, _, err = run_cli(["audit-fn", "--train", f"{module}:train", "--canaries", 100, "--delta", 1e-5,
                            "--N", 20, "--L", 3, "--context-length", 2, "--forecast-length", 1, "--batch-size", 20,
                            "--top", "wor", flag, 1])
    assert code == 2
    assert f"invalid {flag}" in error_line(err) and "T11" in error_line(err)


def test_audit_model_refuses_an_augmented_training():
    code, _, err = run_cli(["audit-model", "--model", "simple-ff", "--canaries", 4, "--epsilon", 4, "--delta", 1e-5,
                            "--N", 20, "--L", 20, "--context-length", 2, "--forecast-length", 1, "--batch-size", 20,
                            "--top", "wor", "--sigma", 2, "--sigma-context", 1, "--sigma-forecast", 1])
    assert code == 2
    assert "invalid --sigma-context" in error_line(err)
