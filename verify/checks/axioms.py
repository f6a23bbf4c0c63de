"""Property 1 (privacy-profile axioms) and property 3 (α-symmetry).

Paper Lemma `privacy_profile_requirements` (Zhu et al. 2022, Lemma 9): H is a privacy
profile iff convex, non-increasing, H(0) = 1 and H(α) ≥ max(0, 1 - α).
Paper Lemma `dominating_pair_alpha_symmetry` (Zhu et al. 2022, Lemma 31) and the identity
H_α(P‖Q) = 1 - α + α H_{1/α}(Q‖P).
"""
from __future__ import annotations

import mpmath as mp
import numpy as np

from tsdp.theorems.bounds.base import Bound, PairBound
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.hockey_stick import hockey_stick_mp

from .common import dense_alphas, raw_profile, worst
from .result import CheckResult, config_dict, result

AXIOM_TOL = 1e-13
"""Value-level tolerance of the axioms, scaled by (1 + α): a few float64 ulps of the two
O(1) tails whose difference H is (their rounding error grows with α Q(·))."""

SYMMETRY_TOL = mp.mpf("1e-25")
SYMMETRY_DPS = 40


def profile_axioms(b: Bound, config: TrainingConfig, label: str = "", alphas: np.ndarray | None = None) -> CheckResult:
    """Property 1 for bound ``b`` (any T-id with a profile): Lemma `privacy_profile_requirements`.

    On a dense α grid (``dense_alphas``: spacing 1e-3 on [0, 4], then 1000 log-spaced points
    to 1e4), with tolerance 1e-13 (1 + α) on values:
    H(0) = 1; H ≤ 1; non-increasing (H(α_{i+1}) - H(α_i) ≤ tol); convex (H(α_i) at most the
    chord of its neighbours + tol); H(α) ≥ max(0, 1 - α) - tol, the last one on the
    **unclamped** tails (:func:`raw_profile`), because the engine clamps its output there.

    Args:
        b: The bound checked.
        config: The configuration it is evaluated at.
        label: The configuration's label (in the check's name).
        alphas: The α grid (None: :func:`~tsdp.verify.checks.common.dense_alphas`).

    Returns:
        The check's result (pass or fail, with the worst violation).
    """
    alphas = dense_alphas() if alphas is None else np.asarray(alphas, dtype=float)
    h = np.asarray(b.profile(config, alphas), dtype=float)
    raw = raw_profile(b, config, alphas)
    tol = AXIOM_TOL * (1 + alphas)
    h0 = float(b.profile(config, np.array([0.0]))[0])
    increase = h[1:] - h[:-1] - tol[1:]
    a0, a1, a2 = alphas[:-2], alphas[1:-1], alphas[2:]
    chord = ((a2 - a1) * h[:-2] + (a1 - a0) * h[2:]) / (a2 - a0)
    concavity = h[1:-1] - chord - tol[1:-1]
    floor = np.maximum(0.0, 1 - alphas) - raw - tol
    above_one = h - 1 - tol
    w_inc, w_conv = worst(increase, alphas[1:]), worst(concavity, a1)
    w_floor, w_one = worst(floor, alphas), worst(above_one, alphas)
    ok = (abs(h0 - 1) <= AXIOM_TOL and w_inc["max"] <= 0 and w_conv["max"] <= 0 and w_floor["max"] <= 0
          and w_one["max"] <= 0)
    bad = [n for n, w in (("increasing", w_inc), ("not convex", w_conv), ("below max(0,1-α)", w_floor),
                          ("above 1", w_one)) if w["max"] > 0]
    if abs(h0 - 1) > AXIOM_TOL:
        bad.insert(0, f"H(0) = {h0}")
    return result(
        f"P1.axioms[{b.id}]@{label}", 1, (b.id,), ok,
        "H(0)=1, non-increasing, convex, H ≥ max(0,1-α) on a dense α grid" if ok else "violated: " + ", ".join(bad),
        measured={"H(0)": h0, "grid_points": int(alphas.size), "alpha_max": float(alphas[-1]),
                  "max_increase_minus_tol": w_inc, "max_chord_excess_minus_tol": w_conv,
                  "max_floor_violation_minus_tol": w_floor, "max_excess_over_1_minus_tol": w_one},
        tolerance={"value": "1e-13 * (1 + alpha)", "H(0)": AXIOM_TOL},
        config=config_dict(config),
    )


