"""`tsdp audit` / `tsdp audit-model` on the command line: JSON keys, clear errors (exit 2, no traceback)."""
import json

import pytest

from tsdp.cli.main import main
from tsdp.verify.rounded import rounded_down


def test_audit_json(capsys):
    rc = main(["audit", "--theorem", "T6", "--trials", "3000", "--delta", "1e-3", "--N", "16", "--batch-size", "4",
               "--L", "6", "--json", "--alpha", "1", "2"])
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("epsilon_lower", "confidence", "epsilon_sound", "epsilon_attained", "ratio", "gof_pvalue",
                "profile", "trials", "steps"):
        assert key in d
    assert d["trials"] == 3000 and d["steps"] == 1 and len(d["profile"]) == 2
    assert d["epsilon_lower"] <= d["epsilon_sound"]
    assert d["test"]["fp_share"] == d["design"]["fp_share"]  # the certified bound used the designed split
    rc = main(["audit", "--theorem", "T6", "--trials", "3000", "--delta", "1e-3", "--N", "16", "--batch-size", "4",
               "--L", "6", "--alpha", "1", "2"])
    share = d["design"]["fp_share"]
    human = capsys.readouterr().out
    assert rc == 0 and f"split {0.05 * (1 - share):.2g} (true positives) + {0.05 * share:.2g} (false positives)" in human
    low = lambda x: rounded_down(x, 4, fixed=True)  # noqa: E731 - a lower bound is printed rounded down
    assert (f"ε lower bound (confidence 95%) at δ = 0.001: {low(d['epsilon_lower'])} (exact level of the union test; "
            f"the union bound alone: {low(d['test']['union_value'])})") in human


def test_audit_errors_exit_2_without_traceback(capsys):
    cases = [
        (["audit", "--trials", "5", "--delta", "1e-3"], "--trials"),
        (["audit", "--trials", "100", "--delta", "2"], "--delta"),
        (["audit", "--theorem", "T2", "--trials", "100", "--delta", "1e-3"], "no worst-case construction"),
        (["audit", "--theorem", "T1", "--instances", "2", "--trials", "100", "--delta", "1e-3"], "instances"),
        (["audit", "--trials", "100", "--delta", "1e-3", "--sigma", "0"], "sigma"),
        (["audit-model", "--model", "simple-ff", "--canaries", "10", "--epsilon", "1", "--delta", "1e-5",
          "--data", "/nonexistent.csv"], "nonexistent"),
        (["audit-model", "--model", "simple-ff", "--canaries", "1", "--epsilon", "1", "--delta", "1e-5"], "--canaries"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)


SMALL_T6 = ["--theorem", "T6", "--delta", "1e-3", "--N", "16", "--batch-size", "4", "--L", "6", "--json"]


def test_a_planted_noise_bug_is_a_violation_and_the_correct_loop_is_not(capsys, monkeypatch):
    """A loop whose noise is halved makes `tsdp audit` exit 1 with "violation": true and both
    numbers; the correct loop exits 0. The bug is planted in the real loop's private_gradient, which the
    auditor's trials call; the accountant still accounts the configured σ."""
    import tsdp.attacks.montecarlo.trials as run

    assert main(["audit", "--trials", "20000", *SMALL_T6]) == 0
    clean = json.loads(capsys.readouterr().out)
    assert clean["violation"] is False and clean["epsilon_lower"] <= clean["epsilon_sound"]
    real = run.private_gradient
    monkeypatch.setattr(run, "private_gradient", lambda *a, sigma, **k: real(*a, sigma=sigma / 2, **k))
    assert main(["audit", "--trials", "20000", *SMALL_T6]) == 1
    bug = json.loads(capsys.readouterr().out)
    evidence = bug["violation_test"]  # the verdict is the violation test's (sound profile and (ε_sound, δ))
    assert bug["violation"] is True and bug["epsilon_sound"] == clean["epsilon_sound"]
    assert evidence["epsilon_lower"] > bug["epsilon_sound"] or evidence["profile_excess"] > 0
    assert bug["confidence"] == 0.95


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_audit_steps_are_training_steps(capsys):
    """`tsdp audit --steps` counts training steps like `tsdp epsilon`: for T1 (deterministic top level,
    N = 16, N' = 4, 4 steps per epoch) 5 steps touch 2 epochs, and the sound ε is `tsdp epsilon --steps 5`'s."""
    argv = ["--delta", "1e-3", "--N", "16", "--batch-size", "4", "--L", "6"]
    assert main(["audit", "--theorem", "T1", "--trials", "2000", "--steps", "5", "--json", *argv]) == 0
    audit = json.loads(capsys.readouterr().out)
    assert audit["steps"] == 5 and audit["compositions"] == 2
    assert main(["epsilon", "--top", "deterministic", "--steps", "5", "--json", *argv]) == 0
    assert audit["epsilon_sound"] == json.loads(capsys.readouterr().out)["epsilon"]
    assert main(["audit", "--theorem", "T1", "--trials", "2000", "--epochs", "2", "--json", *argv]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 8


def test_the_pooled_loop_above_t13_is_a_relation_mismatch_not_a_violation(capsys):
    """Claim C6 through the command: the pooled loop's one-element attack (k = 8 windows) certifies ε far above
    T13's one-window ε; that is a relation mismatch (exit 0, "violation": false, "sound_exceeded": true, the
    note says k windows against one), and the human output says RELATION MISMATCH, never PRIVACY VIOLATION."""
    argv = ["audit", "--theorem", "T13", "--top", "pooled", "--trials", "5000", "--delta", "1e-3", "--N", "40",
            "--L", "12", "--context-length", "4", "--forecast-length", "4", "--batch-size", "36", "--sigma", "2"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["violation"] is False and d["sound_exceeded"] is True
    assert d["violation_test"]["epsilon_lower"] > d["epsilon_sound"]
    assert "k = 8 windows" in d["relation_note"]
    assert main(argv) == 0
    human = capsys.readouterr().out
    assert human.startswith("RELATION MISMATCH (claim C6), not a privacy violation") and "PRIVACY VIOLATION" not in human


def test_audit_top_shuffle_runs_the_shuffled_loop(capsys):
    """`tsdp audit --top shuffle` (no --theorem) runs the scheme's construction (T1 at λ = 1) through the shuffled
    loop and compares with the hidden-position attained ε `tsdp epsilon --top shuffle` prints; a construction of
    another top level still conflicts with --top (exit 2, one line naming the flag)."""
    args = ["--N", "16", "--batch-size", "4", "--L", "6", "--sigma", "2", "--delta", "1e-3", "--json"]
    assert main(["audit", "--top", "shuffle", "--trials", "2000", "--steps", "4", *args]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["theorem"] == "T1" and d["config"]["top"] == "shuffle" and "hidden-position" in d["attained_pair"]
    assert main(["epsilon", "--top", "shuffle", "--steps", "4", *args]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert d["epsilon_attained"] == printed["epsilon_attained"] < printed["epsilon"]
    assert main(["audit", "--top", "shuffle", "--theorem", "T6", "--trials", "100", *args]) == 2
    err = capsys.readouterr().err
    assert "--top" in err and "Traceback" not in err
