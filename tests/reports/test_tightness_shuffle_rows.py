"""The tightness report's shuffled-iteration rows: the sound ε (T1, the deterministic order's bound) next to the
attained one (the silent hidden-position epoch's max statistic), at the default configuration, 1 and 10 epochs.

The one-epoch sound ε is checked against T1's pair in closed form (an independent reference: H_{e^ε} of
(1 - r) N(0, σ²) + r N(2, σ²) against N(0, σ²), bisected in scipy), the rest against the accountant's own
properties (composition grows ε, attained below sound)."""
import math

import pytest
from scipy.special import ndtr

from tsdp.reports.render import blocks
from tsdp.reports.tightness import shuffle_rows
from tsdp.theorems.config import DEFAULT_CONFIG

pytestmark = pytest.mark.slow  # the accountant composes 10 epochs four times (~8 s on 2 shared cores)


def _t1_epsilon(delta: float, r: float, sigma: float) -> float:
    """T1's one-epoch ε at δ in closed form (the α ≥ 1 branch), bisected to 1e-6."""
    def h(eps):
        alpha, mu = math.exp(eps), 2.0 / sigma
        x0 = (math.log((alpha - (1 - r)) / r) + mu * mu / 2) / mu
        return (1 - r) * ndtr(-x0) + r * ndtr(mu - x0) - alpha * ndtr(-x0)
    lo, hi = 0.0, 30.0
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if h(mid) > delta else (lo, mid)
    return hi


@pytest.fixture(scope="module")
def rows():
    return shuffle_rows(DEFAULT_CONFIG)


def test_rows_hold_sound_above_attained_with_the_construction_named(rows):
    """Four rows (10 and 100 steps at δ = 1e-5 and 1e-3); each sound ε above its attained ε, the ratio their
    quotient, the attained side named as the hidden-position epoch's max statistic, the sound one T1."""
    m = DEFAULT_CONFIG.with_(top="shuffle").steps_per_epoch
    assert [(r["steps"], r["delta"]) for r in rows] == [(m, 1e-5), (m, 1e-3), (10 * m, 1e-5), (10 * m, 1e-3)]
    for r in rows:
        assert r["sound_theorem"] == "T1" and "hidden-position" in r["attained_construction"]
        assert 0 < r["epsilon_attained"] < r["epsilon_sound"]
        assert r["sound_over_attained"] == pytest.approx(r["epsilon_sound"] / r["epsilon_attained"])
    assert rows[2]["epsilon_sound"] > rows[0]["epsilon_sound"] and rows[3]["epsilon_sound"] > rows[1]["epsilon_sound"]


def test_one_epoch_sound_epsilon_is_t1_in_closed_form_rounded_up(rows):
    """One epoch: the printed sound ε is T1's closed form, rounded up by the pessimistic discretisation (within 0.01)."""
    r_window = DEFAULT_CONFIG.k / DEFAULT_CONFIG.T
    for row in rows[:2]:
        exact = _t1_epsilon(row["delta"], r_window, DEFAULT_CONFIG.sigma)
        assert exact - 1e-6 <= row["epsilon_sound"] <= exact + 0.01, (row, exact)


def test_rendered_table_shows_sound_over_attained(rows):
    """The rendered section has one table row per row, with its sound / attained column."""
    tightness = {"audit_status": "audit not available", "delta": 1e-3, "trials": 0, "composed_trials": 0,
                 "audit_config": {"N": 320, "batch_size": 64, "L": 4, "context_length": 1, "forecast_length": 1,
                                  "sigma": 1.0},
                 "bounds": [], "upper_gaps": [], "composition": [], "soundness_violations": [],
                 "shuffle": {"rows": rows, "audit": None}}
    shown = blocks({"meta": {"name": "x", "mode": "quick", "version": "0", "status": "complete", "elapsed_s": 1.0},
                    "tightness": tightness})
    table = next(b for b in shown if b[0] == "table" and "sound / attained" in b[1])
    assert len(table[2]) == len(rows)
