"""Univariate mixtures of Gaussians with exact (sympy) means and weights, and pairs of them.

A dominating pair of the paper is ``H_α(P ‖ Q)`` with ``P = MoG(μ, p, σ) = Σ_i p_i N(μ_i, σ²)``
and ``Q`` likewise (THEOREMS.md, "Notation"). Means are in units of the clipping constant
C, σ is the noise multiplier. Weights are sympy expressions of the configuration (exact
Rationals for a concrete configuration, or symbols), so a pair can be printed,
simplified and substituted; :meth:`MixturePair.numeric` gives float arrays for the
engine in :mod:`theorems.hockey_stick`.

A mixture whose values are all plain Python numbers (int, :class:`fractions.Fraction`,
float: the accountant's path, ``params(config, numeric=True)``) keeps them as they are, so
building and evaluating it never imports sympy; the methods that need sympy (``subs``,
``normal_form``, ``equivalent``, ``free_symbols``) convert on demand. A mixture with any
sympy value is converted to sympy as a whole.
"""
from __future__ import annotations

from dataclasses import dataclass
import sys
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    import sympy as sp


def is_symbolic(x) -> bool:
    """True when ``x`` is a sympy object (never imports sympy: none exists before it is loaded).

    Args:
        x: A value.

    Returns:
        Whether it is a sympy object.
    """
    sympy = sys.modules.get("sympy")
    return sympy is not None and isinstance(x, sympy.Basic)


def _sym(x) -> "sp.Expr":
    import sympy as sp

    return sp.sympify(x)


def _values(xs: Iterable) -> tuple:
    """All values as sympy when any of them is symbolic, else the plain numbers unchanged."""
    xs = tuple(xs)
    return tuple(_sym(x) for x in xs) if any(is_symbolic(x) for x in xs) else xs


@dataclass(frozen=True)
class GaussianMixture:
    """``MoG(means, weights)``: Σ_i weights[i] N(means[i], σ²) with σ held by the pair.

    Attributes:
        means: The means.
        weights: The weights.
    """

    means: Tuple[sp.Expr, ...]
    weights: Tuple[sp.Expr, ...]

    @staticmethod
    def of(means: Iterable, weights: Iterable) -> "GaussianMixture":
        """The mixture, all sympy when any value is, else plain numbers.

        Args:
            means: The means.
            weights: The weights.

        Returns:
            The mixture.
        """
        means, weights = tuple(means), tuple(weights)
        values = _values(means + weights)
        means, weights = values[: len(means)], values[len(means):]
        if len(means) != len(weights):
            raise ValueError(f"a mixture needs as many means as weights ({len(means)} != {len(weights)})")
        if not means:
            raise ValueError("a mixture needs at least one component")
        return GaussianMixture(means, weights)

    @staticmethod
    def point(mean=0) -> "GaussianMixture":
        """A single Gaussian N(mean, σ²).

        Args:
            mean: The mean.

        Returns:
            The mixture of one component.
        """
        return GaussianMixture.of([mean], [1])

    def scaled(self, factor) -> "GaussianMixture":
        """The same components with every weight multiplied by ``factor``.

        Args:
            factor: The factor.

        Returns:
            The scaled mixture.
        """
        return GaussianMixture(self.means, tuple(factor * w for w in self.weights))

    def negated(self) -> "GaussianMixture":
        """The mirror image: means multiplied by -1."""
        return GaussianMixture(tuple(-m for m in self.means), self.weights)

    def __add__(self, other: "GaussianMixture") -> "GaussianMixture":
        """Concatenation of components (use with :meth:`scaled` to form convex combinations)."""
        return GaussianMixture(self.means + other.means, self.weights + other.weights)

    def subs(self, mapping: Mapping) -> "GaussianMixture":
        """The mixture with sympy's ``subs`` applied to every mean and weight.

        Args:
            mapping: Symbol -> value.

        Returns:
            The mixture.
        """
        return GaussianMixture(
            tuple(_sym(m).subs(mapping) for m in self.means),
            tuple(_sym(w).subs(mapping) for w in self.weights),
        )

    def normal_form(self) -> "GaussianMixture":
        """Components with equal means merged, sorted by mean, exactly-zero weights dropped.

        Requires numeric means (all pairs of the catalogue have integer means in units of C).
        """
        import sympy as sp

        merged: dict = {}
        for m, w in zip(map(_sym, self.means), map(_sym, self.weights)):
            if not m.is_number:
                raise ValueError(f"normal form needs numeric means, got {m}")
            merged[m] = merged.get(m, sp.S.Zero) + w
        keys = sorted(merged, key=lambda m: float(m))
        kept = [(m, sp.simplify(merged[m])) for m in keys]
        kept = [(m, w) for m, w in kept if not (w.is_number and w == 0)]
        return GaussianMixture(tuple(m for m, _ in kept), tuple(w for _, w in kept))

    def total_weight(self) -> "sp.Expr":
        """The sum of the component weights, exact (sympy); 1 for a probability mixture."""
        import sympy as sp

        return sp.Add(*self.weights)

    def __str__(self) -> str:
        nf = self
        if len(nf.means) == 1 and nf.weights[0] == 1:
            return f"N({nf.means[0]}, σ)"
        means = ", ".join(str(m) for m in nf.means)
        weights = ", ".join(str(w) for w in nf.weights)
        return f"MoG([{means}], [{weights}], σ)"


