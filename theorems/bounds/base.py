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
from typing import Any, Callable, Optional, Tuple

import mpmath as mp
import numpy as np

from ..config import Choice, TrainingConfig
from ..errors import TheoremError
from ..hockey_stick import hockey_stick, hockey_stick_mp
from ..mixture import MixturePair
from . import parameters
from .parameters import Params, params  # noqa: F401 - re-exported: their home was this module

# A bound's configuration: a TrainingConfig, or T15's InferenceConfig (bounds.inference, which imports this module)
BoundConfig = Any


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


def __getattr__(name):
    """``Tau`` and ``SYMBOLS`` (:mod:`tsdp.theorems.bounds.parameters`), made on first use so that importing the
    catalogue does not import sympy (PEP 562)."""
    if name in ("Tau", "SYMBOLS"):
        return getattr(parameters, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Scheme:
    """Which training schemes a bound covers.

    Attributes:
        top: The top levels covered.
        bottom: The bottom levels covered.
        single_instance: Only λ = 1.
        equal_augmentation: Only σ_C = σ_F.
        split_windows: The bound counts an element's windows as L_C context and L_F forecast ones (Thm G.1, T11: r =
            (L_C + L_F) / T, φ = L_F / (L_C + L_F)): with σ_C ≠ σ_F it needs T ≥ L_C + L_F, since in a shorter series
            an element can lie in the forecast (or the context) of more than the φ (or 1 - φ) share of its windows.
    """

    top: Tuple[str, ...]
    bottom: Tuple[str, ...]
    single_instance: bool = False  # the bound needs λ = 1
    equal_augmentation: bool = False  # the bound needs σ_C = σ_F
    split_windows: bool = False  # the bound needs T ≥ L_C + L_F unless σ_C = σ_F

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
        if self.split_windows and config.sigma_context != config.sigma_forecast \
                and config.T < config.window_length:
            raise TheoremError(
                f"{bound_id} does not apply: with sigma_context ≠ sigma_forecast it needs every series to hold "
                f"T = L - L_F + 1 ≥ L_C + L_F = {config.window_length} windows (each element then lies in L_C "
                f"context and L_F forecast windows), got T = {config.T}"
            )

    def describe(self) -> str:
        """One line: the top and bottom levels the scheme covers, λ = 1 or λ ≥ 1, and σ_C = σ_F where required."""
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

    def total_variation_limit(self) -> Fraction:
        """sup over σ > 0 of H_1 = w TV(P_σ, Q_σ): w times the total variation of the α ≥ 1 pair's means as point masses
        (Σ_x max(P(x) - Q(x), 0), the pair at σ → 0). An **upper** bound on the profile's δ(0) at every σ: both sides of
        the pair at σ are the point masses convolved with the same N(0, σ²) (post-processing). In the catalogue's pairs
        it is the probability that the changed element reaches the step's (or epoch's) gradient sum at all (ρ r for T6).
        Exact: the weights (Fractions, ints, floats) are read as the Fractions they are.

        Returns:
            The limit, a Fraction.

        Raises:
            TypeError: A symbolic pair (build it with ``numeric=True``).
        """
        mass = {}
        for mixture, sign in ((self.ge.P, 1), (self.ge.Q, -1)):
            for mean, weight in zip(mixture.means, mixture.weights):
                mass[Fraction(mean)] = mass.get(Fraction(mean), Fraction(0)) + sign * Fraction(weight)
        return Fraction(self.weight) * sum((m for m in mass.values() if m > 0), Fraction(0))


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

    def attained_loss_survival(self, config: BoundConfig) -> Optional[Callable]:
        """ε ↦ P(L > ε) of the construction's privacy loss, for a construction with no 1-D pair (T15), else None.

        **Lower** bound direction like :func:`theorems.registry.attained_pair`: a real attack attains this law.

        Args:
            config: The configuration.

        Returns:
            The survival function, or None.
        """
        return None

    has_pair = False  # a single pair (P, Q) gives the whole profile (PairBound)

    def pair_form(self, config: BoundConfig, *, check: bool = True,
                  numeric: bool = False) -> Optional[PairForm]:
        """The profile as :class:`PairForm`, or None for a bound that is not of that shape (T15, claims).

        Args:
            config: The configuration (its scheme is checked against the bound's unless ``check`` is False).
            check: Check the scheme first.
            numeric: Fractions and floats instead of sympy.

        Returns:
            The pair form, or None.
        """
        return None

    def total_variation_limit(self, config: BoundConfig) -> Optional[Fraction]:
        """sup over σ > 0 of the profile's δ(0), the limit as σ → 0: an **upper** bound on δ(0) at every σ, exact
        (:meth:`PairForm.total_variation_limit` of the bound's pair form; T15 answers it itself).

        Args:
            config: The configuration (its scheme is not checked).

        Returns:
            The limit, a Fraction; None for a bound without a pair form (claims).
        """
        form = self.pair_form(config, check=False, numeric=True)
        return None if form is None else form.total_variation_limit()

    def delta_eps(self, config: BoundConfig, eps: np.ndarray, *, upper: bool = False,
                  check: bool = True) -> np.ndarray:
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
        """The bound's catalogue entry as plain data: id, paper label, reference, kind, scope, scheme
        (:meth:`Scheme.describe`), statement and construction."""
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

    Advanced joint convexity (Balle et al. 2018) gives this form (Thms F.1, F.2; T7, T8): an **upper** bound, as its
    base is.

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
