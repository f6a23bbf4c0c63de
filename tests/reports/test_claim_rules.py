"""The claims' verdict rules (reports.claim_c1 ... claim_c6) on small hand-made numbers, the verdict
text with the cells it rests on, and the report's violation check. Pure functions,
milliseconds; the claims' computed numbers are tested against independent recomputation in
test_report_claims.py."""
import pytest

from tsdp.reports.claim_base import Cells, ClaimContext, verdict_text
from tsdp.reports.claims import CLAIMS
from tsdp.reports.tightness import violation_summary

C1, C2, C3, C4, C5, C6 = (CLAIMS[c].rule for c in ("C1", "C2", "C3", "C4", "C5", "C6"))


def cells(n_eval, grid, quick=False, skipped=()):
    return {"grid": grid, "quick": quick, "evaluated": [f"c{i}" for i in range(n_eval)],
            "not_evaluated": [{"cell": c, "reason": "r", "cells": k} for c, k in skipped]}


# ----------------------------------------------------------------------------- verdict text


def test_verdict_text_names_its_cells():
    assert verdict_text("confirmed", cells(15, 15)) == "confirmed on all 15 cells"
    assert verdict_text("confirmed", cells(3, 15, quick=True)) == "confirmed on the quick grid, 3 of 15 cells"
    assert verdict_text("qualified", cells(4, 15, skipped=[("x", 11)])) == "qualified on 4 of 15 cells (11 not evaluable)"
    assert verdict_text("confirmed", cells(1, 1)) == "confirmed on its one cell"


def test_zero_cells_is_not_evaluated_whatever_the_word():
    for word in ("confirmed", "refuted", "qualified", "not evaluated"):
        assert verdict_text(word, cells(0, 15, skipped=[("x", 15)])) == "not evaluated (0 of 15 cells)"


def test_cells_skip_counts_grid_cells():
    c = Cells(grid=25)
    c.skip("r=0.5, Λ/N=0.5", "not representable", 4)
    assert c.as_dict(False)["not_evaluated"] == [{"cell": "r=0.5, Λ/N=0.5", "reason": "not representable", "cells": 4}]


# ----------------------------------------------------------------------------- C1


def c1_row(cell, steps, sound, attained, lam=2):
    return {"cell": cell, "steps": steps, "instances": lam, "judged": cell == "config" or steps >= 100,
            "upper_wins_from_eps": sound, "attained_wins_from_eps": attained, "robust_wins_from_eps": sound}


def c1(rows):
    return {"rows": rows, "eps_lo": 1e-3, "eps_hi": 1e3, "one_step_from": 0.1}


def test_c1_rule():
    good = [c1_row("config", 1, 0.05, 0.1), c1_row("config", 100, 1e-3, 1e-3)]
    assert C1(c1(good))[0] == "confirmed"
    # one grid cell after 100 steps loses below ε = 0.01: qualified, not confirmed
    assert C1(c1(good + [c1_row("r=0.5, Λ/N=0.1", 100, 0.01, 1e-3)]))[0] == "qualified"
    # a grid cell's 1-step row is drawn, not judged
    assert C1(c1(good + [c1_row("r=0.5, Λ/N=0.1", 1, 0.8, 0.8)]))[0] == "confirmed"
    # after 1 step only from ε = 0.2, but after 100 steps everywhere: qualified
    assert C1(c1([c1_row("config", 1, 0.2, 0.2), c1_row("config", 100, 1e-3, 1e-3)]))[0] == "qualified"
    # neither evaluation ahead, neither after 1 step nor after 100 steps: refuted
    assert C1(c1([c1_row("config", 1, None, 0.5), c1_row("config", 100, 0.3, None)]))[0] == "refuted"
    # every λ must win: one λ behind after 1 step in the upper evaluation only: qualified
    rows = good + [c1_row("config", 1, 0.5, 0.05, lam=4), c1_row("config", 100, 1e-3, 1e-3, lam=4)]
    assert C1(c1(rows))[0] == "qualified"


def test_c1_one_step_ordering_holds_only_from_about_0_1():
    """Section 5 (line 769): after one step λ = 1 'only has smaller δ(ε) for ε ≥ 10^-1': below, some λ > 1 is smaller.
    With λ = 1 ahead on the whole grid after one step (in either evaluation) that part fails: qualified, not
    confirmed; the reason says which part."""
    good = [c1_row("config", 1, 0.05, 0.1), c1_row("config", 100, 1e-3, 1e-3)]
    assert C1(c1(good))[0] == "confirmed"
    for ahead_everywhere in ([c1_row("config", 1, 1e-3, 0.1)], [c1_row("config", 1, 0.05, 1e-3)]):
        word, reason = C1(c1(ahead_everywhere + good[1:]))
        assert word == "qualified"
        assert "after 1 step some λ>1 below λ=1 under the ε where λ=1 leads" in reason and "): False" in reason
    # another λ behind below 0.1 in that evaluation restores it
    rows = [c1_row("config", 1, 1e-3, 0.1), c1_row("config", 1, 0.07, 0.07, lam=4), *good[1:],
            c1_row("config", 100, 1e-3, 1e-3, lam=4)]
    assert C1(c1(rows))[0] == "confirmed"


def test_c1_range_widens_with_the_steps():
    """Lines 697 and 770: the ε range where λ = 1 leads grows with the steps; per λ and evaluation, the ε it leads
    from never increases from 1 to 100 to 1000 steps (a step count where it never leads counts as infinity)."""
    from tsdp.reports.claim_c1 import findings

    widening = [c1_row("config", 1, 0.05, 0.1), c1_row("config", 100, 0.01, 1e-3), c1_row("config", 1000, 1e-3, 1e-3)]
    assert findings(c1(widening))["range_widens"] is True
    narrowing = [c1_row("config", 1, 0.05, 0.1), c1_row("config", 100, 0.01, 1e-3), c1_row("config", 1000, 0.02, 1e-3)]
    assert findings(c1(narrowing))["range_widens"] is False
    lost = [c1_row("config", 1, 0.05, 0.1), c1_row("config", 100, None, 1e-3)]
    assert findings(c1(lost))["range_widens"] is False
    # per λ: λ = 4 starting later than λ = 2 after 100 steps is no narrowing
    per_lambda = [c1_row("config", 1, 0.05, 0.1), c1_row("config", 100, 1e-3, 1e-3),
                  c1_row("config", 1, 0.2, 0.2, lam=4), c1_row("config", 100, 0.1, 0.1, lam=4)]
    assert findings(c1(per_lambda))["range_widens"] is True


def test_c1_grid_is_the_appendix_three_cells():
    """Appendix C.1.1 draws three (r, Λ/N) cells, (0.5, 0.1), (0.1, 0.5), (0.1, 0.1); (0.5, 0.5) has no figure there
    and was judged. C1's full grid is the configuration (λ ∈ {2, 4, 8} × 3 step counts) and the three cells
    (λ ∈ {2, 4} × 100, 1000 steps); C2 keeps the four cells its appendix figure has."""
    from tsdp.reports.claim_base import grid_cells
    from tsdp.reports.claim_c1 import APPENDIX_CELLS
    from tsdp.theorems.config import DEFAULT_CONFIG

    labels = [label for label, _, _ in grid_cells(DEFAULT_CONFIG, APPENDIX_CELLS)]
    assert labels == ["config", "r=0.5, Λ/N=0.1", "r=0.1, Λ/N=0.5", "r=0.1, Λ/N=0.1"]
    assert len(grid_cells(DEFAULT_CONFIG)) == 5
    numbers = CLAIMS["C1"].compute(DEFAULT_CONFIG.with_(batch_size=2), True, ClaimContext()).numbers
    assert numbers["cells"]["grid"] == 3 * 3 + 3 * 2 * 2


