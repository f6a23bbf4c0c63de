"""The PLD of one privacy event under one estimate: which law is discretised, and how (paper Appendix B.3).

sound: the event's bound's profile, pessimistic connect-the-dots (:func:`tsdp.verify.pld.sound_pld`, upper);
attained: its construction's law, optimistic (lower); attained_upper: the same law, pessimistic
(:mod:`tsdp.verify.accountant` describes the three). Refusals (a lower bound for the sound estimate, a bound without
a construction for the attained ones) are decided here, once, for the accountant and :func:`one_step_pld` alike.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple, Optional

from tsdp.theorems.hidden_position import (HIDDEN_POSITION_TOP, hidden_position_epoch, hidden_position_name,
                                           in_run_probability)
from tsdp.theorems.mixture import MixturePair

from . import pld_cache
from .estimate import SOUND_KINDS, Estimate, UnsupportedBoundError
from .events import BoundDpEvent, TrainingEpochDpEvent
from .hidden_position import hidden_position_pld
from .pld import PldSettings, one_step_profile, pair_pld, resolve_memory_limit, sound_pld, survival_pld
from .pld.mixture import revealed_mixture
from .resolution import Resolutions, resolved


class AttainedLaw(NamedTuple):
    """The law a bound's construction attains: a 1-D mixture pair, or (a construction with no 1-D pair, T15) the
    survival ε ↦ P(L > ε) of its privacy loss. Exactly one is set. **Lower** bound direction: a real attack reaches
    it."""

    pair: Optional[MixturePair] = None
    survival: Optional[Callable] = None


def attained_law(bound, config) -> Optional[AttainedLaw]:
    """The law ``bound``'s construction attains on ``config`` (lower bound), or None without a construction.

    Args:
        bound: A catalogue bound.
        config: The configuration it is applied to.

    Returns:
        The construction's exact pair (floats, no sympy), or its loss survival where it has no 1-D pair; None
        where the bound has no construction.
    """
    from tsdp.theorems.registry import attained_pair

    pair = attained_pair(bound, config, numeric=True)  # the exact pair's floats, no sympy
    if pair is not None:
        return AttainedLaw(pair=pair)
    survival = bound.attained_loss_survival(config)
    return None if survival is None else AttainedLaw(survival=survival)


def refusal(event: BoundDpEvent, estimate: Estimate, resolutions: Optional[Resolutions] = None) -> Optional[str]:
    """Why ``event`` cannot be accounted with ``estimate``, or None if it can.

    Args:
        event: A bound event.
        estimate: The estimate asked for.
        resolutions: The command's resolutions (:func:`tsdp.verify.resolution.resolved`; None: resolved here).

    Returns:
        One line naming why (a lower bound for the sound estimate, no construction, no per-step pair for a shuffled
        epoch, or the resolution's own refusal), or None.
    """
    from tsdp.theorems.config import ConfigError
    from tsdp.theorems.errors import TheoremError

    try:
        bound, config, _ = resolved(event, resolutions)
    except (TheoremError, ConfigError) as exc:
        return str(exc)
    if estimate == Estimate.SOUND and bound.kind not in SOUND_KINDS:
        return (f"{bound.id} is a {bound.kind} bound ({bound.reference}); a lower bound cannot serve as the sound "
                f"accountant (it is reported as the attained value only)")
    if estimate != Estimate.SOUND:
        law = attained_law(bound, config)
        if law is None:
            return f"no attained value: {bound.id} has no attack construction"
        if hides_position(event, config) and law.pair is None:
            return (f"attained value not known: {bound.id}'s construction has no per-step pair for the "
                    "hidden-position (shuffled) epoch")
    return None


def hides_position(event: BoundDpEvent, config) -> bool:
    """Whether ``event`` is an epoch whose top level hides the changed sequence's step (shuffled iteration): its
    attained law is the hidden-position epoch's, never the known-position construction's.

    Args:
        event: A bound event.
        config: Its resolved configuration.

    Returns:
        True for an epoch event of a hidden-position top level.
    """
    return isinstance(event, TrainingEpochDpEvent) and config.top in HIDDEN_POSITION_TOP


def attained_law_name(bound, config) -> Optional[str]:
    """What the attained estimate of ``bound`` on ``config`` composes, in words.

    Args:
        bound: A catalogue bound.
        config: The configuration it is applied to.

    Returns:
        The construction's pair, or for shuffled iteration its hidden-position epoch; None without a construction.
    """
    if bound.construction is None and bound.attained_build is None:
        return None
    if getattr(config, "top", None) in HIDDEN_POSITION_TOP:
        return hidden_position_name(bound.construction or bound.id)
    return f"construction {bound.construction or bound.id}'s pair"


def one_step_pld(event: BoundDpEvent, estimate: str, settings: PldSettings = PldSettings(), *,
                 resolutions: Optional[Resolutions] = None):
    """The PLD of one ``event`` under ``estimate`` (paper Appendix B.3; direction that of the estimate).

    sound: :func:`tsdp.verify.pld.sound_pld` of the event's bound (pessimistic, upper), for a shuffled epoch
    mixed with silence by the probability ρ that its steps hold the changed sequence
    (:func:`tsdp.verify.pld.mixture.revealed_mixture`: a partial epoch, or one that drops its last step);
    attained: its construction's law, optimistic (lower): :func:`tsdp.verify.pld.pair_pld` of the
    construction pair, or :func:`tsdp.verify.pld.survival_pld` of a loss law known in closed
    form (T15: a mixture over an observed label, no 1-D pair); attained_upper: the same law,
    pessimistic (for a survival law that is the bound's own profile, i.e. the sound PLD).
    Cached per (bound object, configuration, estimate, grid, memory ceiling) in memory, so a bound
    substituted in the registry (:func:`tsdp.theorems.registry.substituted`) or a changed
    ``TSDP_MEMORY_LIMIT`` is never served a stale PLD, and on disk (:mod:`tsdp.verify.pld_cache`,
    keyed by the same and the code's fingerprint; catalogue bounds only).

    Args:
        event: A bound event (one step, one epoch or one release).
        estimate: "sound", "attained" or "attained_upper" (an :class:`~tsdp.verify.estimate.Estimate`).
        settings: The grid (``discretization``) and where it ends (``log_mass_truncation_bound``); the tail mass
            truncation plays no part in one step.
        resolutions: The command's resolutions (:func:`tsdp.verify.resolution.resolved`; None: resolved here).

    Returns:
        The one-step ``PrivacyLossDistribution``.

    Raises:
        UnsupportedBoundError: The estimate is refused for this event (:func:`refusal`).
    """
    estimate = Estimate.of("estimate", estimate)
    reason = refusal(event, estimate, resolutions)
    if reason is not None:
        raise UnsupportedBoundError(reason)
    bound, config, _ = resolved(event, resolutions)
    if estimate != Estimate.SOUND and hides_position(event, config):  # the changed sequence's step is hidden
        return _hidden_position_pld(bound, config, getattr(event, "steps_run", None), estimate, _grid(settings))
    whole = _bound_pld(bound, config, estimate, _grid(settings), resolve_memory_limit())
    if hides_position(event, config):  # sound: the epoch holds the changed sequence with probability ρ only
        return revealed_mixture(whole, in_run_probability(config, event.steps_run))
    return whole


def _grid(settings: PldSettings) -> PldSettings:
    """``settings`` with the tail mass truncation at its default: one step never reads it, so the in-memory caches
    are keyed by the grid alone."""
    return PldSettings(settings.discretization, log_mass_truncation_bound=settings.log_mass_truncation_bound)


@functools.lru_cache(maxsize=64)
def _bound_pld(bound, config, estimate: Estimate, grid: PldSettings, memory_limit: int):
    """The one-step PLD of ``bound`` on ``config`` (not a hidden-position epoch), cached in memory and on disk."""
    return pld_cache.cached(bound, config, estimate, grid, memory_limit,
                            lambda: _build_pld(bound, config, estimate, grid, memory_limit))


@functools.lru_cache(maxsize=64)
def _hidden_position_pld(bound, config, steps_run: Optional[int], estimate: Estimate, settings: PldSettings):
    """Attained (lower) or attained_upper PLD of a shuffled epoch (``steps_run`` of it, None: all): the binned
    max statistic of the hidden-position epoch of ``bound``'s construction pair (:mod:`tsdp.verify.hidden_position`)."""
    pair = attained_law(bound, config).pair
    return hidden_position_pld(hidden_position_epoch(pair, config, steps_run), settings.discretization,
                               pessimistic=estimate == Estimate.ATTAINED_UPPER,
                               log_mass_truncation_bound=settings.log_mass_truncation_bound)


def _build_pld(bound, config, estimate: Estimate, settings: PldSettings, memory_limit: int):
    if estimate == Estimate.SOUND:
        return sound_pld(bound, config, settings, memory_limit=memory_limit)
    law = attained_law(bound, config)
    if law.pair is not None:
        return pair_pld(law.pair, settings, pessimistic=estimate == Estimate.ATTAINED_UPPER,
                        memory_limit=memory_limit)
    if estimate == Estimate.ATTAINED_UPPER:
        return sound_pld(bound, config, settings, memory_limit=memory_limit)
    return survival_pld(law.survival, one_step_profile(bound, config), settings, memory_limit=memory_limit)
