"""The registry is the only list of bounds. A throw-away bound added to it (here a copy
of T6 under a new id, with a halved weight so that its numbers differ) is picked up by `tsdp
verify`'s plan, by the accountant and by the report's catalogue, with no other edit; outside the
block the registry is as before."""
from dataclasses import replace

import pytest

from tsdp.theorems.bounds.shapes import against_gaussian
from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.theorems.registry import REGISTRY, substituted
from tsdp.verify import accounting
from tsdp.verify.checks.runner import plan

NEW = replace(REGISTRY["T6"], id="T99", label="throw-away", statement="T6 with half its weight",
              build=lambda p: against_gaussian([0, 2], [1 - p.rho * p.r / 2, p.rho * p.r / 2], p.sigma))


def test_a_new_bound_is_checked_accounted_and_reported_without_other_edits():
    from tsdp.reports.accounting_section import catalogue

    with substituted(NEW):
        names = {t.name for t in plan(quick=True)}
        assert {"P1.axioms[T99]@paper", "P3.pair_symmetry[T99]@paper"} <= names
        ours = accounting.epsilon(DEFAULT_CONFIG, 1e-5, steps=10, theorem="T99", discretization=1e-3)
        t6 = accounting.epsilon(DEFAULT_CONFIG, 1e-5, steps=10, theorem="T6", discretization=1e-3)
        assert ours.theorem == "T99" and 0 < ours.epsilon < t6.epsilon  # half the weight: less privacy loss
        assert ours.epsilon_attained == t6.epsilon_attained  # the same construction (T6's pair) attacks it
        row = next(r for r in catalogue(DEFAULT_CONFIG) if r["theorem"] == "T99")
        assert row["applies"] and row["epsilon_sound"] == pytest.approx(
            accounting.epsilon(DEFAULT_CONFIG, 1e-5, steps=1, theorem="T99", discretization=1e-3).epsilon)
    assert "T99" not in REGISTRY
    assert not any("T99" in t.name for t in plan(quick=True))


def test_claims_are_not_bounds():
    """T5 (Thm 4.1) is a claim: listed apart, refused as a bound with a line that says so."""
    from tsdp.theorems.bounds.base import TheoremError
    from tsdp.theorems.registry import CLAIMS, get

    assert "T5" in CLAIMS and "T5" not in REGISTRY
    with pytest.raises(TheoremError, match="claim"):
        get("T5")
