"""The report's plotting helpers (matplotlib, Agg) and the figures of section 4 (tightness).

Each claim draws its own figure (``Claim.figure`` in reports/claim_c*.py) with these helpers;
every figure draws numbers already in results.json and saves a PNG, returning the file name.
Axes as in the paper's figures: ε on a log axis and δ(ε) on a log axis for the composed
profiles. Solid lines are sound (upper) evaluations, dotted lines attained (lower)
evaluations, markers audited lower-confidence bounds; a panel whose curves are all δ ≈ 1 says
so, and an audited lower bound of 0 is drawn on the bottom edge, not dropped.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import List, Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

DPI = 110
FLOOR = 1e-12  # δ below this is not drawn on log axes (beyond the accountant's resolution)


def masked(y) -> np.ndarray:
    """δ values for a log axis: those ≤ FLOOR become NaN (not drawn)."""
    y = np.asarray([np.nan if v is None else v for v in y], dtype=float)
    return np.where(y > FLOOR, y, np.nan)


def plot(ax, x, y, **kw):
    """``ax.plot`` of δ values on a log axis (values ≤ FLOOR not drawn)."""
    return ax.plot(x, masked(y), **kw)


def grid(n: int, ncols: int, size=(4.6, 3.4)):
    """A figure with ``n`` panels in rows of ``ncols``; returns (figure, list of n axes)."""
    nrows = max(1, math.ceil(n / ncols))
    ncols = min(ncols, n)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def save(fig, out: Path, name: str, rect=(0, 0, 1, 1)) -> str:
    """Lay out, write ``out/name`` as PNG, close; returns the file name."""
    fig.tight_layout(rect=rect)
    fig.savefig(out / name, dpi=DPI)
    plt.close(fig)
    return name


def cell_title(cell: str, params: Optional[dict]) -> str:
    """A panel title naming a grid cell by r, ρ and Λ/N."""
    if not params:
        return cell
    ratios = f"r={params['r']:.3g}, ρ={params['rho']:.3g}, Λ/N={params['batch_size'] / params['N']:.3g}"
    return f"configuration: {ratios}" if cell == "config" else ratios


FLAT = 0.99
"""A panel whose every drawn δ is at least this is 'flat at δ = 1' and says so."""


def note_flat(ax, after: str = "") -> bool:
    """Write a word on a panel whose every curve is δ ≈ 1 (no privacy left on the ε range shown)."""
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()]
    ys = [y[np.isfinite(y)] for y in ys]
    if not ys or not all(len(y) and y.min() >= FLAT for y in ys):
        return False
    lo, hi = ax.get_xlim()
    where = f"on ε ∈ [{lo:.3g}, {hi:.3g}]" if ax.get_xscale() == "log" else "on the range shown"
    ax.text(0.5, 0.45, f"every curve at δ ≈ 1 {where}" + (f"\nafter {after}" if after else "") +
            ":\nno privacy left to compare", transform=ax.transAxes, ha="center", va="center", fontsize=8,
            bbox={"facecolor": "lightyellow", "edgecolor": "0.6"})
    return True


def finish_panel(ax, title: str, after: str = "", xlabel: str = "ε", ylabel: str = "δ(ε)") -> None:
    """Log-log axes over ε with a readable δ range, a title, and the δ ≈ 1 note where it applies."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo = min([np.nanmin(line.get_ydata()) for line in ax.get_lines() if np.isfinite(line.get_ydata()).any()] or [FLOOR])
    ax.set_ylim(max(FLOOR, min(0.1, 0.5 * lo)), 1.5)  # a readable range when every δ is ≈ 1
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(title, fontsize=9)
    note_flat(ax, after)


def show_zero(ax, values) -> None:
    """On a horizontal bar chart, label the bars whose value is 0 (an audit lower bound of 0
    certifies nothing), which would otherwise be invisible."""
    for i, v in enumerate(values):
        if v is not None and v <= 0:
            ax.text(0, i, "  0 (certifies nothing)", va="center", fontsize=8, color="C3")


def zero_points(ax, x, y, **kw) -> None:
    """Draw points whose value is 0 on a log y axis at the axis' bottom edge (hollow markers,
    clip off), so an audit lower bound of 0 is shown, not dropped."""
    pts = [(a, b) for a, b in zip(x, y) if b is not None and b <= 0]
    if not pts:
        return
    xs = [a for a, _ in pts]
    ax.plot(xs, [0.0] * len(xs), ls="none", transform=ax.get_xaxis_transform(), clip_on=False,
            markerfacecolor="none", **kw)


def figure_tightness(section: dict, out: Path) -> List[str]:
    """Section 4: for each audited construction, the compared bound's one-step δ(ε) (solid; an
    upper bound, or for T14 the one-record bound T13 of another relation, with a note), the
    construction's attained δ(ε) where it differs (dotted), the audit's lower-confidence
    H_α points (filled markers, each at 95%; a lower bound of 0 as a hollow marker on the bottom
    edge) and its certified lower profile on the violation test's ε grid (dashed, 95% for all ε at
    once); linear ε, log δ."""
    bounds = section["bounds"]
    fig, axes = grid(len(bounds), 4, size=(3.8, 3.0))
    for ax, b in zip(axes, bounds):
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
                ax.step(*zip(*band), where="pre", color="C3", lw=0.9, ls="--",
                        label="audit LCB, all ε at once")
        ax.set_yscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("δ(ε), one step")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"audit of {b['theorem']} (λ={b['instances']}" + (f", σ_F={b['sigma_forecast']:g})" if
                                                                           b["sigma_forecast"] else ")")
                     + (f"\n{b['sound_theorem']}: one record, the attack: one element\nin k windows (another relation, C6)"
                        if b.get("note") else ""), fontsize=9 if not b.get("note") else 7)
        note_flat(ax)
        ax.legend(fontsize=6)
    fig.suptitle("Tightness: theory vs audited lower-confidence bounds (audit configuration)", fontsize=10)
    return [save(fig, out, "tightness.png")]


def figure_composition(section: dict, out: Path) -> List[str]:
    """Section 4: the composition gap of T6 on the audit configuration, ε(δ = 1e-3) over steps:
    sound (upper), attained (lower), audited lower-confidence bound (a bound of 0 as a hollow
    marker on the bottom edge); log-log."""
    rows = section["composition"]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    s = [r["steps"] for r in rows]
    ax.plot(s, [r["epsilon_sound"] for r in rows], "o-", label="sound (upper)")
    ax.plot(s, [r["epsilon_attained"] for r in rows], "s:", label="attained (lower)")
    aud = [(r["steps"], r["epsilon_audited_lower"]) for r in rows if r["epsilon_audited_lower"] is not None]
    if any(y > 0 for _, y in aud):
        ax.plot(*zip(*[(x, y) for x, y in aud if y > 0]), "v", color="C3", ms=8, label="audited (95% lower bound)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    zero_points(ax, [x for x, _ in aud], [y for _, y in aud], marker="v", color="C3", ms=8,
                label="audited lower bound = 0")
    ax.set_xlabel("training steps")
    ax.set_ylabel(f"ε at δ = {section['delta']:g}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("T6 composition gap (audit configuration)", fontsize=10)
    return [save(fig, out, "composition.png")]
