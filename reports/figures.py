"""The report's plotting helpers (matplotlib, Agg) and the figures of section 4 (tightness).

tsdp's one import of matplotlib (the claims' figures draw with :data:`plt` from here), after
:func:`tsdp.reports.matplotlib_dir.use_writable_dir` (a writable folder for it where HOME is not).

Each claim draws its own figure (``Claim.figure`` in reports/claim_c*.py) with these helpers;
every figure draws numbers already in results.json and saves a PNG, returning the file name.
Axes as in the paper's figures: ε on a log axis and δ(ε) on a log axis for the composed
profiles. Solid lines are sound (upper) evaluations, dotted lines attained (lower)
evaluations, markers audited lower-confidence bounds; a panel whose curves are all δ ≈ 1 says
so, and an audited lower bound of 0 is drawn on the bottom edge, not dropped. Every figure is
drawn in :func:`drawing` at :data:`WIDTH_IN` (index.html shows it unscaled), its legends outside
the panels, so its text is at least :data:`MIN_TEXT_PX` on the page.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, List, Optional

from .matplotlib_dir import use_writable_dir

use_writable_dir()  # before matplotlib's import: where HOME cannot be written, no warning of its own mid-output
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from tsdp.attacks.montecarlo.verdict import percent_text  # noqa: E402

from .claim_base import CONFIG_CELL  # noqa: E402
from .page import PAGE_WIDTH_PX  # noqa: E402

DPI = 110
FLOOR = 1e-12  # δ below this is not drawn on log axes (beyond the accountant's resolution)
WIDTH_IN = 0.95 * PAGE_WIDTH_PX / DPI
"""Width of every figure (inches): narrower than index.html's column, so the page never scales a figure down
and a point of text is DPI/72 ≈ 1.5 px on screen."""
MIN_TEXT_PX = 10
"""No text of a figure is smaller than this on the page (tests/reports check every figure)."""
STYLE = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9,
         "legend.fontsize": 9, "legend.title_fontsize": 9, "figure.titlesize": 11,
         "figure.labelsize": 10, "figure.dpi": DPI}
"""matplotlib settings the report draws with (:func:`drawing`): the smallest, 9 pt, is ≈ 14 px at DPI."""


def drawing():
    """The context every report figure is drawn in (:data:`STYLE`)."""
    return matplotlib.rc_context(STYLE)


def masked(y) -> np.ndarray:
    """δ values for a log axis: those ≤ FLOOR become NaN (not drawn).

    Args:
        y (array-like): δ values.

    Returns:
        The values, NaN where not drawn.
    """
    y = np.asarray([np.nan if v is None else v for v in y], dtype=float)
    return np.where(y > FLOOR, y, np.nan)


def plot(ax, x, y, **kw: Any) -> list:
    """``ax.plot`` of δ values on a log axis (values ≤ FLOOR not drawn).

    Args:
        ax (matplotlib.axes.Axes): The panel.
        x (array-like): ε values.
        y (array-like): δ values.
        **kw: Passed to ``ax.plot``.

    Returns:
        What ``ax.plot`` returns.
    """
    return ax.plot(x, masked(y), **kw)


def grid(n: int, ncols: int, height: float = 3.3) -> tuple:
    """A figure :data:`WIDTH_IN` wide with ``n`` panels in rows of ``ncols``, each ``height`` inches high, laid out
    by matplotlib's constrained layout (room for a legend outside the panels); returns (figure, list of n axes).

    Args:
        n: Panels.
        ncols: Panels per row.
        height: Inches per row.

    Returns:
        (figure, list of n axes).
    """
    nrows = max(1, math.ceil(n / ncols))
    ncols = min(ncols, n)
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH_IN, height * nrows), squeeze=False, layout="constrained")
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def legend_outside(fig, axes, ncol: int = 3, title: Optional[str] = None, where: str = "lower center") -> Any:
    """One legend for all ``axes`` (each label once) outside every data area: below the panels, or ``where``
    (a location of matplotlib's ``outside`` legends, e.g. "right upper").

    Args:
        fig (matplotlib.figure.Figure): The figure.
        axes (list): Its panels.
        ncol: Legend columns.
        title: The legend's title (None: none).
        where: Where it goes, outside the panels.

    Returns:
        The legend (matplotlib's ``Legend``).
    """
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return fig.legend(list(entries.values()), list(entries), loc=f"outside {where}", ncol=ncol, title=title)


def save(fig, out: Path, name: str) -> str:
    """Write ``out/name`` as PNG at :data:`DPI` (the figure's own size: :data:`WIDTH_IN` wide), close; returns the
    file name.

    Args:
        fig (matplotlib.figure.Figure): The figure.
        out: The folder.
        name: The file name.

    Returns:
        The file name.
    """
    fig.savefig(out / name, dpi=DPI)
    plt.close(fig)
    return name


def cell_title(cell: str, params: Optional[dict]) -> str:
    """A panel title naming a grid cell by r, ρ and Λ/N.

    Args:
        cell: The cell's label.
        params: The cell's parameters (:func:`~tsdp.reports.claim_base.cell_info`; None: the label alone).

    Returns:
        The title.
    """
    if not params:
        return cell
    ratios = f"r={params['r']:.3g}, ρ={params['rho']:.3g}, Λ/N={params['batch_size'] / params['N']:.3g}"
    return f"configuration: {ratios}" if cell == CONFIG_CELL else ratios


FLAT = 0.99
"""A panel whose every drawn δ is at least this is 'flat at δ = 1' and says so."""


def note_flat(ax, after: str = "") -> bool:
    """Write a word on a panel whose every curve is δ ≈ 1 (no privacy left on the ε range shown).

    Args:
        ax (matplotlib.axes.Axes): The panel.
        after: Words appended to the note.

    Returns:
        Whether the note was written.
    """
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()]
    ys = [y[np.isfinite(y)] for y in ys]
    if not ys or not all(len(y) and y.min() >= FLAT for y in ys):
        return False
    lo, hi = ax.get_xlim()
    where = f"on ε ∈ [{lo:.3g}, {hi:.3g}]" if ax.get_xscale() == "log" else "on the range shown"
    ax.text(0.5, 0.45, f"every curve at δ ≈ 1 {where}" + (f"\nafter {after}" if after else "") +
            ":\nno privacy left to compare", transform=ax.transAxes, ha="center", va="center",
            bbox={"facecolor": "lightyellow", "edgecolor": "0.6"})
    return True


def finish_panel(ax, title: str, after: str = "", xlabel: str = "ε", ylabel: str = "δ(ε)") -> None:
    """Log-log axes over ε with a readable δ range, a title, and the δ ≈ 1 note where it applies.

    Args:
        ax (matplotlib.axes.Axes): The panel.
        title: Its title.
        after: Words appended to the δ ≈ 1 note.
        xlabel: The x axis' label.
        ylabel: The y axis' label.
    """
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo = min([np.nanmin(line.get_ydata()) for line in ax.get_lines() if np.isfinite(line.get_ydata()).any()] or [FLOOR])
    ax.set_ylim(max(FLOOR, min(0.1, 0.5 * lo)), 1.5)  # a readable range when every δ is ≈ 1
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(title)
    note_flat(ax, after)


def show_zero(ax, values) -> None:
    """On a horizontal bar chart, label the bars whose value is 0 (an audit lower bound of 0
    certifies nothing), which would otherwise be invisible.

    Args:
        ax (matplotlib.axes.Axes): The panel.
        values (list): The bars' values, in order.
    """
    for i, v in enumerate(values):
        if v is not None and v <= 0:
            ax.text(0, i, "  0 (certifies nothing)", va="center", color="C3")


def zero_points(ax, x, y, **kw: Any) -> None:
    """Draw points whose value is 0 on a log y axis at the axis' bottom edge (hollow markers,
    clip off), so an audit lower bound of 0 is shown, not dropped.

    Args:
        ax (matplotlib.axes.Axes): The panel.
        x (array-like): The points' x.
        y (array-like): Their values.
        **kw: Passed to ``ax.plot``.
    """
    pts = [(a, b) for a, b in zip(x, y) if b is not None and b <= 0]
    if not pts:
        return
    xs = [a for a, _ in pts]
    ax.plot(xs, [0.0] * len(xs), ls="none", transform=ax.get_xaxis_transform(), clip_on=False,
            markerfacecolor="none", **kw)


def figure_tightness(section: dict, out: Path) -> List[str]:
    """Section 4, one figure per audited construction (``tightness_<id>.png``): the compared bound's one-step
    δ(ε) (solid; an upper bound, or for T14 the one-record bound T13 of another relation, with a note), the
    construction's attained δ(ε) where it differs (dotted), the audit's lower-confidence H_α points (filled
    markers, each at 95%; a lower bound of 0 as a hollow marker on the bottom edge) and its certified lower
    profile on the violation test's ε grid (dashed, 95% for all ε at once); linear ε, log δ; the legend
    right of the panel.

    Args:
        section: The tightness section's JSON data.
        out: The folder of the figures.

    Returns:
        The files written (names in ``out``).
    """
    names = []
    for b in section["bounds"]:
        fig, (ax,) = grid(1, 1, height=3.6)
        eps = np.asarray(b["eps"])
        plot(ax, eps, b["delta_sound"], color="C0", label=f"{b['sound_theorem']} ({b['sound_role']})")
        if b["delta_attained"] is not None:
            plot(ax, eps, b["delta_attained"], color="C1", ls=":", label=f"{b['attained_theorem']} (attained, lower)")
        if b["audit"] is not None:
            pts = [(math.log(p["alpha"]), p["h_lower"]) for p in b["audit"]["profile"]]
            pos = [(x, y) for x, y in pts if y > 0]
            if pos:
                ax.plot(*zip(*pos), "v", color="C3", label=f"audit LCB ({b['audit']['trials']:.0e} trials)")
            zero_points(ax, [x for x, _ in pts], [y for _, y in pts], marker="v", color="C3",
                        label="audit LCB = 0 (certifies nothing)")
            band = [(math.log(p["alpha"]), p["h_lower"]) for p in b["audit"].get("simultaneous_profile", [])
                    if p["h_lower"] > 0]
            if band:
                ax.step(*zip(*band), where="pre", color="C3", lw=0.9, ls="--", label="audit LCB, all ε at once")
        ax.set_yscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("δ(ε), one step")
        ax.grid(True, alpha=0.3)
        sigma_f = f", σ_F={b['sigma_forecast']:g}" if b["sigma_forecast"] else ""
        ax.set_title(f"Tightness: audit of {b['theorem']} (λ={b['instances']}{sigma_f}), audit configuration"
                     + (f"\n{b['sound_theorem']}: one record; the attack: one element in k windows (another "
                        "relation, C6)" if b.get("note") else ""))
        note_flat(ax)
        legend_outside(fig, [ax], ncol=1, where="right upper")
        names.append(save(fig, out, f"tightness_{b['theorem']}.png"))
    return names


def figure_composition(section: dict, out: Path) -> List[str]:
    """Section 4: the composition gap of T6 on the audit configuration, ε(δ = 1e-3) over steps:
    sound (upper), attained (lower), audited lower-confidence bound (a bound of 0 as a hollow
    marker on the bottom edge); log-log.

    Args:
        section: The tightness section's JSON data.
        out: The folder of the figures.

    Returns:
        The files written (names in ``out``).
    """
    rows = section["composition"]
    fig, (ax,) = grid(1, 1, height=3.6)
    s = [r["steps"] for r in rows]
    ax.plot(s, [r["epsilon_sound"] for r in rows], "o-", label="sound (upper)")
    ax.plot(s, [r["epsilon_attained"] for r in rows], "s:", label="attained (lower)")
    aud = [(r["steps"], r["epsilon_audited_lower"]) for r in rows if r["epsilon_audited_lower"] is not None]
    levels = {r.get("confidence") for r in rows if r["epsilon_audited_lower"] is not None}
    level = f"{percent_text(levels.pop())} " if len(levels) == 1 and None not in levels else ""
    if any(y > 0 for _, y in aud):
        ax.plot(*zip(*[(x, y) for x, y in aud if y > 0]), "v", color="C3", ms=8, label=f"audited ({level}lower bound)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    zero_points(ax, [x for x, _ in aud], [y for _, y in aud], marker="v", color="C3", ms=8,
                label="audited lower bound = 0")
    ax.set_xlabel("training steps")
    ax.set_ylabel(f"ε at δ = {section['delta']:g}")
    ax.grid(True, alpha=0.3)
    legend_outside(fig, [ax], ncol=1, where="right upper")
    ax.set_title("T6 composition gap (audit configuration)")
    return [save(fig, out, "composition.png")]
