"""The report's tests share a fake results.json and what a person can read in the report's figures.

``fake_results`` builds the results dict build_report returns (the renderer and `tsdp report` read only it), so a
test renders or runs the CLI on chosen numbers in milliseconds. The ``drawn`` fixture keeps every figure the report
saves (:func:`tsdp.reports.figures.save`), drawn,
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


AUDIT_CONFIG = {"N": 320, "batch_size": 64, "L": 4, "context_length": 1, "forecast_length": 1, "sigma": 1.0}


def _results(up: float = 3.025, low: float = 3.025, *, trials: int = 5000, violations=(), **sections) -> dict:
    """A report's results: T6's accounting at the default configuration with sound ε ``up`` and attained ε ``low``,
    one passing consistency check, a tightness section of ``trials`` audit trials and no rows, ``violations`` as
    given. ``sections`` replaces a section (``claims``, ``inference``, ...); a dict given for a section that is a
    dict here (``accounting``, ``tightness``) updates it instead."""
    results = {"meta": {"name": "x", "mode": "quick", "version": "0", "status": "complete", "elapsed_s": 1.0,
                        "audits_checked": 2},
               "accounting": {"config": {"N": 320, "L": 20, "context_length": 1, "forecast_length": 1,
                                         "batch_size": 32, "instances": 1, "sigma": 1.0, "top": "wor", "bottom": "wr"},
                              "derived": {}, "theorem": "T6", "kind": "tight", "reason": "T6 is tight",
                              "rows": [{"delta": 1e-5, "steps": 1, "epochs": None, "compositions": 1,
                                        "epsilon_sound": up, "epsilon_attained": low, "construction": "T6"}]},
               "claims": [],
               "consistency": {"summary": {"pass": 1, "fail": 0, "finding": 0, "total": 1},
                               "elapsed_s": 1.0, "theorems_covered": [], "failures_and_findings": []},
               "tightness": {"audit_status": "ran", "bounds": [], "delta": 1e-3, "trials": trials,
                             "composed_trials": 0, "audit_config": AUDIT_CONFIG, "soundness_violations": [],
                             "upper_gaps": [], "composition": []},
               "errata": [], "inference": {}, "violation": bool(violations), "violations": list(violations)}
    for name, section in sections.items():
        kept = results.get(name)
        results[name] = {**kept, **section} if isinstance(kept, dict) and kept and isinstance(section, dict) \
            else section
    return results


@pytest.fixture(scope="session")
def fake_results():
    """The builder of a fake results.json (:func:`_results`): ``fake_results(up, low, violations=..., claims=...)``.
    Session-scoped, so hypothesis tests may take it."""
    return _results
