"""The report's violation check reads an audit record through the auditor's one rule
(tsdp.attacks.montecarlo.verdict): a record's violation is recomputed from its own numbers (its estimate, its sound
ε and its violation test's verdict), never taken from its stored ``violation``; a record written before the rule
included ``epsilon_lower > epsilon_sound`` (no ``record_version``) is upgraded (its ``violation`` was the violation
test's verdict alone), and one from a newer rule is refused. The section's ``soundness_violations`` listing and the
report's exit code (``violation_summary``) see the same cases."""
import pytest
from hypothesis import given, strategies as st

from tsdp.attacks.montecarlo.verdict import AUDIT_RECORD_VERSION, record_sound_exceeded, sound_exceeded
from tsdp.reports.tightness import soundness_violations, violation_summary


def record(lower, sound, test, version=AUDIT_RECORD_VERSION, stored=None):
    """A report audit record of ``version`` (1: written before the versioning, ``violation`` the test's verdict)."""
    r = {"epsilon_lower": lower, "epsilon_sound": sound, "confidence": 0.95, "trials": 500, "steps": 1,
         "sound_theorem": "T6"}
    if version == 1:
        r["violation"] = test
    else:
        r.update(record_version=version, test_violation=test,
                 violation=sound_exceeded(lower, sound, test) if stored is None else stored)
    return r


def section(bounds=(), composed=(), shuffled=None):
    return {"bounds": [{"theorem": t, "sound_theorem": t, "covers_audit": covers, "audit": a} for t, a, covers in bounds],
            "composition": [{"steps": s, "epsilon_sound": a["epsilon_sound"], "epsilon_audited_lower": a["epsilon_lower"],
                             "audit_trials": 100, "confidence": 0.95, "audit": a} for s, a in composed],
            "shuffle": {"rows": [], "audit": shuffled}}


def test_the_rule_counts_the_test_or_the_estimate_above_the_sound_epsilon():
    assert sound_exceeded(1.1, 1.0, False) and sound_exceeded(0.5, 1.0, True)
    assert not sound_exceeded(1.0, 1.0, False)  # equality is not a violation
    assert not sound_exceeded(0.5, 1.0, False)


def test_a_stored_violation_is_recomputed_not_trusted():
    """A record whose stored ``violation`` disagrees with its own numbers is judged by its numbers."""
    assert record_sound_exceeded(record(1.2, 1.0, False, stored=False))
    assert not record_sound_exceeded(record(0.2, 1.0, False, stored=True))
    assert violation_summary(section([("T6", record(1.2, 1.0, False, stored=False), True)]))["violation"]


def test_a_record_from_before_the_versioning_is_upgraded():
    """Version 1 (no ``record_version``): ``violation`` was the violation test's verdict alone; the upgrade keeps it
    and adds the estimate's comparison, as the rule now reads."""
    old = record(1.2, 1.0, False, version=1)
    assert "record_version" not in old and record_sound_exceeded(old)
    assert record_sound_exceeded(record(0.2, 1.0, True, version=1))
    assert not record_sound_exceeded(record(0.2, 1.0, False, version=1))


def test_a_record_of_a_newer_rule_is_refused():
    with pytest.raises(ValueError, match="record_version"):
        record_sound_exceeded(record(0.2, 1.0, False, version=AUDIT_RECORD_VERSION + 1))


def test_a_full_audit_json_is_read_by_its_violation_test():
    """`tsdp audit --json` (no ``record_version``, the violation test's summary inside) is judged by that summary's
    verdict, not by its ``violation`` (which a relation note masks)."""
    full = {"epsilon_lower": 0.2, "epsilon_sound": 1.0, "violation": False, "violation_test": {"violation": True}}
    assert record_sound_exceeded(full)


CASES = st.tuples(st.floats(0, 3), st.floats(0.1, 3), st.booleans(), st.sampled_from([1, AUDIT_RECORD_VERSION]))


@given(st.lists(st.tuples(CASES, st.booleans()), max_size=4), st.lists(CASES, max_size=2), st.none() | CASES)
def test_the_listing_and_the_exit_code_see_the_same_cases(bounds, composed, shuffled):
    """Over hypothesis-made sections: ``soundness_violations`` (the section's listing, its alert) is non-empty
    exactly when ``violation_summary`` makes `tsdp report` exit 1, one entry per case, whatever made the case (the
    estimate above the sound ε, the violation test alone, a composed audit, the shuffled audit)."""
    s = section([(f"T{i}", record(*c), covers) for i, (c, covers) in enumerate(bounds)],
                [(10 * (i + 1), record(*c)) for i, c in enumerate(composed)],
                None if shuffled is None else record(*shuffled))
    check = violation_summary(s)
    listed = soundness_violations(s)
    assert bool(listed) is check["violation"] and len(listed) == len(check["violations"])
    expected = sum(covers and sound_exceeded(c[0], c[1], c[2]) for c, covers in bounds)
    expected += sum(sound_exceeded(c[0], c[1], c[2]) for c in composed)
    expected += shuffled is not None and sound_exceeded(shuffled[0], shuffled[1], shuffled[2])
    assert len(listed) == expected


@pytest.mark.slow  # ~10 s: the quick tightness section's accounting
def test_the_real_section_lists_a_violation_test_case_and_the_report_fails_on_it():
    """Through tightness_section (its auditor faked at the seam): an audit whose violation test rejects the sound
    profile while its estimate stays below the sound ε is listed in ``soundness_violations`` and counted by
    ``violation_summary``; before, the listing saw only the estimate."""
    from tsdp.reports.tightness import tightness_section
    from tsdp.theorems.config import TrainingConfig

    def fake(theorem, cfg, *, trials, steps=1, delta, seed=0):
        return {"theorem": theorem, "trials": trials, "steps": steps, "delta": delta, "confidence": 0.95,
                "epsilon_lower": 0.1, "epsilon_sound": 1.0, "epsilon_attained": 0.5, "ratio": 0.2, "gof_pvalue": 0.5,
                "profile": [], "sound_theorem": theorem, "attained_pair": "p",
                "violation": theorem == "T6", "test_violation": theorem == "T6",
                "record_version": AUDIT_RECORD_VERSION}

    s = tightness_section(TrainingConfig(), audit_fn=fake, trials=10, composed_trials=10, quick=True)
    assert s["soundness_violations"] == ["T6"]
    assert violation_summary(s)["violation"] and [c["theorem"] for c in violation_summary(s)["violations"]] == ["T6"]


def test_the_reports_verdict_states_its_confidence_over_all_its_audits():
    """The report flags a violation when any of its audits does, so its verdict errs when one of them does: at 95%
    per test (90% per audit verdict) three audits give 1 - 3 x 0.1 = 70%, eleven give nothing (never the per-audit
    90%); a record without its confidence gives None."""
    three = section([(t, record(0.5, 1.0, False), True) for t in ("T1", "T6", "T9")])
    assert violation_summary(three)["family_confidence"] == pytest.approx(0.7)
    eleven = section([(f"T{i}", record(0.5, 1.0, False), True) for i in range(11)])
    assert violation_summary(eleven)["family_confidence"] == 0.0
    unrecorded = {**record(0.5, 1.0, False), "confidence": None}
    assert violation_summary(section([("T6", unrecorded, True)]))["family_confidence"] is None
