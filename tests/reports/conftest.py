"""What a person can read in the report's figures, measured on the drawn matplotlib figure.

The ``drawn`` fixture keeps every figure the report saves (:func:`tsdp.reports.figures.save`), drawn,
with three measurements: the smallest text in CSS pixels on index.html (font size at the figure's
DPI, scaled as the page's column would scale the PNG), the legends that overlap a panel's data
area, and the pairs of texts (titles, labels, legends) that overlap each other.
"""
import itertools

import matplotlib.text
import pytest

from tsdp.reports import figures
from tsdp.reports.page import PAGE_WIDTH_PX


def smallest_text_px(fig) -> float:
    scale = min(1.0, PAGE_WIDTH_PX / (fig.get_figwidth() * figures.DPI))
    sizes = [t.get_fontsize() * figures.DPI / 72 * scale for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip()]
    return min(sizes)


def legends_over_data(fig) -> list:
    renderer = fig.canvas.get_renderer()
    panels = [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [lg for lg in legends if any(lg.get_window_extent(renderer).overlaps(p) for p in panels)]


def overlapping_texts(fig) -> list:
    """Pairs of panel titles, figure titles and legends whose boxes overlap."""
    renderer = fig.canvas.get_renderer()
    items = [ax.title for ax in fig.axes if ax.get_visible() and ax.get_title()]
    items += [t for t in (fig._suptitle, fig._supxlabel) if t is not None]  # noqa: SLF001 - matplotlib keeps them here
    items += list(fig.legends)
    boxes = [(i, i.get_window_extent(renderer)) for i in items]
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


class Drawn:
    """The figures saved while a test draws: ``kept[name]`` = (smallest text px, legends over data, overlapping
    texts), written into ``out``."""

    def __init__(self, out):
        self.out, self.kept = out, {}

    def assert_readable(self) -> None:
        """Every kept figure: text at least MIN_TEXT_PX on the page, no legend over data, no overlapping titles."""
        assert self.kept
        for name, (px, over, overlaps) in self.kept.items():
            assert px >= figures.MIN_TEXT_PX, (name, px)
            assert over == [], name
            assert overlaps == [], (name, overlaps)


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """A :class:`Drawn` that keeps every figure :func:`tsdp.reports.figures.save` writes (drawn first, measured)."""
    seen = Drawn(tmp_path)
    save = figures.save

    def keep(fig, out, name):
        fig.canvas.draw()
        seen.kept[name] = (smallest_text_px(fig), legends_over_data(fig), overlapping_texts(fig))
        return save(fig, out, name)

    monkeypatch.setattr(figures, "save", keep)
    return seen
