"""Section 4.2 and Appendix F: top-level sampling without replacement (T6-T10).

Scope: one composition per step, floor(N λ / Λ) steps per epoch.
"""
from __future__ import annotations

from ..mixture import GaussianMixture, MixturePair
from .base import PairBound, Scheme, WorMixtureBound
from .bottom_level import T2, T4
from .shapes import against_gaussian, binomial_weights, top_level

WOR = ("wor",)

T6 = PairBound(
    id="T6",
    label="wor_top_level_wr",
    reference="Thm 4.4",
    kind="tight",
    scope="step",
    scheme=Scheme(WOR, ("wr",), single_instance=True),
    statement="α ≥ 1: H_α(MoG([0,2],[1-ρr, ρr],σ) ‖ N(0,σ)); α < 1 swapped",
    construction="T6",
    build=lambda p: against_gaussian([0, 2], [1 - p.rho * p.r, p.rho * p.r], p.sigma),
)

T7 = WorMixtureBound(
    id="T7",
    label="wor_top_level_wr_general",
    reference="Thm F.1",
    kind="upper",
    scope="step",
    scheme=Scheme(WOR, ("wr",)),
    statement="(1-ρ) max(0, 1-α) + ρ · T2(α) (erratum 3: holds for λ ≥ 1)",
    construction="T9",
    base=T2,
)

T8 = WorMixtureBound(
    id="T8",
    label="wor_top_level_poisson_general",
    reference="Thm F.2",
    kind="upper",
    scope="step",
    scheme=Scheme(WOR, ("poisson",)),
    statement="(1-ρ) max(0, 1-α) + ρ · T4(α) (erratum 3: holds for λ ≥ 1)",
    construction="T10",
    base=T4,
)


def _t9(p):
    lam = p.instances
    inner = GaussianMixture.of([2 * i for i in range(lam + 1)], binomial_weights(lam, p.r))
    return MixturePair.of(top_level(p.rho, inner), GaussianMixture.point(0), p.sigma)


T9 = PairBound(
    id="T9",
    label="wor_top_wr_bottom_upper",
    reference="Thm F.7",
    kind="lower",
    scope="step",
    scheme=Scheme(WOR, ("wr",)),
    statement="α ≥ 1: H_α((1-ρ) N(0,σ) + ρ MoG(2i, Binom(i; λ, r)) ‖ N(0,σ)); α < 1 swapped "
    "(erratum 4: an optimistic lower bound despite its label)",
    construction="T9",
    build=_t9,
)


def _poisson_mixture(p) -> GaussianMixture:
    return GaussianMixture.of(list(range(p.k + 1)), binomial_weights(p.k, p.q))


def _t10(p):
    mix = _poisson_mixture(p)
    return MixturePair.of(top_level(p.rho, mix.negated()), top_level(p.rho, mix), p.sigma)


def _t10_printed(p):
    mix = _poisson_mixture(p)
    return MixturePair.of(top_level(p.rho, mix.negated()), GaussianMixture.point(0), p.sigma)


T10 = PairBound(
    id="T10",
    label="Thm F.8 (unlabelled), construction form",
    reference="Thm F.8",
    kind="lower",
    scope="step",
    scheme=Scheme(WOR, ("poisson",)),
    statement="H_α((1-ρ) N(0,σ) + ρ MoG(-μ,p,σ) ‖ (1-ρ) N(0,σ) + ρ MoG(μ,p,σ)), μ_i = i, p_i = Binom(i; k, q) "
    "(erratum 8: the proof's pair)",
    construction="T10",
    build=_t10,
)

T10_PRINTED = PairBound(
    id="T10-printed",
    label="Thm F.8 (unlabelled), printed form",
    reference="Thm F.8",
    kind="lower",
    scope="step",
    scheme=Scheme(WOR, ("poisson",)),
    statement="as printed: α ≥ 1: H_α((1-ρ) N(0,σ) + ρ MoG(-μ,p,σ) ‖ N(0,σ)); α < 1 swapped (erratum 8)",
    construction=None,
    build=_t10_printed,
)

BOUNDS = (T6, T7, T8, T9, T10, T10_PRINTED)
