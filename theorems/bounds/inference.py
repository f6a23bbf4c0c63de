"""Section 4.4 and Appendix H: inference-time privacy of one series (T15).

The mechanism (Appendix H, after Koga et al. 2022): each of the L_C context steps of the
series x is kept independently with probability r (Poisson, data-independent), kept values
get N(0, σ²) noise, dropped values are imputed with the mean of the kept (noisy) values
(0 when none is kept), and a model forecasts from the result. Neighbours are (w, v)-event
neighbours (paper Def. `bounded_neighboring_relations`): x, x' differ on w consecutive
steps W, each by at most v. Only m = min(w, L_C) changed steps can lie in one context.

Derivation of T15 (the profile; an **upper** bound, see "Kind")
--------------------------------------------------------------
Let B ⊆ {1..L_C} be the kept set. The imputed series is a function of (B, (x_t + Z_t)_{t∈B})
(the imputed value is the mean of the released kept values), so by post-processing every
privacy profile of the release is at most that of M(x) = (B, x_B + Z_B). B has the same law
under x and x' and is observed, so the outputs of M are mixtures over the label B with
disjoint supports and the hockey-stick divergence splits over the label, for every α ≥ 0:

    H_α(M(x') ‖ M(x)) = Σ_b Pr[B = b] H_α(N(x'_b, σ² I) ‖ N(x_b, σ² I)).

Given B = b this is the Gaussian mechanism with L2 shift ‖x'_b - x_b‖ ≤ v √|b ∩ W|, and
H_α(N(μ, σ² I) ‖ N(0, σ² I)) depends on ‖μ‖ only and is non-decreasing in it. With
J = |B ∩ W| ~ Binom(m, r):

    δ(ε) = H_{e^ε} = Σ_{j=0}^{m} Binom(j; m, r) G_{e^ε}(v √j / σ),
    G_α(μ) = Φ(μ/2 - log α / μ) - α Φ(-μ/2 - log α / μ)   (μ > 0),  G_α(0) = max(0, 1 - α).

The Gaussian pair is mirror-symmetric (x ↦ μ - x swaps N(μ) and N(0)), so the same formula
holds in both neighbouring directions ((x', x) and (x, x')) and on both sides of α = 1: no
swapped branch is needed, and H(α) = 1 - α + α H(1/α) holds exactly. At r = 1 it is the
Gaussian mechanism with sensitivity v √m; smaller r moves binomial mass to smaller j
(stochastic dominance) and G is non-decreasing in μ, so δ(ε) never grows as r falls.

Kind
----
* If the drop pattern is released ("missing" markers, THEOREMS.md's reading), the bound is
  **tight**: x = 0, x' = v on W attains every term (a one-direction change of size v).
* For the imputed series alone the pattern is recoverable (imputed steps all equal the
  mean, kept steps are a.s. distinct and differ from it) except when exactly one step is
  kept (then every step shows the same value and the kept position is hidden). That event
  has probability L_C r (1-r)^{L_C-1}; on it the release is a post-processing of M, so
  T15 stays an upper bound, and the construction above attains at least
  T15 - m r (1-r)^{L_C-1} G_α(v/σ) (the tests compute the exact value of the real imputed release on
  that pair and check this bracket). T15 is therefore catalogued as **upper**.

Comparison with the paper
-------------------------
Appendix H states no formula: it cites Koga et al. 2022, Theorem 3.2 (privacy amplification
for time-series release by Poisson subsampling) and calibrates σ with it. That theorem's text
was not retrievable here, so the paper's σ are not recomputed. Two readings:
* an RDP (or other) bound on the same label mixture: T15 is its exact (ε, δ) profile, at least
  as tight;
* the add/remove amplification form ε' = log(1 + r(e^ε - 1)) at δ' = r δ applied to the Gaussian
  mechanism with sensitivity v√m: **unsound here**, because the pattern is visible (a kept step
  cannot hide among dropped ones; only the factor r on δ survives). At r = 0.5, σ = v = 1, w = 1,
  L_C = 8, δ = 1e-3 it gives ε' = 2.27, while the audit through the real mechanism certifies
  ε ≥ 2.69 (T15: 2.91); ``tests/inference`` pins this.
T15's gain from r < 1 is therefore small at small δ (the weight of the j ≥ 1 terms scales δ
by about 1 - (1-r)^m, which ε(δ) barely feels), unlike an amplified ε'.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import TYPE_CHECKING

import mpmath as mp
import numpy as np
from scipy.special import log_ndtr, ndtr

from ..config import ConfigError, check_int, check_real
from .base import Bound, TheoremError
from .shapes import binomial_weights

if TYPE_CHECKING:  # sympy is imported where it is used, so the catalogue loads without it
    import sympy as sp

MAX_CHANGED_STEPS = 4096
"""The largest m = min(w, L_C) accounted: the work grows as m times the PLD grid (m = 1000: about 40 s)."""

_SAFETY = 1e-12  # relative float-error margin of the upper (pessimistic) evaluation


@dataclass(frozen=True)
class InferenceConfig:
    """One private-forecast release (Appendix H), accounted by T15 (an upper bound). Validated on construction.

    Attributes:
        r: Keep rate r ∈ (0, 1].
        sigma: Noise σ > 0 (same units as v).
        w: (w, v)-event neighbours: w ≥ 1, an integer.
        v: (w, v)-event neighbours: the largest change of one element, v > 0.
        context_length: Context length L_C ≥ 1.
        releases: Number of releases k ≥ 1 (overlapping contexts, composed).

    Raises:
        ConfigError: A bad value, naming the parameter (also m = min(w, L_C) above :data:`MAX_CHANGED_STEPS`).
    """

    r: float
    sigma: float
    w: int = 1
    v: float = 1.0
    context_length: int = 1
    releases: int = 1

    def __post_init__(self):
        for name, low in (("r", 0.0), ("sigma", 0.0), ("v", 0.0)):
            object.__setattr__(self, name, check_real(name, getattr(self, name), low=low, low_open=True,
                                                      high=1.0 if name == "r" else None))
        for name in ("w", "context_length", "releases"):
            object.__setattr__(self, name, check_int(name, getattr(self, name), 1))
        if self.m > MAX_CHANGED_STEPS:
            raise ConfigError("w", f"gives m = min(w, L_C) = {self.m} changed steps in one context; T15's profile "
                                   f"mixes m + 1 Gaussians at every PLD grid point, which cannot finish for m > "
                                   f"{MAX_CHANGED_STEPS} (1000 take about 40 s)", self.w)

    @property
    def m(self) -> int:
        """Changed steps that can lie in one context: min(w, L_C)."""
        return min(self.w, self.context_length)

    @property
    def mu(self) -> float:
        """Standardised shift of one changed step, v / σ."""
        return float(self.v) / float(self.sigma)

    def with_(self, **changes: object) -> "InferenceConfig":
        """A copy with the given fields changed (validated again at construction).

        Args:
            **changes: Field names and their new values.

        Returns:
            The new :class:`InferenceConfig`.
        """
        return InferenceConfig(**{**self.as_dict(), **changes})

    def as_dict(self) -> dict:
        """The fields by name, in declaration order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


