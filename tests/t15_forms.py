"""T15's forms the tests check the catalogue against (theorems/bounds/inference.py): its profile as a sympy expression,
and the attained profile of the real imputed release on T15's construction (a **lower** bound).
"""
from __future__ import annotations

import math

import numpy as np
import sympy as sp

from tsdp.theorems.bounds.inference import T15, InferenceConfig, _exact, _gauss_eps, _weights
from tsdp.theorems.bounds.shapes import binomial_weights
from tsdp.theorems.hockey_stick import hockey_stick
from tsdp.theorems.mixture import GaussianMixture, MixturePair

R, SIGMA, V, ALPHA = sp.symbols("r sigma v alpha", positive=True)
"""The symbols of :func:`expression` (``symbolic``) and :func:`gaussian_profile_expr`."""


def gaussian_profile_expr(mu: sp.Expr, alpha: sp.Expr = None) -> sp.Expr:
    """G_α(μ) = H_α(N(μ, 1) ‖ N(0, 1)) = Φ(μ/2 - log α/μ) - α Φ(-μ/2 - log α/μ) (sympy, μ > 0;
    α defaults to the symbol ALPHA).

    Args:
        mu: μ > 0.
        alpha: α (None: the symbol ALPHA).

    Returns:
        The sympy expression.
    """
    alpha = ALPHA if alpha is None else alpha
    Phi = lambda x: (1 + sp.erf(x / sp.sqrt(2))) / 2  # noqa: E731
    return Phi(mu / 2 - sp.log(alpha) / mu) - alpha * Phi(-mu / 2 - sp.log(alpha) / mu)


def expression(config: InferenceConfig, symbolic: bool = False) -> sp.Expr:
    """T15's profile H_α as a sympy expression in α (``symbolic``: r, σ, v as symbols too).

    m = min(w, L_C) is structural (it fixes the number of terms) and stays a number.

    Args:
        config: The release configuration.
        symbolic: r, σ, v as symbols too.

    Returns:
        H_α as a sympy expression in α.
    """
    T15.check(config)
    r, sigma, v = (R, SIGMA, V) if symbolic else (_exact(config.r), _exact(config.sigma), _exact(config.v))
    terms = [wt * (sp.Max(0, 1 - ALPHA) if j == 0 else gaussian_profile_expr(v * sp.sqrt(j) / sigma))
             for j, wt in enumerate(binomial_weights(config.m, r))]
    return sp.Add(*terms)


def attained_profile(config: InferenceConfig, alpha) -> np.ndarray:
    """H_α of the real imputed release on the construction x = 0, x' = v·1_W (a **lower** bound).

    Labels the adversary reads off the imputed series: the kept set when it is
    recoverable (|B| ≠ 1, or L_C = 1), weighted as T15's Gaussian terms; and "exactly one
    step kept, position hidden" (L_C ≥ 2, probability L_C r (1-r)^{L_C-1}), where the
    common value is MoG([0, v], [(L_C-m)/L_C, m/L_C], σ) against N(0, σ) (the larger of
    the two directions is taken; each is attained). Equals T15 when L_C = 1 (theorems/bounds/inference.py, "Kind").

    Args:
        config: The release configuration.
        alpha: The α values.

    Returns:
        H_α at each α (lower bound).
    """
    T15.check(config)
    alpha = np.asarray(alpha, dtype=float)
    L, m, r = config.context_length, config.m, float(config.r)
    if L == 1:
        return T15.profile(config, alpha)
    wts = _weights(config)
    rest = L - m
    alone = (1 - r) ** rest  # no kept step outside W
    one_out = rest * r * (1 - r) ** (rest - 1) if rest > 0 else 0.0
    ident = wts.copy()
    ident[0] -= (1 - r) ** m * one_out  # j = 0 with one step kept outside W
    if m >= 1:
        ident[1] -= m * r * (1 - r) ** (m - 1) * alone  # j = 1 and nothing else kept
    with np.errstate(divide="ignore"):
        eps = np.log(alpha)
    out = ident[0] * np.maximum(0.0, 1 - alpha)
    for j in range(1, m + 1):
        out = out + ident[j] * np.where(alpha == 0, 1.0, _gauss_eps(config.mu * math.sqrt(j), eps, False))
    p_amb = L * r * (1 - r) ** (L - 1)
    sig = _exact(config.sigma)
    mix = GaussianMixture.of([0, _exact(config.v)], [sp.Rational(rest, L), sp.Rational(m, L)])
    pair = MixturePair.of(mix, GaussianMixture.point(0), sig)
    amb = np.maximum(hockey_stick(pair, alpha), hockey_stick(pair.swapped(), alpha))
    return np.clip(out + p_amb * amb, 0.0, 1.0)
