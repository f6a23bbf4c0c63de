"""The accountant: composed ε(δ) and δ(ε) of a training run, sound and attained.

Paper Appendix B.3: the one-step profile of a bound becomes a PLD by connect-the-dots
(:mod:`verify.pld`) and the library composes it. Two numbers are reported:

* **sound** (default): the one-step profile exactly as the theorem states it (the α < 1
  branch from the swapped pair, the profile switching pair at ε = 0; T7/T8 as
  (1-ρ) max(0, 1-α) + ρ H_base), pessimistic connect-the-dots, composed. For an upper or
  tight bound this is an **upper** bound on the composed ε, and it rounds up.
* **attained**: the worst-case pair of datasets of the bound's construction
  (``bound.construction``: T7 → T9, T2 → T3, T8 → T10, ...) composed with itself, the pair
  (P, Q) and the swapped pair (Q, P) separately, the larger ε of the two. A real attack on
  the construction reaches it, so it is a **lower** bound on the true composed ε of that
  scheme; it uses the optimistic discretisation and rounds down (up to the library's
  1e-15 tail mass added to δ at composition), taken as the maximum over the composition
  counts 1, 2, 4, ..., S (:func:`verify.pld.attained_envelope`), which keeps the optimistic
  discretisation's drift from pulling it down as S grows. ``None`` where the bound has no
  construction (T11, T12, T10-printed).

The gap between the two is the tightness gap under composition.

Compositions (THEOREMS.md "Bounds", scope): a step-scoped bound composes once per step,
``compositions_per_epoch`` = floor(N λ / Λ) steps per epoch (floor(N T / Λ) pooled); an
epoch-scoped bound (deterministic/shuffled top level) composes once per epoch, and S steps
touch ceil(S / steps_per_epoch) epochs with steps_per_epoch = ceil(N / N'), N' = floor(Λ/λ).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from tsdp.theorems.bounds.base import Bound, PairBound
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.registry import get, resolve

from .pld import (
    DEFAULT_DISCRETIZATION,
    DEFAULT_LOG_MASS_TRUNCATION,
    DEFAULT_TAIL_MASS_TRUNCATION,
    attained_envelope,
    compose,
    pair_pld,
    sound_pld,
)


# ----------------------------------------------------------------------------- schedules


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, "must be an integer", value)
    if value < 1:
        raise ConfigError(name, "must be >= 1", value)
    return value


def steps_per_epoch(config: TrainingConfig) -> int:
    """Training steps in one epoch of the configured top level.

    Deterministic/shuffled top level: ceil(N / N') (every sequence once, N' = floor(Λ/λ) per
    step); WOR/Poisson/pooled top level: ``config.compositions_per_epoch``.
    """
    if config.top in ("deterministic", "shuffle"):
        return -(-config.N // config.sequences_per_step)
    return config.compositions_per_epoch


def compositions(bound: Bound, config: TrainingConfig, *, steps: Optional[int] = None,
                 epochs: Optional[int] = None) -> int:
    """Number of times the bound's one-step (one-epoch) profile is composed.

    Exactly one of ``steps`` / ``epochs``. Step scope (T6-T14): S steps → S; E epochs →
    E · compositions_per_epoch (floor(N λ / Λ), paper Section 4.2). Epoch scope (T1-T4,
    paper Section 4.1: one composition per epoch): E epochs → E; S steps → the epochs
    touched, ceil(S / steps_per_epoch) with steps_per_epoch = ceil(N / N').
    """
    if (steps is None) == (epochs is None):
        raise ConfigError("steps", "give exactly one of steps and epochs", (steps, epochs))
    if steps is not None:
        steps = _positive_int("steps", steps)
        if bound.scope == "epoch":
            return -(-steps // steps_per_epoch(config))
        return steps
    epochs = _positive_int("epochs", epochs)
    if bound.scope == "epoch":
        return epochs
    return epochs * config.compositions_per_epoch


def _check_delta(delta) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not (0 < float(delta) < 1):
        raise ConfigError("delta", "must be in (0, 1)", delta)
    return float(delta)


def _check_epsilon(epsilon) -> float:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon < 0:
        raise ConfigError("epsilon", "must be finite and >= 0", epsilon)
    return float(epsilon)


def construction_pair(bound: Bound, config: TrainingConfig):
    """The pair (P, Q) a real attack attains for this bound (``bound.construction``), or None.

    Lower bound by construction: the proof's neighbouring datasets and gradient function
    realise exactly this pair (T1 → T1, T2 → T3, T6 → T6, T7 → T9, T8 → T10, ...).
    """
    if bound.construction is None:
        return None
    target = get(bound.construction)
    if not isinstance(target, PairBound):
        return None
    return target.pair(config, check=False)


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class AccountingResult:
    """One accounting answer. ``epsilon`` / ``delta`` is the sound (upper, rounded up) value;
    ``*_attained`` the attained (lower, rounded down) value or None without a construction.
    Exactly one of ``epsilon`` / ``delta`` was the target; both fields are filled."""

    theorem: str
    kind: str
    scope: str
    reason: str
    construction: Optional[str]
    compositions: int
    steps: Optional[int]
    epochs: Optional[int]
    delta: float
    epsilon: float
    delta_attained: Optional[float]
    epsilon_attained: Optional[float]
    discretization: float
    tail_mass_truncation: float
    config: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


class _Accountant:
    """Shared machinery: the resolved bound, its one-step PLDs, cached compositions."""

    def __init__(self, config: TrainingConfig, theorem: Optional[str], discretization: float,
                 tail_mass_truncation: float, log_mass_truncation_bound: float, attained: bool = True):
        if not (isinstance(tail_mass_truncation, (int, float)) and 0 <= tail_mass_truncation < 1):
            raise ConfigError("tail_mass_truncation", "must be in [0, 1)", tail_mass_truncation)
        self.config = config
        self.bound, self.reason = resolve(config, theorem)
        self.discretization = discretization
        self.tail = tail_mass_truncation
        self.sound_one = sound_pld(self.bound, config, discretization, log_mass_truncation_bound)
        pair = construction_pair(self.bound, config) if attained else None
        self.attained_one = (
            None if pair is None else pair_pld(pair, discretization, pessimistic=False,
                                               log_mass_truncation_bound=log_mass_truncation_bound)
        )
        self._last = {}  # kind -> (compositions, composed PLD)

    def composed(self, which: str, n: int):
        """The one-step PLD of ``which`` ('sound' | 'attained') composed n times, incrementally.

        Composing on from the last composed PLD (library ``compose`` + ``self_compose``) when
        n grows; from scratch otherwise. Direction of rounding as the one-step PLD's.
        """
        one = self.sound_one if which == "sound" else self.attained_one
        last = self._last.get(which)
        if last is not None and last[0] == n:
            return last[1]
        if last is not None and last[0] < n:
            extra = n - last[0]
            step = compose(one, extra, self.tail)
            pld = last[1].compose(step, tail_mass_truncation=self.tail)
        else:
            pld = compose(one, n, self.tail)
        self._last[which] = (n, pld)
        return pld

    def attained(self, n: int, read: Callable) -> float:
        """``read`` (ε at δ or δ at ε) of the attained PLD after n compositions, as the
        envelope :func:`verify.pld.attained_envelope` (a lower bound, non-decreasing in n)."""
        return attained_envelope(self.attained_one, n, read, self.tail)


def _run(config, theorem, steps, epochs, discretization, tail_mass_truncation, log_mass_truncation_bound,
         delta=None, epsilon=None) -> AccountingResult:
    acc = _Accountant(config, theorem, discretization, tail_mass_truncation, log_mass_truncation_bound)
    n = compositions(acc.bound, config, steps=steps, epochs=epochs)
    sound = acc.composed("sound", n)
    attained = acc.attained_one
    if delta is not None:
        eps = float(sound.get_epsilon_for_delta(delta))
        eps_att = None if attained is None else acc.attained(n, lambda p: float(p.get_epsilon_for_delta(delta)))
        dlt, dlt_att = delta, (None if attained is None else delta)
    else:
        dlt = float(sound.get_delta_for_epsilon(epsilon))
        dlt_att = None if attained is None else acc.attained(n, lambda p: float(p.get_delta_for_epsilon(epsilon)))
        eps, eps_att = epsilon, (None if attained is None else epsilon)
    return AccountingResult(
        theorem=acc.bound.id, kind=acc.bound.kind, scope=acc.bound.scope, reason=acc.reason,
        construction=acc.bound.construction if attained is not None else None, compositions=n,
        steps=steps, epochs=epochs, delta=dlt, epsilon=eps, delta_attained=dlt_att, epsilon_attained=eps_att,
        discretization=discretization, tail_mass_truncation=tail_mass_truncation, config=config.as_dict(),
    )


def epsilon(config: TrainingConfig, delta: float, *, steps: Optional[int] = None, epochs: Optional[int] = None,
            theorem: Optional[str] = None, discretization: float = DEFAULT_DISCRETIZATION,
            tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
            log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION) -> AccountingResult:
    """Composed ε at ``delta`` after ``steps`` or ``epochs`` (paper Appendix B.3 accounting).

    ``result.epsilon``: sound, connect-the-dots (Doroshenko et al. 2022) of the theorem's
    one-step profile composed by the library: an upper bound, rounded up.
    ``result.epsilon_attained``: the construction's pair composed, both directions, optimistic
    buckets: a lower bound, rounded down (None without a construction).
    Without ``theorem`` the tightest sound upper bound for the scheme is used
    (:func:`theorems.registry.select_bound`).
    """
    return _run(config, theorem, steps, epochs, discretization, tail_mass_truncation, log_mass_truncation_bound,
                delta=_check_delta(delta))


def delta(config: TrainingConfig, epsilon: float, *, steps: Optional[int] = None, epochs: Optional[int] = None,
          theorem: Optional[str] = None, discretization: float = DEFAULT_DISCRETIZATION,
          tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
          log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION) -> AccountingResult:
    """Composed δ at ``epsilon`` after ``steps`` or ``epochs``; directions as in :func:`epsilon`
    (``result.delta`` an upper bound rounded up, ``result.delta_attained`` a lower bound)."""
    return _run(config, theorem, steps, epochs, discretization, tail_mass_truncation, log_mass_truncation_bound,
                epsilon=_check_epsilon(epsilon))


def sound_epsilon(config: TrainingConfig, delta: float, compositions: int, *, theorem: Optional[str] = None,
                  discretization: float = DEFAULT_DISCRETIZATION,
                  tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
                  log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION) -> float:
    """Only the sound ε (upper bound, rounded up) after ``compositions`` compositions of the
    theorem's one-step profile (paper Appendix B.3); no attained PLD is built."""
    delta = _check_delta(delta)
    compositions = _positive_int("compositions", compositions)
    bound, _ = resolve(config, theorem)
    one = sound_pld(bound, config, discretization, log_mass_truncation_bound)
    return float(compose(one, compositions, tail_mass_truncation).get_epsilon_for_delta(delta))


def epsilon_of_steps(config: TrainingConfig, delta: float, theorem: Optional[str] = None, *,
                     discretization: float = DEFAULT_DISCRETIZATION,
                     tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
                     log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION) -> Callable[[int], float]:
    """A training hook: S ↦ the sound ε(δ) after S steps (upper bound, rounded up).

    The one-step PLD (connect-the-dots, paper Appendix B.3) is built once; compositions are
    cached per count and extended incrementally (the last composed PLD is composed with the
    missing ones) as S grows, so calling it after every step costs one FFT composition each.
    Epoch-scoped bounds count the epochs touched (:func:`compositions`). S = 0 gives 0.
    """
    delta = _check_delta(delta)
    acc = _Accountant(config, theorem, discretization, tail_mass_truncation, log_mass_truncation_bound,
                      attained=False)
    cache: dict = {}

    def eps_after(steps: int) -> float:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ConfigError("steps", "must be an integer >= 0", steps)
        if steps == 0:
            return 0.0
        n = compositions(acc.bound, config, steps=steps)
        if n not in cache:
            cache[n] = float(acc.composed("sound", n).get_epsilon_for_delta(delta))
        return cache[n]

    eps_after.bound = acc.bound  # type: ignore[attr-defined]
    return eps_after
