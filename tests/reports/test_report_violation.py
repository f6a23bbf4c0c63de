"""A detected violation (an audit's certified lower bound above the sound ε) makes
`tsdp report` exit 1, and the report says so on its first screen. The report is faked at the
seam (build_report), so this runs in milliseconds; test_claim_rules.py tests the detection
(reports.tightness.violation_summary) itself."""
import json

import pytest

import tsdp.reports.run as run
from tsdp.cli.main import main
from tsdp.reports.page import to_html
from tsdp.reports.render import blocks

CASE = {"theorem": "T6", "bound": "T6", "steps": 1, "epsilon_lower": 4.2, "epsilon_sound": 3.717,
        "confidence": 0.95, "trials": 5000}


@pytest.mark.parametrize("violations, code", [([CASE], 1), ([], 0)])
def test_report_exit_code_follows_the_violation(tmp_path, monkeypatch, capsys, fake_results, violations, code):
    monkeypatch.setattr(run, "build_report", lambda *a, **k: fake_results(violations=violations))
    assert main(["report", "--no-progress", "--out", str(tmp_path)]) == code
    err = capsys.readouterr().err
    assert ("PRIVACY VIOLATION" in err and "4.2" in err and "3.717" in err) == bool(violations)


def test_json_carries_the_violation(tmp_path, monkeypatch, capsys, fake_results):
    monkeypatch.setattr(run, "build_report", lambda *a, **k: fake_results(violations=[CASE]))
    assert main(["report", "--no-progress", "--json", "--out", str(tmp_path)]) == 1
    out = json.loads(capsys.readouterr().out)  # the message goes to stderr, stdout stays JSON
    assert out["violation"] is True
    v = out["violations"][0]
    assert v["epsilon_lower"] > v["epsilon_sound"] and v["confidence"] == 0.95


def test_first_screen_says_so(fake_results):
    b = blocks(fake_results(violations=[CASE]))
    first = [x for x in b[:4] if x[0] == "alert"]  # before section 1
    assert first and first[0][1] is False and "PRIVACY VIOLATION" in first[0][2] and "3.717" in first[0][2]
    assert "class='alert bad'" in to_html(fake_results(violations=[CASE]), None)
    ok = [x for x in blocks(fake_results())[:4] if x[0] == "alert"]
    assert ok and ok[0][1] is True and "No privacy violation" in ok[0][2]


def test_the_epsilon_table_names_its_theorem_construction_and_scheme(fake_results):
    """The first screen's ε table: the sound column names its theorem, the attained column the construction pair
    that reaches it and the scheme it runs on (the accounting rows' construction, the configuration's levels)."""
    (table,) = [x for x in blocks(fake_results()) if x[0] == "table" and x[1][0] == "schedule"]
    assert table[1][2:] == ["ε sound (T6, upper) at δ = 1e-05",
                            "ε attained (lower; T6 construction, wor/wr, λ = 1) at δ = 1e-05"]
    assert table[2] == [["1 step", 1, "3.025", "3.025"]]


@pytest.mark.slow
def test_a_planted_noise_bug_fails_the_real_report(tmp_path, monkeypatch, capsys):
    """The whole seam with real components: the quick report's audits run the real loop with its noise
    halved (planted in private_gradient), the report's violation summary flags it, the first screen says
    so and `tsdp report` exits 1. Only the noise is changed; the accountant still accounts σ. One worker: the
    bug is planted in this process, so the audits must run here."""
    import json

    import tsdp.attacks.montecarlo.trials as run_mod
    from tsdp.cli.main import main

    real = run_mod.private_gradient
    monkeypatch.setattr(run_mod, "private_gradient", lambda *a, sigma, **k: real(*a, sigma=sigma / 2, **k))
    out = tmp_path / "rep"
    assert main(["report", "--quick", "--no-progress", "--workers", "1", "--out", str(out)]) == 1
    results = json.loads((out / "results.json").read_text())
    assert results["violation"] is True and results["violations"]
    assert "PRIVACY VIOLATION" in (out / "report.md").read_text()
    assert "PRIVACY VIOLATION" in capsys.readouterr().err


