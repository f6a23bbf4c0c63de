"""Section 4.3 and Appendix G: amplification by data augmentation (T11, T12).

(1, v)-event level; σ_C, σ_F in units of v; τ(s) = TVD(N(0,s), N(1,s)), τ(0) = 1.
For w > 1 only σ_C = σ_F generalises, with τ for a mean shift of √w (THEOREMS.md).
"""
from __future__ import annotations

from .base import PairBound, Scheme
from .shapes import against_gaussian


def _augmented_weight(p):
    """w = ρ r (φ τ(σ_F) + (1 - φ) τ(σ_C))."""
    return p.rho * p.r * (p.phi * p.tau_forecast + (1 - p.phi) * p.tau_context)


T11 = PairBound(
    id="T11",
    label="data_augmentation_general",
    reference="Thm G.1",
    kind="upper",
    scope="step",
    scheme=Scheme(("wor",), ("wr",), single_instance=True),
    statement="T6 with ρr replaced by w = ρ r (φ τ(σ_F) + (1-φ) τ(σ_C))",
    construction=None,
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
