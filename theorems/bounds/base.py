"""Bound objects: a theorem of the catalogue as data on the shared mixture engine.

A :class:`PairBound` is a dominating pair (or an attained pair, for lower bounds) written
as a function of :class:`Params`; its profile is ``H_α(P ‖ Q)`` for α ≥ 1 and the swapped
pair ``H_α(Q ‖ P)`` for α < 1 (α-symmetry, Zhu et al. 2022, Lemma 31). For the mirror-
symmetric pairs (Q(x) = P(-x): T2, T4, T10) the swap changes nothing, so one rule serves
every pair of the catalogue. A :class:`WorMixtureBound` is the bi-level form
``(1 - ρ) max(0, 1 - α) + ρ H_α(base)`` of Thms F.1 and F.2 (T7, T8).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import mpmath as mp
import numpy as np
import sympy as sp

from ..config import ConfigError, TrainingConfig
from ..hockey_stick import hockey_stick, hockey_stick_mp
from ..mixture import MixturePair

KINDS = ("tight", "upper", "lower", "claim")
SCOPES = ("step", "epoch")


class TheoremError(ValueError):
    """An unknown theorem id, or a theorem that does not apply to the configured scheme."""


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


@dataclass(frozen=True)
class Params:
    """The quantities a bound's pair depends on, as sympy values (numbers or symbols).

    Rates (r, ρ, q, φ, σ, τ_C, τ_F) may be symbols; structural integers (λ, k, N_tot, Λ)
    are always numbers, since they fix the number of mixture components.
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


def _exact(x) -> sp.Expr:
    """A config number as an exact sympy Rational (floats by their shortest decimal)."""
    if isinstance(x, (int, np.integer)):
        return sp.Integer(int(x))
    return sp.Rational(repr(float(x))) if isinstance(x, float) else sp.Rational(x)


def _shift(config: TrainingConfig) -> sp.Expr:
    return sp.sqrt(config.w) if config.w > 1 else sp.S.One


SYMBOLS = {
    name: sp.Symbol(name, positive=True)
    for name in ("r", "rho", "q", "phi", "sigma", "sigma_C", "sigma_F")
}


def params(config: TrainingConfig, symbolic: bool = False) -> Params:
    """Exact (sympy Rational) or symbolic parameters of a configuration."""
    if symbolic:
        S = SYMBOLS
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


@dataclass(frozen=True)
class Scheme:
    """Which training schemes a bound covers."""

    top: Tuple[str, ...]
    bottom: Tuple[str, ...]
    single_instance: bool = False  # the bound needs λ = 1
    equal_augmentation: bool = False  # the bound needs σ_C = σ_F

    def check(self, bound_id: str, config: TrainingConfig) -> None:
        """Raise :class:`TheoremError` naming the first mismatch between scheme and config."""
        if config.top not in self.top:
            raise TheoremError(f"{bound_id} does not apply: it needs top level in {self.top}, got top={config.top!r}")
        if config.bottom not in self.bottom:
            raise TheoremError(
                f"{bound_id} does not apply: it needs bottom level in {self.bottom}, got bottom={config.bottom!r}"
            )
        if self.single_instance and config.instances != 1:
            raise TheoremError(f"{bound_id} does not apply: it needs instances λ = 1, got {config.instances}")
        if self.equal_augmentation and config.sigma_context != config.sigma_forecast:
            raise TheoremError(
                f"{bound_id} does not apply: it needs sigma_context = sigma_forecast, "
                f"got {config.sigma_context} and {config.sigma_forecast}"
            )

    def describe(self) -> str:
        parts = [f"top {'|'.join(self.top)}", f"bottom {'|'.join(self.bottom)}"]
        parts.append("λ = 1" if self.single_instance else "λ ≥ 1")
        if self.equal_augmentation:
            parts.append("σ_C = σ_F")
        return ", ".join(parts)