def test_c1_headline_carries_the_rigorous_range():
    """C1's verdict text ends with the ε range where T6 upper ≤ T9 attained holds (the largest start over λ), per step
    count, computed from the rows; a step count where it never holds says so."""
    rows = [c1_row("config", 1, 0.05, 0.1), c1_row("config", 100, 0.0907, 1e-3),
            c1_row("config", 100, 0.02, 1e-3, lam=4)]
    numbers = {**c1(rows), "cells": cells(3, 25, quick=True)}
    entry_text = CLAIMS["C1"].scope(numbers)
    assert entry_text == ("rigorous (T6 upper ≤ T9 attained) from ε = 0.05 after 1 step, from ε = 0.0907 after 100 "
                          "steps; below, only the like-for-like comparisons agree")
    rows[0]["robust_wins_from_eps"] = None
    assert "nowhere after 1 step," in CLAIMS["C1"].scope(c1(rows))


def test_c1_zero_cells_not_evaluated():
    assert C1(c1([]))[0] == "not evaluated"
    assert C1(c1([c1_row("r=0.1, Λ/N=0.1", 1, 0.05, 0.05)]))[0] == "not evaluated"  # only unjudged rows


# ----------------------------------------------------------------------------- C2


def c2_row(cell, sound, attained, robust=False):
    lose = None if sound and attained else {"eps_min": 0.1, "eps_max": 0.2, "delta_ours_max": 0.3,
                                             "delta_other_max": 0.2}
    return {"cell": cell, "schedule": "1 epoch", "sound_wor_wins_everywhere": sound,
            "attained_wor_wins_everywhere": attained, "robust_wor_wins_everywhere": robust,
            "sound_wor_loses_on": lose, "attained_wor_loses_on": lose}


def test_c2_rule():
    assert C2({"rows": [c2_row("config", True, True), c2_row("g", True, True)]})[0] == "confirmed"
    word, reason = C2({"rows": [c2_row("config", True, True), c2_row("g", True, False)]})
    assert word == "qualified" and "1/2" in reason and "g/1 epoch" in reason
    assert C2({"rows": [c2_row("config", False, False), c2_row("g", True, True)]})[0] == "refuted"
    assert C2({"rows": [c2_row("config", True, False)]})[0] == "qualified"
    assert C2({"rows": []})[0] == "not evaluated"


# ----------------------------------------------------------------------------- C3


def c3(mono=True, rel=1e-3, w_rel=1e-4, weights=({"sigma_F": 1000.0, "weight": 0.005},)):
    return {"weights": list(weights), "monotone_in_sigma_F": mono, "max_rel_gap_one_step": rel,
            "max_rel_gap_composed": rel, "weight_rel_gap": w_rel, "composed_steps": 100, "w_limit_LF_to_0": 0.005}


def test_c3_rule():
    assert C3(c3())[0] == "confirmed"
    assert C3(c3(mono=False))[0] == "refuted"
    assert C3(c3(rel=0.011))[0] == "refuted"
    assert C3(c3(rel=0.01))[0] == "confirmed"  # the tolerance is inclusive
    assert C3(c3(w_rel=2e-3))[0] == "refuted"
    assert C3(c3(weights=()))[0] == "not evaluated"


def test_c3_is_judged_in_all_four_appendix_cells():
    """Appendix C.1.3: 'In all cases' (r, Λ/N ∈ {0.5, 0.1}) σ_F → ∞ equals L_F = 0; C3 judged the configuration only.
    A grid cell whose limit misses L_F → 0 (profile or weight beyond its tolerance) refutes it and is named; on the
    default configuration the four cells are computed, each against its own reference weight ρ L_C / T."""
    from tsdp.theorems.config import DEFAULT_CONFIG

    def row(cell, rel=1e-3, w_rel=1e-4):
        return {"cell": cell, "sigma_F": 1e3, "max_rel_gap_one_step": rel, "weight_rel_gap": w_rel}

    grid = [row("r=0.5, Λ/N=0.5"), row("r=0.1, Λ/N=0.1")]
    assert C3({**c3(), "grid": grid})[0] == "confirmed"
    word, reason = C3({**c3(), "grid": [grid[0], row("r=0.1, Λ/N=0.1", rel=0.02)]})
    assert word == "refuted" and "1/2" in reason and "at r=0.1, Λ/N=0.1" in reason
    assert C3({**c3(), "grid": [row("r=0.5, Λ/N=0.5", w_rel=2e-3)]})[0] == "refuted"
    numbers = CLAIMS["C3"].compute(DEFAULT_CONFIG, True, ClaimContext()).numbers
    assert [g["cell"] for g in numbers["grid"]] == ["r=0.5, Λ/N=0.5", "r=0.5, Λ/N=0.1", "r=0.1, Λ/N=0.5",
                                                    "r=0.1, Λ/N=0.1"]
    for g in numbers["grid"]:
        p = g["params"]
        assert g["w_limit_LF_to_0"] == pytest.approx(p["rho"] * DEFAULT_CONFIG.context_length / (p["L"] -
                                                     DEFAULT_CONFIG.forecast_length + 1))
    assert numbers["cells"]["grid"] == 7 + 4 and len(numbers["cells"]["evaluated"]) == 4 + 4


def test_c3_without_a_compared_point_is_not_confirmed():
    """L_C = 0: the L_F → 0 reference is 0 (below NEGLIGIBLE) at every ε, so the one-step profile is compared nowhere;
    the gap is None, never a 0 that confirms (the weight alone is checked: qualified), and a profile far from the
    reference at a compared point still refutes."""
    import numpy as np

    from tsdp.reports.claim_c3 import max_rel

    assert max_rel(np.array([0.3, 0.2]), np.zeros(2)) is None
    assert max_rel(np.array([0.3, 0.2]), np.array([0.3, 0.1])) == 1.0
    word, reason = C3(c3(rel=None))
    assert word == "qualified" and "not compared" in reason
    assert C3(c3(rel=None, mono=False))[0] == "refuted"


def test_c3_at_no_context_is_not_confirmed_on_a_vacuous_comparison():
    from tsdp.theorems.config import DEFAULT_CONFIG

    entry = CLAIMS["C3"].evaluate(DEFAULT_CONFIG.with_(context_length=0), quick=True)
    assert entry["numbers"]["max_rel_gap_one_step"] is None and entry["verdict"] == "qualified"


# ----------------------------------------------------------------------------- C4


def c4_row(like, sound_t2, r=0.1):
    return {"r": r, "like_for_like_vs_T3": like, "robust_vs_T3": like, "sound_vs_T2": sound_t2}


def test_c4_rule():
    none = {"not_evaluated": []}
    assert C4({"rows": [c4_row(True, True)] * 3, "cells": none})[0] == "confirmed"
    assert C4({"rows": [c4_row(True, True), c4_row(False, True)], "cells": none})[0] == "qualified"
    assert C4({"rows": [c4_row(False, False)], "cells": none})[0] == "refuted"
    skipped = {"not_evaluated": [{"cell": "r=0.5, λ=16", "reason": "λ = 16 > Λ = 15", "cells": 1}]}
    word, reason = C4({"rows": [c4_row(True, True)], "cells": skipped})
    assert word == "confirmed" and "not evaluated: r=0.5, λ=16 (λ = 16 > Λ = 15)" in reason
    assert C4({"rows": [], "cells": skipped})[0] == "not evaluated"


# ----------------------------------------------------------------------------- C5


def c5_row(cell, length, k, excess, from_eps=0.5, somewhere=True, gap=None, above=None):
    return {"cell": cell, "window_length": length, "k": k, "max_excess_T14_minus_T6": excess, "at_eps": 1.0,
            "max_gap_T14_T6": abs(excess) if gap is None else gap,
            "T14_ge_T6_from_eps": from_eps, "T14_gt_T6_somewhere": somewhere,
            "T14_gt_T6_from_crossing": somewhere if above is None else above}


def test_c5_crossing_needs_t14_above_t6_beyond_it():
    """'T14 > T6 at every grid ε from a crossing ε on': a crossing whose tail is only ties (both below NEGLIGIBLE) with
    the strict excess below it (T14 above T6 at small ε, below at larger ε) is not the claim's shape."""
    rows = [c5_row("a", 1, 1, 0.0), c5_row("a", 4, 4, 0.01, above=False), c5_row("a", 32, 20, 0.02)]
    assert C5({"rows": rows})[0] != "confirmed"


