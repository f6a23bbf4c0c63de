"""The quantities a bound's pair depends on (:class:`Params`, :func:`params`): a configuration's rates as exact
sympy values, symbols, or Fractions, and the lazily made sympy objects ``Tau`` and ``SYMBOLS``."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

import mpmath as mp
import numpy as np

from ..config import TrainingConfig

if TYPE_CHECKING:
    import sympy as sp


@lru_cache(maxsize=None)
def _tau_class():
    import sympy as sp

    class Tau(sp.Function):
        """τ(s, d) = TVD(N(0, s), N(d, s)) = erf(d / (2√2 s)), and τ(0, d) = 1 (no augmentation).

        THEOREMS.md notation τ(s) = 2Φ(1/(2s)) - 1 is τ(s, 1); the shift d = √w serves the
        σ_C = σ_F generalisation to w elements. Symbolic arguments stay unevaluated, so
        reductions such as T12 = T11|σ_C=σ_F hold symbolically; τ(0, d) evaluates to 1.
        """

        nargs = 2

        @classmethod
        def eval(cls, s, d):
            if s.is_zero and d.is_positive:
                return sp.S.One
            if s.is_number and d.is_number and s.is_positive and d.is_positive:
                return sp.erf(d / (2 * sp.sqrt(2) * s))
            return None

    Tau.__module__ = __name__
    return Tau


@lru_cache(maxsize=None)
def _symbols() -> dict:
    import sympy as sp

    return {name: sp.Symbol(name, positive=True) for name in ("r", "rho", "q", "phi", "sigma", "sigma_C", "sigma_F")}


def __getattr__(name):
    """``Tau`` (a sympy Function) and ``SYMBOLS`` are made on first use, so importing the
    catalogue does not import sympy (PEP 562)."""
    if name == "Tau":
        return _tau_class()
    if name == "SYMBOLS":
        return _symbols()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _tau_fraction(s, w: int):
    """``Tau(s, √w)``'s value as a Fraction within 2^-250 of it: 1 at s = 0, else erf(√w / (2√2 s))
    at 256-bit precision (so a weight built from it rounds to the float the sympy path gives)."""
    s = _fraction(s)
    if s == 0:
        return 1
    with mp.workprec(256):
        man, exp = mp.erf(mp.sqrt(w) / (2 * mp.sqrt(2) * (mp.mpf(s.numerator) / s.denominator))).man_exp
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


@dataclass(frozen=True)
class Params:
    """The quantities a bound's pair depends on, as sympy values (numbers or symbols).

    Rates (r, ρ, q, φ, σ, τ_C, τ_F) may be symbols; structural integers (λ, k, N_tot, Λ)
    are always numbers, since they fix the number of mixture components. With ``numeric``
    the rates are plain numbers (:class:`~fractions.Fraction`), see :func:`params`.

    Attributes:
        r: Window rate r of the bottom level.
        rho: Top-level rate ρ.
        q: Window-in-batch rate q.
        phi: φ, the rate of the Poisson bottom level.
        sigma: Noise multiplier σ.
        tau_context: τ of the context augmentation.
        tau_forecast: τ of the forecast augmentation.
        instances: λ.
        k: Windows holding the changed element.
        n_windows_total: Windows in all sequences.
        batch_size: Λ.
        numeric: Rationals as Fractions (no sympy).
    """

    r: sp.Expr
    rho: sp.Expr
    q: sp.Expr
    phi: sp.Expr
    sigma: sp.Expr
    tau_context: sp.Expr
    tau_forecast: sp.Expr
    instances: int
    k: int
    n_windows_total: int
    batch_size: int
    numeric: bool = False

    def ratio(self, a: int, b: int):
        """a / b exactly: a sympy Rational, or a Fraction on the numeric path.

        Args:
            a: The numerator.
            b: The denominator.

        Returns:
            a / b exactly.
        """
        if self.numeric:
            return Fraction(a, b)
        import sympy as sp

        return sp.Rational(a, b)


def _exact(x) -> "sp.Expr":
    """A config number as an exact sympy Rational (floats by their shortest decimal)."""
    import sympy as sp

    if isinstance(x, (int, np.integer)):
        return sp.Integer(int(x))
    return sp.Rational(repr(float(x))) if isinstance(x, float) else sp.Rational(x)


def _fraction(x):
    """The same number as :func:`_exact`, as an int or :class:`~fractions.Fraction` (no sympy)."""
    if isinstance(x, (int, np.integer)):
        return int(x)
    return Fraction(repr(float(x))) if isinstance(x, float) else Fraction(x)


def _shift(config: TrainingConfig) -> "sp.Expr":
    import sympy as sp

    return sp.sqrt(config.w) if config.w > 1 else sp.S.One


def params(config: TrainingConfig, symbolic: bool = False, *, numeric: bool = False) -> Params:
    """Exact (sympy Rational) or symbolic parameters of a configuration.

    ``numeric``: the same rationals as exact :class:`~fractions.Fraction` (so every weight a
    bound builds from them is the same rational, and its float the same float) and τ as a
    Fraction within 2^-250 of it; the accountant's path, which never imports sympy.

    Args:
        config: The configuration.
        symbolic: Rates as sympy symbols.
        numeric: Rationals as Fractions, τ as floats (no sympy).

    Returns:
        The parameters.
    """
    if numeric:
        return Params(
            _fraction(config.r), _fraction(config.rho), _fraction(config.q), _fraction(config.phi), _fraction(config.sigma),
            _tau_fraction(config.sigma_context, config.w), _tau_fraction(config.sigma_forecast, config.w),
            config.instances, config.k, config.n_windows_total, config.batch_size, numeric=True,
        )
    Tau = _tau_class()
    if symbolic:
        S = _symbols()
        return Params(
            S["r"], S["rho"], S["q"], S["phi"], S["sigma"],
            Tau(S["sigma_C"], _shift(config)), Tau(S["sigma_F"], _shift(config)),
            config.instances, config.k, config.n_windows_total, config.batch_size,
        )
    return Params(
        _exact(config.r), _exact(config.rho), _exact(config.q), _exact(config.phi), _exact(config.sigma),
        Tau(_exact(config.sigma_context), _shift(config)), Tau(_exact(config.sigma_forecast), _shift(config)),
        config.instances, config.k, config.n_windows_total, config.batch_size,
    )
