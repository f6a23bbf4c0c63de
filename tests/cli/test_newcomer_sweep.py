"""What a newcomer's sweep of every command found: each input below once crashed, hung, named an argparse-internal
function instead of its flag, named no flag at all, glued its error line to a progress bar, or let a user function's
output break ``--json``. Each case is refused in one line naming its flag (exit 2), before any long work, or (the
user code that prints) answered with parseable JSON.
"""
import json

import pytest

from cli_run import error_line, run_cli
from sweep import CONSTANT_MODEL, run_case, verdict

LIMIT_S = 120
SMALL = ["--N", "16", "--L", "8", "--batch-size", "4"]
EXPERIMENT = ["experiment", "--models", "dlinear", "--seeds", "1", "--tops", "wor", "--epochs", "1", "--samples", "10",
              "--device", "cpu"]


@pytest.mark.parametrize("value", ["0", "-1", "-inf", "nan", "abc", ""])
def test_experiment_epsilons_names_the_flag_and_the_rule(value, tmp_path):
    """A budget that is not > 0 is refused by the parser in words (it read "invalid _epsilon value: '0'")."""
    outcome = run_case([*EXPERIMENT, "--out", str(tmp_path / "grid"), f"--epsilons={value}"], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert "--epsilons" in line and "> 0" in line and "inf" in line and "_epsilon" not in line, line
    assert not (tmp_path / "grid").exists()


@pytest.mark.parametrize("value", ["1", "0.5", "inf"])
def test_experiment_epsilons_takes_a_budget_or_inf(value):
    from tsdp.cli.main import build_parser

    args = build_parser().parse_args([*EXPERIMENT, "--epsilons", value])
    assert args.epsilons == [float(value)]


CONFIG_COMMANDS = {
    "profile": ["profile", "--alpha", "2"],
    "epsilon": ["epsilon", "--delta", "1e-5", "--steps", "1"],
    "calibrate": ["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "1"],
    "train": ["train", "--epochs", "1", "--delta", "1e-5", "--device", "cpu", *SMALL],
    "audit": ["audit", "--trials", "100", "--delta", "1e-5"],
    "audit-model": ["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5",
                    "--epochs", "1", "--device", "cpu", *SMALL],
    "audit-fn": ["audit-fn", "--train", "nowhere:train", "--canaries", "20", "--delta", "1e-5"],
    "audit-fn --plan": ["audit-fn", "--plan", "--canaries", "20", "--delta", "1e-5"],
}

THEOREM_COMMANDS = {name: CONFIG_COMMANDS[name] for name in ("profile", "epsilon", "calibrate", "train", "audit")}
THEOREM_CASES = [(command, theorem) for command in THEOREM_COMMANDS for theorem in ("abc", "T1", "C1")
                 if (command, theorem) != ("audit", "T1")]  # T1's construction fixes its own scheme: a valid audit


@pytest.mark.parametrize("command, theorem", THEOREM_CASES)
def test_a_theorem_that_cannot_be_used_names_the_flag(command, theorem):
    """An unknown id, a claim's id or a bound of another scheme: the line names --theorem (it named no flag)."""
    outcome = run_case([*THEOREM_COMMANDS[command], "--theorem", theorem], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert f"tsdp {command}: error: invalid --theorem: " in line, line


def test_an_unusable_theorem_found_by_default_names_no_flag_it_was_not_given(monkeypatch):
    """Without --theorem typed, a TheoremError (here raised by the accountant in place of its answer) is not blamed
    on it; with --theorem typed, the line names it."""
    import tsdp.verify.accounting as accounting
    from tsdp.theorems.errors import TheoremError

    def no_bound(*args, **kwargs):
        raise TheoremError("no sound bound for this scheme")

    monkeypatch.setattr(accounting, "epsilon", no_bound)
    base = ["epsilon", "--delta", "1e-5", "--steps", "1"]
    code, out, err = run_cli(base)
    assert code == 2 and error_line(err) == "tsdp epsilon: error: no sound bound for this scheme"
    code, out, err = run_cli([*base, "--theorem", "T6"])
    assert code == 2 and error_line(err) == "tsdp epsilon: error: invalid --theorem: no sound bound for this scheme"


@pytest.mark.parametrize("theorem", ["T6", "T1", "T11"])
def test_audit_refuses_an_empty_context_before_its_trials(theorem):
    """The accountant allows L_C = 0, the loop's model cannot read it: a ShardError traceback once, after the
    theory; now one line naming --context-length, and the same refusal from the Python API."""
    outcome = run_case(["audit", "--trials", "100", "--delta", "1e-5", "--context-length", "0", "--theorem", theorem],
                       LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "invalid --context-length: must be >= 1 to audit" in error_line(outcome.err)
    assert "trial" not in outcome.err  # no progress bar of trials: refused before them


def test_audit_api_refuses_an_empty_context():
    from tsdp.attacks.montecarlo.audit import audit
    from tsdp.attacks.montecarlo.options import TrialPlan
    from tsdp.theorems.config import ConfigError, TrainingConfig

    with pytest.raises(ConfigError, match="invalid context_length: must be >= 1 to audit"):
        audit("T6", TrainingConfig(context_length=0), delta=1e-5, steps=1, trials=TrialPlan(100))


def test_a_progress_bar_left_mid_line_is_ended_before_the_error_line(monkeypatch):
    """stderr that is not a terminal gets no clearing of a bar: the error line once followed the bar's last text on
    the same line ("... grid 0.0001]tsdp calibrate: error: ..."). The bar's delay is 0 here, so it is drawn whatever
    the time the search takes."""
    from tsdp.verify import progress

    real = progress.progress_bar
    monkeypatch.setattr(progress, "progress_bar", lambda **kw: real(**{**kw, "delay": 0.0}))
    code, _, err = run_cli(["calibrate", "--epsilon", "1", "--delta", "5e-324", "--steps", "1"])
    assert code == 2 and "calibrating" in err  # the bar was drawn
    line = error_line(err)
    assert line.startswith("tsdp calibrate: error: invalid --delta"), line


def test_a_nested_command_names_its_flag_and_itself(model_file):
    """`tsdp forecast predict --seed -1` said "tsdp forecast: error: invalid seed" (no flag: the flags were looked up
    on `forecast`, which has none)."""
    code, _, err = run_cli(["forecast", "predict", "--model-file", model_file, "--values", *map(str, range(10)),
                            "--epsilon", "1", "--delta", "1e-5", "--seed", "-1"])
    assert code == 2
    assert error_line(err) == "tsdp forecast predict: error: invalid --seed: must be >= 0 (got -1)"


def test_every_command_with_configuration_flags_is_swept_for_drop_last():
    from tsdp.cli.main import build_parser

    parser = build_parser()
    having = {name for name, sub in parser._subparsers._group_actions[0].choices.items()  # noqa: SLF001
              if "--drop-last" in sub._option_string_actions}  # noqa: SLF001
    assert having == {argv[0] for argv in CONFIG_COMMANDS.values()}


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
@pytest.mark.parametrize("top", ["wor", "poisson", "deterministic", "pooled"])
def test_drop_last_outside_shuffled_iteration_is_refused(command, top):
    """--drop-last is a configuration flag of every command (audit-fn --plan once accepted it with any top level)."""
    outcome = run_case([*CONFIG_COMMANDS[command], "--top", top, "--drop-last"], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "invalid --drop-last: " in error_line(outcome.err)


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
def test_drop_last_takes_no_value(command):
    code, _, err = run_cli([*CONFIG_COMMANDS[command], "--drop-last=yes"])
    assert code == 2 and "--drop-last" in error_line(err)


@pytest.mark.parametrize("command", ["profile", "epsilon", "audit-fn --plan"])
def test_drop_last_with_shuffled_iteration_is_answered(command):
    code, out, err = run_cli([*CONFIG_COMMANDS[command], "--top", "shuffle", "--N", "41", "--batch-size", "4",
                              "--drop-last", "--json"])
    assert code == 0, err
    json.loads(out)


# ----------------------------------------------------------------------------- audit-fn: the user's code

USER_CODE = CONSTANT_MODEL + '''
import sys


def good(series):
    return Model()


def prints(series):
    print("GARBAGE {not json")
    return Model()


def complex_losses(series):
    return lambda context, forecast: torch.zeros(context.shape[0], dtype=torch.complex64)


def loss_prints(model, context, forecast):
    print("loss says hello")
    return model(context, forecast)
'''

print_at_import = 'print("imported {")\n'


@pytest.fixture
def user_module(user_module_of):
    return user_module_of(print_at_import + USER_CODE)


def _audit_fn(module, train, *extra):
    return ["audit-fn", "--train", f"{module}:{train}", "--canaries", "20", "--delta", "1e-5", "--canary", "spike",
            *extra]


@pytest.mark.parametrize("extra", [[], ["--loss", "{m}:loss_prints"], ["--runs", "2"]])
def test_what_user_code_prints_goes_to_stderr_and_json_stays_parseable(user_module, extra):
    """A train (or loss, or module at import) that prints: its words once came first on stdout, before the JSON."""
    argv = _audit_fn(user_module, "prints", "--json", *[e.format(m=user_module) for e in extra])
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert json.loads(out)["canaries"] == 20 * (2 if "--runs" in extra else 1)
    assert "GARBAGE {not json" in err and "GARBAGE" not in out
    assert ("loss says hello" in err) == ("--loss" in extra)


def test_complex_losses_are_refused(user_module):
    outcome = run_case(_audit_fn(user_module, "complex_losses"), LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "complex losses" in error_line(outcome.err) and "--train" in error_line(outcome.err)


@pytest.mark.parametrize("confidence", ["5e-324", "1e-300", "1e-13"])
def test_a_confidence_lost_in_the_split_is_refused(user_module, confidence):
    """5e-324 passed the check (in (0, 1)) and split to a confidence of 0 inside: a ValueError traceback. The audit
    commands' one rule now refuses any confidence at or below 0.5."""
    outcome = run_case(_audit_fn(user_module, "good", "--confidence", confidence), LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    assert "invalid --confidence: must be in (0.5, 1)" in error_line(outcome.err)


@pytest.mark.parametrize("runs", [str(2 ** 63 - 1), str(2 ** 28)])
def test_runs_beyond_what_one_audit_certifies_are_refused_at_once(user_module, runs):
    """--runs 2^63 - 1 hung (R seeds were being spawned); the pooled canaries are capped as --canaries is."""
    outcome = run_case(_audit_fn(user_module, "good", "--runs", runs), 60)
    assert verdict(outcome, 2) == "", (outcome.hang, outcome.err[-1500:])
    assert "invalid --runs: " in error_line(outcome.err) and f"20 × {runs}" in error_line(outcome.err)


@pytest.mark.parametrize("model", ["abc", "", "SimpleFF"])
def test_audit_model_refuses_an_unknown_model_naming_the_flag(model):
    """It said "unknown model 'abc'; choose one of ..." without the flag, after torch had loaded."""
    code, _, err = run_cli(["audit-model", "--model", model, "--canaries", "8", "--epsilon", "1", "--delta", "1e-5"])
    assert code == 2 and "argument --model: invalid choice" in error_line(err)


@pytest.mark.parametrize("command", ["audit-model", "audit-fn"])
def test_canaries_that_do_not_fit_the_data_name_the_flag(command, user_module):
    """audit-model said "100000 canaries do not fit into 64 slots ..." without the flag; both commands now name
    --canaries, before any training."""
    argv = (["audit-model", "--model", "simple-ff", "--epsilon", "1", "--epochs", "1", "--device", "cpu"]
            if command == "audit-model" else ["audit-fn", "--train", f"{user_module}:good", "--canary", "spike"])
    outcome = run_case([*argv, "--canaries", "100000", "--delta", "1e-5", *SMALL], LIMIT_S)
    assert verdict(outcome, 2) == "", outcome.err[-1500:]
    line = error_line(outcome.err)
    assert "invalid --canaries: must fit into the data's 64 slots" in line and "(got 100000)" in line, line
    assert "train simple-ff" not in outcome.err  # refused before training


@pytest.mark.parametrize("argv", [
    ["report", "--no-audit", "--quick"],
    ["train", "--epochs", "1", "--delta", "1e-5", *SMALL],
    ["audit-fn", "--plan", "--canaries", "20", "--delta", "1e-5"],
    [*EXPERIMENT, "--epsilons", "1"],
])
def test_an_empty_data_source_is_refused_in_words(argv):
    """--data '' said "invalid --data: : is not a regular file (a directory?)"."""
    code, _, err = run_cli([*argv, "--data", ""])
    assert code == 2 and "invalid --data: empty" in error_line(err)


@pytest.mark.parametrize("out", ["", "  "])
def test_report_refuses_an_empty_out_before_its_work(out):
    """--out '' ran the whole report into the default folder (experiment refuses it)."""
    outcome = run_case(["report", "--no-audit", "--quick", "--out", out], 60)
    assert verdict(outcome, 2) == "", (outcome.hang, outcome.err[-1500:])
    assert "invalid --out: empty" in error_line(outcome.err)


def test_an_accountant_that_prints_leaves_json_parseable(user_module_of):
    """check-accountant: a module that printed at import came before the JSON on stdout."""
    module = user_module_of('print("IMPORT NOISE {")\n\n\ndef acc(config, steps, delta):\n'
                            '    print("CALL NOISE {")\n    return 100.0\n')
    code, out, err = run_cli(["check-accountant", f"{module}:acc", "--steps", "1", "--random", "0", "--json"])
    assert code == 0, err
    assert json.loads(out)["accountant"] == f"{module}:acc"
    assert "IMPORT NOISE {" in err and "IMPORT NOISE" not in out  # a call's output is the JSON's own "output"


@pytest.mark.parametrize("option", ["--item-id", "--timestamp", "--target"])
@pytest.mark.parametrize("argv", [
    ["train", "--epochs", "1", "--delta", "1e-5", *SMALL],
    ["audit-fn", "--plan", "--canaries", "20", "--delta", "1e-5"],
    ["train", "--epochs", "1", "--delta", "1e-5", "--data", "m1-yearly"],
])
def test_a_column_option_without_a_table_is_refused(argv, option):
    """--target x with the synthetic series was accepted and ignored (--freq was refused): each names its flag."""
    code, _, err = run_cli([*argv, option, "x"])
    assert code == 2 and f"invalid {option}: names a column of a CSV / parquet table" in error_line(err)


def test_grunfeld_still_takes_its_target():
    from tsdp.datasets.formats import load_series

    assert load_series("grunfeld", target="value").N == 11
