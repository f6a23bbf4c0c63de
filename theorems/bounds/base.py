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
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Optional, Tuple

import mpmath as mp
import numpy as np

from ..config import Choice, TrainingConfig
from ..errors import TheoremError
from ..hockey_stick import hockey_stick, hockey_stick_mp
from ..mixture import MixturePair

if TYPE_CHECKING:
    import sympy as sp



class Kind(Choice):
    """What a bound is (THEOREMS.md "kind"): tight (an upper bound some pair attains), upper, lower, or a claim of the
    paper that the catalogue keeps without a proof."""

    TIGHT = "tight"
    UPPER = "upper"
    LOWER = "lower"
    CLAIM = "claim"


class Scope(Choice):
    """The mechanism a bound's profile is of (THEOREMS.md "scope"): one training step, one epoch (paper Section 4.1),
    or one inference release (Appendix H)."""

    STEP = "step"
    EPOCH = "epoch"
    RELEASE = "release"


KINDS = Kind.values()
SCOPES = (Scope.STEP.value, Scope.EPOCH.value)


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


@dataclass(frozen=True)
class Scheme:
    """Which training schemes a bound covers.

    Attributes:
        top: The top levels covered.
        bottom: The bottom levels covered.
        single_instance: Only λ = 1.
        equal_augmentation: Only σ_C = σ_F.
    """

    top: Tuple[str, ...]
    bottom: Tuple[str, ...]
    single_instance: bool = False  # the bound needs λ = 1
    equal_augmentation: bool = False  # the bound needs σ_C = σ_F

    def check(self, bound_id: str, config: TrainingConfig) -> None:
        """Raise :class:`TheoremError` naming the first mismatch between scheme and config.

        Args:
            bound_id: The bound's T-id (in the error).
            config: The configuration.

        Raises:
            TheoremError: The configuration is outside the scheme.
        """
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
class PairForm:
    """A profile of the shape H(α) = (1 - w) max(0, 1 - α) + w H_α(ge if α ≥ 1 else lt).

    Every pair-based bound of the catalogue has it: a :class:`PairBound` with w = 1, a
    :class:`WorMixtureBound` with w = ρ over its base pairs (Thms F.1, F.2). Consumers (the
    accountant's PLD grid, the checks' raw tails and quadrature) evaluate this form and never
    ask for the bound's type.

    Attributes:
        weight: w.
        ge: The pair for α ≥ 1.
        lt: The pair for α < 1.
    """

    weight: float
    ge: MixturePair
    lt: MixturePair


@dataclass(frozen=True)
class Bound:
    """Common metadata of every catalogue entry.

    Attributes:
        id: The T-id.
        label: The paper's label.
        reference: Where the paper states it.
        kind: tight, upper, lower or claim (a :class:`Kind`; its string is accepted).
        scope: step, epoch or release (a :class:`Scope`; its string is accepted).
        scheme: The training schemes covered.
        statement: The bound in words.
        construction: The id of the bound whose pair a real attack attains (None: none).
        attained_build: The construction's own pair, where it is not a bound's.
    """

    id: str
    label: str
    reference: str
    kind: str
    scope: str
    scheme: Scheme
    statement: str
    construction: Optional[str]  # id of the bound whose pair a real attack attains
    attained_build: Optional[Callable[[Params], MixturePair]] = None  # the construction's own pair, if not a bound's

    def __post_init__(self):
        object.__setattr__(self, "kind", Kind.of("kind", self.kind))
        object.__setattr__(self, "scope", Scope.of("scope", self.scope))

    def check(self, config: TrainingConfig) -> None:
        """Check that ``config`` is inside the bound's scheme.

        Args:
            config: The configuration.

        Raises:
            TheoremError: It is not.
        """
        self.scheme.check(self.id, config)

    def attained_loss_survival(self, config) -> Optional[Callable]:
        """ε ↦ P(L > ε) of the construction's privacy loss, for a construction with no 1-D pair (T15), else None.

        **Lower** bound direction like :func:`theorems.registry.attained_pair`: a real attack attains this law.

        Args:
            config: The configuration.

        Returns:
            The survival function, or None.
        """
        return None

    has_pair = False  # a single pair (P, Q) gives the whole profile (PairBound)

    def pair_form(self, config, *, check: bool = True, numeric: bool = False) -> Optional[PairForm]:
        """The profile as :class:`PairForm`, or None for a bound that is not of that shape (T15, claims).

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            check: Check the scheme first.
            numeric: Fractions and floats instead of sympy.

        Returns:
            The pair form, or None.
        """
        return None

    def delta_eps(self, config, eps, *, upper: bool = False, check: bool = True) -> np.ndarray:
        """δ(ε) on the numpy path for a bound without a :class:`PairForm` (T15 answers it itself).

        ``upper=True`` adds a float-error bound (the accountant's pessimistic input). A bound
        that cannot do this raises: the accountant never falls back on an unchecked profile.

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            eps: The ε values.
            upper: Add a float-error bound.
            check: Check the scheme first.

        Returns:
            δ(ε) at each ε.

        Raises:
            TheoremError: The bound has no numeric profile.
        """
        raise TheoremError(f"{self.id} ({self.kind}) has no numeric privacy profile the accountant can round up")

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
    """A bound given by one pair: H_α(P ‖ Q) for α ≥ 1, H_α(Q ‖ P) for α < 1.

    Attributes:
        build: Params ↦ the α ≥ 1 pair.
    """

    build: Callable[[Params], MixturePair] = None

    def pair(self, config: TrainingConfig, symbolic: bool = False, *, check: bool = True,
             numeric: bool = False) -> MixturePair:
        """The α ≥ 1 pair as exact sympy mixtures (``symbolic`` puts symbols for the rates;
        ``numeric``: the same rationals as Fractions and float τ, no sympy, see :func:`params`).

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            symbolic: Symbols for the rates.
            check: Check the scheme first.
            numeric: Fractions and floats instead of sympy.

        Returns:
            The α ≥ 1 pair.
        """
        if check:
            self.check(config)
        return self.build(params(config, symbolic, numeric=numeric))

    has_pair = True

    def pair_form(self, config: TrainingConfig, *, check: bool = True, numeric: bool = False) -> PairForm:
        """(w = 1, the α ≥ 1 pair, the swapped pair for α < 1).

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            check: Check the scheme first.
            numeric: Fractions and floats instead of sympy.

        Returns:
            The pair form.
        """
        ge, lt = self.pairs(config, check=check, numeric=numeric)
        return PairForm(1, ge, lt)

    def pairs(self, config: TrainingConfig, *, check: bool = True, numeric: bool = False):
        """(pair for α ≥ 1, pair for α < 1).

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            check: Check the scheme first.
            numeric: Fractions and floats instead of sympy.

        Returns:
            (pair for α ≥ 1, pair for α < 1).
        """
        p = self.pair(config, check=check, numeric=numeric)
        return p, p.swapped()

    def profile(self, config: TrainingConfig, alpha, *, check: bool = True) -> np.ndarray:
        """H(α) on the numpy path, vectorised over α.

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            alpha: The α values (≥ 0).
            check: Check the scheme first.

        Returns:
            H(α) at each α.
        """
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
        """H(α) for one α on the mpmath path at ``dps`` digits.

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            alpha: α ≥ 0.
            dps: Decimal digits.
            check: Check the scheme first.

        Returns:
            H(α), an mpmath number.
        """
        ge, lt = self.pairs(config, check=check)
        with mp.workdps(dps):
            a = mp.mpf(alpha)
            return hockey_stick_mp(ge if a >= 1 else lt, a, dps)


