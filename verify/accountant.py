"""The accountant: one dp-accounting ``PrivacyAccountant`` over tsdp's privacy events.

Paper Appendix B.3: the one-step (one-epoch) privacy profile of the bound an event names
becomes a PLD by connect-the-dots (:mod:`tsdp.verify.pld`), and the library composes it.
This module is the only place in tsdp that composes PLDs; the training loop, the canary
audit, the Monte Carlo auditors, the checks and the report all get their ε from it.

Three estimates over the same events (``PldAccountant(estimate=...)``):

* ``"sound"`` (default): the theorem's profile exactly as stated, pessimistic
  connect-the-dots, composed. For an upper or tight bound this is an **upper** bound on the
  composed ε and it rounds up. A lower bound (T3, T9, T10, T14) is refused: a lower bound
  never stands in for a budget.
* ``"attained"``: the pair of the bound's proof construction (``Bound.attained_pair``),
  optimistic privacy buckets, composed; the maximum over the sub-runs of 1, 2, 4, ...
  compositions of each component (:func:`tsdp.verify.pld.attained_envelope`), because a
  sub-run's lower bound is one for the whole run. A real attack reaches it: a **lower**
  bound, rounded down. A bound without a construction is refused ("no attained value").
  Shuffled iteration (top "shuffle"): the changed sequence's step is hidden, so the pair is
  the binned maximum over the epoch's releases of that construction
  (:mod:`tsdp.theorems.hidden_position`, :mod:`tsdp.verify.hidden_position`), a partial last
  epoch accounted as the steps that ran; never the known-position pair.
* ``"attained_upper"``: the same pair with the pessimistic discretisation: an upper
  estimate of the pair's composition, so [attained, attained_upper] brackets the attained ε
  and their distance is the rounding, not the composition gap.

Events (:mod:`tsdp.verify.events`): ``TrainingStepDpEvent``, ``TrainingEpochDpEvent`` (or any
``BoundDpEvent``), composed with the library's ``SelfComposedDpEvent`` / ``ComposedDpEvent``;
``NoOpDpEvent`` costs nothing, ``NonPrivateDpEvent`` makes ε infinite. Composition is lazy:
``compose`` records the event in the ledger, ``get_epsilon`` / ``get_delta`` compose the
recorded PLDs once (cached) in the recorded order.
"""
from __future__ import annotations

import functools
import math
import threading
from dataclasses import asdict, dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
from dp_accounting import dp_event, privacy_accountant

from tsdp.theorems.bounds.base import TheoremError
from tsdp.theorems.config import Choice, ConfigError, check_delta, check_epsilon  # noqa: F401 - re-exported
from tsdp.theorems.hidden_position import HIDDEN_POSITION_TOP, hidden_position_epoch, hidden_position_name

from . import pld_cache
from .cpus import each
from .events import BoundDpEvent, Resolutions, TrainingEpochDpEvent, count_compositions, resolved, training_event
from .hidden_position import hidden_position_pld
from .pld import (
    DEFAULT_DISCRETIZATION,
    DEFAULT_LOG_MASS_TRUNCATION,
    DEFAULT_TAIL_MASS_TRUNCATION,
    PldSettings,
    attained_envelope,
    compose,
    compose_pair,
    discretization_of,
    epsilon_for_delta,
    one_step_profile,
    pair_pld,
    prime_allocator,
    resolve_memory_limit,
    sound_pld,
    survival_pld,
)


class Estimate(Choice):
    """What an accountant composes (module docstring): the sound profile (upper), the construction's law
    optimistic (attained, lower) or pessimistic (attained_upper)."""

    SOUND = "sound"
    ATTAINED = "attained"
    ATTAINED_UPPER = "attained_upper"


ESTIMATES = Estimate.values()
_READ_LOCK = threading.Lock()
_EPS_FAR = 1e300  # an ε past every finite privacy loss: δ there is the PLD's infinity mass
SOUND_KINDS = ("tight", "upper")


class UnsupportedBoundError(privacy_accountant.UnsupportedEventError, TheoremError):
    """The accountant cannot account an event with the requested estimate (one line, names why)."""


class DeltaTooSmallError(ConfigError):
    """δ below the composed PLD's resolution (its infinity mass, truncated tails included): no finite ε
    exists there. ``smallest`` is the smallest δ the accountant answers for the same composition."""

    def __init__(self, delta: float, smallest: float):
        self.smallest = smallest
        super().__init__("delta", f"{delta:g} is below the smallest δ the accountant resolves here, {smallest:.2g} "
                                  f"(the PLD's truncated mass); give δ >= {smallest:.2g} or truncate less tail mass")