def test_c5_rows_say_where_t14_exceeds_t6():
    """The row's flags on hand-made profiles: T14 above T6 at small ε, below it at mid ε, both 0 in the tail."""
    import numpy as np

    from tsdp.reports.claim_c5 import comparison

    eps = np.array([0.1, 0.5, 1.0, 2.0])
    flags = comparison(eps, np.array([0.5, 0.3, 0.0, 0.0]), np.array([0.6, 0.2, 0.0, 0.0]))
    assert flags["T14_ge_T6_from_eps"] == 1.0 and flags["T14_gt_T6_somewhere"]
    assert not flags["T14_gt_T6_from_crossing"]
    flags = comparison(eps, np.array([0.5, 0.3, 0.1, 0.0]), np.array([0.4, 0.35, 0.2, 0.0]))
    assert flags["T14_ge_T6_from_eps"] == 0.5 and flags["T14_gt_T6_from_crossing"]


def test_c5_equality_at_k1_sees_t14_below_t6():
    """T14 = T6 at L_C + L_F = 1 is an equality: T14 0.3 below T6 somewhere (its largest excess still 0, where both
    are 0) is no equality; the rule read only the largest excess T14 - T6 and confirmed it."""
    rows = [c5_row("a", 1, 1, 0.0, gap=0.3), c5_row("a", 4, 4, 0.01), c5_row("a", 32, 20, 0.02)]
    assert C5({"rows": rows})[0] == "qualified"


def test_c5_rule():
    good = [c5_row("a", 1, 1, 0.0), c5_row("a", 4, 4, 0.01), c5_row("a", 32, 20, 0.02)]
    assert C5({"rows": good})[0] == "confirmed"
    # the configuration's row is shown, not judged
    assert C5({"rows": good + [c5_row("config", 2, 2, -0.5, None, False)]})[0] == "confirmed"
    # the excess falls with the length: qualified (T14 still above T6 at the largest k)
    assert C5({"rows": [c5_row("a", 1, 1, 0.0), c5_row("a", 4, 4, 0.02), c5_row("a", 32, 20, 0.01)]})[0] == "qualified"
    # T14 = T6 fails at k = 1
    assert C5({"rows": [c5_row("a", 1, 1, 1e-6), c5_row("a", 4, 4, 0.02)]})[0] == "qualified"
    # T14 never above T6 for the largest k: refuted
    assert C5({"rows": [c5_row("a", 1, 1, 0.0), c5_row("a", 4, 4, 0.0, None, False)]})[0] == "refuted"
    assert C5({"rows": [c5_row("config", 2, 2, 0.1)]})[0] == "not evaluated"
    reason = C5({"rows": good, "cells": cells(3, 24, quick=True)})[1]
    assert reason.startswith("in each of the 1 (N_tot, Λ/N_tot) cells evaluated (3 of the grid's 24 cells) T14 = T6")


# ----------------------------------------------------------------------------- C6


def c6(t13=0.08, t14=0.37, audit=None, k=2):
    return {"epsilon_T13_sound": t13, "epsilon_T14_attained": t14, "audit": audit, "k": k,
            "why_T13_below": "T13 covers one record"}


def test_c6_rule():
    audit = {"epsilon_lower": 0.1, "confidence": 0.95, "trials": 500000}
    word, reason = C6(c6(audit=audit))
    assert word == "confirmed" and "T13 covers one record" in reason and "500000 trials" in reason
    assert C6(c6(audit={**audit, "epsilon_lower": 0.05}))[0] == "qualified"
    assert C6(c6(audit={**audit, "epsilon_lower": 0.0}))[0] == "qualified"
    assert C6(c6())[1].startswith("audit not available")
    assert C6(c6(t14=0.08, audit=audit))[0] == "refuted"  # ε_T14 ≤ ε_T13: nothing to underestimate
    assert C6(c6(t14=None))[0] == "not evaluated"


def test_c6_says_what_its_trials_could_certify():
    """Qualified at too few trials: the reason gives the designed test's ideal at those trials and the trials that
    would certify ε_T13, or that the construction cannot, or that the search's cap was passed."""
    from tsdp.reports.claim_c6 import reach_text

    audit = {"epsilon_lower": 0.0, "confidence": 0.95, "trials": 20000}
    reach = {"ideal": 0.008438, "trials_needed": 58855, "cannot": False, "confidence": 0.95, "search_cap": 10**7}
    _, reason = C6({**c6(audit=audit), "power": reach})
    assert reason.endswith("does not exceed ε_T13: at 20000 trials per world the designed test expects to certify "
                           "ε ≥ 0.008438 (its ideal); about 5.9e+04 trials per world would certify ε_T13 = 0.08 at 95% "
                           "confidence")
    assert reach_text({**reach, "trials_needed": None}, 20000, 0.08).endswith(
        "; it would need more than 1e+07 trials per world to certify ε_T13")
    assert reach_text({**reach, "cannot": True}, 20000, 0.08).endswith(
        "; the element-level construction cannot certify ε_T13 at any number of trials")
    assert reach_text(None, 20000, 0.08) == ""


# ----------------------------------------------------------------------------- violations


def bound(theorem, sound, lower, covers=True, audited=True):
    audit = {"epsilon_lower": lower, "epsilon_sound": sound, "confidence": 0.95, "trials": 5000, "steps": 1}
    return {"theorem": theorem, "sound_theorem": theorem, "covers_audit": covers, "audit": audit if audited else None}


def comp(steps, sound, lower):
    return {"steps": steps, "epsilon_sound": sound, "epsilon_audited_lower": lower, "audit_trials": 100,
            "confidence": 0.95}


@pytest.mark.parametrize("bounds, composition, expected", [
    ([bound("T6", 3.7, 0.8)], [comp(1, 3.7, 0.8), comp(10, 7.7, 1.0)], []),
    ([bound("T6", 3.7, 3.8)], [], ["T6"]),
    ([bound("T14", 2.5, 4.0, covers=False)], [], []),  # T13 vs T14: another relation (claim C6)
    ([bound("T6", 3.7, 0.0, audited=False)], [comp(10, 7.7, 7.8)], ["T6"]),  # composed audit above sound
])
def test_violation_summary(bounds, composition, expected):
    v = violation_summary({"bounds": bounds, "composition": composition})
    assert v["violation"] is bool(expected)
    assert [c["theorem"] for c in v["violations"]] == expected
    for c in v["violations"]:
        assert c["epsilon_lower"] > c["epsilon_sound"] and c["confidence"] == 0.95


def test_violation_summary_counts_checked_audits():
    v = violation_summary({"bounds": [bound("T6", 3.7, 0.8), bound("T14", 2.5, 4.0, covers=False)],
                           "composition": [comp(1, 3.7, 0.8), comp(10, 7.7, 1.0), comp(100, 25.0, None)]})
    assert v == {"violation": False, "violations": [], "checked": 2, "confidence": 0.95,
                 "family_confidence": pytest.approx(0.8)}  # two audit verdicts at 90% each: 1 - 2 x 0.1


def test_violation_summary_confidence_is_the_least_confident_audit():
    """The pass's confidence is the weakest audit's (its level), None when nothing was compared or a record has none."""
    low = bound("T9", 3.0, 0.5)
    low["audit"]["confidence"] = 0.9
    assert violation_summary({"bounds": [bound("T6", 3.7, 0.8), low], "composition": []})["confidence"] == 0.9
    assert violation_summary({"bounds": [], "composition": []})["confidence"] is None
    assert violation_summary({"bounds": [bound("T6", 3.7, 0.8)], "composition": [
        {**comp(10, 7.7, 1.0), "confidence": None}]})["confidence"] is None