@dataclass(frozen=True)
class WorMixtureBound(Bound):
    """(1 - ρ) max(0, 1 - α) + ρ H_α(base pair): top-level WOR over a fixed-batch bound.

    Advanced joint convexity (Balle et al. 2018) gives this form (Thms F.1, F.2; T7, T8).

    Attributes:
        base: The fixed-batch bound mixed over the top-level WOR draw.
    """

    base: PairBound = None

    def pair_form(self, config: TrainingConfig, *, check: bool = True, numeric: bool = False) -> PairForm:
        """(w = ρ, the base bound's pairs): (1 - ρ) max(0, 1 - α) + ρ H_α(base).

        Args:
            config: The configuration, inside the base bound's scheme with a WOR top level.
            check: Check ``config`` against the scheme before evaluating.
            numeric: Fractions and floats instead of sympy.

        Returns:
            The pair form.
        """
        if check:
            self.check(config)
        base = self.base.pair_form(config, check=False, numeric=numeric)
        return PairForm(float(config.rho) * base.weight, base.ge, base.lt)

    def profile(self, config: TrainingConfig, alpha, *, check: bool = True) -> np.ndarray:
        """H(α) = (1 - ρ) max(0, 1 - α) + ρ H_α(base) on the numpy path, vectorised over α (upper bound, Thms F.1, F.2).

        Args:
            config: The configuration, inside the base bound's scheme with a WOR top level.
            alpha: The α values (≥ 0).
            check: Check ``config`` against the scheme before evaluating.

        Returns:
            H(α) at each α.
        """
        if check:
            self.check(config)
        alpha = _alpha_array(alpha)
        rho = float(config.rho)
        return (1 - rho) * np.maximum(0.0, 1 - alpha) + rho * self.base.profile(config, alpha, check=False)

    def profile_mp(self, config: TrainingConfig, alpha, dps: int = 40, *, check: bool = True) -> mp.mpf:
        """H(α) for one α on the mpmath path at ``dps`` digits (upper bound, Thms F.1, F.2).

        Args:
            config: The configuration, inside the base bound's scheme with a WOR top level.
            alpha: α ≥ 0.
            dps: Decimal digits.
            check: Check ``config`` against the scheme before evaluating.

        Returns:
            H(α), an mpmath number.
        """
        if check:
            self.check(config)
        with mp.workdps(dps):
            a = mp.mpf(alpha)
            rho = mp.mpf(config.rho.numerator) / config.rho.denominator
            return (1 - rho) * max(mp.mpf(0), 1 - a) + rho * self.base.profile_mp(config, a, dps, check=False)


@dataclass(frozen=True)
class Claim(Bound):
    """A statement about bounds (T5), checked by ``tsdp verify`` rather than evaluated.

    Attributes:
        id: The T-id.
        label: The paper's label.
        reference: Where the paper states it.
        kind: claim.
        scope: The scope it speaks of.
        scheme: The schemes it speaks of.
        statement: The claim in words.
        construction: None.
        attained_build: None.
    """

    def profile(self, config, alpha, **_):
        """A claim has no profile: always raises.

        Args:
            config: The configuration.
            alpha: The α values.

        Raises:
            TheoremError: Always.
        """
        raise TheoremError(f"{self.id} is a claim ({self.label}), not a bound; `tsdp verify` checks it")

    profile_mp = profile
