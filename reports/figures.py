"""The report's figures (matplotlib, Agg): one function per figure, each drawing numbers already
in results.json (the claim or section dict) and saving a PNG; returns the file name.

Axes as in the paper's figures: ε on a log axis and δ(ε) on a log axis for the composed
profiles (Figs. 2-4, C.1 grid); δ at fixed ε over training steps for C4; H_α over ε for C5.
Solid lines are sound (upper) evaluations, dotted lines attained (lower) evaluations, markers
with error bars audited lower-confidence bounds.
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


def _masked(y) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    return np.where(y > FLOOR, y, np.nan)


def _grid(n: int, ncols: int, size=(4.6, 3.4)):
    nrows = max(1, math.ceil(n / ncols))
    ncols = min(ncols, n)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _save(fig, out: Path, name: str, rect=(0, 0, 1, 1)) -> str:
    fig.tight_layout(rect=rect)
    fig.savefig(out / name, dpi=DPI)
    plt.close(fig)
    return name


def _loglog(ax, xlabel="ε", ylabel="δ(ε)"):
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo = min([np.nanmin(line.get_ydata()) for line in ax.get_lines() if np.isfinite(line.get_ydata()).any()] or [FLOOR])
    ax.set_ylim(max(FLOOR, min(0.1, 0.5 * lo)), 1.5)  # a readable range when every δ is ≈ 1
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)


def _title(cell: str, params: Optional[dict]) -> str:
    if not params:
        return cell
    ratios = f"r={params['r']:.3g}, ρ={params['rho']:.3g}, Λ/N={params['batch_size'] / params['N']:.3g}"
    return f"configuration: {ratios}" if cell == "config" else ratios


def figure_c1(claim: dict, out: Path) -> List[str]:
    """C1 / paper Fig. 2 and the appendix grid: δ(ε) of T6 (λ = 1) and T9 (λ > 1) per step count;
    one PNG per cell, one panel per number of steps. Solid: sound; dotted: attained."""
    fig_data = claim["figure"]
    eps = np.asarray(fig_data["eps"])
    names = []
    for i, panel in enumerate(fig_data["panels"]):
        steps = fig_data["steps"]
        fig, axes = _grid(len(steps), 3)
        for ax, s in zip(axes, steps):
            for j, c in enumerate(panel["curves"]):
                color = f"C{j}"
                ax.plot(eps, _masked(c["sound"][s] if s in c["sound"] else c["sound"][str(s)]), color=color,
                        label=f"{c['label']} sound")
                ax.plot(eps, _masked(c["attained"][s] if s in c["attained"] else c["attained"][str(s)]), color=color,
                        ls=":", label=f"{c['label']} attained")
            _loglog(ax)
            ax.set_title(f"step {s}")
        axes[0].legend(fontsize=7, loc="lower left")
        fig.suptitle("C1 (Fig. 2): WOR top, WR bottom, λ = 1 vs λ > 1 - " + _title(panel["cell"], panel["params"]),
                     fontsize=10)
        names.append(_save(fig, out, f"c1_{i}.png"))
    return names


def figure_c2(claim: dict, out: Path) -> List[str]:
    """C2 / paper Fig. 3 and appendix grid: T6 (WOR, solid) vs T1 (deterministic, dashed) after
    1 step, 1 epoch, 10 epochs, sound evaluation (the paper's); attained as thin dotted lines."""
    fig_data = claim["figure"]
    eps = np.asarray(fig_data["eps"])
    fig, axes = _grid(len(fig_data["panels"]), 3)
    for ax, panel in zip(axes, fig_data["panels"]):
        for j, name in enumerate(("1 step", "1 epoch", "10 epochs")):
            for c in panel["curves"]:
                if c["schedule"] != name:
                    continue
                ls = "-" if c["scheme"] == "wor" else "--"
                who = "WOR (T6)" if c["scheme"] == "wor" else "det. (T1)"
                ax.plot(eps, _masked(c["sound"]), color=f"C{j}", ls=ls, label=f"{who}, {name}")
                ax.plot(eps, _masked(c["attained"]), color=f"C{j}", ls=":", lw=0.8)
        _loglog(ax)
        ax.set_title(_title(panel["cell"], panel["params"]), fontsize=9)
    axes[0].legend(fontsize=7, loc="lower left", title="sound; dotted: attained", title_fontsize=7)
    fig.suptitle("C2 (Fig. 3): top-level WOR vs deterministic iteration, λ = 1", fontsize=10)
    return [_save(fig, out, "c2.png")]


def figure_c3(claim: dict, out: Path) -> List[str]:
    """C3 / paper Fig. 4: T11 δ(ε) for σ_C = 0 and growing σ_F, with the L_F → 0 reference; one step
    (exact) and composed (sound)."""
    f = claim["figure"]
    eps = np.asarray(f["eps"])
    fig, axes = _grid(2, 2)
    for ax, key, title in ((axes[0], "delta_1", "1 step (exact)"), (axes[1], "delta_composed", f"{f['steps']} steps (sound)")):
        for j, c in enumerate(f["curves"]):
            ax.plot(eps, _masked(c[key]), color=plt.cm.viridis(j / max(1, len(f["curves"]) - 1)), label=c["label"])
        ax.plot(eps, _masked(f["reference"][key]), color="red", ls="--", lw=2, label=f["reference"]["label"])
        _loglog(ax)
        ax.set_title(title)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle("C3 (Fig. 4): label noise σ_F (σ_C = 0, WOR top, WR bottom, λ = 1)", fontsize=10)
    return [_save(fig, out, "c3.png")]


def figure_c4(claim: dict, out: Path) -> List[str]:
    """C4 / appendix Fig. (epoch privacy vs length): δ at ε ∈ {1, 4} over 16 training steps,
    deterministic top level, Λ = N; λ = 1 (T1) vs λ > 1 at its epoch ends (T3 sound and attained,
    T2 sound)."""
    f = claim["figure"]
    panels = [(p, e) for p in f["panels"] for e in f["epsilons"]]
    fig, axes = _grid(len(panels), 2)
    for ax, (p, e) in zip(axes, panels):
        for s in p["series"]:
            color = f"C{int(math.log2(s['instances']))}"
            ls = {"T1 (sound)": "-", "T1 (attained)": ":"}.get(s["bound"], "--" if "T3 (sound)" in s["bound"] else
                                                                 (":" if "attained" in s["bound"] else "-."))
            marker = {"-": "o", ":": ".", "--": "s", "-.": "^"}[ls]
            ax.plot(s["steps"], _masked(s["delta"][str(e)]), color=color, ls=ls, marker=marker, ms=4,
                    label=f"λ={s['instances']} {s['bound']}")
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_ylabel(f"δ(ε = {e:g})")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"ε = {e:g}, r = {p['r']:g}", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8)
    fig.suptitle("C4: deterministic top level, N = Λ, epoch privacy vs length", fontsize=10)
    return [_save(fig, out, "c4.png", rect=(0, 0, 0.8, 1))]


