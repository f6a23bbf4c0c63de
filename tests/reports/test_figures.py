"""The report's figure helpers (reports.figures): a panel whose every curve is δ ≈ 1 says so in a
word, an audited lower bound of 0 is drawn on the bottom edge of a log axis, not dropped, and the
figures a person reads (tightness, composition, C6) have text of at least MIN_TEXT_PX on the page,
legends outside the data and no overlapping titles (tests/reports/conftest.py measures them).
Agg backend, a few seconds."""
import numpy as np
import pytest

from tsdp.reports import figures


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_flat_panel_at_delta_one_says_so():
    fig, (ax,) = figures.grid(1, 1)
    eps = np.logspace(-3, 1.7, 20)
    figures.plot(ax, eps, np.full(20, 0.999))
    figures.plot(ax, eps, np.ones(20))
    figures.finish_panel(ax, "step 1000", after="1000 steps")
    assert any("δ ≈ 1" in t and "1000 steps" in t for t in _texts(ax))


def test_panel_with_a_falling_curve_gets_no_note():
    fig, (ax,) = figures.grid(1, 1)
    eps = np.logspace(-3, 1.7, 20)
    figures.plot(ax, eps, np.ones(20))
    figures.plot(ax, eps, np.exp(-eps))  # falls to 1e-22: privacy left somewhere
    figures.finish_panel(ax, "step 1")
    assert _texts(ax) == []


def test_zero_lower_bounds_are_drawn_on_the_bottom_edge():
    fig, (ax,) = figures.grid(1, 1)
    ax.set_yscale("log")
    ax.plot([0.0, 1.0], [1e-2, 1e-3])
    figures.zero_points(ax, [0.5, 1.5, 2.0], [3e-3, 0.0, 0.0], marker="v", color="C3")
    drawn = ax.get_lines()[-1]
    assert list(drawn.get_xdata()) == [1.5, 2.0]  # the two zeros, the positive point is not this series'
    assert list(drawn.get_ydata()) == [0.0, 0.0] and not drawn.get_clip_on()  # axis fraction 0: the bottom edge


def test_masked_drops_values_below_the_floor_only():
    y = figures.masked([1e-13, 1e-12, 2e-12, None, 0.5])
    assert np.isnan(y[0]) and np.isnan(y[1]) and np.isnan(y[3]) and y[2] == 2e-12 and y[4] == 0.5


def _bound(theorem, note=None, zero=False):
    eps = np.linspace(0.0, 4.0, 81)
    profile = [{"alpha": float(np.exp(e)), "h_lower": 0.0 if zero else 0.5 * float(np.exp(-e)), "h_theory": 0.6}
               for e in (0.0, 1.0, 2.0)]
    return {"theorem": theorem, "sound_theorem": "T13" if note else theorem, "instances": 2, "sigma_forecast": 0.0,
            "sound_role": "one record, other relation" if note else "tight bound", "note": note,
            "attained_theorem": "T14", "eps": list(eps), "delta_sound": list(np.exp(-eps)),
            "delta_attained": list(0.8 * np.exp(-eps)),
            "audit": {"trials": 50_000, "profile": profile,
                      "simultaneous_profile": [{"alpha": float(np.exp(e)), "h_lower": 0.3 * float(np.exp(-e))}
                                               for e in (0.5, 1.5)]}}


def test_tightness_draws_one_readable_figure_per_audit(drawn):
    """One PNG per audited construction (8 in the default report), text >= MIN_TEXT_PX on the page, the legend
    outside the panel, the T14 note in the title not over the legend; and the composition figure likewise."""
    section = {"bounds": [_bound("T6"), _bound("T10", zero=True), _bound("T14", note="another relation")],
               "delta": 1e-3,
               "composition": [{"steps": s, "epsilon_sound": 3.0 * s ** 0.5, "epsilon_attained": 2.9 * s ** 0.5,
                                "epsilon_audited_lower": a} for s, a in ((1, 2.5), (10, 0.0), (100, None))]}
    with figures.drawing():
        names = figures.figure_tightness(section, drawn.out) + figures.figure_composition(section, drawn.out)
    assert names == ["tightness_T6.png", "tightness_T10.png", "tightness_T14.png", "composition.png"]
    assert all((drawn.out / n).exists() for n in names)
    drawn.assert_readable()


def test_c6_figure_is_readable(drawn):
    from tsdp.reports.claim_c6 import CLAIM, WHY_BELOW

    numbers = {"epsilon_T13_sound": 2.2, "epsilon_T14_attained": 3.1, "delta": 1e-3, "k": 2,
               "audit": {"trials": 500_000, "epsilon_lower": 2.6}, "why_T13_below": WHY_BELOW.format(k=2)}
    with figures.drawing():
        assert CLAIM.figure({"numbers": numbers}, drawn.out) == ["c6.png"]
    drawn.assert_readable()


def test_the_old_crowded_grid_would_fail_the_check(drawn):
    """The check has teeth: eight panels in one row of a page-wide figure with 6 pt legends inside the panels
    (as the tightness figure once did) fails it."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(15.2, 6.0))
    for ax in axes.ravel():
        ax.plot([0, 1], [1, 0], label="T6 (tight bound)")
        ax.legend(fontsize=6)
    figures.save(fig, drawn.out, "crowded.png")
    with pytest.raises(AssertionError):
        drawn.assert_readable()
