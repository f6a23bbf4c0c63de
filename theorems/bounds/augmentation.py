"""Section 4.3 and Appendix G: amplification by data augmentation (T11, T12).

(1, v)-event level; σ_C, σ_F in units of v; τ(s) = TVD(N(0,s), N(1,s)), τ(0) = 1.
For w > 1 only σ_C = σ_F generalises, with τ for a mean shift of √w (THEOREMS.md).
"""
from __future__ import annotations

from ..mixture import GaussianMixture, MixturePair
from .base import PairBound, Scheme
from .shapes import against_gaussian


def _augmented_weight(p):
    """w = ρ r (φ τ(σ_F) + (1 - φ) τ(σ_C))."""
    return p.rho * p.r * (p.phi * p.tau_forecast + (1 - p.phi) * p.tau_context)


def augmentation_construction_pair(p):
    """Exact law of the Thm G.1 construction's released update: MoG([0,2],[1-a,a]) vs MoG([0,2],[1-b,b]).

    A window holding the changed element holds it in the forecast with probability φ; the
    augmented value exceeds M + v/2 with probability Φ(1/(2σ_F)) = (1 + τ(σ_F))/2 in world P
    (x_j = M + v) and (1 - τ(σ_F))/2 in world Q (x_j = M); likewise with σ_C in the context.
    So a = ρ r (φ (1+τ_F) + (1-φ)(1+τ_C)) / 2, b = ρ r (φ (1-τ_F) + (1-φ)(1-τ_C)) / 2 and
    a - b = T11's weight: a **lower** bound on the profile that T11 bounds above (T11 is not
    proven tight, so the gap to it is measured, not assumed).

    Args:
        p: The configuration's parameters (:func:`~tsdp.theorems.bounds.base.params`).

    Returns:
        The construction's pair (lower bound: a real attack attains it).
    """
    base = p.rho * p.r / 2
    a = base * (p.phi * (1 + p.tau_forecast) + (1 - p.phi) * (1 + p.tau_context))
    b = base * (p.phi * (1 - p.tau_forecast) + (1 - p.phi) * (1 - p.tau_context))
    return MixturePair.of(GaussianMixture.of([0, 2], [1 - a, a]), GaussianMixture.of([0, 2], [1 - b, b]), p.sigma)


T11 = PairBound(
    id="T11",
    label="data_augmentation_general",
    reference="Thm G.1",
    kind="upper",
    scope="step",
    scheme=Scheme(("wor",), ("wr",), single_instance=True, split_windows=True),
    statement="T6 with ρr replaced by w = ρ r (φ τ(σ_F) + (1-φ) τ(σ_C))",
    construction="T11",
    attained_build=augmentation_construction_pair,
    build=lambda p: against_gaussian([0, 2], [1 - _augmented_weight(p), _augmented_weight(p)], p.sigma),
)

T12 = PairBound(
    id="T12",
    label="amplification_by_data_augmentation_wor_wr",
    reference="Thm 4.5",
    kind="upper",
    scope="step",
    scheme=Scheme(("wor",), ("wr",), single_instance=True, equal_augmentation=True),
    statement="T11 with σ_C = σ_F: w = ρ r τ(σ_F)",
    construction=None,
    build=lambda p: against_gaussian(
        [0, 2], [1 - p.rho * p.r * p.tau_forecast, p.rho * p.r * p.tau_forecast], p.sigma
    ),
)

BOUNDS = (T11, T12)