@dataclass(frozen=True)
class Bound:
    """Common metadata of every catalogue entry."""

    id: str
    label: str
    reference: str
    kind: str
    scope: str
    scheme: Scheme
    statement: str
    construction: Optional[str]  # id of the bound whose pair a real attack attains

    def check(self, config: TrainingConfig) -> None:
        self.scheme.check(self.id, config)

    def describe(self) -> dict:
        return {
            "id": self.id,
            "label": self.label,
            "reference": self.reference,
            "kind": self.kind,
            "scope": self.scope,
            "scheme": self.scheme.describe(),
            "statement": self.statement,
            "construction": self.construction,
        }


def _alpha_array(alpha) -> np.ndarray:
    a = np.asarray(alpha, dtype=float)
    if np.any(~np.isfinite(a)) or np.any(a < 0):
        raise ValueError("alpha must be finite and >= 0")
    return a


@dataclass(frozen=True)
class PairBound(Bound):
    """A bound given by one pair: H_α(P ‖ Q) for α ≥ 1, H_α(Q ‖ P) for α < 1."""

    build: Callable[[Params], MixturePair] = None

    def pair(self, config: TrainingConfig, symbolic: bool = False, *, check: bool = True) -> MixturePair:
        """The α ≥ 1 pair as exact sympy mixtures (``symbolic`` puts symbols for the rates)."""
        if check:
            self.check(config)
        return self.build(params(config, symbolic))

    def pairs(self, config: TrainingConfig, *, check: bool = True):
        """(pair for α ≥ 1, pair for α < 1)."""
        p = self.pair(config, check=check)
        return p, p.swapped()

    def profile(self, config: TrainingConfig, alpha, *, check: bool = True) -> np.ndarray:
        """H(α) on the numpy path, vectorised over α."""
        alpha = _alpha_array(alpha)
        ge, lt = self.pairs(config, check=check)
        out = np.empty_like(alpha)
        hi = alpha >= 1
        if hi.any():
            out[hi] = hockey_stick(ge, alpha[hi])
        if (~hi).any():
            out[~hi] = hockey_stick(lt, alpha[~hi])
        return out

    def profile_mp(self, config: TrainingConfig, alpha, dps: int = 40, *, check: bool = True) -> mp.mpf:
        """H(α) for one α on the mpmath path at ``dps`` digits."""
        ge, lt = self.pairs(config, check=check)
        with mp.workdps(dps):
            a = mp.mpf(alpha)
            return hockey_stick_mp(ge if a >= 1 else lt, a, dps)


@dataclass(frozen=True)
class WorMixtureBound(Bound):
    """(1 - ρ) max(0, 1 - α) + ρ H_α(base pair): top-level WOR over a fixed-batch bound.

    Advanced joint convexity (Balle et al. 2018) gives this form (Thms F.1, F.2; T7, T8).
    """

    base: PairBound = None

    def profile(self, config: TrainingConfig, alpha, *, check: bool = True) -> np.ndarray:
        if check:
            self.check(config)
        alpha = _alpha_array(alpha)
        rho = float(config.rho)
        return (1 - rho) * np.maximum(0.0, 1 - alpha) + rho * self.base.profile(config, alpha, check=False)

    def profile_mp(self, config: TrainingConfig, alpha, dps: int = 40, *, check: bool = True) -> mp.mpf:
        if check:
            self.check(config)
        with mp.workdps(dps):
            a = mp.mpf(alpha)
            rho = mp.mpf(config.rho.numerator) / config.rho.denominator
            return (1 - rho) * max(mp.mpf(0), 1 - a) + rho * self.base.profile_mp(config, a, dps, check=False)


@dataclass(frozen=True)
class Claim(Bound):
    """A statement about bounds (T5), checked by ``tsdp verify`` rather than evaluated."""

    def profile(self, config, alpha, **_):
        raise TheoremError(f"{self.id} is a claim ({self.label}), not a bound; `tsdp verify` checks it")

    profile_mp = profile