def _c7_numbers(dataset, dp):
    """C7's numbers as the claim computes them: the evidence of one DP cell against M1's baselines."""
    from tsdp.experiments.reported_claims import autoarima_verdict, c7_wordings
    from tsdp.experiments.paper_tables import paper_c7
    from tsdp.experiments.table import Score, c7_verdict

    ev = c7_verdict([Score("simple-ff", 0.5, "wor", dp, 0.0, 1)], {"seasonal-naive": 0.205, "autoets": 0.135}, dataset)
    return {"dataset": dataset, "evidence": ev.as_dict(), "paper": paper_c7().as_dict(),
            "wordings": dict(zip(("main_text", "appendix"), (v.as_dict() for v in c7_wordings()))),
            "autoarima": autoarima_verdict().as_dict(), "epochs": 10, "cells": cells(1, 2, quick=True)}


@pytest.mark.parametrize("dp", [0.10, 0.1349, 0.135, 0.1401, 0.196])
def test_c7_on_m1_says_reproduced_or_not_there_never_refuted(dp):
    """On the shipped M1 yearly series the verdict is a finding there ('reproduced' / 'not reproduced on M1
    yearly'), never 'confirmed' / 'refuted' of the paper's claim; its text names the data and cells, its reason the
    deciding cell against AutoETS 0.135. A tie is no win."""
    claim = CLAIMS["C7"]
    numbers = _c7_numbers("m1-yearly", dp)
    word, reason = claim.rule(numbers)
    assert word == ("reproduced" if dp < 0.135 else "not reproduced")
    text = verdict_text(word, numbers["cells"], claim.data(numbers))
    assert text == f"{word} on M1 yearly (the quick grid, 1 of 2 cells)"
    assert f"ε = 0.5: simple-ff (wor) {dp:.4f}" in reason and "better baseline, autoets 0.1350" in reason
    assert reason.startswith("at every ε ≤ 1 a DP model beats" if dp < 0.135 else "the best DP model is not below")


@pytest.mark.parametrize("dp", [0.10, 0.135, 0.196])
def test_c7_on_a_paper_dataset_confirms_or_refutes(dp):
    claim, numbers = CLAIMS["C7"], _c7_numbers("electricity", dp)
    word, _ = claim.rule(numbers)
    assert word == ("confirmed" if dp < 0.135 else "refuted")
    text = verdict_text(word, numbers["cells"], claim.data(numbers))
    assert text == f"{word} on electricity (the quick grid, 1 of 2 cells)"


def test_c7_not_evaluated_without_evidence():
    numbers = {"dataset": "m1-yearly", "evidence": None}
    assert CLAIMS["C7"].rule(numbers)[0] == "not evaluated"
    assert verdict_text("not evaluated", cells(0, 2), "M1 yearly") == "not evaluated on M1 yearly (0 of 2 cells)"


def test_c7_paper_verdicts_name_the_table_and_wording_that_carry_them():
    """On the paper's own tables, each wording apart: the main text's 'even for ε ≤ 1' is confirmed on Table 1
    (traffic), the appendix's 'for all considered ε' refuted on its electricity table alone (ε = 0.25, 0.5); the
    AutoARIMA numbers are judged beside them."""
    main, appendix, autoarima = CLAIMS["C7"].other_verdicts(_c7_numbers("m1-yearly", 0.18))
    assert (main.verdict, appendix.verdict, autoarima.verdict) == ("confirmed", "refuted", "confirmed")
    assert main.verdict_text == ("confirmed on the paper's Table 1 (traffic; the main text's 'even for ε ≤ 1'; "
                                 "ε = 0.5, 1; 2 private columns of 1 table)")
    assert appendix.verdict_text == ("refuted on the paper's appendix electricity table (the appendix's 'in all cases "
                                     "... for all considered ε'; ε = 0.25, 0.5; 18 private columns of 3 tables)")
    assert "dlinear 0.076 > autoets 0.064" in appendix.reason and "dlinear 0.064 = autoets 0.064" in appendix.reason
    assert autoarima.verdict_text.startswith("confirmed on the paper's AutoARIMA numbers (Appendix 'Models'; 3 datasets)")


def test_c7_names_a_deciding_cell_that_stopped_at_its_cap():
    """A deciding cell whose run stopped at the epochs cap before its budget is named with its ε spent; a cell that
    reached its budget is not."""
    numbers = _c7_numbers("m1-yearly", 0.18)
    row = {"checkpoint": "last", "model": "simple-ff", "epsilon": 0.5, "top": "wor", "capped": [True],
           "epsilon_spent": [0.4417]}
    _, reason = CLAIMS["C7"].rule({**numbers, "rows": [row]})
    assert reason.endswith("; ε = 0.5: simple-ff stopped at its 10-epoch cap (ε spent 0.4417 < 0.5)")
    _, reason = CLAIMS["C7"].rule({**numbers, "rows": [{**row, "capped": [False], "epsilon_spent": [0.5]}]})
    assert "cap" not in reason


def test_the_summary_shows_both_c7_lines():
    """The report's first screen: C7's measured verdict on M1 and, under it, the paper's-table verdict."""
    from tsdp.reports.render import blocks

    claim = CLAIMS["C7"]
    numbers = _c7_numbers("m1-yearly", 0.18)
    word, reason = claim.rule(numbers)
    entry = {"id": "C7", "statement": claim.statement, "verdict": word, "reason": reason,
             "verdict_text": verdict_text(word, numbers["cells"], claim.data(numbers)),
             "other_verdicts": [o.as_dict() for o in claim.other_verdicts(numbers)]}
    entry.update(cells={"evaluated": [], "not_evaluated": [], "grid": 4, "quick": True}, numbers=numbers)
    shown = blocks({"meta": {"name": "x", "mode": "quick", "version": "0", "status": "complete", "elapsed_s": 1.0},
                    "claims": [entry]})
    (table,) = [b for b in shown if b[0] == "table" and b[1][0] == "claim"]  # the first screen's claims table
    assert [r[:2] for r in table[2]] == [
        ["C7", "not reproduced on M1 yearly (the quick grid, 1 of 2 cells)"]] + [
        [f"C7 ({o['source']})", o["verdict_text"]] for o in entry["other_verdicts"]]
    assert len(table[2]) == 4


def test_c7_entry_names_m1_and_the_quick_grids_share_of_the_dp_cells(monkeypatch):
    """C7's results.json entry from its grid (training replaced by fixed results, baselines by M1's): the quick
    grid judges 2 of the full grid's 4 DP cells (2 models × ε ∈ {0.5, 1}); a capped cell is marked; both verdicts
    are there."""
    import math

    from tsdp.experiments import table
    from tsdp.experiments.cells import CellResult
    from tsdp.experiments.run_info import GridRun
    from tsdp.theorems.config import DEFAULT_CONFIG

    def fake_grid(cells, settings):
        crps = {0.5: 0.75, 1.0: 0.69, math.inf: 0.14}
        return [CellResult(c.key, c.model, c.epsilon, c.seed_index, c.level, c.top, 0, 8.0,
                           210 if c.epsilon >= 1 else 70, 10.0 if c.epsilon >= 1 else 70 / 21,
                           None if math.isinf(c.epsilon) else min(c.epsilon, 0.8807),
                           "T6", crps[c.epsilon], crps[c.epsilon], 1, 0.0, "cpu") for c in cells], \
            GridRun(None, 1, len(cells), 0, len(cells), True, 0.0)

    monkeypatch.setattr(table, "run_grid", fake_grid)
    monkeypatch.setattr(table, "baseline_crps_of", lambda settings: {"seasonal-naive": 0.2049, "autoets": 0.1352})
    entry = CLAIMS["C7"].evaluate(DEFAULT_CONFIG, quick=True)
    assert entry["verdict"] == "not reproduced"
    assert entry["verdict_text"] == "not reproduced on M1 yearly (the quick grid, 2 of 4 cells)"
    assert entry["reason"].startswith("the best DP model is not below the better baseline, autoets 0.1352, at ε = 0.5: "
                                      "simple-ff (wor) 0.7500; ε = 1: simple-ff (wor) 0.6900 (of 2 ε ≤ 1)")
    capped = [tuple(r["capped"]) for r in entry["numbers"]["rows"] if r["checkpoint"] == "last"]
    assert capped == [(False,), (True,), (False,)]
    assert [o["verdict"] for o in entry["other_verdicts"]] == ["confirmed", "refuted", "confirmed"]
    assert entry["reason"].endswith("; ε = 1: simple-ff stopped at its 10-epoch cap (ε spent 0.8807 < 1)")