def _attained_law(bound, config):
    """("pair", MixturePair) or ("survival", ε ↦ P(L > ε)) of the bound's construction, or None."""
    from tsdp.theorems.registry import attained_pair

    pair = attained_pair(bound, config, numeric=True)  # the exact pair's floats, no sympy
    if pair is not None:
        return "pair", pair
    survival = bound.attained_loss_survival(config)
    return None if survival is None else ("survival", survival)


def _refusal(event: BoundDpEvent, estimate: str, resolutions: Optional[Resolutions] = None) -> Optional[str]:
    """Why ``event`` cannot be accounted with ``estimate`` (None if it can); resolves its bound (once in
    ``resolutions``, :func:`tsdp.verify.events.resolved`)."""
    try:
        bound, config, _ = resolved(event, resolutions)
    except (TheoremError, ConfigError) as exc:
        return str(exc)
    if estimate == Estimate.SOUND and bound.kind not in SOUND_KINDS:
        return (f"{bound.id} is a {bound.kind} bound ({bound.reference}); a lower bound cannot serve as the sound "
                f"accountant (it is reported as the attained value only)")
    if estimate != Estimate.SOUND:
        law = _attained_law(bound, config)
        if law is None:
            return f"no attained value: {bound.id} has no attack construction"
        if _hides_position(event, config) and law[0] != "pair":
            return (f"attained value not known: {bound.id}'s construction has no per-step pair for the "
                    "hidden-position (shuffled) epoch")
    return None


def _hides_position(event: BoundDpEvent, config) -> bool:
    """An epoch whose top level hides the changed sequence's step (shuffled iteration): its attained law is the
    hidden-position epoch's, never the known-position construction's."""
    return isinstance(event, TrainingEpochDpEvent) and config.top in HIDDEN_POSITION_TOP


def attained_law_name(bound, config) -> Optional[str]:
    """What the attained estimate of ``bound`` on ``config`` composes, in words (None without a construction)."""
    if bound.construction is None and bound.attained_build is None:
        return None
    if getattr(config, "top", None) in HIDDEN_POSITION_TOP:
        return hidden_position_name(bound.construction or bound.id)
    return f"construction {bound.construction or bound.id}'s pair"


def one_step_pld(event: BoundDpEvent, estimate: str, discretization: float = DEFAULT_DISCRETIZATION,
                 log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION, *,
                 resolutions: Optional[Resolutions] = None):
    """The PLD of one ``event`` under ``estimate`` (module docstring).

    sound: :func:`tsdp.verify.pld.sound_pld` of the event's bound (pessimistic, upper);
    attained: its construction's law, optimistic (lower): :func:`tsdp.verify.pld.pair_pld` of the
    construction pair, or :func:`tsdp.verify.pld.survival_pld` of a loss law known in closed
    form (T15: a mixture over an observed label, no 1-D pair); attained_upper: the same law,
    pessimistic (for a survival law that is the bound's own profile, i.e. the sound PLD).
    Cached per (bound object, configuration, estimate, grid, memory ceiling) in memory, so a bound
    substituted in the registry (:func:`tsdp.theorems.registry.substituted`) or a changed
    ``TSDP_MEMORY_LIMIT`` is never served a stale PLD, and on disk (:mod:`tsdp.verify.pld_cache`,
    keyed by the same and the code's fingerprint; catalogue bounds only). ``resolutions``: the command's
    resolutions (:func:`tsdp.verify.events.resolved`; None: the event is resolved here).
    """
    reason = _refusal(event, estimate, resolutions)
    if reason is not None:
        raise UnsupportedBoundError(reason)
    bound, config, _ = resolved(event, resolutions)
    if estimate != Estimate.SOUND and _hides_position(event, config):  # the changed sequence's step is hidden
        return _hidden_position_pld(bound, config, getattr(event, "steps_run", None), estimate,
                                    float(discretization), float(log_mass_truncation_bound))
    return _bound_pld(bound, config, estimate, float(discretization), float(log_mass_truncation_bound),
                      resolve_memory_limit())


@functools.lru_cache(maxsize=64)
def _bound_pld(bound, config, estimate: str, discretization: float, log_mass_truncation_bound: float,
               memory_limit: int):
    return pld_cache.cached(bound, config, estimate, discretization, log_mass_truncation_bound, memory_limit,
                            lambda: _build_pld(bound, config, estimate, discretization, log_mass_truncation_bound,
                                               memory_limit))


