"""The few pair shapes every bound of the catalogue is built from (exact sympy weights, or
exact Fractions on the numeric path, which never imports sympy)."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, List, Sequence

from ..mixture import GaussianMixture, MixturePair, is_symbolic

if TYPE_CHECKING:
    import sympy as sp


def binomial_weights(n: int, p: "sp.Expr") -> List["sp.Expr"]:
    """Binom(i; n, p) for i = 0..n (the 0-based reading of erratum 1); sympy for a sympy p,
    else in p's own arithmetic (exact for a Fraction).

    Args:
        n: Trials.
        p: Success probability.

    Returns:
        The n + 1 weights.
    """
    if is_symbolic(p):
        import sympy as sp

        return [sp.binomial(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    return [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]


def hypergeometric_weights(population: int, marked: int, draws: int, *, numeric: bool = False) -> List["sp.Expr"]:
    """Hypergeom(i; N_tot, k, Λ) for i = 0..min(k, Λ): i of the k marked windows among Λ drawn WOR.

    Written as C(Λ, i) C(N_tot - Λ, k - i) / C(N_tot, k), which needs only binomials with a
    small lower index (k), so it stays cheap for N_tot = 10^6. Exact: sympy Rationals, or
    Fractions with ``numeric``.

    Args:
        population: N_tot, the windows.
        marked: k, the windows holding the changed element.
        draws: Λ, the windows drawn.
        numeric: Fractions instead of sympy.

    Returns:
        The weights for i = 0..min(k, Λ).
    """
    if numeric:
        total = math.comb(population, marked)
        return [Fraction(math.comb(draws, i) * math.comb(population - draws, marked - i), total)
                for i in range(min(marked, draws) + 1)]
    import sympy as sp

    total = sp.binomial(population, marked)
    return [
        sp.binomial(draws, i) * sp.binomial(population - draws, marked - i) / total
        for i in range(min(marked, draws) + 1)
    ]


def against_gaussian(means: Sequence, weights: Sequence, sigma) -> MixturePair:
    """H_α(MoG(means, weights) ‖ N(0, σ)): the optimistic/one-sided shape (T1, T3, T6, T9, T11-T14).

    Args:
        means: The mixture's means.
        weights: Its weights.
        sigma: σ.

    Returns:
        The pair.
    """
    return MixturePair.of(GaussianMixture.of(means, weights), GaussianMixture.point(0), sigma)


def mirrored(means: Sequence, weights: Sequence, sigma) -> MixturePair:
    """H_α(MoG(-μ, p) ‖ MoG(μ, p)): mixture against its mirror image (T2, T4, T10).

    Args:
        means: μ.
        weights: p.
        sigma: σ.

    Returns:
        The pair.
    """
    mix = GaussianMixture.of(means, weights)
    return MixturePair.of(mix.negated(), mix, sigma)


def top_level(rho, mix: GaussianMixture) -> GaussianMixture:
    """(1 - ρ) N(0, σ) + ρ mix: the element's sequence is in the top-level batch with probability ρ.

    Args:
        rho: ρ.
        mix: The mixture given the sequence is drawn.

    Returns:
        The mixture.
    """
    return GaussianMixture.point(0).scaled(1 - rho) + mix.scaled(rho)