@dataclass(frozen=True)
class NumericMixturePair:
    """Float view of a pair: standardised means (divided by σ) and positive weights.

    ``a, p`` describe P and ``b, q`` describe Q, each sorted by mean with equal means merged.

    Attributes:
        a: P's standardised means.
        p: P's weights.
        b: Q's standardised means.
        q: Q's weights.
        sigma: σ.
    """

    a: np.ndarray
    p: np.ndarray
    b: np.ndarray
    q: np.ndarray
    sigma: float


@dataclass(frozen=True)
class MixturePair:
    """The pair (P, Q) of ``H_α(P ‖ Q)``, both mixtures with common standard deviation σ.

    Attributes:
        P: The first mixture.
        Q: The second mixture.
        sigma: σ.
    """

    P: GaussianMixture
    Q: GaussianMixture
    sigma: "sp.Expr"

    @staticmethod
    def of(P: GaussianMixture, Q: GaussianMixture, sigma) -> "MixturePair":
        """The pair, all sympy when any value is (as :meth:`GaussianMixture.of`), else plain numbers.

        Args:
            P: The first mixture.
            Q: The second mixture.
            sigma: σ.

        Returns:
            The pair.
        """
        values = (*P.means, *P.weights, *Q.means, *Q.weights, sigma)
        if not any(is_symbolic(x) for x in values):
            return MixturePair(P, Q, sigma)
        sym = lambda mix: GaussianMixture(tuple(map(_sym, mix.means)), tuple(map(_sym, mix.weights)))  # noqa: E731
        return MixturePair(sym(P), sym(Q), _sym(sigma))

    def swapped(self) -> "MixturePair":
        """(Q, P): the pair for α < 1 of the α-symmetric bounds (Zhu et al. 2022, Lemma 31)."""
        return MixturePair(self.Q, self.P, self.sigma)

    def subs(self, mapping: Mapping) -> "MixturePair":
        """The pair with sympy's ``subs`` applied to both mixtures and σ.

        Args:
            mapping: Symbol -> value.

        Returns:
            The pair.
        """
        return MixturePair(self.P.subs(mapping), self.Q.subs(mapping), _sym(self.sigma).subs(mapping))

    def normal_form(self) -> "MixturePair":
        """The pair with both sides in :meth:`GaussianMixture.normal_form` and σ simplified (what
        :meth:`equivalent` compares)."""
        import sympy as sp

        return MixturePair(self.P.normal_form(), self.Q.normal_form(), sp.simplify(self.sigma))

    def equivalent(self, other: "MixturePair") -> bool:
        """True when sympy proves the two pairs equal: same means, weight differences simplify to 0.

        Args:
            other: The other pair.

        Returns:
            True when proven equal.
        """
        import sympy as sp

        a, b = self.normal_form(), other.normal_form()
        if sp.simplify(a.sigma - b.sigma) != 0:
            return False
        for x, y in ((a.P, b.P), (a.Q, b.Q)):
            if len(x.means) != len(y.means) or any(sp.simplify(m - n) != 0 for m, n in zip(x.means, y.means)):
                return False
            if any(sp.simplify(u - v) != 0 for u, v in zip(x.weights, y.weights)):
                return False
        return True

    def numeric(self) -> NumericMixturePair:
        """Float arrays for the vectorised engine (means standardised by σ).

        Components with equal means are merged in float, without symbolic simplification
        (the exact sums differ from the float sums by rounding only; all weights are ≥ 0,
        so no cancellation occurs); zero weights are dropped.
        """
        sigma = float(self.sigma)
        if not sigma > 0:
            raise ValueError(f"σ must be > 0, got {sigma}")

        def arrays(mix: GaussianMixture):
            merged: dict = {}
            for m, w in zip(mix.means, mix.weights):
                key = float(m)
                merged[key] = merged.get(key, 0.0) + float(w)
            keys = sorted(k for k, w in merged.items() if w > 0)
            return np.array(keys) / sigma, np.array([merged[k] for k in keys])

        a, p = arrays(self.P)
        b, q = arrays(self.Q)
        return NumericMixturePair(a, p, b, q, sigma)

    def free_symbols(self) -> set:
        """The sympy symbols left free in the pair's means, weights and σ (empty for a numeric pair)."""
        exprs: Sequence = (*self.P.means, *self.P.weights, *self.Q.means, *self.Q.weights, self.sigma)
        out: set = set()
        for e in exprs:
            out |= _sym(e).free_symbols
        return out

    def __str__(self) -> str:
        return f"H_α({self.P} ‖ {self.Q}), σ = {self.sigma}"
