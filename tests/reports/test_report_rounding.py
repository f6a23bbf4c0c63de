"""Every ε the report prints is on its safe side: a sound ε (an upper bound) printed rounded up, so the text reads
back as at least the computed number; an attained or audited ε (a lower bound) printed rounded down, so it reads
back as at most it. Checked over hypothesis-generated values on every table and sentence of the rendered report
(blocks, the same for HTML and Markdown) and on `tsdp report`'s own lines; results.json keeps the exact floats."""
import re

from hypothesis import given, settings, strategies as st

import tsdp.reports.run as run
from tsdp.reports.blocks import Block
from tsdp.reports.page import to_markdown
from tsdp.reports.render import blocks

VALUES = st.floats(min_value=1e-7, max_value=1e4, allow_nan=False, allow_infinity=False)


def results(fake_results, up: float, low: float) -> dict:
    """A report's results with every upper-bound ε equal to ``up`` and every lower-bound ε equal to ``low``."""
    audit = {"theorem": "T6", "sound_theorem": "T6", "epsilon_sound": up, "epsilon_attained": low,
             "epsilon_lower": low, "ratio": 0.5, "gof_pvalue": 0.5, "steps": 20, "delta": 1e-3, "trials": 500,
             "confidence": 0.95, "attained_pair": "the pair"}
    cells = {"evaluated": [], "not_evaluated": [], "grid": 1, "quick": False}
    c6 = {"id": "C6", "verdict": "confirmed", "verdict_text": "confirmed", "statement": "s", "reason": "r",
          "cells": cells, "figures": [],
          "numbers": {"N_tot": 320, "batch_size": 64, "k": 2, "delta": 1e-3, "epsilon_T13_sound": up,
                      "epsilon_T14_attained": low, "audit_status": "ran", "audit": audit, "why_T13_below": "w"}}
    c7 = {"id": "C7", "verdict": "confirmed", "verdict_text": "confirmed", "statement": "s", "reason": "r",
          "cells": cells, "figures": [],
          "numbers": {"dataset": "m1", "epochs": 10, "baselines": {}, "same_runs": [],
                      "rows": [{"model": "m", "epsilon": 1.0, "covered": True, "crps_mean": 0.1, "crps_std": 0.01,
                                "seeds": 1, "steps": [3], "epsilon_spent": [up], "capped": [False]}]}}
    tightness = {"bounds": [{"theorem": "T6", "sound_theorem": "T6", "kind": "tight", "audited_kind": "tight",
                             "covers_audit": True, "note": None, "audit": audit}],
                 "upper_gaps": [{"upper": "T7", "construction": "T9", "instances": 2, "epsilon_sound": up,
                                 "epsilon_attained": low, "attained_over_sound": 0.5,
                                 "epsilon_audited_lower": low, "audited_over_sound": 0.5}],
                 "composition": [{"steps": 10, "epsilon_sound": up, "epsilon_attained": low,
                                  "epsilon_audited_lower": low, "audit_trials": 500, "confidence": 0.95}],
                 "brackets": [{"pair": "T6", "sound_theorem": "T6", "discretization": 1e-3, "steps": 1000,
                               "delta": 1e-5, "epsilon_sound": up, "lower": low, "upper": up,
                               "rounding": 0.0, "composition_gap": 0.0}],
                 "shuffle": {"rows": [{"steps": 10, "delta": 1e-5, "sound_theorem": "T1", "epsilon_sound": up,
                                       "attained_construction": "hp", "epsilon_attained": low,
                                       "sound_over_attained": 2.0}],
                             "audit": dict(audit, sound_theorem="T1")}}
    catalogue = [{"theorem": "T6", "reference": "Thm", "kind": "tight", "epsilon_sound": up, "epsilon_attained": low,
                  "applies": True}]
    return fake_results(up, low, trials=500, claims=[c6, c7], accounting={"catalogue": catalogue},
                        tightness=tightness, violations=[{"theorem": "T6", "bound": "T6", "steps": 1,
                                                          "epsilon_lower": low, "epsilon_sound": up,
                                                          "confidence": 0.95, "trials": 500}])


def flat(blks):
    for b in blks:
        yield b
        if b[0] == Block.DETAILS:
            yield from flat(b[2])


# (first header, a header that tells the table apart) -> (columns of upper bounds, columns of lower bounds)
TABLES = {("schedule", "compositions"): ((2,), (3,)),
          ("audited construction", "ε bound"): ((2,), (3, 4)),
          ("δ", "schedule"): ((3,), (4,)),
          ("theorem", "reference"): ((3,), (4,)),
          ("upper bound", "construction"): ((3,), (4, 6)),
          ("steps", "δ"): ((3,), (4,)),  # before the next: its header has both
          ("steps", "ε sound (upper)"): ((1,), (2, 3)),
          ("construction", "sound bound"): ((3, 5), (4,)),
          ("model", "ε"): ((6,), ())}
