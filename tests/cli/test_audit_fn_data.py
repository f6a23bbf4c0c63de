"""`tsdp audit-fn --data FILE`: N and L are the file's (said in one line), a typed value the file contradicts is refused
before the user's code runs, and --plan sizes its batching by the same file and checks the data flags."""
import json

import pytest

from cli_run import error_line, run_cli

LENGTHS = (31, 40, 36, 45, 33)
"""Five series of these lengths: N = 5 and L = 31, the shortest (audit-fn's train gets every series whole)."""

RECORDS = '''
import json
import torch


def records(series):
    """Records what it was given and stops the audit there (the sizes are what is tested, not the audit)."""
    with open("seen.json", "w") as f:
        json.dump([len(s) for s in series], f)
    raise RuntimeError("recorded")


def train(series):
    with open("seen.json", "w") as f:
        json.dump([len(s) for s in series], f)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.ones(2, 4)).sum().backward()
        optimizer.step()
    return lambda context, forecast: forecast.float().pow(2).sum(-1)
'''


@pytest.fixture
def table(tmp_path):
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")  # reads CSV
    path = tmp_path / "five.csv"
    path.write_text("item_id,timestamp,target\n" + "".join(
        f"s{i},{t},{(3 * t + i) % 7 + 1}\n" for i, n in enumerate(LENGTHS) for t in range(n)))
    return path


def _note(err: str) -> list:
    return [line for line in err.splitlines() if "note:" in line and "taken from" in line]


def test_n_and_l_are_taken_from_the_file_and_said(table, user_module_of, tmp_path):
    module = user_module_of(RECORDS)
    code, out, err = run_cli(["audit-fn", "--train", f"{module}:records", "--canaries", "10", "--delta", "1e-5",
                              "--data", table, "--context-length", "4", "--forecast-length", "2", "--batch-size", "2"])
    assert code == 2 and "recorded" in error_line(err), err  # the configuration was accepted, the train called
    assert _note(err) == [f"tsdp audit-fn: note: N = 5 (its series) and L = {min(LENGTHS)} (the training values of its "
                          f"shortest series) taken from {table}"]
    assert sorted(json.loads((tmp_path / "seen.json").read_text())) == sorted(LENGTHS)  # every series, whole


def test_spike_canaries_use_no_n_or_l(table, user_module_of, tmp_path):
    """Spike canaries use only L_C and L_F: the file is read as it is, with no note and no check of --N."""
    module = user_module_of(RECORDS)
    code, _, err = run_cli(["audit-fn", "--train", f"{module}:train", "--canary", "spike", "--canaries", "10",
                            "--delta", "1e-5", "--data", table, "--context-length", "4", "--forecast-length", "2"])
    assert code == 0 and not _note(err), err
    assert sorted(json.loads((tmp_path / "seen.json").read_text())) == sorted(LENGTHS)


@pytest.mark.parametrize("extra, flag, fix", [(["--N", "6"], "--N", "--N 5"), (["--L", "32"], "--L", "--L 31"),
                                              (["--lengths", "31", "40"], "--lengths", "--N 5")])
def test_a_value_the_file_contradicts_is_refused_before_the_users_code(table, user_module_of, tmp_path, extra, flag,
                                                                       fix):
    module = user_module_of(RECORDS)
    code, out, err = run_cli(["audit-fn", "--train", f"{module}:train", "--canaries", "10", "--delta", "1e-5",
                              "--data", table, *extra])
    assert code == 2 and out == "" and not (tmp_path / "seen.json").exists(), err
    assert error_line(err).startswith(f"tsdp audit-fn: error: invalid {flag}:") and fix in error_line(err)


def test_a_shorter_l_is_kept_the_sound_direction(table, user_module_of):
    module = user_module_of(RECORDS)
    code, _, err = run_cli(["audit-fn", "--train", f"{module}:records", "--canaries", "10", "--delta", "1e-5",
                            "--data", table, "--L", "20", "--context-length", "4", "--forecast-length", "2",
                            "--batch-size", "2"])
    assert code == 2 and "recorded" in error_line(err), err
    assert _note(err) == [f"tsdp audit-fn: note: N = 5 (its series) taken from {table}"]


def test_the_plan_sizes_its_batching_by_the_file(table):
    """--plan --steps: the participation of a canary in the batching of the file's N and L (the same function on
    that configuration, computed here), not of the default configuration's N = 320."""
    from tsdp.attacks.canary.gradient import participation_probability
    from tsdp.theorems.config import TrainingConfig

    base = ["audit-fn", "--plan", "--steps", "3", "--canaries", "100", "--delta", "1e-5", "--epsilon", "1",
            "--batch-size", "2", "--json"]
    code, out, err = run_cli([*base, "--data", table])
    assert code == 0, err
    sized = TrainingConfig(N=5, L=min(LENGTHS), batch_size=2)
    expected = participation_probability(sized, 3, seed=0)
    assert json.loads(out)["participation"] == pytest.approx(expected, rel=1e-12)
    default = participation_probability(TrainingConfig(batch_size=2), 3, seed=0)
    assert default < expected / 10  # the test sees a plan that ignores the file
    assert _note(err)
    code, _, err = run_cli([*base, "--data", table, "--N", "7"])
    assert code == 2 and "invalid --N" in error_line(err) and "--N 5" in error_line(err)


@pytest.mark.parametrize("extra, flag", [(["--data", "/nonexistent.csv"], "--data"), (["--freq", "h"], "--freq"),
                                         (["--data", "grunfeld", "--freq", "h"], "--freq")])
def test_the_plan_checks_the_data_flags(extra, flag):
    code, out, err = run_cli(["audit-fn", "--plan", "--canaries", "100", "--delta", "1e-5", *extra])
    assert code == 2 and out == "" and error_line(err).startswith(f"tsdp audit-fn: error: invalid {flag}:"), err