def _mp_sym_gap(pair, alpha: mp.mpf, dps: int) -> mp.mpf:
    with mp.workdps(dps):
        lhs = hockey_stick_mp(pair, alpha, dps)
        rhs = 1 - alpha + alpha * hockey_stick_mp(pair.swapped(), 1 / alpha, dps)
        return abs(lhs - rhs)


SYMMETRY_ALPHAS = ("0.05", "0.3", "0.7", "0.95", "1", "1.05", "1.5", "3", "12", "60")


def pair_symmetry(b: PairBound, config: TrainingConfig, label: str = "", dps: int = SYMMETRY_DPS) -> CheckResult:
    """Property 3 for the pair of ``b`` (T1-T4, T6, T9-T14, T10-printed): the α-symmetry identity.

    H_α(P‖Q) = 1 - α + α H_{1/α}(Q‖P) (Zhu et al. 2022, Lemma 31; paper Lemma
    `dominating_pair_alpha_symmetry`) for the bound's α ≥ 1 pair (P, Q), at α on both
    sides of 1, mpmath at ``dps`` = 40 digits; tolerance 1e-25 absolute.

    Args:
        b: The pair bound checked.
        config: The configuration it is evaluated at.
        label: The configuration's label.
        dps: mpmath's working precision (decimal digits).

    Returns:
        The check's result.
    """
    pair = b.pair(config)
    gaps = []
    with mp.workdps(dps):
        for a in SYMMETRY_ALPHAS:
            gaps.append(_mp_sym_gap(pair, mp.mpf(a), dps))
    i = max(range(len(gaps)), key=lambda j: gaps[j])
    ok = gaps[i] <= SYMMETRY_TOL
    return result(
        f"P3.pair_symmetry[{b.id}]@{label}", 3, (b.id,), ok,
        "H_α(P‖Q) = 1-α+αH_{1/α}(Q‖P) to 1e-25 at dps 40" if ok
        else f"identity off by {mp.nstr(gaps[i], 5)} at α = {SYMMETRY_ALPHAS[i]}",
        measured={"max_abs_gap": gaps[i], "at_alpha": float(SYMMETRY_ALPHAS[i]), "alphas": [float(a) for a in SYMMETRY_ALPHAS]},
        tolerance={"abs": SYMMETRY_TOL, "dps": dps}, config=config_dict(config),
    )


def profile_self_symmetry(b: Bound, config: TrainingConfig, label: str = "", dps: int = SYMMETRY_DPS) -> CheckResult:
    """Property 3 for the bound's profile (every T-id with a profile): H(α) = 1 - α + α H(1/α).

    A profile dominating both adjacency directions uses the pair (P, Q) for α ≥ 1 and the
    swapped pair (Q, P) for α < 1 (paper Lemma `dominating_pair_alpha_symmetry`), so by
    the α-symmetry identity its α < 1 branch is determined by its α ≥ 1 branch:
    H(α) = 1 - α + α H(1/α). A bound that drops the swap fails this. T7/T8 inherit it
    from their mirror-symmetric bases. mpmath (``profile_mp``) at dps 40, tolerance 1e-25.

    Args:
        b: The bound checked.
        config: The configuration it is evaluated at.
        label: The configuration's label.
        dps: mpmath's working precision (decimal digits).

    Returns:
        The check's result.
    """
    gaps = []
    with mp.workdps(dps):
        for a in SYMMETRY_ALPHAS[:4]:
            al = mp.mpf(a)
            lhs = b.profile_mp(config, al, dps)
            rhs = 1 - al + al * b.profile_mp(config, 1 / al, dps)
            gaps.append(abs(lhs - rhs))
    i = max(range(len(gaps)), key=lambda j: gaps[j])
    ok = gaps[i] <= SYMMETRY_TOL
    return result(
        f"P3.profile_symmetry[{b.id}]@{label}", 3, (b.id,), ok,
        "H(α) = 1-α+αH(1/α): the α<1 branch is the swapped pair" if ok
        else f"α<1 branch inconsistent with α≥1 branch: off by {mp.nstr(gaps[i], 5)} at α = {SYMMETRY_ALPHAS[i]}",
        measured={"max_abs_gap": gaps[i], "at_alpha": float(SYMMETRY_ALPHAS[i])},
        tolerance={"abs": SYMMETRY_TOL, "dps": dps}, config=config_dict(config),
    )
