"""Property 2 (order between the bounds of one scheme) and property 4 (monotonicity claims).

Property 2: lower ≤ tight ≤ upper, and equality where the paper proves tightness
(T3 ≤ T2, Thm 4.3 vs Thm E.2; T3 = T1 at λ = 1; T9 ≤ T7, Thm F.7 vs F.1; T9 = T6 at λ = 1;
T10 ≤ T8, Thm F.8 vs F.2; T11 ≤ T6, Thm G.1 vs 4.4; T14 ≥ T13, Props. C.2/C.1).
Property 4: Thm 4.1 (T5, `deterministic_top_level_monotonicity`) and the monotonicity of
every profile in r, ρ (non-decreasing) and σ, σ_C, σ_F (non-increasing).
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from tsdp.theorems.bounds.base import Bound
from tsdp.theorems.config import Relation, Top, TrainingConfig

from .common import order_alphas, worst
from .result import FAIL, PASS, CheckResult, config_dict, result

ORDER_TOL = 1e-12
"""Absolute tolerance on profile values for orders and equalities (float64 engine, whose
values are exact to ~1e-15; see property 6 for the measured engine error)."""


def order(lower: Bound, upper: Bound, config_lower: TrainingConfig, config_upper: TrainingConfig | None = None,
          label: str = "", *, equal: bool = False, alphas: np.ndarray | None = None,
          violation_status: str = FAIL, why: str = "") -> CheckResult:
    """Property 2: H_lower(α) ≤ H_upper(α) for all α (``equal``: |difference| ≤ tol).

    Evaluated on ``order_alphas`` (201 points on [0, 1], 400 log-spaced on [1, 1e4]) with
    absolute tolerance 1e-12. ``config_upper`` defaults to ``config_lower`` (the two
    bounds may need different scheme fields, e.g. T1 on a deterministic top level
    against T3). ``violation_status`` is ``fail`` except for the printed form of T10
    (erratum 8), where a violation would be a finding about the paper, not our code.

    Args:
        lower: The bound that must be no larger.
        upper: The bound that must be no smaller.
        config_lower: ``lower``'s configuration.
        config_upper: ``upper``'s configuration (None: ``config_lower``).
        label: The configuration's label.
        equal: Check equality within the tolerance instead.
        alphas: The α grid (None: ``order_alphas``).
        violation_status: The status of a violation (fail, or finding for a known erratum).
        why: The reason the order is expected (in the explanation).

    Returns:
        The check's result.
    """
    config_upper = config_lower if config_upper is None else config_upper
    alphas = order_alphas() if alphas is None else np.asarray(alphas, dtype=float)
    lo = np.asarray(lower.profile(config_lower, alphas), dtype=float)
    up = np.asarray(upper.profile(config_upper, alphas), dtype=float)
    diff = lo - up
    relation = "=" if equal else "≤"
    w_over = worst(diff, alphas)
    w_abs = worst(np.abs(diff), alphas)
    ok = (w_abs["max"] <= ORDER_TOL) if equal else (w_over["max"] <= ORDER_TOL)
    status = PASS if ok else violation_status
    rel = np.where(up > 0, diff / np.where(up > 0, up, 1.0), 0.0)
    measured = {"max_lower_minus_upper": w_over, "max_abs_difference": w_abs,
                "max_relative_excess": worst(rel, alphas), "grid_points": int(alphas.size)}
    name = f"P2.order[{lower.id}{relation}{upper.id}]@{label}"
    text = f"{lower.id} {relation} {upper.id} on {alphas.size} α values" + (f" ({why})" if why else "")
    if not ok:
        w = w_abs if equal else w_over
        text = (f"{lower.id} {relation} {upper.id} violated: {lower.id} - {upper.id} = {w['max']:.3g} at α = "
                f"{w['at_alpha']:.4g}" + (f" ({why})" if why else ""))
    configs = {"lower": config_dict(config_lower)}
    if config_upper is not config_lower:
        configs["upper"] = config_dict(config_upper)
    return CheckResult(name, 2, (lower.id, upper.id), status, text, measured, {"abs": ORDER_TOL}, configs)


# ----------------------------------------------------------------------------- property 4


def t5_monotonicity(t1: Bound, t2: Bound, t3: Bound, t4: Bound, config: TrainingConfig, label: str = "",
                    instances: Sequence[int] = (2, 3, 4), alphas: np.ndarray | None = None) -> CheckResult:
    """Property 4, T5 (Thm 4.1, `deterministic_top_level_monotonicity`): λ = 1 minimises the profile.

    Deterministic top level, for every α on ``order_alphas``: WR bottom level,
    T1(λ = 1) ≤ T3(λ) (the optimistic form for λ > 1, as the paper's proof uses it) and
    T2(λ = 1) ≤ T2(λ); Poisson bottom level, T4(λ = 1) ≤ T4(λ); λ ∈ ``instances``,
    batch size Λ fixed (raised to λ where smaller). Tolerance 1e-12 absolute.

    Args:
        t1: T1.
        t2: T2.
        t3: T3.
        t4: T4.
        config: The configuration.
        label: The configuration's label.
        instances: The λ values compared with λ = 1.
        alphas: The α grid (None: ``order_alphas``).

    Returns:
        The check's result.
    """
    alphas = order_alphas() if alphas is None else alphas
    wr = config.with_(top="deterministic", bottom="wr", instances=1, sigma_context=0.0, sigma_forecast=0.0)
    po = wr.with_(bottom="poisson")
    base = {"T1": t1.profile(wr, alphas), "T2": t2.profile(wr, alphas), "T4": t4.profile(po, alphas)}
    measured: Dict[str, object] = {}
    worst_all = -np.inf
    for lam in instances:
        batch = max(config.batch_size, lam)
        wr_l = wr.with_(instances=lam, batch_size=batch)
        po_l = po.with_(instances=lam, batch_size=batch)
        for key, ref, other, cfg in (("T1<=T3", "T1", t3, wr_l), ("T2(1)<=T2", "T2", t2, wr_l),
                                     ("T4(1)<=T4", "T4", t4, po_l)):
            w = worst(base[ref] - other.profile(cfg, alphas), alphas)
            measured[f"{key}(lambda={lam})"] = w
            worst_all = max(worst_all, w["max"])
    ok = worst_all <= ORDER_TOL
    return result(
        f"P4.T5[lambda=1 minimises]@{label}", 4, ("T5", t1.id, t2.id, t3.id, t4.id), ok,
        f"λ = 1 gives the smallest profile for λ ∈ {{1, {', '.join(map(str, instances))}}}" if ok
        else f"λ = 1 is not the minimiser: excess {worst_all:.3g}",
        measured=measured | {"max_excess": worst_all}, tolerance={"abs": ORDER_TOL}, config=config_dict(config),
    )


def monotone_in(b: Bound, configs: Sequence[TrainingConfig], parameter: str, increasing: bool, label: str = "",
                values: Sequence | None = None, alphas: np.ndarray | None = None) -> CheckResult:
    """Property 4 for bound ``b``: its profile is monotone along ``configs`` (ordered by ``parameter``).

    ``increasing``: non-decreasing (r, ρ); else non-increasing (σ, σ_C, σ_F). The claims
    behind it: binomial dominance and Gaussian mean monotonicity (paper Lemmas
    `binomial_dominance`, `gaussian_mean_monotonicity`), and the data-processing
    inequality for more noise. Tolerance 1e-12 absolute on every α of ``order_alphas``.

    Args:
        b: The bound.
        configs: Configurations ordered by ``parameter``.
        parameter: The parameter swept (in the check's name).
        increasing: Non-decreasing (else non-increasing) expected.
        label: The configuration's label.
        values: The parameter's values (in the result).
        alphas: The α grid (None: ``order_alphas``).

    Returns:
        The check's result.
    """
    alphas = order_alphas() if alphas is None else alphas
    profiles = [np.asarray(b.profile(c, alphas), dtype=float) for c in configs]
    worst_step = {"max": -np.inf, "at_alpha": float("nan"), "between": None}
    for i in range(len(profiles) - 1):
        step = profiles[i] - profiles[i + 1] if increasing else profiles[i + 1] - profiles[i]
        w = worst(step, alphas)
        if w["max"] > worst_step["max"]:
            worst_step = {**w, "between": [i, i + 1]}
    ok = worst_step["max"] <= ORDER_TOL
    direction = "non-decreasing" if increasing else "non-increasing"
    shown = list(values) if values is not None else list(range(len(configs)))
    return result(
        f"P4.monotone[{b.id},{parameter}]@{label}", 4, (b.id,), ok,
        f"profile {direction} in {parameter} over {shown}" if ok
        else f"profile not {direction} in {parameter}: step {worst_step['max']:.3g} at α = {worst_step['at_alpha']:.4g}",
        measured={"worst_step": worst_step, "parameter_values": [float(v) for v in shown]},
        tolerance={"abs": ORDER_TOL}, config=config_dict(configs[0]),
    )


def parameter_sweeps(b: Bound, config: TrainingConfig) -> List[Tuple[str, bool, List, List[TrainingConfig]]]:
    """The sweeps of property 4 that apply to ``b`` at ``config``: (parameter, increasing, values, configs).

    r: T = k_raw · {8, 4, 2, 1} (L = T + L_F - 1, so r = k/T grows and k stays L_C + L_F);
    ρ (bounds that depend on it: WOR top level and pooled): N' ∈ {1, N/8, N/4, N/2, N}
    clipped to the batch; σ ∈ {0.5, 0.8, 1, 2, 4}; σ_C, σ_F ∈ {0, 0.25, 0.5, 1, 2, 4}
    for T11 (one at a time), jointly for T12.

    Args:
        b: The bound.
        config: The base configuration.

    Returns:
        (parameter, increasing, values, configs) per sweep that applies.
    """
    out = []
    window = config.window_length
    k_raw = window + config.w - 1 if config.relation == Relation.EVENT else config.w * window
    Ts = [8 * k_raw, 4 * k_raw, 2 * k_raw, k_raw]
    r_cfgs = [config.with_(L=T + config.forecast_length - 1) for T in Ts]
    out.append(("r", True, [float(c.r) for c in r_cfgs], r_cfgs))
    if config.top in (Top.WOR, Top.POOLED):
        lam = config.instances
        per = sorted({max(1, min(config.N, n)) for n in (1, config.N // 8, config.N // 4, config.N // 2, config.N)})
        rho_cfgs = [config.with_(batch_size=n * lam) for n in per]
        out.append(("rho", True, [float(c.rho) if config.top == Top.WOR else c.batch_size / c.n_windows_total
                                  for c in rho_cfgs], rho_cfgs))
    sigmas = [0.5, 0.8, 1.0, 2.0, 4.0]
    out.append(("sigma", False, sigmas, [config.with_(sigma=s) for s in sigmas]))
    aug = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0]
    if b.id == "T11" and config.w == 1:
        out.append(("sigma_C", False, aug, [config.with_(sigma_context=s) for s in aug]))
        out.append(("sigma_F", False, aug, [config.with_(sigma_forecast=s) for s in aug]))
    if b.id == "T12" or (b.id == "T11" and config.w > 1):
        out.append(("sigma_C=sigma_F", False, aug, [config.with_(sigma_context=s, sigma_forecast=s) for s in aug]))
    return out