def test_the_printed_summary_has_both_c7_lines(tmp_path, monkeypatch, capsys, fake_results):
    """`tsdp report`'s lines: the claim's measured verdict and, under it, each other verdict with its source."""
    claim = {"id": "C7", "verdict_text": "not reproduced on M1 yearly (the quick grid, 2 of 4 cells)",
             "reason": "the best DP model is not below the better baseline, autoets 0.1352, at ε = 0.5",
             "other_verdicts": [{"source": "the paper's reported tables", "verdict": "refuted",
                                 "verdict_text": "refuted on the paper's own Table 1 and appendix tables (electricity)",
                                 "reason": "refuted on electricity"}]}
    monkeypatch.setattr(run, "build_report", lambda *a, **k: fake_results(claims=[claim]))
    assert main(["report", "--no-progress", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index(f"C7: {claim['verdict_text']} - {claim['reason']}")
    assert lines[at + 1] == ("C7 (the paper's reported tables): refuted on the paper's own Table 1 and appendix "
                             "tables (electricity) - refuted on electricity")


def test_a_violation_states_the_confidence_of_a_verdict_by_either_of_two_tests(fake_results):
    """A violation case of audits at 95% each: the verdict (the estimate's or the violation test's) holds at 90% by
    the union bound, and the first screen says so, as `tsdp audit` does; never the per-test 95% for the verdict."""
    for case in (CASE, {**CASE, "epsilon_lower": 1.5, "estimate_above": False}):
        text = next(x[2] for x in blocks(fake_results(violations=[case])) if x[0] == "alert")
        assert "confidence 90%: two tests at 95% each, union bound" in text and "0.95 confidence" not in text


def test_a_case_of_the_violation_test_alone_is_said_as_such(tmp_path, monkeypatch, capsys, fake_results):
    """A violation the violation test certifies while the estimate stays below the sound ε: the first screen and
    `tsdp report`'s line say the test rejects the sound profile, never that the estimate is above the sound ε."""
    case = {**CASE, "epsilon_lower": 1.5, "estimate_above": False}
    text = next(x[2] for x in blocks(fake_results(violations=[case])) if x[0] == "alert")
    assert "violation test rejects the sound profile of T6" in text and "above the sound ε" not in text
    monkeypatch.setattr(run, "build_report", lambda *a, **k: fake_results(violations=[case]))
    assert main(["report", "--no-progress", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "violation test rejects the sound profile of T6" in err and "> sound ε" not in err


def _first_alert(results):
    return [x for x in blocks(results)[:4] if x[0] == "alert"][0]


@pytest.mark.parametrize("level, words", [(0.95, "confidence 90%: two tests at 95% each, union bound"),
                                          (0.99, "confidence 98%: two tests at 99% each, union bound")])
def test_no_violation_states_the_verdicts_confidence(fake_results, level, words):
    """The pass names the confidence of the verdicts it summarises, from the audits' own level (each verdict: the
    estimate's test or the violation test, union bound), never a fixed '95%' no code computed."""
    results = fake_results()
    results["meta"]["audit_confidence"] = level
    ok = _first_alert(results)
    assert ok[1] is True and words in ok[2]


def test_no_violation_without_a_recorded_confidence_says_so(fake_results):
    ok = _first_alert(fake_results())  # an earlier report's meta: no audit_confidence
    assert ok[1] is True and "confidence not recorded" in ok[2] and "95%" not in ok[2]


def test_no_audit_compared_is_no_pass(fake_results):
    """Audits ran but none was compared with a sound bound of its relation: the check had no power, so the first
    screen prints no pass."""
    results = fake_results()
    results["meta"]["audits_checked"] = 0
    alert = _first_alert(results)
    assert alert[1] is None and "No privacy violation" not in alert[2]


def test_the_printed_violation_states_the_verdicts_confidence(tmp_path, monkeypatch, capsys, fake_results):
    """`tsdp report`'s PRIVACY VIOLATION line says the confidence of the verdict (the estimate's test or the violation
    test, union bound: 90% at 95% per test), as the page does, not the per-test '0.95 confidence'."""
    monkeypatch.setattr(run, "build_report", lambda *a, **k: fake_results(violations=[CASE]))
    assert main(["report", "--no-progress", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "confidence 90%: two tests at 95% each, union bound" in err and "0.95 confidence" not in err


def test_a_violation_states_the_confidence_of_the_reports_verdict_over_its_audits(fake_results):
    """The first screen's violation alert says what the report's verdict (any audit's) holds at, the union bound over
    the audits checked (meta.audit_family_confidence), beside each case's own."""
    results = fake_results(violations=[CASE])
    results["meta"].update(audits_checked=3, audit_family_confidence=0.7)
    text = next(x[2] for x in blocks(results) if x[0] == "alert")
    assert "Any of the 3 audits checked could flag it: this verdict holds at confidence 70%" in text, text