@functools.lru_cache(maxsize=64)
def _hidden_position_pld(bound, config, steps_run: Optional[int], estimate: str, discretization: float,
                         log_mass_truncation_bound: float):
    """Attained (lower) or attained_upper PLD of a shuffled epoch (``steps_run`` of it, None: all): the binned
    max statistic of the hidden-position epoch of ``bound``'s construction pair (:mod:`tsdp.verify.hidden_position`)."""
    _, pair = _attained_law(bound, config)
    return hidden_position_pld(hidden_position_epoch(pair, config, steps_run), discretization,
                               pessimistic=estimate == Estimate.ATTAINED_UPPER,
                               log_mass_truncation_bound=log_mass_truncation_bound)


def _build_pld(bound, config, estimate: str, discretization: float, log_mass_truncation_bound: float,
               memory_limit: int):
    if estimate == Estimate.SOUND:
        return sound_pld(bound, config, discretization, log_mass_truncation_bound, memory_limit=memory_limit)
    kind, law = _attained_law(bound, config)
    if kind == "pair":
        return pair_pld(law, discretization, pessimistic=estimate == Estimate.ATTAINED_UPPER,
                        log_mass_truncation_bound=log_mass_truncation_bound, memory_limit=memory_limit)
    if estimate == Estimate.ATTAINED_UPPER:
        return sound_pld(bound, config, discretization, log_mass_truncation_bound, memory_limit=memory_limit)
    return survival_pld(law, one_step_profile(bound, config), discretization, log_mass_truncation_bound,
                        memory_limit=memory_limit)


