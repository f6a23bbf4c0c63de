"""The report's figure helpers (reports.figures): a panel whose every curve is δ ≈ 1 says so in a
word, and an audited lower bound of 0 is drawn on the bottom edge of a log axis, not dropped.
Agg backend, well under a second."""
import numpy as np

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