# ----------------------------------------------------------------------------- C8-C12


def _measurement(p_top, p_level, power, factor, rows, **protocol):
    """One measurement of C10's or C12's numbers: the protocol's fields, its rows and its two F-tests (top level,
    ``factor``) at p-values ``p_top``, ``p_level``, each with power ``power``."""
    def test(name, p):
        return {"factor": name, "levels": ["a", "b"], "means": [0.3, 0.31], "df": 1, "df_error": 12, "f": 2.0,
                "p_value": p, "alpha": 0.025, "significant": p < 0.025, "effect": 0.015, "power": power,
                "detectable": 0.01}
    return {**protocol, "crps": rows, "tests": [test("top level", p_top), test(factor, p_level)]}


def c10(p_top, p_batch, power=0.9, late=0, capped=(0.5, 1e-6), capped_power=0.9):
    """C10's numbers: the paper's protocol's tests at p-values ``p_top``, ``p_batch`` (power ``power``), ``late`` of
    its 24 runs with their best checkpoint in the last quarter; the 10-epoch cap's tests at ``capped`` (Λ ∈ {4, 32}
    with WOR: 420 and 50 steps)."""
    paper = _measurement(p_top, p_batch, power, "batch size Λ",
                         [{"top": "wor", "batch_size": b, "instances": 1, "steps": 6000, "epochs": 6000 / spe,
                           "crps": [0.1, 0.2], "selected_steps": [1500, 6000]} for b, spe in ((4, 42), (32, 5))],
                         steps=6000, epochs=None, validate_every=25, selected=True, steps_full=6000,
                         convergence={"runs": 24, "late": late, "tail": 0.25, "limit": 0.5, "converged": late <= 12})
    cap = _measurement(*capped, capped_power, "batch size Λ",
                       [{"top": "wor", "batch_size": b, "instances": 1, "steps": steps, "epochs": 10.0,
                         "crps": [0.3, 0.4]} for b, steps in ((4, 420), (32, 50))],
                       steps=None, epochs=10, validate_every=None, selected=False)
    return {"seeds": 2, "effect_relative": 0.05, "factor": "batch_size", "levels": [4, 8, 16, 32],
            "levels_full": [4, 8, 16, 32], "fixed": {"instances": 1}, "tops": ["deterministic", "shuffle", "wor"],
            "paper": paper, "capped": cap, "cells": cells(12, 12)}


def c12(p_top, p_lambda, power=0.9, crps=0.2, late=0, capped=(0.5, 1e-6), capped_power=0.9):
    """C12's numbers: as :func:`c10`'s, λ ∈ {1, 16} at Λ = 32 (the quick report's grid, 2000 steps; the cap's WOR
    steps 50 and 850), each seed's selected test CRPS ``crps``."""
    n = c10(p_top, p_lambda, power, late, capped, capped_power)
    for m in (n["paper"], n["capped"]):
        m["tests"][1]["factor"] = "subsequences λ"
    n["paper"].update(steps=2000, crps=[{"top": "wor", "batch_size": 32, "instances": lam, "steps": 2000,
                                         "epochs": 2000 / spe, "crps": [crps, crps], "selected_steps": [400, 2000]}
                                        for lam, spe in ((1, 5), (16, 85))])
    n["capped"]["crps"] = [{"top": "wor", "batch_size": 32, "instances": lam, "steps": steps, "epochs": 10.0,
                            "crps": [0.3, 0.4]} for lam, steps in ((1, 50), (16, 850))]
    return dict(n, factor="instances", levels=[1, 16], levels_full=[1, 2, 4, 8, 16], fixed={"batch_size": 32},
                cells=dict(cells(6, 15), quick=True))


def test_c10_rule_needs_power_and_convergence_to_reproduce_no_effect():
    """The paper's protocol judged: a significant factor, not reproduced; none significant with power ≥ 0.8 for both,
    reproduced; none significant but a test underpowered, qualified (it could not have seen the effect); no tests,
    not evaluated. More than half the runs with their best checkpoint in the last quarter (13 of 24): qualified
    whatever the test says, naming its word; exactly half (12) passes."""
    rule = CLAIMS["C10"].rule
    assert rule(c10(0.5, 1e-6))[0] == "not reproduced"
    word, reason = rule(c10(0.5, 0.3))
    assert word == "reproduced"
    assert reason.startswith("the paper's protocol: every cell 6000 steps, validated every 25 steps, judged on the "
                             "test CRPS of its checkpoint with the lowest validation loss; top level × "
                             "Λ ∈ {4, 8, 16, 32}, λ = 1; two-way ANOVA with replication, 2 seeds per cell: ")
    assert "top level: F(1, 12) = 2, p = 0.5 (α = 0.025); power 0.90 against Δ = 0.015 (5% of the mean CRPS)" in reason
    assert reason.endswith(". Convergence: 0 of 24 runs found their lowest validation loss in the last 25% of "
                           "training (at most 50% for a converged training: a validation loss that has stopped "
                           "falling puts it there a quarter to a third of the time)")
    word, reason = rule(c10(0.5, 0.3, power=0.2))
    assert word == "qualified" and reason.endswith("(no significant effect, but a test's power is below 0.8)")
    assert rule(c10(0.5, 1e-6, late=12))[0] == "not reproduced"
    for p, finding in ((1e-6, "not reproduced"), (0.3, "reproduced")):
        word, reason = rule(c10(0.5, p, late=13))
        assert word == "qualified" and "13 of 24 runs" in reason
        assert reason.endswith(f": more than 50%, the training had not converged, so the test's finding ({finding}) "
                               "can still be training length")
    assert rule({"paper": {"tests": None}})[0] == "not evaluated"
    assert rule({"paper": None}) == ("not evaluated", "a training gave no CRPS")
    assert verdict_text("reproduced", cells(12, 12), CLAIMS["C10"].data({})) == \
        "reproduced on M1 yearly at ε = ∞ (all 12 cells)"
    assert verdict_text("reproduced", cells(12, 12), CLAIMS["C10"].data(c10(0.5, 0.3))) == \
        "reproduced on M1 yearly at ε = ∞, 6000 steps a cell, the lowest-validation-loss checkpoint (all 12 cells)"


def test_c10_capped_verdict_is_the_same_test_without_the_convergence_check():
    """The 10-epoch cap's measurement beside the verdict: a significant factor, not reproduced (even when the paper's
    protocol reproduces the claim); none at power ≥ 0.8, reproduced; underpowered, qualified; no tests, not evaluated
    on 0 cells. Its reason names the steps the cap runs at each Λ and the training-length confound; the paper's
    figure stays not evaluated."""
    claim = CLAIMS["C10"]
    numbers = c10(0.5, 0.3)
    assert claim.rule(numbers)[0] == "reproduced"
    capped, figure = claim.other_verdicts(numbers)
    assert (capped.source, capped.verdict) == ("a 10-epoch cap, the last iterate (training length not equalised)",
                                               "not reproduced")
    assert capped.verdict_text == \
        "not reproduced on M1 yearly at ε = ∞, a 10-epoch cap, the last iterate (all 12 cells)"
    assert capped.reason.startswith("a 10-epoch cap, judged on the last iterate's test CRPS; two-way ANOVA")
    assert capped.reason.endswith("The cap runs 420 steps at Λ = 4, 50 steps at Λ = 32 (WOR top level, λ = 1): a "
                                  "larger Λ trains fewer steps, so an effect here can be training length, which the "
                                  "paper's protocol equalises")
    assert figure.verdict == "not evaluated" and "fig:non_dp_training_batchsize_traffic" in figure.verdict_text
    assert claim.other_verdicts(c10(0.5, 0.3, capped=(0.5, 0.3)))[0].verdict == "reproduced"
    word = claim.other_verdicts(c10(0.5, 0.3, capped=(0.5, 0.3), capped_power=0.5))[0]
    assert word.verdict == "qualified"
    assert word.reason.endswith("(no significant effect, but a test's power is below 0.8)")
    none = c10(0.5, 0.3)
    none["capped"]["tests"] = None
    capped = claim.other_verdicts(none)[0]
    assert (capped.verdict, capped.reason) == ("not evaluated", "a training gave no CRPS")
    assert capped.verdict_text.endswith("(0 of 12 cells)")


