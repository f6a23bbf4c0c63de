"""Claim C11 on the report's measured inference tables (reports.inference_section.measured_verdict): the Welch test of
r < 1 against r = 1 at each small ε, checked against the t statistic written out here, and the words it gives."""
import math

import pytest
from scipy import stats

from tsdp.reports.inference_section import attach_measured, measured_verdict


def table(rows, repeats=5):
    return {"rows": [{"epsilon": e, "r": r, "crps": m, "crps_std": s} for e, r, m, s in rows]
            + [{"epsilon": math.inf, "r": 1.0, "crps": 0.5, "crps_std": 0.0}],
            "settings": {"repeats": repeats, "data": "panel"}}


def welch_p(m1, s1, m2, s2, n):
    """Two-sided Welch p from means and ddof-0 stds over n releases each."""
    v1, v2 = s1 ** 2 / (n - 1), s2 ** 2 / (n - 1)  # (ddof-1 variance) / n
    t = (m1 - m2) / math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 ** 2 / (n - 1) + v2 ** 2 / (n - 1))
    return 2 * stats.t.sf(abs(t), df)


@pytest.mark.parametrize("sub, word", [(1.0, "reproduced"), (1.9, "qualified"), (3.0, "not reproduced")])
def test_words_follow_the_welch_test(sub, word):
    """r = 0.5 at CRPS ``sub`` ± 0.2 against r = 1 at 2.0 ± 0.2 (5 releases): significantly better, no difference,
    significantly worse; the reason carries the p-value computed here."""
    v = measured_verdict(table([(1.0, 1.0, 2.0, 0.2), (1.0, 0.5, sub, 0.2), (4.0, 0.5, 0.1, 0.01),
                                (4.0, 1.0, 0.2, 0.01)]), "panel")
    assert v["verdict"] == word and v["verdict_text"] == f"{word} on panel (1 small-ε cell)"
    printed = float(v["reason"].split("Welch p = ")[1].split(" ")[0])
    p = welch_p(sub, 0.2, 2.0, 0.2, 5)
    assert printed == pytest.approx(p, rel=1e-2)
    assert printed >= p if word != "qualified" else printed <= p  # the side that does not strengthen the finding


def test_welch_p_is_printed_on_the_side_that_does_not_strengthen_the_finding():
    """A significant difference's p is printed rounded up, no difference's rounded down: to nearest 3 digits, r = 0.5
    at 1.3 (significantly better, p = 0.000...) and at 1.9 (no difference) could print a p past the one computed on
    the side of their finding."""
    from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

    def third_digit(p, rounding):
        exact = Decimal(p)
        return float(exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2), rounding=rounding))

    cases = 0
    for sub in (1.0, 1.2, 1.3, 1.45, 1.55, 1.7, 1.8, 1.9, 2.3, 2.6, 3.0):
        v = measured_verdict(table([(1.0, 1.0, 2.0, 0.2), (1.0, 0.5, sub, 0.2), (4.0, 0.5, 0.1, 0.01),
                                    (4.0, 1.0, 0.2, 0.01)]), "panel")
        printed = float(v["reason"].split("Welch p = ")[1].split(" ")[0])
        p = welch_p(sub, 0.2, 2.0, 0.2, 5)
        found = v["verdict"] != "qualified"  # one comparison: a finding is p < 0.05 either way
        assert printed == third_digit(p, ROUND_CEILING if found else ROUND_FLOOR), (sub, p, printed)
        cases += float(f"{p:.3g}") != printed
    assert cases >= 3  # the grid holds p-values whose nearest text lies on the wrong side


def test_smallest_eps_when_none_is_small_and_not_evaluated_without_rates():
    v = measured_verdict(table([(4.0, 1.0, 2.0, 0.2), (4.0, 0.5, 1.0, 0.2), (8.0, 0.5, 3.0, 0.2),
                                (8.0, 1.0, 1.0, 0.2)]), "panel")
    assert v["verdict"] == "reproduced" and v["reason"].startswith("ε = 4: r = 0.5")
    assert measured_verdict(table([(1.0, 1.0, 2.0, 0.2)]), "panel")["verdict"] == "not evaluated"
    assert measured_verdict(table([(1.0, 1.0, 2.0, 0.2), (1.0, 0.5, 1.0, 0.2)], repeats=1), "panel")["verdict"] == \
        "not evaluated"


def test_attached_to_c11_after_the_section():
    claims = [{"id": "C11", "other_verdicts": [{"source": "paper"}]}]
    t = table([(1.0, 1.0, 2.0, 0.2), (1.0, 0.5, 1.0, 0.2)])
    attach_measured(claims, {"synthetic": t, "grunfeld": None, "grunfeld_status": "ran"})
    assert [o["source"] for o in claims[0]["other_verdicts"]] == ["paper",
                                                                 "the report's section 6, measured on synthetic data"]


def test_reproduced_holds_at_its_level_over_every_comparison_it_could_pick():
    """'reproduced' says r < 1 beats r = 1 at some small ε, the best r < 1 chosen after seeing the CRPS: 2 small ε x 2
    rates are 4 comparisons, so one p-value between 0.05 / 4 and 0.05 is no finding at the 0.05 level (union bound);
    each comparison at 0.05 would give a false 'reproduced' with probability up to 4 x 0.05 / 2."""
    p = welch_p(1.65, 0.2, 2.0, 0.2, 5)
    assert 0.05 / 4 < p < 0.05
    rows = [(e, r, 2.0, 0.2) for e in (0.5, 1.0) for r in (1.0, 0.75)] + [(0.5, 0.5, 2.1, 0.2), (1.0, 0.5, 1.65, 0.2)]
    v = measured_verdict(table(rows), "panel")
    assert v["verdict"] == "qualified" and "4 comparisons" in v["reason"]
    strong = measured_verdict(table(rows[:-1] + [(1.0, 0.5, 1.0, 0.2)]), "panel")  # p ≈ 1e-4: still a finding
    assert strong["verdict"] == "reproduced"