class InferenceScheme:
    """The scheme of T15: an :class:`InferenceConfig` (training configurations do not apply)."""

    def check(self, bound_id: str, config) -> None:
        """Check that ``config`` is an InferenceConfig.

        Args:
            bound_id: The bound's T-id (in the error).
            config: The configuration.

        Raises:
            TheoremError: It is not.
        """
        if not isinstance(config, InferenceConfig):
            raise TheoremError(
                f"{bound_id} bounds inference-time releases (Appendix H), not training; "
                "use `tsdp forecast epsilon` / `tsdp forecast calibrate`"
            )

    def describe(self) -> str:
        """One line: T15's inference scheme (Poisson keep rate r per context step, Gaussian input noise σ, mean
        imputation)."""
        return "inference: Poisson keep rate r per context step, Gaussian input noise σ, mean imputation"


def _exact(x) -> sp.Expr:
    import sympy as sp

    return sp.Integer(x) if isinstance(x, int) else sp.Rational(repr(float(x)))


def _weights(config: InferenceConfig) -> np.ndarray:
    return np.array([float(w) for w in binomial_weights(config.m, _exact(config.r))])


def _gauss_eps(mu: float, eps: np.ndarray, upper: bool):
    """G_{e^ε}(μ) vectorised over ε (α Φ(·) in log space), plus its float-error margin if ``upper``."""
    with np.errstate(divide="ignore", over="ignore"):
        t = eps / mu
        a = ndtr(mu / 2 - t)
        b = np.exp(eps + log_ndtr(-mu / 2 - t))
    out = a - b
    if upper:
        out = out + _SAFETY * (a + b)
    return out