def test_convergence_counts_the_runs_whose_best_checkpoint_is_in_the_last_quarter():
    """Of 2000 steps the last quarter is steps 1501-2000: 1500 is not in it, 1525 is; of 400 steps (a cell of an
    equal-epochs design), 301-400; converged while at most half the runs are in it."""
    from tsdp.reports.non_private import convergence

    rows = [{"steps": 2000, "selected_steps": [1500, 1525]}, {"steps": 400, "selected_steps": [300, 400]}]
    assert convergence(rows) == {"runs": 4, "late": 2, "tail": 0.25, "limit": 0.5, "converged": True}
    rows[0]["selected_steps"][0] = 1501
    assert convergence(rows)["late"] == 3 and not convergence(rows)["converged"]


def _with_equal_epochs(numbers, p_top, p_level, late=0, power=0.9):
    """``numbers`` with the full report's equal-epochs design (800 epochs: 33600 and 4000 steps at Λ = 4 and 32),
    its tests at ``p_top``, ``p_level``, ``late`` of its 24 runs late."""
    m = _measurement(p_top, p_level, power, "batch size Λ",
                     [{"top": "wor", "batch_size": b, "instances": 1, "steps": steps, "epochs": 800.0,
                       "crps": [0.1, 0.2], "selected_steps": [100, 200]} for b, steps in ((4, 33600), (32, 4000))],
                     steps=None, epochs=800, validate_every=25, selected=True,
                     convergence={"runs": 24, "late": late, "tail": 0.25, "limit": 0.5, "converged": late <= 12})
    return dict(numbers, equal_epochs=m, equal_epochs_full=800)


def test_c10_a_finding_of_one_design_only_is_qualified():
    """The full report's equal-epochs design beside equal steps: a significant effect in one and none in the other
    (either way) is qualified, naming the other's finding; the same finding keeps the verdict; an equal-epochs design
    that did not converge does not count. It has its own verdict by the same rule, first among the other verdicts.
    The quick report (no equal-epochs measurement) says the full report trains it."""
    rule, claim = CLAIMS["C10"].rule, CLAIMS["C10"]
    word, reason = rule(_with_equal_epochs(c10(0.5, 1e-6), 0.5, 0.3))
    assert word == "qualified" and reason.endswith("; but every cell 800 epochs instead (its verdict beside) finds "
                                                   "no significant effect: the finding depends on whether steps or "
                                                   "epochs are equalised")
    word, reason = rule(_with_equal_epochs(c10(0.5, 0.3), 0.5, 1e-6))
    assert word == "qualified" and "finds a significant effect: the finding depends" in reason
    for paper, other, expected in (((0.5, 1e-6), (0.5, 1e-5), "not reproduced"),
                                   ((0.5, 0.3), (0.4, 0.6), "reproduced")):
        word, reason = rule(_with_equal_epochs(c10(*paper), *other))
        assert word == expected and reason.endswith("; every cell 800 epochs instead finds the same (its verdict "
                                                    "beside)")
    word, reason = rule(_with_equal_epochs(c10(0.5, 1e-6), 0.5, 0.3, late=13))
    assert word == "not reproduced" and reason.endswith("; every cell 800 epochs instead did not converge by this "
                                                        "check (its verdict beside), so it does not count")
    numbers = _with_equal_epochs(c10(0.5, 1e-6), 0.5, 0.3)
    epochs, capped, figure = claim.other_verdicts(numbers)
    assert epochs.source == \
        "the paper's protocol with every cell 800 epochs (its literal design) instead of the same steps"
    assert epochs.verdict == "reproduced" and epochs.verdict_text == (
        "reproduced on M1 yearly at ε = ∞, 800 epochs a cell, the lowest-validation-loss checkpoint (all 12 cells)")
    assert epochs.reason.startswith("the paper's protocol: every cell 800 epochs (4000 to 33600 steps), validated "
                                    "every 25 steps")
    from tsdp.reports.render_claims_extra import non_private_table

    steps, epochs_table, capped_table, tests = non_private_table(numbers)
    assert epochs_table[1][4] == "test CRPS per seed (paper's protocol, 800 epochs a cell, lowest-validation checkpoint)"
    assert [r[2] for r in epochs_table[2]] == [33600, 4000] and [r[0] for r in tests[2]] == \
        ["paper's protocol"] * 2 + ["paper's protocol, 800 epochs a cell"] * 2 + ["10-epoch cap"] * 2
    late = claim.other_verdicts(_with_equal_epochs(c10(0.5, 0.3), 0.5, 1e-6, late=13))[0]
    assert late.verdict == "qualified" and "the training had not converged" in late.reason
    word, reason = rule(dict(c10(0.5, 0.3), equal_epochs_full=800))
    assert word == "reproduced" and reason.endswith("; the full report also trains every cell 800 epochs")


def test_c12_rule_is_c10s_on_the_number_of_subsequences():
    """C12 (λ × top level at Λ = 32): a significant factor, not reproduced; none significant with power ≥ 0.8,
    reproduced; none significant at lower power, qualified; not converged, qualified; no tests (a training gave a NaN
    CRPS), not evaluated, and the verdict text then counts no cell. The reason names λ, the quick report's levels and
    steps against the full report's; the cap's reason the steps it allows at each λ; the verdict text names the data,
    the scaling and the protocol."""
    rule = CLAIMS["C12"].rule
    assert rule(c12(0.5, 1e-6))[0] == "not reproduced"
    assert rule(c12(1e-6, 0.5))[0] == "not reproduced"
    word, reason = rule(c12(0.5, 0.3))
    assert word == "reproduced"
    assert "subsequences λ: F(1, 12) = 2, p = 0.3 (α = 0.025); power 0.90 against Δ = 0.015" in reason
    assert reason.startswith("the paper's protocol: every cell 2000 steps (the quick report's; the full report's "
                             "6000), validated every 25 steps, judged on the test CRPS of its checkpoint with the "
                             "lowest validation loss; top level × λ ∈ {1, 16} (the quick report's; the full report's "
                             "λ ∈ {1, 2, 4, 8, 16}), Λ = 32; ")
    capped = CLAIMS["C12"].other_verdicts(c12(0.5, 0.3))[0]
    assert capped.reason.endswith("The cap runs 50 steps at λ = 1, 850 steps at λ = 16 (WOR top level, Λ = 32): a "
                                  "larger λ trains more steps, so an effect here can be training length, which the "
                                  "paper's protocol equalises")
    assert capped.verdict_text == ("not reproduced on M1 yearly at ε = ∞, Λ = 32 for the paper's 256, a 10-epoch cap, "
                                   "the last iterate (the quick grid, 6 of 15 cells)")
    word, reason = rule(c12(0.5, 0.3, power=0.5))
    assert word == "qualified" and reason.endswith("(no significant effect, but a test's power is below 0.8)")
    assert rule(c12(0.5, 0.3, late=20))[0] == "qualified"
    nan = c12(0.5, 0.3, crps=float("nan"))
    nan["paper"]["tests"] = None
    assert rule(nan) == ("not evaluated", "a training gave no CRPS")
    assert verdict_text("not evaluated", cells(0, 15), CLAIMS["C12"].data({})) == \
        "not evaluated on M1 yearly at ε = ∞, Λ = 32 for the paper's 256 (0 of 15 cells)"
    assert verdict_text("reproduced", cells(15, 15), CLAIMS["C12"].data(c12(0.5, 0.3))) == \
        ("reproduced on M1 yearly at ε = ∞, Λ = 32 for the paper's 256, 2000 steps a cell, the lowest-validation-loss "
         "checkpoint (all 15 cells)")


