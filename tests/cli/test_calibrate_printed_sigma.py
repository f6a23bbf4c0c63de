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
