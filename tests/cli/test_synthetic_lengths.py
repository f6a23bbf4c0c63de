"""'synthetic' data makes one series per --lengths value, N of them: --lengths of another count than --N (its default
320 included) ended `tsdp train`, `tsdp audit-model` and `tsdp audit-fn` (both canaries) in a ValueError traceback
from datasets.series.synthetic, after σ's calibration. Refused in one line naming --lengths, exit 2, before any work;
the library names ``lengths`` too. (Accounting commands take --lengths for its shortest value only: unchanged.)"""
import pytest

from cli_run import error_line, run_cli
from sweep import CONSTANT_MODEL

DELTA = ["--delta", "1e-5"]
COMMANDS = {
    "train": ["train", "--epsilon", "1", "--steps", "1", *DELTA, "--batch-size", "2"],
    "audit-model": ["audit-model", "--model", "simple-ff", "--canaries", "4", "--epsilon", "4", "--epochs", "1", *DELTA,
                    "--batch-size", "2"],
    "audit-fn gradient": ["audit-fn", "--canaries", "4", *DELTA, "--batch-size", "2"],
    "audit-fn spike": ["audit-fn", "--canaries", "4", *DELTA, "--canary", "spike", "--batch-size", "2"],
}


@pytest.mark.parametrize("count", [[], ["--N", "3"]], ids=["default-N", "typed-N"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_lengths_of_another_count_than_n_are_refused(command, count, user_module_of):
    argv = [*COMMANDS[command], *count, "--lengths", "12", "14"]
    if command.startswith("audit-fn"):
        module = user_module_of(CONSTANT_MODEL + "\n\ndef train(series):\n    raise AssertionError('trained')\n")
        argv += ["--train", f"{module}:train"]
    code, out, err = run_cli(argv)
    assert code == 2 and "Traceback" not in err, err
    assert error_line(err).startswith(f"tsdp {argv[0]}: error: invalid --lengths: "), err


def test_the_library_names_lengths():
    from tsdp.datasets.series import synthetic
    from tsdp.theorems.config import ConfigError

    with pytest.raises(ConfigError) as raised:
        synthetic(3, 5, seed=0, lengths=[5, 6])
    assert raised.value.parameter == "lengths"
    assert [len(s) for s in synthetic(2, 5, seed=0, lengths=[5, 6]).series] == [5, 6]


def test_lengths_of_n_series_are_taken(user_module_of):
    module = user_module_of(CONSTANT_MODEL + "\n\ndef train(series):\n    return Model()\n")
    code, out, err = run_cli([*COMMANDS["audit-fn spike"], "--N", "2", "--lengths", "12", "14",
                              "--train", f"{module}:train"])
    assert code == 0, err
