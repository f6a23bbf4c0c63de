"""The errata table's measured entries that depend on the configuration or on the paper's shipped tables (reports.errata):
erratum 5 is 'not distinguishable here' where both readings give one weight, and names a configuration that tells them
apart (its weights computed here from ρ and T); errata 13-17 are read off the paper's tables."""
from fractions import Fraction

from tsdp.reports.errata import NOT_DISTINGUISHABLE, errata_section, erratum_5
from tsdp.theorems.config import DEFAULT_CONFIG


def _c3(w_lf, w_lc, verdict="confirmed"):
    return {"verdict": verdict, "numbers": {"w_limit_LF_to_0": w_lf, "w_limit_LC_to_0_printed_reading": w_lc}}


def test_erratum_5_is_not_reproduced_where_the_readings_agree():
    """At L_C = L_F (the default configuration) the two weights are one number: not distinguishable here, with the
    weights ρ L_C / T and ρ L_F / T at L_C = L_F + 1, which differ; at distinct weights a confirmed C3 reproduces it."""
    assert DEFAULT_CONFIG.context_length == DEFAULT_CONFIG.forecast_length
    text, status, numbers = erratum_5(DEFAULT_CONFIG, _c3(0.1, 0.1))
    assert status == NOT_DISTINGUISHABLE and "cannot tell the readings apart" in text
    other = DEFAULT_CONFIG.with_(context_length=DEFAULT_CONFIG.forecast_length + 1, top="wor", bottom="wr",
                                 instances=1)
    d = numbers["distinguishing"]
    assert d["w_LF_to_0"] == float(other.rho * Fraction(other.context_length, other.T))
    assert d["w_LC_to_0"] == float(other.rho * Fraction(other.forecast_length, other.T))
    assert d["w_LF_to_0"] != d["w_LC_to_0"]
    assert erratum_5(DEFAULT_CONFIG, _c3(0.2, 0.1))[1] == "reproduced"
    assert erratum_5(DEFAULT_CONFIG, _c3(0.2, 0.1, "refuted"))[1] == "not reproduced"


def test_errata_of_the_papers_tables():
    """Errata 13-17 come from the shipped tables: each reproduced, the misprint counts those of the paper's source
    (tests/experiments/test_paper_tables.py parses it)."""
    rows = {e["erratum"]: e for e in errata_section(DEFAULT_CONFIG, [], None) if e["erratum"] >= 13}
    assert sorted(rows) == [13, 14, 15, 16, 17]
    assert all(e["status"] == "reproduced" for e in rows.values())
    assert (rows[16]["numbers"]["cells"], rows[17]["numbers"]["cells"]) == (4, 45)
    assert rows[14]["measured"] == ("text: (1, v)-event-level; captions: (1, 0.001)-user-level, (1, 0.1)-user-level, "
                                    "(1, 0.01)-user-level")


def test_errata_3_4_print_t7_rounded_up_and_t9_rounded_down():
    """T7's δ is an upper bound and T9's a lower bound: their text reads back on each one's side of the computed
    number (over several σ, so some value's nearest text lies on the wrong side)."""
    import re

    from tsdp.reports.errata import erratum_3_4

    for sigma in (0.5, 0.7, 0.8, 1.0, 1.3, 2.0):
        text, _, numbers = erratum_3_4([], DEFAULT_CONFIG.with_(sigma=sigma))
        t7, t9 = re.search(r"δ = (\S+) ≥ T9 \(lower\) (\S+);", text).groups()
        assert float(t7) >= numbers["T7_at_eps1"] and float(t9) <= numbers["T9_at_eps1"], (sigma, text, numbers)
