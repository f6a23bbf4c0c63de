"""Property 6: three evaluation paths agree on one step, and the PLD is pessimistic.

* a closed form for the two-component pairs MoG([0,2],[1-w,w],σ) vs N(0,σ) (T1, T6, T11, T12,
  T13, and T3/T9 at λ = 1, T14 at k = 1), written with sympy and evaluated in mpmath, with
  the weight w computed here from the configuration's raw fields (independently of the
  bounds' ``build`` functions): L(x) = log(1 - w + w e^{(2x-2)/σ²}) has the single root
  x* = 1 + σ²/2 log((α - 1 + w)/w) of L = log α;
* the engine's mpmath path (``profile_mp``, dps 40);
* the engine's numpy path (``profile``), and for every pair a direct quadrature of
  max(dP - α dQ, 0) (:func:`verify.checks.common.hockey_stick_quad`);
* the one-step connect-the-dots PLD (:mod:`verify.pld`, paper Appendix B.3 / Lemma
  `connect_the_dots`): its ε(δ) is ≥ the exact ε (pessimism).
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Dict, Optional

import mpmath as mp
import numpy as np
import sympy as sp

from tsdp.theorems.bounds.base import Bound, PairBound
from tsdp.theorems.config import Relation, TrainingConfig

from .common import REFERENCE_ALPHAS, hockey_stick_quad
from .result import CheckResult, config_dict, result

if TYPE_CHECKING:
    from tsdp.verify.pld import PldSettings

DPS = 40
MP_TOL = mp.mpf("1e-30")
NUMPY_ABS_TOL = 1e-13
NUMPY_REL_TOL = 1e-9
QUAD_TOL = 1e-10
PLD_EPS_DEFICIT_TOL = 1e-8
"""ε(δ) of the PLD may fall below the exact ε by at most this: dp_accounting's own
``get_epsilon_for_delta`` solves for ε in float64, off by ~1e-10 at ε ≈ 40 (measured)."""


# ----------------------------------------------------------------------------- closed form


@lru_cache(maxsize=1)
def closed_form() -> tuple:
    """(H for α ≥ 1, H for α < 1) of MoG([0,2],[1-w,w],σ) vs N(0,σ) as sympy expressions in (w, σ, α).

    α ≥ 1: H_α(P‖Q) = P(X > x*) - α Q(X > x*), x* = 1 + σ²/2 log((α-1+w)/w);
    α < 1: H_α(Q‖P) = Q(X < x') - α P(X < x'), x' = 1 + σ²/2 log((1/α-1+w)/w)
    (L is increasing, so {L > log α} and {L < -log α} are half-lines).
    """
    w, s, a = sp.symbols("w sigma alpha", positive=True)
    phi_c = lambda t: sp.erfc(t / sp.sqrt(2)) / 2  # noqa: E731  standard normal tail
    phi = lambda t: 1 - phi_c(t)  # noqa: E731
    x_hi = 1 + s**2 / 2 * sp.log((a - 1 + w) / w)
    upper = (1 - w) * phi_c(x_hi / s) + w * phi_c((x_hi - 2) / s) - a * phi_c(x_hi / s)
    x_lo = 1 + s**2 / 2 * sp.log((1 / a - 1 + w) / w)
    lower = phi(x_lo / s) - a * ((1 - w) * phi(x_lo / s) + w * phi((x_lo - 2) / s))
    return (w, s, a), upper, lower


def closed_form_value(weight: mp.mpf, sigma: mp.mpf, alpha: mp.mpf, dps: int = DPS) -> mp.mpf:
    """The closed form of :func:`closed_form`, sympy-substituted and evaluated in mpmath.

    Args:
        weight: The mixture weight.
        sigma: σ.
        alpha: α.
        dps: mpmath's working precision.

    Returns:
        The closed form's value.
    """
    (w, s, a), upper, lower = closed_form()
    expr = upper if alpha >= 1 else lower
    with mp.workdps(dps):
        f = sp.lambdify((w, s, a), expr, modules="mpmath")
        return max(mp.mpf(0), 1 - alpha, f(weight, sigma, alpha))


def _tau(s: float, w: int) -> mp.mpf:
    """TVD(N(0, s²), N(√w, s²)) = erf(√w / (2√2 s)); 1 at s = 0."""
    if s == 0:
        return mp.mpf(1)
    return mp.erf(mp.sqrt(w) / (2 * mp.sqrt(2) * mp.mpf(repr(float(s)))))


def _raw_rates(c: TrainingConfig) -> Dict[str, mp.mpf]:
    """r, ρ, φ and the pooled record rate from the raw fields (THEOREMS.md notation)."""
    T = c.L - c.forecast_length + 1
    window = c.context_length + c.forecast_length
    k_raw = window + c.w - 1 if c.relation == Relation.EVENT else c.w * window
    k = max(0, min(k_raw, T))
    return {
        "r": mp.mpf(k) / T,
        "rho": mp.mpf(c.batch_size // c.instances) / c.N,
        "phi": mp.mpf(c.forecast_length) / window,
        "record": mp.mpf(c.batch_size) / (c.N * T),
    }


def _w_t1(c):
    return _raw_rates(c)["r"]


def _w_t6(c):
    x = _raw_rates(c)
    return x["rho"] * x["r"]


def _w_t11(c):
    x = _raw_rates(c)
    return x["rho"] * x["r"] * (x["phi"] * _tau(c.sigma_forecast, c.w) + (1 - x["phi"]) * _tau(c.sigma_context, c.w))


def _w_t12(c):
    x = _raw_rates(c)
    return x["rho"] * x["r"] * _tau(c.sigma_forecast, c.w)


def _w_pooled(c):
    return _raw_rates(c)["record"]


CLOSED_FORM_WEIGHTS: Dict[str, Callable[[TrainingConfig], mp.mpf]] = {
    "T1": _w_t1, "T3": _w_t1, "T6": _w_t6, "T9": _w_t6, "T11": _w_t11, "T12": _w_t12, "T13": _w_pooled,
    "T14": _w_pooled,
}
"""The weight w of the two-component shape, per bound (T3, T9 at λ = 1; T14 at k = 1)."""


def has_closed_form(bound_id: str, config: TrainingConfig) -> bool:
    """Whether :func:`closed_form_paths` applies (two components: λ = 1, or k = 1 for T14).

    Args:
        bound_id: The T-id.
        config: The configuration.

    Returns:
        True where the pair has two components.
    """
    if bound_id not in CLOSED_FORM_WEIGHTS:
        return False
    if bound_id in ("T3", "T9"):
        return config.instances == 1
    if bound_id == "T14":
        return config.k == 1
    return True


def closed_form_paths(b: PairBound, config: TrainingConfig, label: str = "",
                      weight: Optional[Callable[[TrainingConfig], mp.mpf]] = None) -> CheckResult:
    """Property 6 for a two-component bound (T1, T6, T11, T12, T13; T3, T9 at λ = 1; T14 at k = 1).

    The sympy closed form (:func:`closed_form`) with the weight computed independently
    (``weight``, default :data:`CLOSED_FORM_WEIGHTS`) against the engine's mpmath path at
    dps 40 (tolerance 1e-30 absolute) and its numpy path (1e-13 absolute + 1e-9 relative),
    at α ∈ ``REFERENCE_ALPHAS`` (both branches) except 0.

    Args:
        b: The pair bound.
        config: The configuration.
        label: The configuration's label.
        weight: The weight as a function of the configuration (None: the bound's own).

    Returns:
        The check's result.
    """
    weight = weight or CLOSED_FORM_WEIGHTS[b.id]
    alphas = [a for a in REFERENCE_ALPHAS if a > 0]
    numpy_vals = np.asarray(b.profile(config, np.array(alphas)), dtype=float)
    worst_mp, worst_np, at_mp, at_np = mp.mpf(0), 0.0, None, None
    with mp.workdps(DPS):
        w = weight(config)
        sigma = mp.mpf(repr(float(config.sigma)))
        for a, hn in zip(alphas, numpy_vals):
            al = mp.mpf(repr(a))
            ref = closed_form_value(w, sigma, al)
            gap = abs(b.profile_mp(config, al, DPS) - ref)
            if gap > worst_mp:
                worst_mp, at_mp = gap, a
            excess = abs(hn - float(ref)) - (NUMPY_ABS_TOL + NUMPY_REL_TOL * float(ref))
            if at_np is None or excess > worst_np:
                worst_np, at_np = excess, a
    ok = worst_mp <= MP_TOL and worst_np <= 0
    return result(
        f"P6.closed_form[{b.id}]@{label}", 6, (b.id,), ok,
        "closed form = mpmath = numpy" if ok
        else f"closed form disagrees: mpmath gap {mp.nstr(worst_mp, 4)} at α={at_mp}, numpy excess {worst_np:.3g} at α={at_np}",
        measured={"weight": w, "max_mp_gap": worst_mp, "mp_at_alpha": at_mp, "max_numpy_excess_over_tol": worst_np,
                  "numpy_at_alpha": at_np},
        tolerance={"mp_abs": MP_TOL, "dps": DPS, "numpy": f"{NUMPY_ABS_TOL} + {NUMPY_REL_TOL} * H"},
        config=config_dict(config),
    )


# ----------------------------------------------------------------------------- engine paths


def _quad_profile(b: Bound, config: TrainingConfig, alpha: float) -> float:
    """The bound's pair form by direct quadrature: (1 - w) max(0, 1 - α) + w H_α(pair)."""
    form = b.pair_form(config, check=False)
    w = float(form.weight)
    return (1 - w) * max(0.0, 1 - alpha) + w * hockey_stick_quad(form.ge if alpha >= 1 else form.lt, alpha)


def engine_paths(b: Bound, config: TrainingConfig, label: str = "") -> CheckResult:
    """Property 6 for any bound with a profile (T1-T4, T6-T14, T10-printed): mpmath = numpy = quadrature.

    At α ∈ ``REFERENCE_ALPHAS``: numpy vs mpmath (dps 40) within 1e-13 absolute + 1e-9
    relative; direct quadrature of max(dP - α dQ, 0) vs mpmath within 1e-10 absolute
    (the quadrature does not use the monotone-loss reduction, so it also guards the
    single-root assumption of the engine).

    Args:
        b: The bound.
        config: The configuration.
        label: The configuration's label.

    Returns:
        The check's result.
    """
    alphas = list(REFERENCE_ALPHAS)
    numpy_vals = np.asarray(b.profile(config, np.array(alphas)), dtype=float)
    worst_np, worst_q, at_np, at_q = -np.inf, 0.0, None, None
    with mp.workdps(DPS):
        for a, hn in zip(alphas, numpy_vals):
            ref = b.profile_mp(config, mp.mpf(repr(a)), DPS)
            excess = abs(hn - float(ref)) - (NUMPY_ABS_TOL + NUMPY_REL_TOL * float(ref))
            if excess > worst_np:
                worst_np, at_np = excess, a
            gq = abs(_quad_profile(b, config, a) - float(ref))
            if gq >= worst_q:
                worst_q, at_q = gq, a
    ok = worst_np <= 0 and worst_q <= QUAD_TOL
    return result(
        f"P6.engine_paths[{b.id}]@{label}", 6, (b.id,), ok,
        "numpy = mpmath = quadrature" if ok
        else f"paths disagree: numpy excess {worst_np:.3g} at α={at_np}, quadrature gap {worst_q:.3g} at α={at_q}",
        measured={"max_numpy_excess_over_tol": worst_np, "numpy_at_alpha": at_np, "max_quadrature_gap": worst_q,
                  "quadrature_at_alpha": at_q},
        tolerance={"numpy": f"{NUMPY_ABS_TOL} + {NUMPY_REL_TOL} * H", "quadrature_abs": QUAD_TOL, "dps": DPS},
        config=config_dict(config),
    )


# ----------------------------------------------------------------------------- PLD pessimism


def _exact_epsilon(b: Bound, config: TrainingConfig, delta: float, guess: float) -> float:
    """The ε ≥ 0 with H(e^ε) = δ (0 when H(1) ≤ δ), secant on log H in mpmath at dps 30."""
    with mp.workdps(30):
        if b.profile_mp(config, mp.mpf(1), 30) <= delta:
            return 0.0
        f = lambda e: mp.log(b.profile_mp(config, mp.exp(e), 30)) - mp.log(delta)  # noqa: E731
        x0 = mp.mpf(max(guess, 1e-6))
        x1 = x0 + mp.mpf("1e-4")
        try:
            return float(mp.findroot(f, (x0, x1), solver="secant", tol=mp.mpf("1e-24"), maxsteps=50))
        except (ValueError, ZeroDivisionError):
            return float(mp.findroot(f, (mp.mpf(0), x0 + 1), solver="anderson", tol=mp.mpf("1e-20"), maxsteps=200))


def pld_pessimism(b: Bound, config: TrainingConfig, label: str = "", settings: Optional[PldSettings] = None,
                  deltas=(1e-3, 1e-5, 1e-8)) -> CheckResult:
    """Property 6, pessimism of the one-step PLD (paper Lemma `connect_the_dots`; every T-id with a profile).

    The accountant's one-step PLD (:func:`verify.pld.sound_pld`) at ``settings``' discretization:
    for each δ, ε_PLD(δ) ≥ ε_exact(δ) (the mpmath root of H(e^ε) = δ) up to 1e-8
    (:data:`PLD_EPS_DEFICIT_TOL`), and ε_PLD ≤ ε_exact + discretization + 1e-8
    (connect-the-dots is exact on the grid, so it overshoots by less than one cell).

    Args:
        b: The bound.
        config: The configuration.
        label: The configuration's label.
        settings: The PLD's grid (None: discretisation 1e-3, the other settings the library's defaults).
        deltas: The δ values at which ε is compared.

    Returns:
        The check's result.
    """
    from tsdp.verify.pld import PldSettings, sound_pld

    settings = PldSettings(1e-3) if settings is None else settings
    discretization = settings.discretization
    pld = sound_pld(b, config, settings)
    rows, worst_deficit, worst_over = [], -np.inf, -np.inf
    for d in deltas:
        e_pld = max(0.0, float(pld.get_epsilon_for_delta(d)))
        e_exact = _exact_epsilon(b, config, d, e_pld)
        rows.append({"delta": d, "eps_pld": e_pld, "eps_exact": e_exact, "eps_pld_minus_exact": e_pld - e_exact})
        worst_deficit = max(worst_deficit, e_exact - e_pld)
        worst_over = max(worst_over, e_pld - e_exact)
    ok = worst_deficit <= PLD_EPS_DEFICIT_TOL and worst_over <= discretization + PLD_EPS_DEFICIT_TOL
    return result(
        f"P6.pld_pessimism[{b.id}]@{label}", 6, (b.id,), ok,
        f"ε_PLD ≥ ε_exact at δ ∈ {list(deltas)}, overshoot ≤ {worst_over:.3g}" if ok
        else f"PLD not pessimistic/accurate: deficit {worst_deficit:.3g}, overshoot {worst_over:.3g}",
        measured={"rows": rows, "max_deficit": worst_deficit, "max_overshoot": worst_over,
                  "discretization": discretization},
        tolerance={"deficit": PLD_EPS_DEFICIT_TOL, "overshoot": discretization + PLD_EPS_DEFICIT_TOL},
        config=config_dict(config),
    )
