"""Which bound of the catalogue accounts a privacy event: the accountant's choice, made in this one place.

Events (:mod:`tsdp.verify.events`) are plain frozen data, as in dp-accounting (``dp_event.py``): what ran, and the
theorem the caller named, if any. The choice of bound, the catalogue look-up and the check that the bound fits the
event (its scope, its scheme) are made here, on the accountant's side (:mod:`tsdp.verify.accountant`).
"""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Tuple

from tsdp.theorems.bounds.base import Scope
from tsdp.theorems.errors import TheoremError


class Resolution(NamedTuple):
    """What a bound event is accounted with (:func:`resolve_event`)."""

    bound: Any
    """The catalogue's bound (named by the event's theorem, or chosen for its scheme)."""
    config: Any
    """The event's configuration (a :class:`TrainingConfig`, or an InferenceConfig for a release)."""
    reason: str
    """Why that bound, in words."""


Resolutions = Dict[Tuple[str, tuple, Optional[str]], Resolution]
"""Resolutions made for one command, by (scope, configuration, theorem): see :func:`resolved`."""


def resolve_event(event) -> Resolution:
    """The bound a bound event is accounted with, its configuration, and why.

    A training event (step or epoch scope) is resolved by :func:`tsdp.theorems.registry.resolve`: the theorem it
    names, or the tightest sound upper bound for its scheme; a release event by its theorem (T15), checked against
    its :class:`~tsdp.theorems.bounds.inference.InferenceConfig`.

    Args:
        event: A :class:`~tsdp.verify.events.BoundDpEvent`.

    Returns:
        (bound, configuration, reason).

    Raises:
        TheoremError: No bound applies, or the bound named has another scope than the event.
        ConfigError: The configuration does not fit the bound named.
    """
    from tsdp.theorems.registry import get, resolve

    if event.scope == Scope.RELEASE:
        from tsdp.theorems.bounds.inference import InferenceConfig

        config = InferenceConfig(**dict(event.config))
        bound = get(event.theorem)
        bound.check(config)
        return Resolution(bound, config,
                          f"{bound.id} bounds one release of Poisson-subsampled Gaussian input perturbation")
    config = event.training_config
    bound, reason = resolve(config, event.theorem)
    if bound.scope != event.scope:
        raise TheoremError(
            f"{bound.id} is a per-{bound.scope} bound; a {type(event).__name__} needs a per-{event.scope} bound"
        )
    return Resolution(bound, config, reason)


def resolved(event, resolutions: Optional[Resolutions] = None) -> Resolution:
    """:func:`resolve_event`, made once per (scope, configuration, theorem) in ``resolutions``.

    ``resolutions`` is the dict one command keeps (the accounting front fills it, and its accountants and their
    one-step PLDs read it), so a run is resolved once, not once per estimate and read.

    Args:
        event: A :class:`~tsdp.verify.events.BoundDpEvent`.
        resolutions: The command's resolutions (None: resolved afresh, nothing kept).

    Returns:
        (bound, configuration, reason), as :func:`resolve_event`.

    Raises:
        TheoremError: As :func:`resolve_event` (a refusal is not kept).
        ConfigError: As :func:`resolve_event`.
    """
    if resolutions is None:
        return resolve_event(event)
    key = (event.scope, event.config, event.theorem)
    found = resolutions.get(key)
    if found is None:
        found = resolutions[key] = resolve_event(event)
    return found
