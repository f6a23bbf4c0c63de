"""`tsdp report`'s progress bar stays one clean line. Warnings raised while the report computes
(a coarsened PLD grid, as the memory ceiling makes the accountant do) are collected, not printed into the
bar: after the bar closes, one summary line counts them, and results.json lists each distinct one. The
sections are stand-ins at the seam of reports.run (milliseconds); the bar is real tqdm on captured stderr."""
import io
import json
import re
import sys
import warnings

import pytest

import tsdp.reports.figures as figures
import tsdp.reports.run as run
from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.verify.pld import PldCoarsenedWarning

NOTE = "T9: one-step PLD at discretisation 0.002 instead of 0.001 (stand-in)"


def _noisy(value):
    def section(*args, step=None, **kwargs):
        warnings.warn(PldCoarsenedWarning(NOTE))
        if step is not None:
            step("a sub-step")
        return value
    return section


class _Claim:
    def evaluate(self, config, quick, ctx):
        ctx.step("a cell")
        warnings.warn(PldCoarsenedWarning(NOTE))
        warnings.warn(UserWarning("another note"))
        return {"id": "C3", "verdict": "confirmed", "figure": None}

    def figure(self, result, out):
        return []


@pytest.fixture
def stand_ins(monkeypatch):
    monkeypatch.setattr(run, "accounting_section", _noisy({"rows": []}))
    monkeypatch.setattr(run, "CLAIMS", {"C3": _Claim()})
    monkeypatch.setattr(run, "consistency_section", _noisy({"checks": []}))
    monkeypatch.setattr(run, "tightness_section", _noisy({"bounds": [], "composition": []}))
    monkeypatch.setattr(run, "errata_section", lambda *a: [])
    monkeypatch.setattr(run, "inference_section", _noisy({}))
    monkeypatch.setattr(figures, "figure_tightness", lambda section, out: [])  # imported by run where it draws
    monkeypatch.setattr(figures, "figure_composition", lambda section, out: [])
    monkeypatch.setattr(run, "_write", lambda results, out: (out / "results.json").write_text(
        json.dumps(run.jsonable(results))))


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_notes_follow_the_bar_as_one_line(stand_ins, tmp_path, monkeypatch):
    """On a terminal (a log gets the bar's last line only: tsdp.verify.progress)."""
    monkeypatch.setattr(sys, "stderr", _Terminal())
    results = run.build_report(DEFAULT_CONFIG, out_dir=tmp_path / "r", progress=True, audits=False, workers=1)
    err = sys.stderr.getvalue()
    frames = [f for f in re.split(r"[\r\n]", err) if f.strip()]
    bar = [i for i, f in enumerate(frames) if f.startswith("tsdp report")]
    notes = [i for i, f in enumerate(frames) if "instead of 0.001" in f or "another note" in f]
    assert bar and len(notes) == 1 and notes[0] > bar[-1]  # one line, after the bar's last frame
    line = frames[notes[0]]
    assert line.startswith("notes: 6 (PldCoarsenedWarning x5, UserWarning x1)") and "meta.notes" in line
    assert "Warning" not in "".join(frames[:notes[0]])  # nothing of a warning inside the bar
    assert any("C3: a cell" in f for f in frames[:notes[0]])  # the bar names the sub-step running
    assert results["meta"]["notes"] == [{"category": "PldCoarsenedWarning", "message": NOTE, "count": 5},
                                        {"category": "UserWarning", "message": "another note", "count": 1}]
    assert json.loads((tmp_path / "r" / "results.json").read_text())["meta"]["notes"] == results["meta"]["notes"]


def test_no_notes_no_line(monkeypatch, stand_ins, tmp_path, capsys):
    class Quiet(_Claim):
        def evaluate(self, config, quick, ctx):
            return {"id": "C3", "verdict": "confirmed", "figure": None}

    monkeypatch.setattr(run, "CLAIMS", {"C3": Quiet()})
    for name, value in (("accounting_section", {"rows": []}), ("consistency_section", {"checks": []}),
                        ("tightness_section", {"bounds": [], "composition": []}), ("inference_section", {})):
        monkeypatch.setattr(run, name, lambda *a, value=value, **k: value)
    results = run.build_report(DEFAULT_CONFIG, out_dir=tmp_path / "r", progress=True, audits=False, workers=1)
    assert "notes:" not in capsys.readouterr().err and results["meta"]["notes"] == []


@pytest.mark.parametrize("quick", [True, False])
@pytest.mark.parametrize("audits", [True, False])
def test_the_tightness_section_ticks_what_the_bar_counts(quick, audits, monkeypatch):
    """The report's bar total counts the tightness section's ticks by :func:`tightness_ticks`: the real section (its
    auditor, accounting, brackets and shuffle rows faked at their seams; the shown constructions' profiles real)
    ticks exactly that often, with and without an auditor, quick and full. Before, the total said 8 + 1 for the full
    report, which ticks 10 (the 10-step T6 audit and the shuffled loop's), and the bar ended as '0% 36/?'."""
    from types import SimpleNamespace

    import tsdp.reports.tightness as tightness

    monkeypatch.setattr(tightness, "brackets", lambda *a, **k: [])
    monkeypatch.setattr(tightness, "shuffle_rows", lambda *a, **k: [])
    monkeypatch.setattr(tightness, "soundness_violations", lambda section: [])
    answer = SimpleNamespace(epsilon=1.0, epsilon_attained=0.5, construction=None)
    answers = SimpleNamespace(epsilon=lambda *a, **k: answer)

    def auditor(theorem, cfg, *, trials, steps=1, delta, seed=0):
        return {"theorem": theorem, "trials": trials, "epsilon_lower": 0.1, "confidence": 0.95}

    ticks = []
    tightness.tightness_section(DEFAULT_CONFIG, audit_fn=auditor if audits else None, trials=10, composed_trials=10,
                                quick=quick, tick=ticks.append, answers=answers)
    assert len(ticks) == tightness.tightness_ticks(quick=quick, audits=audits)
    assert len(ticks) == (3 if quick else 8) + (0 if not audits else 0 if quick else 2)
