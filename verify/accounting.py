"""Composed ε(δ) and δ(ε) of S training steps (or E epochs) of one configuration, sound and attained.

A thin front of the accountant (:mod:`tsdp.verify.accountant`) for the common question
"what does this run cost": the run is :func:`tsdp.verify.events.training_event` (the one
conversion of steps into compositions) and both estimates come from ``PldAccountant``:

* **sound** (``epsilon`` / ``delta``): the theorem's one-step profile, pessimistic
  connect-the-dots, composed (paper Appendix B.3): an **upper** bound, rounded up. None for a
  lower-bound theorem (T3, T9, T10, T14), which is reported as attained only.
* **attained** (``epsilon_attained`` / ``delta_attained``): the bound's construction pair,
  optimistic, composed with the envelope over 1, 2, 4, ... compositions: a **lower** bound,
  rounded down. None where the bound has no construction (T12, T10-printed, ...). Shuffled
  iteration: the construction's hidden-position epoch read through the max over its steps
  (:mod:`tsdp.theorems.hidden_position`), never the known-position pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

from tsdp.verify.json_data import Record
from tsdp.theorems.config import TrainingConfig

from .estimate import ESTIMATES
from .event_accounting import account_with
from .events import bound_event_of, training_event
from .one_step import attained_law_name
from .pld import DEFAULT_DISCRETIZATION, DEFAULT_LOG_MASS_TRUNCATION, DEFAULT_TAIL_MASS_TRUNCATION, PldSettings
from .resolution import Resolutions, resolved


@dataclass(frozen=True)
class AccountingResult(Record):
    """One accounting answer for a run of ``steps`` training steps (or ``epochs`` epochs).

    ``epsilon`` / ``delta``: the sound value (upper bound, rounded up), None for a lower-bound
    theorem; ``*_attained``: the attained value (lower bound, rounded down), None without a
    construction; ``attained_law`` says what it composes (the construction's pair, or for shuffled
    iteration the hidden-position epoch's max statistic of it). The target (δ or ε) fills both of its fields.
    ``compositions`` is the number
    of composed one-step (one-epoch, for epoch scope) events, not a number of steps.
    ``discretization`` is the grid asked for, ``discretization_used`` the coarsest grid an estimate
    was read at (larger only where the memory ceiling coarsened it; directions are kept).
    ``estimates``: the estimates computed; the fields of one not asked for are None, unrefused.

    Attributes:
        theorem: The bound's T-id.
        kind: The bound's kind (tight, upper, lower).
        scope: The bound's scope (step, epoch).
        reason: Why that bound, in words.
        construction: The construction the attained value composes (None when it is refused).
        compositions: The number of composed one-step (one-epoch) events.
        steps: The training steps asked for (None if epochs were).
        epochs: The epochs asked for (None if steps were).
        delta: The sound δ (the target δ when ε was asked).
        epsilon: The sound ε (the target ε when δ was asked); None for a lower-bound theorem.
        delta_attained: The attained δ (lower bound).
        epsilon_attained: The attained ε (lower bound); None without a construction.
        discretization: The grid asked for.
        discretization_used: The coarsest grid an estimate was read at.
        tail_mass_truncation: The library's tail mass truncation of each composition.
        sound_refused: Why the sound estimate was refused (None if it was not).
        attained_refused: Why the attained estimate was refused (None if it was not).
        config: The configuration's fields.
        estimates: The estimates computed.
        attained_law: What the attained estimate composes, in words.
    """

    theorem: str
    kind: str
    scope: str
    reason: str
    construction: Optional[str]
    compositions: int
    steps: Optional[int]
    epochs: Optional[int]
    delta: Optional[float]
    epsilon: Optional[float]
    delta_attained: Optional[float]
    epsilon_attained: Optional[float]
    discretization: float
    discretization_used: Optional[float]
    tail_mass_truncation: float
    sound_refused: Optional[str] = None
    attained_refused: Optional[str] = None
    config: dict = field(default_factory=dict)
    estimates: Tuple[str, ...] = ESTIMATES[:2]
    attained_law: Optional[str] = None


def _run(config, theorem, steps, epochs, settings: PldSettings, estimates, delta=None,
         epsilon=None) -> AccountingResult:
    """The one accounting of both fronts: the run's event, resolved once (:func:`tsdp.verify.resolution.resolved`),
    the same resolution read by every accountant of :func:`~tsdp.verify.accountant.account`."""
    event = training_event(config, steps=steps, epochs=epochs, theorem=theorem)
    resolutions: Resolutions = {}
    bound, _, reason = resolved(bound_event_of(event), resolutions)
    acc = account_with(event, settings, delta=delta, epsilon=epsilon, estimates=estimates, resolutions=resolutions)
    return AccountingResult(
        theorem=bound.id, kind=bound.kind, scope=bound.scope, reason=reason,
        construction=bound.construction if acc.attained_refused is None else None, compositions=acc.compositions,
        steps=steps, epochs=epochs, discretization=settings.discretization,
        discretization_used=acc.discretization_used, tail_mass_truncation=settings.tail_mass_truncation,
        sound_refused=acc.sound_refused, attained_refused=acc.attained_refused, config=config.as_dict(),
        delta=acc.delta_sound, epsilon=acc.epsilon_sound, delta_attained=acc.delta_attained,
        epsilon_attained=acc.epsilon_attained, estimates=acc.estimates,
        attained_law=attained_law_name(bound, config) if acc.attained_refused is None else None,
    )


def epsilon(config: TrainingConfig, delta: float, *, steps: Optional[int] = None, epochs: Optional[int] = None,
            theorem: Optional[str] = None, estimates: Sequence[str] = ESTIMATES[:2],
            discretization: float = DEFAULT_DISCRETIZATION,
            tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
            log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION) -> AccountingResult:
    """Composed ε at ``delta`` after ``steps`` training steps or ``epochs`` epochs (paper Appendix B.3).

    ``result.epsilon``: sound, an upper bound rounded up (None for a lower-bound theorem);
    ``result.epsilon_attained``: the construction's pair composed, a lower bound rounded down
    (None without a construction).

    Args:
        config: The training configuration (scheme, sizes, σ, ...).
        delta: The target δ.
        steps: The number of training steps (give ``steps`` or ``epochs``).
        epochs: The number of epochs (give ``steps`` or ``epochs``).
        theorem: The bound's T-id; without it the tightest sound upper bound for the scheme is used
            (:func:`tsdp.theorems.registry.select_bound`).
        estimates: Which estimates are composed (``("sound",)`` for a budget: half the work or less).
        discretization: Width of the privacy-loss grid (the library's ``value_discretization_interval``).
        tail_mass_truncation: The library's ``tail_mass_truncation`` of each composition.
        log_mass_truncation_bound: The library's ``log_mass_truncation_bound`` (where the grid ends).

    Returns:
        The accounting answer: sound and attained ε, the theorem used and the number of compositions.
    """
    return epsilon_with(config, delta, PldSettings(discretization, tail_mass_truncation, log_mass_truncation_bound),
                        steps=steps, epochs=epochs, theorem=theorem, estimates=estimates)


def epsilon_with(config: TrainingConfig, delta: float, settings: PldSettings, *, steps: Optional[int] = None,
                 epochs: Optional[int] = None, theorem: Optional[str] = None,
                 estimates: Sequence[str] = ESTIMATES[:2]) -> AccountingResult:
    """:func:`epsilon` with its three numerical settings as one :class:`~tsdp.verify.pld.PldSettings` (for callers
    inside tsdp that already hold them); the same accounting, directions and answer.

    Args:
        config: The training configuration.
        delta: The target δ.
        settings: The accountant's grid and truncations.
        steps: The number of training steps (give ``steps`` or ``epochs``).
        epochs: The number of epochs (give ``steps`` or ``epochs``).
        theorem: The bound's T-id; without it the tightest sound upper bound for the scheme.
        estimates: Which estimates are composed.

    Returns:
        The accounting answer: sound (upper) and attained (lower) ε, the theorem used and the number of compositions.
    """
    return _run(config, theorem, steps, epochs, settings, estimates, delta=delta)


def delta(config: TrainingConfig, epsilon: float, *, steps: Optional[int] = None, epochs: Optional[int] = None,
          theorem: Optional[str] = None, estimates: Sequence[str] = ESTIMATES[:2],
          discretization: float = DEFAULT_DISCRETIZATION,
          tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
          log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION) -> AccountingResult:
    """Composed δ at ``epsilon`` after ``steps`` or ``epochs``; directions and ``estimates`` as in
    :func:`epsilon` (``result.delta`` an upper bound rounded up, ``result.delta_attained`` a lower bound).

    Args:
        config: The training configuration.
        epsilon: The target ε.
        steps: The number of training steps (give ``steps`` or ``epochs``).
        epochs: The number of epochs (give ``steps`` or ``epochs``).
        theorem: The bound's T-id; without it the tightest sound upper bound for the scheme.
        estimates: Which estimates are composed (``("sound",)`` for a budget).
        discretization: Width of the privacy-loss grid.
        tail_mass_truncation: The library's ``tail_mass_truncation`` of each composition.
        log_mass_truncation_bound: The library's ``log_mass_truncation_bound``.

    Returns:
        The accounting answer: sound and attained δ, the theorem used and the number of compositions.
    """
    settings = PldSettings(discretization, tail_mass_truncation, log_mass_truncation_bound)
    return _run(config, theorem, steps, epochs, settings, estimates, epsilon=epsilon)