SENTENCES = (  # (pattern, side) of the numbers in prose
    (r"certifies ε ≥ (\S+) \(confidence", "lower"), (r"above the sound ε = (\S+) of", "upper"),
    (r"ε audited \(LCB\) (\S+), attained (\S+), sound", "lower"), (r"attained \S+, sound (\S+) \(", "upper"))
ROWS = {"ε T13 (sound, one record: another relation)": "upper",
        "ε T14 (attained, element level; T14 is a lower bound)": "lower", "ε audited (LCB, pooled loop)": "lower"}


def on_its_side(text: str, value: float, side: str) -> None:
    printed = float(text)
    assert (printed >= value if side == "upper" else printed <= value), (side, text, value)


@settings(max_examples=60, deadline=None)
@given(up=VALUES, low=VALUES)
def test_every_printed_epsilon_is_on_its_safe_side(fake_results, up, low):
    blks = list(flat(blocks(results(fake_results, up, low))))
    seen = set()
    for b in blks:
        if b[0] == Block.TABLE:
            header, rows = b[1], b[2]
            key = next((k for k in TABLES if header[0] == k[0] and k[1] in header), None)
            if key is not None:
                seen.add(key)
                uppers, lowers = TABLES[key]
                for row in rows:
                    for i in uppers:
                        on_its_side(row[i], up, "upper")
                    for i in lowers:
                        on_its_side(row[i], low, "lower")
            for row in rows:
                if row and row[0] in ROWS:
                    seen.add(row[0])
                    on_its_side(row[1], up if ROWS[row[0]] == "upper" else low, ROWS[row[0]])
        if b[0] in (Block.PARAGRAPH, Block.ALERT):
            text = b[-1]
            for pattern, side in SENTENCES:
                for m in re.finditer(pattern, text):
                    seen.add(pattern)
                    for g in m.groups():
                        on_its_side(g, up if side == "upper" else low, side)
    assert seen == set(TABLES) | set(ROWS) | {p for p, _ in SENTENCES}  # every place was found and checked
    assert to_markdown(results(fake_results, up, low))  # the same blocks render


def test_tsdp_report_lines(tmp_path, monkeypatch, capsys, fake_results):
    from hypothesis import given as given_

    from tsdp.cli.main import main

    @settings(max_examples=30, deadline=None)
    @given_(VALUES, VALUES)
    def check(up, low):
        monkeypatch.setattr(run, "build_report", lambda *a, **k: results(fake_results, up, low))
        assert main(["report", "--no-progress", "--out", str(tmp_path)]) == 1
        out, err = capsys.readouterr()
        (sound,) = re.findall(r"ε=(\S+?)(?:;|$)", out, re.M)
        on_its_side(sound, up, "upper")
        (lower, sound) = re.search(r"certifies ε ≥ (\S+) .*> sound ε = (\S+) of", err).groups()
        on_its_side(lower, low, "lower")
        on_its_side(sound, up, "upper")

    check()


@settings(max_examples=60, deadline=None)
@given(VALUES, VALUES, VALUES, st.booleans())
def test_c6_verdict_prints_sound_up_and_attained_and_audited_down(t13, t14, audited, ran):
    """C6's reason (every branch that prints numbers): ε_T13 (sound) rounded up, ε_T14 (attained) and the audit's
    lower bound rounded down."""
    from tsdp.reports.claims import CLAIMS

    audit = {"epsilon_lower": audited, "confidence": 0.95, "trials": 500} if ran else None
    _, reason = CLAIMS["C6"].rule({"epsilon_T13_sound": t13, "epsilon_T14_attained": t14, "audit": audit, "k": 2,
                                   "why_T13_below": "w", "power": None})
    numbers = re.findall(r"ε_T13(?: \(sound\))? = (\S+?)[,;]?(?: |$)|ε_T13 \(sound\) (\S+?)(?: |$)", reason)
    sound = [a or b for a, b in numbers]
    attained = re.findall(r"ε_T14(?: \(attained\))?(?: =)? (\S+?)(?: |$)", reason)
    lowers = re.findall(r"(?:certifies ε ≥|audit's lower bound) (\S+?)(?: |$)", reason)
    assert sound and attained  # each branch names both
    for text in sound:
        on_its_side(text.rstrip(",;"), t13, "upper")
    for text in attained:
        on_its_side(text.rstrip(",;"), t14, "lower")
    for text in lowers:
        on_its_side(text, audited, "lower")