class PldAccountant(privacy_accountant.PrivacyAccountant):
    """Privacy accountant for structured-subsampling DP-SGD (paper Appendix B.3), on dp-accounting PLDs.

    ``compose(event, count)``, ``supports(event)``, ``get_epsilon(δ)``, ``get_delta(ε)`` and
    ``ledger`` as in dp-accounting.

    Args:
        estimate: "sound" (upper bound, rounds up; the default, and the only one a budget may
            use), "attained" (lower bound, rounds down) or "attained_upper" (the attained pair's
            pessimistic composition).
        discretization: Width of the privacy-loss grid, in (0, 1].
        tail_mass_truncation: The library's ``tail_mass_truncation`` of each composition, in [0, 1).
        log_mass_truncation_bound: The library's ``log_mass_truncation_bound`` (where the grid ends).
        resolutions: The command's resolutions of bound events, shared with its other accountants
            (:func:`tsdp.verify.events.resolved`; None: this accountant's own, each event resolved once).

    Raises:
        ConfigError: An unknown ``estimate``, or a grid parameter out of its range.

    Attributes:
        estimate: The estimate this accountant composes (an :class:`Estimate`; its string is accepted).
        settings: The three numerical settings as one :class:`~tsdp.verify.pld.PldSettings`.
    """

    def __init__(self, estimate: str = "sound", *, discretization: float = DEFAULT_DISCRETIZATION,
                 tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
                 log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION,
                 resolutions: Optional[Resolutions] = None):
        super().__init__(privacy_accountant.NeighboringRelation.REPLACE_ONE)
        self.estimate = Estimate.of("estimate", estimate)
        self.settings = PldSettings(discretization, tail_mass_truncation, log_mass_truncation_bound)
        prime_allocator()
        self._resolutions: Resolutions = {} if resolutions is None else resolutions
        self._components: List[Tuple[BoundDpEvent, int]] = []  # (event, count), in order, neighbours merged
        self._gap_read = 0.0  # coarsest grid gap of a PLD read so far
        self._non_private = False
        self._composed = None  # (key, PLD) of the last composition

    @classmethod
    def with_settings(cls, estimate: str, settings: PldSettings,
                      resolutions: Optional[Resolutions] = None) -> "PldAccountant":
        """An accountant of ``estimate`` at ``settings`` (the one object the accounting fronts pass down)."""
        return cls(estimate, **settings.as_dict(), resolutions=resolutions)

    @property
    def discretization(self) -> float:
        """The grid width asked for (``settings.discretization``)."""
        return self.settings.discretization

    @property
    def tail_mass_truncation(self) -> float:
        """``settings.tail_mass_truncation``."""
        return self.settings.tail_mass_truncation

    @property
    def log_mass_truncation_bound(self) -> float:
        """``settings.log_mass_truncation_bound``."""
        return self.settings.log_mass_truncation_bound

    # ----- dp-accounting interface
    def _maybe_compose(self, event: dp_event.DpEvent, count: int, do_compose: bool):
        if isinstance(event, dp_event.NoOpDpEvent):
            return None
        if isinstance(event, dp_event.NonPrivateDpEvent):
            if do_compose:
                self._non_private = True
            return None
        if isinstance(event, dp_event.SelfComposedDpEvent):
            return self._maybe_compose(event.event, count * event.count, do_compose)
        if isinstance(event, dp_event.ComposedDpEvent):
            for inner in event.events:
                error = self._maybe_compose(inner, count, do_compose)
                if error is not None:
                    return error
            return None
        if isinstance(event, BoundDpEvent):
            if self.estimate == Estimate.SOUND and isinstance(event, TrainingEpochDpEvent):
                event = event.whole()  # a partial epoch costs a whole one (the safe side)
            reason = _refusal(event, self.estimate, self._resolutions)
            if reason is not None:
                return self.CompositionErrorDetails(invalid_event=event, error_message=reason)
            if do_compose and count > 0:
                if self._components and self._components[-1][0] == event:
                    self._components[-1] = (event, self._components[-1][1] + count)
                else:
                    self._components.append((event, count))
            return None
        return self.CompositionErrorDetails(
            invalid_event=event, error_message=f"{type(event).__name__} is not an event of the structured-subsampling "
                                               "accountant")

    def compose(self, event: dp_event.DpEvent, count: int = 1) -> "PldAccountant":
        """Record ``event`` ``count`` times (the ledger); :class:`UnsupportedBoundError` (one line) if refused."""
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"`event` must be a DpEvent, got {type(event).__name__}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ConfigError("count", "must be an integer >= 1", count)
        error = self._maybe_compose(event, count, False)
        if error is not None:
            raise UnsupportedBoundError(error.error_message)
        self._ledger.compose(event, count)
        self._maybe_compose(event, count, True)
        return self

    @property
    def discretization_used(self) -> Optional[float]:
        """The coarsest grid gap of the PLDs the answers so far were read from: ``discretization``, or more where
        the memory ceiling coarsened a grid (:class:`tsdp.verify.pld.PldCoarsenedWarning`; the direction of the
        estimate is kept). None before the first read of a composed PLD."""
        return self._gap_read or None

    @property
    def compositions(self) -> int:
        """Bound events composed so far (steps for step-scoped schemes, epochs for epoch-scoped ones)."""
        return count_compositions(self.ledger)

    def get_epsilon(self, target_delta: float) -> float:
        """ε at δ of everything composed so far, in the direction of ``estimate`` (0 for nothing, inf if non-private)."""
        delta = check_delta(target_delta)
        epsilon = float(self._read(lambda pld: epsilon_for_delta(pld, delta)))
        if not math.isfinite(epsilon) and not self._non_private:  # δ below the infinity mass: refused
            mass = float(self._read(lambda pld: float(pld.get_delta_for_epsilon(_EPS_FAR))))
            raise DeltaTooSmallError(delta, min(0.99, max(mass, delta) * 1.01))
        return epsilon

    def get_delta(self, target_epsilon: float) -> float:
        """δ at ε of everything composed so far, in the direction of ``estimate`` (0 for nothing, 1 if non-private)."""
        epsilon = check_epsilon(target_epsilon)
        if self._non_private:
            return 1.0
        if not self._components:
            return 0.0
        return float(self._read(lambda pld: float(pld.get_delta_for_epsilon(epsilon))))

    def get_delta_curve(self, epsilons) -> np.ndarray:
        """δ at every ε of ``epsilons`` (an array), in the direction of ``estimate``; the composition is
        built once (for ``attained`` the envelope's maximum is taken per ε)."""
        eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
        for e in eps:
            check_epsilon(float(e))
        if self._non_private:
            return np.ones_like(eps)
        if not self._components:
            return np.zeros_like(eps)
        # one ε at a time: the library's scalar read is numpy, its list read a Python loop over the PMF
        return np.asarray(self._read(lambda pld: np.array([pld.get_delta_for_epsilon(float(e)) for e in eps])),
                          dtype=float)

    # ----- composition (the one place)
    def _one(self, event: BoundDpEvent):
        return one_step_pld(event, self.estimate, self.discretization, self.log_mass_truncation_bound,
                            resolutions=self._resolutions)

    def _product(self):
        key = tuple(self._components)
        if self._composed is None or self._composed[0] != key:
            pld = None
            for event, count in self._components:
                part = compose(self._one(event), count, self.tail_mass_truncation)
                pld = part if pld is None else compose_pair(pld, part, self.tail_mass_truncation)
            self._composed = (key, pld)
        return self._composed[1]

    def _read(self, read):
        """``read`` of the composed PLD; for ``attained`` the maximum (elementwise for arrays) over the
        whole run and every component's envelope of sub-runs (each a lower bound on the whole run)."""
        if self._non_private:
            return math.inf
        if not self._components:
            return 0.0

        def tracked(pld):  # every read notes the grid it was made at (discretization_used)
            with _READ_LOCK:  # reads of one envelope may run side by side (verify.cpus.each)
                self._gap_read = max(self._gap_read, discretization_of(pld))
            return read(pld)

        if self.estimate != Estimate.ATTAINED:
            return tracked(self._product())
        if len(self._components) == 1:
            event, count = self._components[0]
            return attained_envelope(self._one(event), count, tracked, self.tail_mass_truncation)
        best = tracked(self._product())
        for event, count in self._components:
            best = np.maximum(best, attained_envelope(self._one(event), count, tracked, self.tail_mass_truncation))
        return best