def test_c12_table_names_lambda_and_both_measurements():
    """C12's numbers tables: a row per (top level, λ) of each measurement, headed λ, with its steps, epochs and each
    seed's CRPS (the paper's protocol: each seed's selected step too); then both measurements' F-tests."""
    from tsdp.reports.render_claims_extra import TABLES

    paper, cap, tests = TABLES["C12"](c12(0.5, 0.3))
    assert paper[1] == ["top level", "λ", "steps", "epochs",
                        "test CRPS per seed (paper's protocol, lowest-validation checkpoint)", "its step per seed"]
    assert paper[2] == [["wor", 1, 2000, "400", "0.2000, 0.2000", "400, 2000"],
                        ["wor", 16, 2000, "23.53", "0.2000, 0.2000", "400, 2000"]]
    assert cap[1] == ["top level", "λ", "steps", "epochs", "test CRPS per seed (10-epoch cap, last iterate)"]
    assert cap[2] == [["wor", 1, 50, "10", "0.3000, 0.4000"], ["wor", 16, 850, "10", "0.3000, 0.4000"]]
    assert [(r[0], r[1]) for r in tests[2]] == [("paper's protocol", "top level"),
                                               ("paper's protocol", "subsequences λ"),
                                               ("10-epoch cap", "top level"), ("10-epoch cap", "subsequences λ")]


@pytest.mark.parametrize("cid, word, tables, n", [("C8", "refuted", "w-user", 12),
                                                  ("C9", "confirmed", "label-perturbation", 12),
                                                  ("C11", "qualified", "inference", 18)])
def test_paper_table_claims_name_their_tables(cid, word, tables, n):
    """C8, C9 and C11 on the paper's tables: the verdict text names the tables and the cells judged, the reason
    their LaTeX labels."""
    entry = CLAIMS[cid].evaluate(None)
    assert entry["verdict_text"] == f"{word} on the paper's {tables} tables (all {n} cells)"
    assert entry["reason"].endswith(")") and "table:" in entry["reason"]


# ----------------------------------------------------------------------------- vacuous or NaN evidence


def test_c5_without_the_k1_row_is_not_confirmed():
    """'T14 = T6 at L_C + L_F = 1' is one of the three parts of C5: a grid cell whose L_C + L_F = 1 row is missing
    (skipped, or not computed) was judged equal by all() over no rows and confirmed on the other two parts alone."""
    rows = [c5_row("a", 4, 4, 0.01), c5_row("a", 32, 20, 0.02)]
    assert C5({"rows": rows})[0] == "qualified"
    assert C5({"rows": [c5_row("a", 1, 1, 0.0)] + rows})[0] == "confirmed"


@pytest.mark.parametrize("a, b", [(1e-11, float("nan")), (float("nan"), 1e-11), (float("nan"), float("nan")),
                                  (0.5, float("nan")), (float("nan"), 0.5)])
def test_c4_a_nan_delta_is_never_a_tie(a, b):
    """C4's T1 ≤ T3 comparison: a NaN on either side compares nothing. max(1e-11, nan) is 1e-11 (max keeps its first
    argument when the comparison with NaN is False), so a NaN T3 against a negligible T1 counted as a tie, a win."""
    from tsdp.reports.claim_c4 import le

    assert not le(a, b)
    assert le(1e-11, 2e-11) and le(0.5, 0.5) and not le(0.6, 0.5)


def test_c2_a_nan_curve_loses_and_is_named_not_a_crash():
    """A δ that is NaN at some ε fails first_win_epsilon (not ≤); losing_range must name that ε too: it answered
    None ('never loses'), and C2's rule, which names the losing range of every failed row, raised TypeError."""
    import numpy as np

    from tsdp.reports.curves import first_win_epsilon, losing_range

    eps = np.array([0.1, 1.0, 10.0])
    ours, other = np.array([0.3, np.nan, 0.01]), np.array([0.4, 0.2, 0.02])
    assert not first_win_epsilon(eps, ours, other)["everywhere"]
    lose = losing_range(eps, ours, other)
    assert lose is not None and lose["eps_min"] == lose["eps_max"] == 1.0
    row = {"cell": "config", "schedule": "1 epoch", "sound_wor_wins_everywhere": False,
           "attained_wor_wins_everywhere": True, "robust_wor_wins_everywhere": False,
           "sound_wor_loses_on": lose, "attained_wor_loses_on": None}
    word, reason = C2({"rows": [row]})
    assert word == "qualified" and "config/1 epoch" in reason


@pytest.mark.parametrize("context, forecast", [(1, 3), (1, 30), (2, 1)])
def test_c3_long_forecasts_reach_the_limit_not_a_false_refutation(context, forecast):
    """C3 holds at every L_C ≥ 1 (T11's weight ρ r (φ τ(σ_F) + 1 - φ) → ρ L_C / T as σ_F → ∞), but σ_F = 1e3 leaves
    the weight φ τ(1e3) / (1 - φ) ≈ (L_F / L_C) 4e-4 from its limit: above WEIGHT_REL = 1e-3 from L_F = 2.5 L_C, so the
    report refuted C3 at L_C = 1, L_F = 3 (weight gap 1.197e-3, profile gap 4.3e-3). The reference here: T11's own
    weight, read off its one-step profile at ε = 0 (H_1 = w TV(N(0, σ), N(2, σ)) = w erf(1/(√2 σ))), against the
    limit ρ L_C / T."""
    import math

    import numpy as np

    from tsdp.reports.claim_c3 import LIMIT_SHARE, WEIGHT_REL
    from tsdp.theorems.config import DEFAULT_CONFIG
    from tsdp.theorems.registry import get

    cfg = DEFAULT_CONFIG.with_(context_length=context, forecast_length=forecast,
                               L=10 * (context + forecast) + forecast - 1)
    entry = CLAIMS["C3"].evaluate(cfg, quick=True)
    assert entry["verdict"] == "confirmed", entry["reason"]
    s = entry["numbers"]["weights"][-1]["sigma_F"]
    w = float(get("T11").profile(cfg.with_(sigma_forecast=s), np.array([1.0]))[0]) / math.erf(1 / (math.sqrt(2) * cfg.sigma))
    w_inf = float(cfg.rho) * context / cfg.T
    assert s >= 1e3 and abs(w - w_inf) / w_inf <= LIMIT_SHARE * WEIGHT_REL * (1 + 1e-6)


def test_c1_is_judged_on_the_papers_epsilon_range():
    """Appendix C.1.1: λ = 1 is ahead 'for all ε ∈ [10^-3, 10^3] after 100 training steps', and Section 5 after one
    step 'for ε ≥ 10^-1'. C1 compared on the figures' grid [1e-3, 50] (where δ after 100 steps at r = Λ/N = 0.5 is
    still 4e-3 at ε = 50: the range (50, 1e3] was never compared) and read 'ε ≥ 0.1' at the grid point 0.0908 below
    it; its reason said 'for all ε ≥ 0.001'. The grid now spans the paper's range with 0.1 on it, and the reason
    names the range compared."""
    from tsdp.theorems.config import DEFAULT_CONFIG

    entry = CLAIMS["C1"].evaluate(DEFAULT_CONFIG, quick=True)
    eps = entry["figure"]["eps"]
    assert eps[0] == pytest.approx(1e-3) and eps[-1] >= 1e3 * (1 - 1e-12)
    assert min(abs(e - 0.1) for e in eps) < 1e-12
    assert entry["numbers"]["eps_hi"] == pytest.approx(1e3)
    assert "ε ∈ [0.001, 1000] after 100 steps: True" in entry["reason"]
    assert entry["verdict"] == "confirmed"


def test_c1_quick_skip_counts_its_full_grid_cells():
    """cells.grid counts the full grid (on the configuration: λ × steps 1, 100, 1000) and a skipped cell stands for
    the grid cells it covers: λ = 4 > Λ = 2 stands for its 3 step counts, in quick mode too (it counted the quick
    run's 2), as the grid cells the configuration cannot represent already did."""
    from tsdp.theorems.config import DEFAULT_CONFIG

    entry = CLAIMS["C1"].evaluate(DEFAULT_CONFIG.with_(batch_size=2), quick=True)
    skipped = {x["cell"]: x["cells"] for x in entry["cells"]["not_evaluated"]}
    assert skipped == {"config, λ=4": len((1, 100, 1000))}
    assert entry["cells"]["evaluated"] == ["config, λ=2, 1 steps", "config, λ=2, 100 steps"]
    assert "(3 not evaluable)" in entry["verdict_text"]


