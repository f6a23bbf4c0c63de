"""`tsdp audit` / `tsdp audit-model` on the command line: JSON keys, clear errors (exit 2, no traceback)."""
import json

from tsdp.cli.main import main


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
