"""Section 4.1 and Appendix E: deterministic top level, bottom-level sampling (T1-T5).

Scope: one composition per epoch (each sequence is used in exactly one step per epoch).
"""
from __future__ import annotations

from .base import Claim, PairBound, Scheme
from .shapes import against_gaussian, binomial_weights, mirrored

DETERMINISTIC = ("deterministic", "shuffle")

T1 = PairBound(
    id="T1",
    label="deterministic_top_level_wr",
    reference="Thm 4.2",
    kind="tight",
    scope="epoch",
    scheme=Scheme(DETERMINISTIC, ("wr",), single_instance=True),
    statement="α ≥ 1: H_α(MoG([0,2],[1-r, r],σ) ‖ N(0,σ)); α < 1: the pair swapped",
    construction="T1",
    build=lambda p: against_gaussian([0, 2], [1 - p.r, p.r], p.sigma),
)

T2 = PairBound(
    id="T2",
    label="deterministic_top_level_wr_general",
    reference="Thm E.2",
    kind="upper",
    scope="epoch",
    scheme=Scheme(DETERMINISTIC, ("wr",)),
    statement="H_α(MoG(-μ,p,σ) ‖ MoG(μ,p,σ)), μ_i = 2i, p_i = Binom(i; λ, r), i = 0..λ",
    construction="T3",
    build=lambda p: mirrored([2 * i for i in range(p.instances + 1)], binomial_weights(p.instances, p.r), p.sigma),
)

T3 = PairBound(
    id="T3",
    label="deterministic_top_level_wr_optimistic",
    reference="Thm 4.3",
    kind="lower",
    scope="epoch",
    scheme=Scheme(DETERMINISTIC, ("wr",)),
    statement="α ≥ 1: H_α(MoG(2i, Binom(i; λ, r)) ‖ N(0,σ)), i = 0..λ; α < 1 swapped (erratum 1: 0-based index)",
    construction="T3",
    build=lambda p: against_gaussian(
        [2 * i for i in range(p.instances + 1)], binomial_weights(p.instances, p.r), p.sigma
    ),
)

T4 = PairBound(
    id="T4",
    label="deterministic_top_level_poisson",
    reference="Thm E.8",
    kind="tight",
    scope="epoch",
    scheme=Scheme(DETERMINISTIC, ("poisson",)),
    statement="H_α(MoG(-μ,p,σ) ‖ MoG(μ,p,σ)), μ_i = i, p_i = Binom(i; k, q), q = min(1, λ/T), i = 0..k",
    construction="T4",
    build=lambda p: mirrored(list(range(p.k + 1)), binomial_weights(p.k, p.q), p.sigma),
)

T5 = Claim(
    id="T5",
    label="deterministic_top_level_monotonicity",
    reference="Thm 4.1",
    kind="claim",
    scope="epoch",
    scheme=Scheme(DETERMINISTIC, ("wr", "poisson")),
    statement="for every α, the profiles of T1-T4 are smallest at λ = 1",
    construction=None,
)

BOUNDS = (T1, T2, T3, T4)
CLAIMS = (T5,)  # Thm 4.1 is a statement about bounds, checked by `tsdp verify`, not a bound