def test_bound_claims_name_the_configuration_they_were_computed_on():
    """C1-C6 label cells 'config' (or r, Λ/N around it): the entry's cells name the configuration's parameters in the
    JSON and the report's text; a claim judged on the paper's tables (C8) names its tables, not a configuration."""
    from tsdp.reports.render import _cells
    from tsdp.theorems.config import DEFAULT_CONFIG

    cfg = DEFAULT_CONFIG.with_(batch_size=2, sigma=1.5)
    entry = CLAIMS["C1"].evaluate(cfg, quick=True)
    k = entry["cells"]["configuration"]
    assert (k["N"], k["L"], k["batch_size"], k["sigma"]) == (cfg.N, cfg.L, 2, 1.5)
    assert (k["context_length"], k["forecast_length"]) == (cfg.context_length, cfg.forecast_length)
    assert k["r"] == pytest.approx(float(cfg.r)) and k["rho"] == pytest.approx(2 / cfg.N)
    text = " ".join(str(b[1]) for b in _cells(entry["cells"]))
    assert f"N = {cfg.N}, L = {cfg.L}," in text and "Λ = 2, σ = 1.5" in text
    assert all(CLAIMS[c].on_configuration for c in ("C1", "C2", "C3", "C4", "C5", "C6"))
    assert "configuration" not in CLAIMS["C8"].evaluate(cfg)["cells"]


def test_c10_prints_an_underpowered_test_below_the_power_it_lacks():
    """Power 0.796 < 0.8: qualified, 'a test's power is below 0.8'; the reason and the numbers table printed it to
    nearest, 'power 0.80', the power a reproduction needs. Rounded down: 0.79."""
    from tsdp.reports.render_claims_extra import non_private_table

    numbers = c10(0.5, 0.3, power=0.796, capped_power=0.796)
    word, reason = CLAIMS["C10"].rule(numbers)
    assert word == "qualified" and "power 0.79 against" in reason and "0.80" not in reason
    tests = non_private_table(numbers)[2][2]
    assert [row[6] for row in tests] == ["0.79"] * 4


def _c3_with(monkeypatch, bound_id, change):
    """C3 evaluated (quick, default configuration) with the registry's ``bound_id`` replaced, as C3 reads it, by
    ``change(bound)``: a deliberately broken theorem the claim must see."""
    import dataclasses

    from tsdp.reports import claim_c3
    from tsdp.theorems.config import DEFAULT_CONFIG
    from tsdp.theorems.registry import get

    broken = change(get(bound_id))
    monkeypatch.setattr(claim_c3, "get", lambda i: broken if i == bound_id else get(i))
    return CLAIMS["C3"].evaluate(DEFAULT_CONFIG, quick=True)


def test_c3_weight_check_reads_t11_and_fails_on_a_wrong_weight(monkeypatch):
    """The weight sub-check compared w∞ with T11's weight recomputed by the claim's own copy of the formula, at a σ_F
    chosen to bring that copy within a tenth of the tolerance: it could not fail. It now reads the weight off the pair
    T11 builds; T11 with its weight 0.5% too large (profile gap ≈ 0.5%, under the profile's 1e-2 tolerance, weight
    gap 5e-3 > WEIGHT_REL = 1e-3) refutes C3 on the weight."""
    import dataclasses

    from tsdp.reports.claim_c3 import WEIGHT_REL
    from tsdp.theorems.bounds.shapes import against_gaussian

    def heavier(t11):
        def build(p):
            w = t11.build(p).P.weights[1] * 1.005
            return against_gaussian([0, 2], [1 - w, w], p.sigma)
        return dataclasses.replace(t11, build=build)

    entry = _c3_with(monkeypatch, "T11", heavier)
    assert entry["numbers"]["weight_rel_gap"] == pytest.approx(5e-3, rel=5e-2) and 5e-3 > 2 * WEIGHT_REL
    assert entry["verdict"] == "refuted", entry["reason"]


def test_c3_nan_reference_is_not_evaluated_never_skipped(monkeypatch):
    """A NaN in the L_F → 0 reference: the gap's mask (reference > NEGLIGIBLE) dropped the NaN points silently and C3
    was confirmed on the rest (or, all NaN, 'qualified: the reference is below NEGLIGIBLE at every ε'). It is now not
    evaluated, naming the curve and how many ε are not finite; the rule alone says the same."""
    import dataclasses

    import numpy as np

    def nan_at_half(t6):
        class Broken:
            def __getattr__(self, name):
                return getattr(t6, name)

            def profile(self, config, alpha, **kw):
                out = np.array(t6.profile(config, alpha, **kw), dtype=float)
                out[::2] = np.nan
                return out
        return Broken()

    entry = _c3_with(monkeypatch, "T6", nan_at_half)
    assert entry["verdict"] == "not evaluated", entry["verdict"]
    assert "the L_F → 0 reference (one step) is not finite at" in entry["reason"]
    word, reason = C3(dict(c3(), non_finite=["the L_F → 0 reference (composed) is not finite at 3 of 5 ε"]))
    assert word == "not evaluated" and "not finite at 3 of 5 ε" in reason


def test_c10_statistics_are_printed_on_the_side_that_does_not_strengthen_the_verdict():
    """A significant factor ('not reproduced'): p rounded up, F down; one without: p down, F up; the effect detected
    with power 0.8 rounded up (a smaller one claims a more sensitive test). To nearest each of these numbers printed
    past its value on the finding's side (p = 0.012341 as 0.0123; p = 0.3456 as 0.346; F = 5.4371 as 5.44 beside
    a significant effect; Δ = 0.012341 as 0.0123). The numbers table prints the same texts."""
    from tsdp.reports.render_claims_extra import non_private_table

    numbers = c10(0.3456, 0.012341)
    for t in numbers["paper"]["tests"]:
        t.update(f=5.4371, detectable=0.012341)
    word, reason = CLAIMS["C10"].rule(numbers)
    assert word == "not reproduced"
    assert "top level: F(1, 12) = 5.44, p = 0.345 (α = 0.025)" in reason
    assert "batch size Λ: F(1, 12) = 5.43, p = 0.0124 (α = 0.025)" in reason
    assert reason.count("detects Δ = 0.0124 with power 0.8") == 2
    rows = non_private_table(numbers)[2][2][:2]
    assert [(r[2], r[4], r[8]) for r in rows] == [("5.44", "0.345", "0.0124"), ("5.43", "0.0124", "0.0124")]


def test_c3_gaps_are_printed_on_the_side_that_does_not_strengthen_the_verdict():
    """A confirmed C3 prints its judged gaps rounded up (a gap within the tolerance), a refuted one rounded down: to
    nearest 0.0012346 printed 0.001235 and 0.012346 printed 0.01235."""
    word, reason = C3(c3(rel=0.0012341, w_rel=1.23441e-4))
    assert word == "confirmed"
    assert "reference 0.001235 (one step)" in reason and "relative gap 0.0001235)" in reason
    word, reason = C3(c3(rel=0.012346, w_rel=2.00006e-3))
    assert word == "refuted"
    assert "reference 0.01234 (one step)" in reason and "relative gap 0.002)" in reason


def test_c5_crossing_is_printed_rounded_up():
    """'T14 > T6 at every grid ε from a crossing ε on': a crossing printed below its value claims a wider range; to
    nearest 0.12346 printed 0.1235, now 0.1235 only for the crossing at or above it."""
    good = [c5_row("a", 1, 1, 0.0), c5_row("a", 4, 4, 0.01, from_eps=0.123441), c5_row("a", 32, 20, 0.02,
                                                                                     from_eps=0.123449)]
    word, reason = C5({"rows": good})
    assert word == "confirmed" and "(0.1235 to 0.1235)" in reason
