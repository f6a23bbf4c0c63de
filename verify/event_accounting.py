"""Sound (upper) and attained (lower) values of one privacy event at one δ (or ε): one accountant per estimate
over the same event (:func:`account`, :class:`EventAccounting`)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional, Sequence, Tuple

from dp_accounting import dp_event

from tsdp.theorems.config import ConfigError, check_delta, check_epsilon

from .pld_accountant import PldAccountant
from .cpus import each
from .estimate import ESTIMATES, DeltaTooSmallError, Estimate, UnsupportedBoundError, check_estimates
from .events import count_compositions
from .pld import DEFAULT_DISCRETIZATION, DEFAULT_LOG_MASS_TRUNCATION, DEFAULT_TAIL_MASS_TRUNCATION, PldSettings
from .resolution import Resolutions


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

    Attributes:
        delta: The target δ (None when ε was given).
        epsilon: The target ε (None when δ was given).
        epsilon_sound: Sound ε (upper bound).
        delta_sound: Sound δ (upper bound).
        epsilon_attained: Attained ε (lower bound).
        delta_attained: Attained δ (lower bound).
        epsilon_attained_upper: The attained pair's pessimistic ε.
        delta_attained_upper: The attained pair's pessimistic δ.
        sound_refused: Why the sound estimate was refused.
        attained_refused: Why the attained estimate was refused.
        compositions: Bound events composed.
        discretization: The grid asked for.
        discretization_used: The coarsest grid read.
        estimates: The estimates computed.
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
        """The fields by name (the JSON form)."""
        return asdict(self)


def account(event: dp_event.DpEvent, *, delta: Optional[float] = None, epsilon: Optional[float] = None,
            estimates: Sequence[str] = ESTIMATES[:2], bracket: bool = False,
            discretization: float = DEFAULT_DISCRETIZATION,
            tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
            log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION,
            resolutions: Optional[Resolutions] = None) -> EventAccounting:
    """Sound (upper) and attained (lower) ε at ``delta`` (or δ at ``epsilon``) of ``event``.

    One :class:`~tsdp.verify.accountant.PldAccountant` per estimate of ``estimates`` over the same event.

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
            (:func:`tsdp.verify.resolution.resolved`; None: resolved here, once).

    Returns:
        Every estimate's value; a refused estimate is None with its reason.

    Raises:
        UnsupportedBoundError: Every estimate asked for is refused.
        ConfigError: Neither or both of ``delta`` and ``epsilon``, or a bad value.
    """
    settings = PldSettings(discretization, tail_mass_truncation, log_mass_truncation_bound)
    return account_with(event, settings, delta=delta, epsilon=epsilon, estimates=estimates, bracket=bracket,
                        resolutions=resolutions)


def account_with(event: dp_event.DpEvent, settings: PldSettings, *, delta: Optional[float] = None,
                 epsilon: Optional[float] = None, estimates: Sequence[str] = ESTIMATES[:2], bracket: bool = False,
                 resolutions: Optional[Resolutions] = None) -> EventAccounting:
    """:func:`account` at ``settings`` (the one object the accounting fronts pass down).

    Args:
        event: The privacy event.
        settings: The accountant's numerical settings.
        delta: The target δ (give exactly one of ``delta`` and ``epsilon``).
        epsilon: The target ε.
        estimates: The estimates composed.
        bracket: Also compose ``attained_upper``.
        resolutions: The command's resolutions (None: resolved here, once).

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
    return EventAccounting(delta=delta, epsilon=epsilon, sound_refused=refused.get(Estimate.SOUND),
                           attained_refused=refused.get(Estimate.ATTAINED), compositions=count_compositions(event),
                           discretization=settings.discretization, discretization_used=max(used, default=None),
                           estimates=chosen, **fields)