def figure_c5(claim: dict, out: Path) -> List[str]:
    """C5 / appendix Fig. (vs standard DP-SGD): one-step H_α of T6 (solid, tight) and T14 (dashed,
    optimistic lower bound of pooled windows) over ε, per L_C + L_F; one panel per grid cell."""
    f = claim["figure"]
    eps = np.asarray(f["eps"])
    fig, axes = _grid(len(f["panels"]), 3)
    for ax, p in zip(axes, f["panels"]):
        for j, c in enumerate(p["curves"]):
            color = f"C{j}"
            ax.plot(eps, _masked(c["T6"]), color=color, label=f"T6, L_C+L_F={c['window_length']}")
            ax.plot(eps, _masked(c["T14"]), color=color, ls="--", label=f"T14, L_C+L_F={c['window_length']}")
        _loglog(ax, ylabel="H_α, α = e^ε (one step)")
        capped = sorted({c["window_length"] for c in p["curves"] if c["k"] < c["window_length"]})
        title = "configuration" if p["cell"] == "config" else p["cell"]
        ax.set_title(title + (f" (L_C+L_F ∈ {capped}: k capped at T)" if capped else ""), fontsize=9)
        ax.legend(fontsize=6, loc="lower left", ncol=2)
    fig.suptitle("C5: pooled windows (T14, dashed) vs structured subsampling λ = 1 (T6, solid)", fontsize=10)
    return [_save(fig, out, "c5.png")]


def figure_tightness(section: dict, out: Path) -> List[str]:
    """Section 4: for each audited construction, the sound bound's one-step δ(ε) (solid), the
    construction's attained δ(ε) where it differs (dotted), and the audit's lower-confidence
    H_α points (markers, drawn only where > 0); linear ε, log δ."""
    bounds = section["bounds"]
    fig, axes = _grid(len(bounds), 4, size=(3.8, 3.0))
    for ax, b in zip(axes, bounds):
        eps = np.asarray(b["eps"])
        ax.plot(eps, _masked(b["delta_sound"]), color="C0", label=f"{b['sound_theorem']} ({b['kind']})")
        if b["delta_attained"] is not None:
            ax.plot(eps, _masked(b["delta_attained"]), color="C1", ls=":", label=f"{b['attained_theorem']} (attained)")
        if b["audit"] is not None:
            pts = [(math.log(p["alpha"]), p["h_lower"]) for p in b["audit"]["profile"] if p["h_lower"] > 0]
            if pts:
                x, y = zip(*pts)
                ax.plot(x, y, "v", color="C3", label=f"audit LCB ({b['audit']['trials']:.0e} trials)")
        ax.set_yscale("log")
        ax.set_xlabel("ε")
        ax.set_ylabel("δ(ε), one step")
        ax.grid(True, alpha=0.3)
        ax.set_title(f"audit of {b['theorem']} (λ={b['instances']}" + (f", σ_F={b['sigma_forecast']:g})" if
                                                                           b["sigma_forecast"] else ")"), fontsize=9)
        ax.legend(fontsize=6)
    fig.suptitle("Tightness: theory vs audited lower-confidence bounds (audit configuration)", fontsize=10)
    return [_save(fig, out, "tightness.png")]


def figure_composition(section: dict, out: Path) -> List[str]:
    """Section 4: the composition gap of T6 on the audit configuration, ε(δ = 1e-3) over steps:
    sound (upper), attained (lower), audited lower-confidence bound; log-log."""
    rows = section["composition"]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    s = [r["steps"] for r in rows]
    ax.plot(s, [r["epsilon_sound"] for r in rows], "o-", label="sound (upper)")
    ax.plot(s, [r["epsilon_attained"] for r in rows], "s:", label="attained (lower)")
    aud = [(r["steps"], r["epsilon_audited_lower"]) for r in rows if r["epsilon_audited_lower"] is not None]
    if aud:
        x, y = zip(*aud)
        ax.plot(x, y, "v", color="C3", ms=8, label="audited (95% lower bound)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training steps")
    ax.set_ylabel(f"ε at δ = {section['delta']:g}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("T6 composition gap (audit configuration)", fontsize=10)
    return [_save(fig, out, "composition.png")]


FIGURES = {"C1": figure_c1, "C2": figure_c2, "C3": figure_c3, "C4": figure_c4, "C5": figure_c5}
