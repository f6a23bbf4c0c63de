"""The training configuration: the paper's batching parameters, validated, with derived rates.

Notation follows THEOREMS.md ("Notation" and "Generalisations"); Section 5 of the paper
is the default (N = 320, Λ = 32, σ = 1, λ = 1, L_C = L_F = 1, L = 20, WOR top level,
WR bottom level, so r = 0.1 and ρ = 0.1).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import Enum
from fractions import Fraction
from typing import Optional, Sequence, Tuple

from .errors import ConfigError
from .validate import (  # noqa: F401 - re-exported: their home was this module
    MAX_COUNT,
    SEED_MAX,
    SIGMA_MAX,
    SIGMA_MIN,
    TOLERANCE_MIN,
    check_calibration_target,
    check_confidence,
    check_delta,
    check_epsilon,
    check_int,
    check_output_path,
    check_real,
)

DEFAULT_L = 20


class Choice(str, Enum):
    """A named option whose value is a string (DESIGN.md "Options"): code compares members (``config.top ==
    Top.SHUFFLE``), while the edges (CLI flags, config files, JSON, ``TrainingConfig(top="shuffle")``) keep
    strings. A member is a ``str``: it equals, hashes, formats, JSON-encodes and repr's as its value (so
    ``config.top == "shuffle"``, JSON, cache keys and ``repr(TrainingConfig(...))`` read as before)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        return repr(self.value)

    @classmethod
    def values(cls) -> Tuple[str, ...]:
        """The members' string values, in declaration order (CLI choices, hypothesis strategies)."""
        return tuple(member.value for member in cls)

    @classmethod
    def of(cls, name: str, value) -> "Choice":
        """``value`` (a member or its string) as a member, or :class:`ConfigError` naming ``name`` and the values
        allowed.

        Args:
            name: The field or flag (in the error).
            value: A member or its string.

        Returns:
            The member.

        Raises:
            ConfigError: Not one of the values.
        """
        try:
            return cls(value)
        except (ValueError, TypeError):
            raise ConfigError(name, f"must be one of {', '.join(cls.values())}", value) from None


class Top(Choice):
    """Top-level scheme (paper Section 4): which sequences a step draws."""

    DETERMINISTIC = "deterministic"
    SHUFFLE = "shuffle"
    WOR = "wor"
    POISSON = "poisson"
    POOLED = "pooled"

    @property
    def epoch_scoped(self) -> bool:
        """Deterministic or shuffled iteration: the bounds are per epoch (paper Section 4.1, THEOREMS.md scope
        "epoch"); the other top levels are accounted per step."""
        return self in (Top.DETERMINISTIC, Top.SHUFFLE)


class Bottom(Choice):
    """Bottom-level scheme (paper Algorithms 4 and 6): which windows of a drawn sequence a step uses."""

    WR = "wr"
    POISSON = "poisson"


class Relation(Choice):
    """Neighbouring relation: w-event or w-user (THEOREMS.md "Generalisations")."""

    EVENT = "event"
    USER = "user"


TOP_LEVEL = Top.values()
BOTTOM_LEVEL = Bottom.values()
RELATIONS = Relation.values()