@dataclass(frozen=True)
class InferenceBound(Bound):
    """T15 (paper Appendix H, no formula there), an **upper** bound: Σ_j Binom(j; m, r) G_α(v√j/σ), the mixture over
    the observed kept count (module docstring).

    Attributes:
        id: The T-id (T15).
        label: The paper's label.
        reference: Where the paper states it.
        kind: upper.
        scope: release.
        scheme: The inference scheme.
        statement: The bound in words.
        construction: The construction's id.
        attained_build: None (the attained law is :meth:`attained_loss_survival`).
    """

    def delta_eps(self, config: InferenceConfig, eps, *, upper: bool = False, check: bool = True) -> np.ndarray:
        """δ(ε) = H_{e^ε} on an array of ε (numpy float64; valid for every real ε, no overflow).

        ``upper=True`` adds a float-error bound (1e-12 of each tail term and 1e-12 relative):
        an upper estimate, the pessimistic PLD's input (:mod:`verify.pld`).

        Args:
            config: The release configuration.
            eps: The ε values.
            upper: Add a float-error bound.
            check: Check the configuration first.

        Returns:
            δ(ε) at each ε.
        """
        if check:
            self.check(config)
        eps = np.asarray(eps, dtype=float)
        wts = _weights(config)
        with np.errstate(over="ignore"):
            out = wts[0] * np.maximum(0.0, -np.expm1(eps))
        for j in range(1, config.m + 1):
            if wts[j] > 0:
                out = out + wts[j] * _gauss_eps(config.mu * math.sqrt(j), eps, upper)
        if upper:
            out = out * (1 + _SAFETY)
        return np.clip(out, 0.0, 1.0)

    def total_variation_limit(self, config: InferenceConfig) -> Fraction:
        """sup over σ > 0 of δ(0) = Σ_{j ≥ 1} Binom(j; m, r) G_1(v√j/σ), G_1(μ) = 2Φ(μ/2) - 1 = TV(N(μ, 1), N(0, 1)) < 1
        and → 1 as σ → 0: 1 - (1 - r)^m, the probability that a release keeps a changed step at all. An **upper**
        bound on one release's δ(0) at every σ (the total variation of T15's pair: the observed kept count j, then
        the Gaussian pair given j). Exact: r is read as the Fraction its float is.

        Args:
            config: The release configuration (its σ is not used).

        Returns:
            1 - (1 - r)^m, a Fraction.
        """
        return 1 - (1 - Fraction(config.r)) ** config.m

    def profile(self, config: InferenceConfig, alpha, *, check: bool = True) -> np.ndarray:
        """H(α) on the numpy path, vectorised over α ≥ 0 (H(0) = 1).

        Args:
            config: The release configuration.
            alpha: The α values (≥ 0).
            check: Check the configuration first.

        Returns:
            H(α) at each α.
        """
        a = np.asarray(alpha, dtype=float)
        if np.any(~np.isfinite(a)) or np.any(a < 0):
            raise ValueError("alpha must be finite and >= 0")
        with np.errstate(divide="ignore"):
            out = self.delta_eps(config, np.log(a), check=check)
        return np.where(a == 0, 1.0, out)

    def profile_mp(self, config: InferenceConfig, alpha, dps: int = 40, *, check: bool = True) -> mp.mpf:
        """H(α) for one α in mpmath at ``dps`` digits (exact weights, closed-form Gaussian terms).

        Args:
            config: The release configuration.
            alpha: α ≥ 0.
            dps: Decimal digits.
            check: Check the configuration first.

        Returns:
            H(α), an mpmath number.
        """
        if check:
            self.check(config)
        with mp.workdps(dps):
            a = mp.mpf(alpha)
            if a == 0:
                return mp.mpf(1)
            r, m = mp.mpf(repr(float(config.r))), config.m
            mu = mp.mpf(repr(float(config.v))) / mp.mpf(repr(float(config.sigma)))
            total = (1 - r) ** m * max(mp.mpf(0), 1 - a)
            for j in range(1, m + 1):
                mj = mu * mp.sqrt(j)
                g = mp.ncdf(mj / 2 - mp.log(a) / mj) - a * mp.ncdf(-mj / 2 - mp.log(a) / mj)
                total += mp.binomial(m, j) * r**j * (1 - r) ** (m - j) * g
            return total

    def loss_survival(self, config: InferenceConfig, eps) -> np.ndarray:
        """Pr_{M(x')}[L > ε] of the construction x = 0, x' = v on W with the pattern observed.

        The privacy loss is 0 when j = 0 and N(μ_j²/2, μ_j²) otherwise (μ_j = v√j/σ), mixed
        over j ~ Binom(m, r); the same law in the other direction (mirror symmetry). It is
        the exact PLD of the tight construction, for optimistic buckets (:mod:`verify.pld`).

        Args:
            config: The release configuration.
            eps: The ε values.

        Returns:
            Pr[L > ε] at each ε.
        """
        eps = np.asarray(eps, dtype=float)
        wts = _weights(config)
        out = wts[0] * (eps < 0)
        for j in range(1, config.m + 1):
            mj = config.mu * math.sqrt(j)
            out = out + wts[j] * ndtr((mj * mj / 2 - eps) / mj)
        return out

    def attained_loss_survival(self, config: InferenceConfig):
        """The tight construction's loss law (:meth:`loss_survival`) when it is what a release reveals:
        with L_C = 1 (the kept set is always recoverable); None otherwise, where the real imputed
        release hides the kept position of a lone kept step (module docstring, "Kind").

        Args:
            config: The release configuration.

        Returns:
            ε ↦ Pr[L > ε], or None where the release hides the pattern (L_C > 1).
        """
        if config.context_length != 1:
            return None
        return lambda eps: self.loss_survival(config, eps)



T15 = InferenceBound(
    id="T15",
    label="inference_privacy_poisson_gaussian",
    reference="App. H",
    kind="upper",
    scope="release",
    scheme=InferenceScheme(),
    statement="Σ_j Binom(j; m, r) H_α(N(v√j, σ) ‖ N(0, σ)), m = min(w, L_C): Poisson-subsampled Gaussian "
    "input perturbation with mean imputation, (w, v)-event neighbours (tight when the drop pattern is released)",
    construction=None,
)

BOUNDS = (T15,)