# ----------------------------------------------------------------------------- both estimates at once


@dataclass(frozen=True)
class EventAccounting:
    """Sound and attained values of one event at one δ (or ε).

    ``estimates``: the estimates computed (a field of one that was not asked for is None, with
    no refusal). ``epsilon_sound`` / ``delta_sound``: upper bound, None where the event's bound
    is a lower bound (``sound_refused`` says why); ``*_attained``: lower bound, None without a
    construction (``attained_refused`` says why); ``*_attained_upper``: the attained pair's
    pessimistic composition (the bracket's upper end), when asked for. ``discretization_used``: the
    coarsest grid gap any estimate was read at (above ``discretization`` where the memory ceiling
    coarsened a grid).
    """

    delta: Optional[float]
    epsilon: Optional[float]
    epsilon_sound: Optional[float]
    delta_sound: Optional[float]
    epsilon_attained: Optional[float]
    delta_attained: Optional[float]
    epsilon_attained_upper: Optional[float]
    delta_attained_upper: Optional[float]
    sound_refused: Optional[str]
    attained_refused: Optional[str]
    compositions: int
    discretization: float
    discretization_used: Optional[float]
    estimates: Tuple[str, ...] = ESTIMATES[:2]

    def as_dict(self) -> dict:
        return asdict(self)


def check_estimates(estimates) -> Tuple[str, ...]:
    """A non-empty tuple of distinct names of :data:`ESTIMATES`, in that order, or :class:`ConfigError`
    naming ``estimates``."""
    chosen = (estimates,) if isinstance(estimates, str) else tuple(estimates)
    if not chosen or any(e not in ESTIMATES for e in chosen):
        raise ConfigError("estimates", f"must be a non-empty selection of {', '.join(ESTIMATES)}", estimates)
    return tuple(e for e in ESTIMATES if e in chosen)