def window_starts(lengths, forecast_length: int):
    """T_n = L_n - L_F + 1: the start positions of the windows of a series of length L_n (Algorithm 4, front padding
    included, each window's forecast inside the series). Elementwise on an int, a numpy array or a torch tensor of
    lengths: the one home of this count (the samplers, the loaders and the audits all call it).

    Args:
        lengths: The series lengths L_n.
        forecast_length: L_F.

    Returns:
        T_n per series.
    """
    return lengths - forecast_length + 1


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

    Attributes:
        N: Number of sequences N.
        L: Sequence length L (None: 20, or the shortest of ``lengths``).
        context_length: Context length L_C.
        forecast_length: Forecast length L_F.
        batch_size: Batch size Λ, in subsequences.
        instances: λ, subsequences per sequence.
        sigma: Noise multiplier σ.
        top: Top-level scheme, a :class:`Top`: deterministic | shuffle | wor | poisson | pooled (its string is
            accepted and normalised to the member).
        bottom: Bottom-level scheme, a :class:`Bottom`: wr | poisson (string accepted).
        relation: Neighbouring relation, a :class:`Relation`: event | user (string accepted).
        w: Number of elements the relation covers (w-event, w-user).
        v: The largest change of one element (the unit of σ_C and σ_F).
        sigma_context: Augmentation noise σ_C on the context, in units of v.
        sigma_forecast: Augmentation noise σ_F on the forecast, in units of v.
        lengths: The sequences' lengths, for variable-length data (None: L each).
        drop_last: Shuffled iteration only: an epoch is floor(N λ / Λ) steps of N' sequences, the rest of each
            permutation unused (the official dp_forecasting code's epoch); every sequence is still in at most one
            step per epoch, which is all the epoch-level bound assumes.

    Raises:
        ConfigError: On construction, naming the first violated constraint.
    """

    N: int = 320
    L: Optional[int] = None  # 20, or the shortest of ``lengths``
    context_length: int = 1
    forecast_length: int = 1
    batch_size: int = 32
    instances: int = 1
    sigma: float = 1.0
    top: Top = Top.WOR
    bottom: Bottom = Bottom.WR
    relation: Relation = Relation.EVENT
    w: int = 1
    v: float = 1.0
    sigma_context: float = 0.0
    sigma_forecast: float = 0.0
    lengths: Optional[Tuple[int, ...]] = field(default=None)
    drop_last: bool = False

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        if self.lengths is not None:
            if isinstance(self.lengths, (str, bytes)) or not hasattr(self.lengths, "__iter__"):
                raise ConfigError("lengths", "must be a sequence of sequence lengths", self.lengths)
            lengths = tuple(check_int("lengths", n, 1) for n in self.lengths)
            if len(lengths) == 0:
                raise ConfigError("lengths", "must hold at least one sequence length")
            put("lengths", lengths)
            # variable lengths: the shortest sequence maximises k / T (THEOREMS.md)
            if self.L is not None and check_int("L", self.L, 1) != min(lengths):
                raise ConfigError("L", f"must be the shortest of lengths, {min(lengths)}, or left out", self.L)
            put("L", min(lengths))
        put("L", DEFAULT_L if self.L is None else self.L)
        for name, minimum in (("N", 1), ("L", 1), ("context_length", 0), ("forecast_length", 1), ("batch_size", 1),
                              ("instances", 1), ("w", 1)):
            put(name, check_int(name, getattr(self, name), minimum))
        put("sigma", check_real("sigma", self.sigma, low=0.0, low_open=True))
        if self.sigma < SIGMA_MIN:
            raise ConfigError("sigma", f"must be >= {SIGMA_MIN:g} (1/σ², the privacy loss scale, must be a finite "
                                       "float64)", self.sigma)
        if self.sigma > SIGMA_MAX:
            raise ConfigError("sigma", f"must be <= {SIGMA_MAX:g} (σ², the noise variance, must be a finite float64)",
                              self.sigma)
        put("v", check_real("v", self.v, low=0.0, low_open=True))
        put("sigma_context", check_real("sigma_context", self.sigma_context, low=0.0))
        put("sigma_forecast", check_real("sigma_forecast", self.sigma_forecast, low=0.0))
        for name, choice in (("top", Top), ("bottom", Bottom), ("relation", Relation)):
            put(name, choice.of(name, getattr(self, name)))
        if self.drop_last not in (False, True):
            raise ConfigError("drop_last", "must be true or false", self.drop_last)
        if self.drop_last and self.top != Top.SHUFFLE:
            raise ConfigError("drop_last", "drops the last partial step of a shuffled epoch: top must be shuffle",
                              self.top)
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
        if self.top == Top.POOLED and self.batch_size > self.n_windows_total:
            raise ConfigError("batch_size", f"draws Λ windows without replacement from the N_tot = "
                              f"{self.n_windows_total} pooled windows: must be <= N_tot", self.batch_size)
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
        """Number of subsequence start positions, T = L - L_F + 1 (:func:`window_starts`)."""
        return window_starts(self.L, self.forecast_length)

    @property
    def window_length(self) -> int:
        """L_C + L_F."""
        return self.context_length + self.forecast_length

    def _windows_holding(self, starts: int) -> int:
        """Windows of a series with ``starts`` windows that hold the changed element(s), with the generalisations:
        event level max(0, min(L_C + L_F + w - 1, T_n)); user level max(0, min(w (L_C + L_F), T_n))."""
        if self.relation == Relation.EVENT:
            raw = self.window_length + self.w - 1
        else:
            raw = self.w * self.window_length
        return max(0, min(raw, starts))

    @property
    def k(self) -> int:
        """Subsequences that contain the changed elements, with the generalisations applied, in the series that
        holds the most: k = max_n min(raw, T_n) at the longest series (one length L: T).

        raw = L_C + L_F + w - 1 (event level) or w (L_C + L_F) (user level); w = 1 event level on long sequences
        gives L_C + L_F. The longest series, not the shortest: a Poisson bottom level keeps each of them with
        q_n = λ / T_n, and Binom(k, q) with q at the shortest series dominates every series' Binom(k_n, q_n) only with
        k at the longest (pooled windows likewise count the windows of any series).
        """
        longest = self.T if self.lengths is None else window_starts(max(self.lengths), self.forecast_length)
        return self._windows_holding(longest)

    @property
    def r(self) -> Fraction:
        """Probability that one WR draw contains the changed element(s), r = k_n / T_n at the shortest series
        (min(raw, T_n) / T_n is non-increasing in T_n, so the shortest has the largest; one length L: k / T)."""
        return Fraction(self._windows_holding(self.T), self.T)

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
        """N_tot = Σ_n T_n, the windows of every series pooled (T13, T14; N T for one length): the pool the sampler
        draws from. Exact, so both directions hold: T13's weight Λ/N_tot is the true inclusion rate (N T_min would
        only overstate it), and T14's optimistic pair must not draw from a smaller pool than the sampler's."""
        if self.lengths is None:
            return self.N * self.T
        return sum(window_starts(n, self.forecast_length) for n in self.lengths)

    @property
    def augmented(self) -> bool:
        return self.sigma_context > 0 or self.sigma_forecast > 0

    @property
    def compositions_per_epoch(self) -> int:
        """Deterministic/shuffled top level: 1; WOR/Poisson: floor(N λ / Λ); pooled: floor(Σ_n T_n / Λ), the pool the
        sampler draws from (N T for one length)."""
        if self.top.epoch_scoped:
            return 1
        if self.top == Top.POOLED:
            return max(1, self.n_windows_total // self.batch_size)
        return max(1, (self.N * self.instances) // self.batch_size)

    @property
    def steps_per_epoch(self) -> int:
        """Training steps in one epoch: ceil(N / N') for deterministic/shuffled iteration (Algorithm 3
        touches every sequence once), max(1, floor(N λ / Λ)) for shuffled iteration with ``drop_last``,
        ``compositions_per_epoch`` otherwise (THEOREMS.md, Section 4.2)."""
        if self.drop_last:
            return max(1, (self.N * self.instances) // self.batch_size)
        if self.top.epoch_scoped:
            return -(-self.N // self.sequences_per_step)
        return self.compositions_per_epoch

    def check_covers(self, lengths: Sequence[int]) -> None:
        """Raise unless this configuration's accounting covers training series of ``lengths``: none shorter than L
        (r = k/T is largest at the shortest series) and, for a Poisson bottom level or pooled windows (which count the
        windows of the longest series), none holding the changed element in more windows than k; pooled windows
        also need the pool the sampler draws from, N_tot = Σ_n T_n of ``lengths``, to be the configuration's
        :attr:`n_windows_total` (T13 / T14 read the rate Λ / N_tot and the steps per epoch floor(N_tot / Λ): a smaller
        counted pool overstates the rate and understates the steps of an epoch, a larger one understates the rate,
        the unsound direction).

        Args:
            lengths: The training series' lengths.

        Raises:
            ConfigError: Naming ``L`` (a series shorter than L, or equal-length pooled series longer than L) or
                ``lengths`` (a series longer than the configuration says, whose elements lie in more than k windows;
                pooled series whose windows are not the configuration's pool).
        """
        lengths = tuple(int(n) for n in lengths)
        if min(lengths) < self.L:
            raise ConfigError("L", f"the shortest series has length {min(lengths)}; the accountant would understate "
                              "r = k/T", self.L)
        fitted = self.with_(lengths=lengths)
        if fitted.k > self.k and (self.bottom == Bottom.POISSON or self.top == Top.POOLED):  # WR reads r alone
            raise ConfigError("lengths", f"the longest series (length {max(lengths)}) holds the changed element in "
                              f"k = {fitted.k} windows, more than the k = {self.k} of the configuration: give the "
                              "series' lengths (the accountant would understate k)", self.lengths)
        if self.top == Top.POOLED and fitted.n_windows_total != self.n_windows_total:
            self._refuse_pool(lengths, fitted.n_windows_total)

    def _refuse_pool(self, lengths: Tuple[int, ...], drawn: int) -> None:
        """The one error line for pooled series whose windows are not the configuration's pool, naming the flag."""
        counted = f"the configuration counts {self.n_windows_total}"
        if self.lengths is None and len(set(lengths)) == 1:
            raise ConfigError("L", f"pooled windows are drawn from all {drawn} windows of the series (length "
                              f"{lengths[0]}), {counted}: give --L {lengths[0]} (or drop --L: it is taken from the "
                              "data)", self.L)
        shown = " ".join(map(str, lengths)) if len(lengths) <= 20 else f"with each of the {len(lengths)} series' length"
        raise ConfigError("lengths", f"pooled windows are drawn from all {drawn} windows of the series, {counted}: give "
                          f"--lengths {shown} (tsdp.training.batch_sampler.fit_lengths sets them)", self.lengths)

    def with_(self, **changes) -> "TrainingConfig":
        """A validated copy with some fields changed; new ``lengths`` without ``L`` re-derive L from them."""
        if changes.get("lengths") is not None and "L" not in changes:
            changes["L"] = None
        return replace(self, **changes)

    def as_dict(self) -> dict:
        """The JSON form: every field (``drop_last`` only where set), the options as plain strings, and ``derived``, the
        quantities the configuration derives (T, r, ρ, ...)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "drop_last" or self.drop_last}
        d.update(top=self.top.value, bottom=self.bottom.value, relation=self.relation.value)  # plain strings
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
"""The paper's Section 5 configuration: N = 320, Λ = 32, σ = 1, λ = 1, L_C = L_F = 1, L = 20, WOR top level,
WR bottom level (so r = 0.1 and ρ = 0.1)."""
