"""The training configuration: the paper's batching parameters, validated, with derived rates.

Notation follows THEOREMS.md ("Notation" and "Generalisations"); Section 5 of the paper
is the default (N = 320, Λ = 32, σ = 1, λ = 1, L_C = L_F = 1, L = 20, WOR top level,
WR bottom level, so r = 0.1 and ρ = 0.1).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from typing import Optional, Tuple

TOP_LEVEL = ("deterministic", "shuffle", "wor", "poisson", "pooled")
BOTTOM_LEVEL = ("wr", "poisson")
RELATIONS = ("event", "user")


class ConfigError(ValueError):
    """A parameter violates a constraint; the message names the parameter and the constraint."""

    def __init__(self, parameter: str, constraint: str, value=None):
        self.parameter = parameter
        self.constraint = constraint
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"invalid {parameter}: {constraint}{shown}")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_int(name: str, value, minimum: int) -> None:
    if not _is_int(value):
        raise ConfigError(name, "must be an integer", value)
    if value < minimum:
        raise ConfigError(name, f"must be >= {minimum}", value)


def _check_real(name: str, value, *, positive: bool = False, minimum: float = 0.0) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise ConfigError(name, "must be a real number", value)
    if math.isnan(float(value)) or math.isinf(float(value)):
        raise ConfigError(name, "must be finite (not NaN or inf)", value)
    if positive and not value > 0:
        raise ConfigError(name, "must be > 0", value)
    if not positive and value < minimum:
        raise ConfigError(name, f"must be >= {minimum}", value)


@dataclass(frozen=True)
class TrainingConfig:
    """One DP-SGD forecasting configuration (THEOREMS.md notation).

    N sequences of length L (or of the given ``lengths``), context length L_C, forecast
    length L_F, batch size Λ (``batch_size``) of subsequences, λ (``instances``)
    subsequences per sequence, noise multiplier σ, top-level scheme
    (deterministic | shuffle | wor | poisson | pooled), bottom-level scheme (wr | poisson),
    neighbouring relation (event | user) over w elements, and augmentation noise
    σ_C, σ_F in units of v (the largest change of one element).

    Construction validates every field and raises :class:`ConfigError` naming the first
    violated constraint. Derived quantities follow THEOREMS.md, with the generalisations
    (short sequences, w-event, w-user, variable length) applied to k.
    """

    N: int = 320
    L: int = 20
    context_length: int = 1
    forecast_length: int = 1
    batch_size: int = 32
    instances: int = 1
    sigma: float = 1.0
    top: str = "wor"
    bottom: str = "wr"
    relation: str = "event"
    w: int = 1
    v: float = 1.0
    sigma_context: float = 0.0
    sigma_forecast: float = 0.0
    lengths: Optional[Tuple[int, ...]] = field(default=None)

    def __post_init__(self):
        if self.lengths is not None:
            lengths = tuple(self.lengths)
            if len(lengths) == 0:
                raise ConfigError("lengths", "must hold at least one sequence length")
            for n in lengths:
                _check_int("lengths", n, 1)
            object.__setattr__(self, "lengths", lengths)
            # variable lengths: the shortest sequence maximises k / T (THEOREMS.md)
            object.__setattr__(self, "L", min(lengths))
        _check_int("N", self.N, 1)
        _check_int("L", self.L, 1)
        _check_int("context_length", self.context_length, 0)
        _check_int("forecast_length", self.forecast_length, 1)
        _check_int("batch_size", self.batch_size, 1)
        _check_int("instances", self.instances, 1)
        _check_int("w", self.w, 1)
        _check_real("sigma", self.sigma, positive=True)
        _check_real("v", self.v, positive=True)
        _check_real("sigma_context", self.sigma_context)
        _check_real("sigma_forecast", self.sigma_forecast)
        if self.top not in TOP_LEVEL:
            raise ConfigError("top", f"must be one of {', '.join(TOP_LEVEL)}", self.top)
        if self.bottom not in BOTTOM_LEVEL:
            raise ConfigError("bottom", f"must be one of {', '.join(BOTTOM_LEVEL)}", self.bottom)
        if self.relation not in RELATIONS:
            raise ConfigError("relation", f"must be one of {', '.join(RELATIONS)}", self.relation)
        if self.L < self.forecast_length:
            raise ConfigError("L", f"must be >= forecast_length L_F = {self.forecast_length}", self.L)
        if self.batch_size < self.instances:
            raise ConfigError(
                "batch_size", f"must be >= instances λ = {self.instances} (batch size Λ < λ)", self.batch_size
            )
        if self.sequences_per_step > self.N:
            raise ConfigError(
                "batch_size",
                f"gives N' = floor(Λ/λ) = {self.sequences_per_step} sequences per step, more than N = {self.N}",
                self.batch_size,
            )
        if self.augmented and self.w > 1 and self.sigma_context != self.sigma_forecast:
            raise ConfigError(
                "sigma_context",
                "must equal sigma_forecast when w > 1 (amplification by augmentation with σ_C ≠ σ_F "
                "is proven for w = 1 only)",
                self.sigma_context,
            )

    # ----- derived quantities (THEOREMS.md "Notation") -----
    @property
    def T(self) -> int:
        """Number of subsequence start positions, T = L - L_F + 1."""
        return self.L - self.forecast_length + 1

    @property
    def window_length(self) -> int:
        """L_C + L_F."""
        return self.context_length + self.forecast_length

    @property
    def k(self) -> int:
        """Subsequences that contain the changed elements, with the generalisations applied.

        event level: max(0, min(L_C + L_F + w - 1, T)); user level: max(0, min(w (L_C + L_F), T)).
        w = 1 event level on long sequences gives L_C + L_F.
        """
        if self.relation == "event":
            raw = self.window_length + self.w - 1
        else:
            raw = self.w * self.window_length
        return max(0, min(raw, self.T))

    @property
    def r(self) -> Fraction:
        """Probability that one WR draw contains the changed element(s), r = k / T."""
        return Fraction(self.k, self.T)

    @property
    def q(self) -> Fraction:
        """Poisson bottom-level rate q = min(1, λ / T)."""
        return min(Fraction(1), Fraction(self.instances, self.T))

    @property
    def sequences_per_step(self) -> int:
        """N' = floor(Λ / λ), sequences in one top-level batch."""
        return self.batch_size // self.instances

    @property
    def rho(self) -> Fraction:
        """Top-level inclusion probability ρ = N' / N."""
        return Fraction(self.sequences_per_step, self.N)

    @property
    def phi(self) -> Fraction:
        """Share of the k windows where the element lands in the forecast, φ = L_F / (L_C + L_F)."""
        return Fraction(self.forecast_length, self.window_length)

    @property
    def n_windows_total(self) -> int:
        """N_tot = N T, the number of windows when all windows are pooled (T13, T14)."""
        return self.N * self.T

    @property
    def augmented(self) -> bool:
        return self.sigma_context > 0 or self.sigma_forecast > 0

    @property
    def compositions_per_epoch(self) -> int:
        """Deterministic/shuffled top level: 1; WOR/Poisson: floor(N λ / Λ); pooled: floor(N T / Λ)."""
        if self.top in ("deterministic", "shuffle"):
            return 1
        if self.top == "pooled":
            return max(1, self.n_windows_total // self.batch_size)
        return max(1, (self.N * self.instances) // self.batch_size)

    @property
    def steps_per_epoch(self) -> int:
        """Training steps in one epoch: ceil(N / N') for deterministic/shuffled iteration (Algorithm 3
        touches every sequence once), ``compositions_per_epoch`` otherwise (THEOREMS.md, Section 4.2)."""
        if self.top in ("deterministic", "shuffle"):
            return -(-self.N // self.sequences_per_step)
        return self.compositions_per_epoch

    def with_(self, **changes) -> "TrainingConfig":
        """A validated copy with some fields changed."""
        return replace(self, **changes)

    def as_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["lengths"] = list(self.lengths) if self.lengths is not None else None
        d["derived"] = {
            "T": self.T,
            "k": self.k,
            "r": float(self.r),
            "rho": float(self.rho),
            "phi": float(self.phi),
            "q": float(self.q),
            "sequences_per_step": self.sequences_per_step,
            "compositions_per_epoch": self.compositions_per_epoch,
            "steps_per_epoch": self.steps_per_epoch,
        }
        return d


DEFAULT_CONFIG = TrainingConfig()