def account(event: dp_event.DpEvent, *, delta: Optional[float] = None, epsilon: Optional[float] = None,
            estimates: Sequence[str] = ESTIMATES[:2], bracket: bool = False,
            discretization: float = DEFAULT_DISCRETIZATION,
            tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
            log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION,
            resolutions: Optional[Resolutions] = None) -> EventAccounting:
    """Sound (upper) and attained (lower) ε at ``delta`` (or δ at ``epsilon``) of ``event``.

    One :class:`PldAccountant` per estimate of ``estimates`` over the same event.

    Args:
        event: The privacy event (:mod:`tsdp.verify.events`, or a composition of them).
        delta: The target δ (give exactly one of ``delta`` and ``epsilon``).
        epsilon: The target ε (give exactly one of ``delta`` and ``epsilon``).
        estimates: The estimates composed (default sound and attained; only these are composed).
        bracket: Also compose ``attained_upper``, the attained pair's pessimistic composition.
        discretization: Width of the privacy-loss grid.
        tail_mass_truncation: The library's ``tail_mass_truncation`` of each composition.
        log_mass_truncation_bound: The library's ``log_mass_truncation_bound``.
        resolutions: The command's resolutions of the event's bound events, shared by the accountants
            (:func:`tsdp.verify.events.resolved`; None: resolved here, once).

    Returns:
        Every estimate's value; a refused estimate is None with its reason.

    Raises:
        UnsupportedBoundError: Every estimate asked for is refused.
        ConfigError: Neither or both of ``delta`` and ``epsilon``, or a bad value.
    """
    if (delta is None) == (epsilon is None):
        raise ConfigError("delta", "give exactly one of delta and epsilon", (delta, epsilon))
    if delta is not None:
        delta = check_delta(delta)
    else:
        epsilon = check_epsilon(epsilon)
    chosen = check_estimates(tuple(estimates) + ((Estimate.ATTAINED_UPPER.value,) if bracket else ()))
    settings = PldSettings(discretization, tail_mass_truncation, log_mass_truncation_bound)
    resolutions = {} if resolutions is None else resolutions

    def one(estimate: str):
        """(value, reason refused, grid used) of one estimate; an error other than a refusal propagates."""
        acc = PldAccountant.with_settings(estimate, settings, resolutions)
        try:
            acc.compose(event)
            return (acc.get_epsilon(delta) if delta is not None else acc.get_delta(epsilon)), None, \
                acc.discretization_used or settings.discretization
        except UnsupportedBoundError as exc:
            return None, str(exc), None
        except DeltaTooSmallError:
            if estimate == Estimate.SOUND:
                raise
            return None, f"δ below the {estimate} PLD's resolution", None

    values, refused, used = {}, {}, []
    for estimate, (value, reason, grid) in zip(chosen, each(one, chosen)):
        values[estimate] = value
        if reason is not None:
            refused[estimate] = reason
        else:
            used.append(grid)
    if len(refused) == len(chosen):
        raise UnsupportedBoundError(refused[chosen[0]])
    target, given_name = ("epsilon", "delta") if delta is not None else ("delta", "epsilon")
    given = delta if delta is not None else epsilon
    fields = {}
    for estimate in ESTIMATES:
        value = values.get(estimate)
        fields[f"{target}_{estimate}"] = value
        fields[f"{given_name}_{estimate}"] = None if value is None else given
    return EventAccounting(delta=delta, epsilon=epsilon, sound_refused=refused.get("sound"),
                           attained_refused=refused.get("attained"), compositions=count_compositions(event),
                           discretization=settings.discretization, discretization_used=max(used, default=None),
                           estimates=chosen, **fields)


def max_steps(config, budget: float, delta: float, *, theorem: Optional[str] = None, cap: Optional[int] = None,
              before: Optional[dp_event.DpEvent] = None, discretization: float = DEFAULT_DISCRETIZATION) -> int:
    """The most training steps S ≤ ``cap`` of ``config`` whose **sound** ε(δ), after ``before``, is ≤ ``budget``.

    Upper-bound accounting only (a lower-bound theorem is refused). The sound ε is
    non-decreasing in S, so doubling then bisection finds S in O(log S) accountant reads;
    for epoch-scoped schemes the answer is a whole number of epochs (ε only grows when an
    epoch starts). 0 when even one step exceeds the budget; without a cap, ConfigError when
    2^40 steps still fit.
    """
    budget = check_epsilon(budget)
    delta = check_delta(delta)

    @functools.lru_cache(maxsize=None)
    def eps(steps: int) -> float:
        acc = PldAccountant("sound", discretization=discretization)
        if before is not None:
            acc.compose(before)
        return acc.compose(training_event(config, steps=steps, theorem=theorem)).get_epsilon(delta)

    eps(1)  # refusals (lower bounds, schemes without a bound) surface even when no step is affordable
    return largest_within(budget, eps, cap)


def largest_within(budget: float, eps_of, cap: Optional[int] = None) -> int:
    """The largest s ≤ ``cap`` with ``eps_of(s)`` ≤ ``budget`` (0 if even s = 1 exceeds it).

    ``eps_of`` must be non-decreasing in s (true of any composition accountant): doubling, then
    bisection, O(log s) calls. Without a cap, ConfigError when 2^40 still fits.
    """
    if cap == 0 or eps_of(1) > budget:
        return 0
    lo, s = 1, 2
    while True:
        if cap is not None and s > cap:
            hi = cap + 1
            break
        if eps_of(s) > budget:
            hi = s
            break
        if s >= 2 ** 40:
            raise ConfigError("epsilon", f"the budget ε = {budget} is never reached; bound the training with epochs",
                              budget)
        lo, s = s, 2 * s
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if eps_of(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo
