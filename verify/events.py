"""Privacy events: what a DP-SGD run of the paper did, in dp-accounting's ``DpEvent`` style.

An event says what ran, never how to account for it (dp_accounting/dp_event.py): events are
plain frozen data, and the accountant (:mod:`tsdp.verify.accountant`) consumes them, choosing
the bound each is accounted with in one place (:mod:`tsdp.verify.resolution`). Runs are the library's own
``SelfComposedDpEvent`` / ``ComposedDpEvent`` of the events here, so a heterogeneous run (a
warm-up at another σ, a change of batch size mid-run) is a ``ComposedDpEvent`` and the
library's ``DpEventBuilder`` ledger, ``to_named_tuple`` serialisation and
``mechanism_calibration`` work with them.

* :class:`TrainingStepDpEvent`: one training step (Algorithm 2) on a batch drawn by
  structured subsampling with a step-scoped top level (WOR or Poisson top level with WR or
  Poisson bottom level, paper Algorithm 1 with Algorithms 4-6; or the pooled baseline).
* :class:`TrainingEpochDpEvent`: one epoch of deterministic (Algorithm 3) or shuffled
  top-level iteration, the scope of the paper's Section 4.1 bounds (T1-T4): every sequence
  is touched once per epoch, so the epoch, not the step, is the composed mechanism.

"Steps" means training steps everywhere in tsdp. :func:`training_event` is the one place
that turns S training steps (or E epochs) of a configuration into the composed event: for a
step-scoped scheme S steps are S step events, for an epoch-scoped scheme S steps touch
ceil(S / steps_per_epoch) epochs and each touched epoch is one epoch event (a shuffled run's partial
last epoch is an epoch event that says how many of its steps ran; a deterministic epoch costs a whole
one as soon as it starts). The training loop composes :func:`training_event` of the steps each
phase ran, so the loop's ledger and :func:`training_event` agree by construction.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import attr
from dp_accounting import dp_event

from tsdp.theorems.bounds.base import Scope
from tsdp.theorems.config import ConfigError, Top, TrainingConfig

EPOCH_SCOPED_TOP = tuple(top for top in Top if top.epoch_scoped)
"""Top levels whose bounds are per epoch (paper Section 4.1, THEOREMS.md scope "epoch"; :attr:`Top.epoch_scoped`)."""


def _config_items(config) -> Tuple[Tuple[str, object], ...]:
    """A configuration as sorted (field, value) pairs: hashable, and plain data for ``to_named_tuple``."""
    if isinstance(config, TrainingConfig):
        items = config.as_dict()
        items.pop("derived")
        if items["lengths"] is not None:
            items["lengths"] = tuple(items["lengths"])
        return tuple(sorted(items.items()))
    if isinstance(config, (tuple, list)):
        items = tuple((str(k), tuple(v) if isinstance(v, list) else v) for k, v in config)
        TrainingConfig(**dict(items))  # validates
        return tuple(sorted(items))
    raise ConfigError("config", "must be a TrainingConfig", config)


def _theorem_id(theorem) -> Optional[str]:
    if theorem is None:
        return None
    if not isinstance(theorem, str) or not theorem:
        raise ConfigError("theorem", "must be a theorem id such as 'T6'", theorem)
    return theorem.upper()


@attr.s(frozen=True, slots=True)
class BoundDpEvent(dp_event.DpEvent):
    """A mechanism whose privacy profile is a bound of the catalogue applied to a configuration.

    ``theorem`` names the bound (None: the tightest sound upper bound for the scheme,
    :func:`tsdp.theorems.registry.select_bound`). Subclasses fix the scope the bound must have.
    """

    config: Tuple[Tuple[str, object], ...] = attr.ib(converter=_config_items)
    theorem: Optional[str] = attr.ib(default=None, converter=_theorem_id)

    scope: Optional[Scope] = None  # the bound's scope this event stands for (its subclasses fix it)

    @property
    def training_config(self) -> TrainingConfig:
        """The configuration as a :class:`TrainingConfig`."""
        return TrainingConfig(**dict(self.config))


@attr.s(frozen=True, slots=True)
class TrainingStepDpEvent(BoundDpEvent):
    """One DP-SGD step (paper Algorithm 2) whose batch is drawn by a step-scoped top level.

    Top level WOR (Algorithm 5), Poisson, or the pooled-window baseline; bottom level WR
    (Algorithm 4) or Poisson (Algorithm 6); λ windows per sequence, clipping to C and
    Gaussian noise σC on the summed clipped gradients, all as in ``config``.

    Attributes:
        config: The training configuration (a :class:`~tsdp.theorems.config.TrainingConfig`; stored as sorted
            (field, value) pairs); its top level must be step-scoped (wor, poisson, pooled).
        theorem: The bound's T-id (None: the tightest sound upper bound for the scheme,
            :func:`tsdp.theorems.registry.select_bound`); it must be a per-step bound.

    Raises:
        ConfigError: An epoch-scoped top level (deterministic, shuffle): use :class:`TrainingEpochDpEvent`.
    """

    scope = Scope.STEP

    def __attrs_post_init__(self):
        top = dict(self.config)["top"]
        if top in EPOCH_SCOPED_TOP:
            raise ConfigError("top", f"{top!r} iteration is accounted per epoch: use TrainingEpochDpEvent", top)


@attr.s(frozen=True, slots=True)
class TrainingEpochDpEvent(BoundDpEvent):
    """One epoch of deterministic (Algorithm 3) or shuffled top-level iteration.

    ceil(N / N') steps of Algorithm 2 that touch every sequence exactly once; the bottom
    level, λ, clipping and noise as in ``config``. The unit of the paper's Section 4.1 bounds.

    Attributes:
        config: The training configuration (a :class:`~tsdp.theorems.config.TrainingConfig`; stored as sorted
            (field, value) pairs); its top level must be deterministic or shuffle.
        theorem: The bound's T-id (None: the tightest sound upper bound for the scheme); it must be a per-epoch
            bound.
        steps_run: Shuffled iteration only: a run that stopped after this many steps of the epoch (None: all of
            them). Both estimates account the s steps that ran: the changed sequence's step is among them with
            probability ρ = s N' / N only (:func:`tsdp.theorems.hidden_position.in_run_probability`); the sound
            estimate mixes the whole epoch's bound with silence by ρ, the attained one is the hidden-position law
            of the s steps (:mod:`tsdp.theorems.hidden_position`).

    Raises:
        ConfigError: A step-scoped top level (wor, poisson, pooled): use :class:`TrainingStepDpEvent`.
    """

    steps_run: Optional[int] = attr.ib(default=None)

    scope = Scope.EPOCH

    def __attrs_post_init__(self):
        top = dict(self.config)["top"]
        if top not in EPOCH_SCOPED_TOP:
            raise ConfigError("top", f"{top!r} top level is accounted per step: use TrainingStepDpEvent", top)
        if self.steps_run is not None:
            per_epoch = self.training_config.steps_per_epoch
            if top != Top.SHUFFLE:
                raise ConfigError("steps_run", "only shuffled iteration accounts a partial epoch (a deterministic "
                                               "epoch's first step already holds the worst case)", self.steps_run)
            if isinstance(self.steps_run, bool) or not isinstance(self.steps_run, int) \
                    or not 1 <= self.steps_run < per_epoch:
                raise ConfigError("steps_run", f"must be an integer in 1..{per_epoch - 1} (None: the whole epoch)",
                                  self.steps_run)


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(name, "must be an integer", value)
    if value < 1:
        raise ConfigError(name, "must be >= 1", value)
    return value


def unit_event(config: TrainingConfig, theorem: Optional[str] = None) -> BoundDpEvent:
    """The composed unit of ``config``'s scheme: one step event, or one epoch event for epoch-scoped top levels.

    Args:
        config: The training configuration.
        theorem: The bound's T-id (None: the tightest sound upper bound for the scheme).

    Returns:
        A :class:`TrainingStepDpEvent` or :class:`TrainingEpochDpEvent`.
    """
    if config.top in EPOCH_SCOPED_TOP:
        return TrainingEpochDpEvent(config, theorem)
    return TrainingStepDpEvent(config, theorem)


def compositions(config: TrainingConfig, *, steps: Optional[int] = None, epochs: Optional[int] = None) -> int:
    """How many unit events S training steps (or E epochs) of ``config`` are.

    Step-scoped top level: S steps → S; E epochs → E · steps_per_epoch. Epoch-scoped
    (deterministic/shuffle): E epochs → E; S steps → ceil(S / steps_per_epoch), the epochs
    they touch (``config.steps_per_epoch`` = ceil(N / N'), or floor(N λ / Λ) for shuffling with ``drop_last``).

    Args:
        config: The training configuration.
        steps: Training steps S (give exactly one of ``steps`` and ``epochs``).
        epochs: Epochs E.

    Returns:
        The number of unit events.

    Raises:
        ConfigError: Neither or both, or a count below 1.
    """
    if (steps is None) == (epochs is None):
        raise ConfigError("steps", "give exactly one of steps and epochs", (steps, epochs))
    epoch_scoped = config.top in EPOCH_SCOPED_TOP
    if steps is not None:
        steps = _count("steps", steps)
        return -(-steps // config.steps_per_epoch) if epoch_scoped else steps
    epochs = _count("epochs", epochs)
    return epochs if epoch_scoped else epochs * config.steps_per_epoch


def partial_epoch_steps(config: TrainingConfig, steps: int) -> int:
    """Steps of the unfinished last epoch of a run of ``steps`` training steps that the accounting tells apart
    from a whole epoch: S mod steps_per_epoch for shuffled iteration (its attained law depends on it), else 0.

    Args:
        config: The training configuration.
        steps: Training steps S.

    Returns:
        The steps of the partial last epoch (0: none, or not shuffled).
    """
    return _count("steps", steps) % config.steps_per_epoch if config.top == Top.SHUFFLE else 0


def training_event(config: TrainingConfig, *, steps: Optional[int] = None, epochs: Optional[int] = None,
                   theorem: Optional[str] = None) -> dp_event.DpEvent:
    """The event of S training steps (or E epochs) of ``config``: the unit event self-composed.

    The only conversion of training steps into composed mechanisms in tsdp (module docstring).

    Shuffled iteration stopped inside an epoch (S not a multiple of steps_per_epoch) is the
    whole epochs then one partial epoch event (``steps_run`` = S mod steps_per_epoch), a
    ``ComposedDpEvent``; both estimates account the partial epoch as the steps that ran
    (:class:`TrainingEpochDpEvent`).

    Args:
        config: The training configuration.
        steps: The number of training steps S (give exactly one of ``steps`` and ``epochs``).
        epochs: The number of epochs E.
        theorem: The bound's T-id (None: the tightest sound upper bound for the scheme).

    Returns:
        The unit event (:class:`TrainingStepDpEvent` or :class:`TrainingEpochDpEvent`) self-composed
            :func:`compositions` times; for shuffled iteration stopped inside an epoch, a ``ComposedDpEvent``
            (above).

    Raises:
        ConfigError: Neither or both of ``steps`` and ``epochs``, or a count below 1.

    Example:
        Account 100 training steps of the paper's Section 5 configuration::

            import tsdp

            event = tsdp.training_event(tsdp.DEFAULT_CONFIG, steps=100)
            print(tsdp.account(event, delta=1e-5).epsilon_sound)
    """
    unit = unit_event(config, theorem)
    count = compositions(config, steps=steps, epochs=epochs)
    partial = 0 if steps is None else partial_epoch_steps(config, steps)
    if not partial:
        return dp_event.SelfComposedDpEvent(unit, count)
    last = TrainingEpochDpEvent(config, theorem, steps_run=partial)
    whole = [dp_event.SelfComposedDpEvent(unit, count - 1)] if count > 1 else []
    return dp_event.ComposedDpEvent(whole + [dp_event.SelfComposedDpEvent(last, 1)])


def bound_event_of(event: dp_event.DpEvent) -> BoundDpEvent:
    """The first bound event of a composed run (what :func:`training_event`'s run is accounted with).

    Args:
        event: A bound event or a composition of them.

    Returns:
        Its first bound event.

    Raises:
        ConfigError: ``event`` holds none.
    """
    if isinstance(event, BoundDpEvent):
        return event
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return bound_event_of(event.event)
    if isinstance(event, dp_event.ComposedDpEvent) and event.events:
        return bound_event_of(event.events[0])
    raise ConfigError("event", "holds no bound event", type(event).__name__)


def count_compositions(event: dp_event.DpEvent) -> int:
    """The number of bound events (compositions) in a composed event; what a report labels "compositions".

    Args:
        event: An event, composed or not.

    Returns:
        The number of bound events in it.
    """
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return event.count * count_compositions(event.event)
    if isinstance(event, dp_event.ComposedDpEvent):
        return sum(count_compositions(e) for e in event.events)
    return 1 if isinstance(event, BoundDpEvent) else 0


# ----------------------------------------------------------------------------- inference (Appendix H, T15)


def _inference_items(config) -> Tuple[Tuple[str, object], ...]:
    """An :class:`~tsdp.theorems.bounds.inference.InferenceConfig` as sorted (field, value) pairs (validated)."""
    from tsdp.theorems.bounds.inference import InferenceConfig

    if isinstance(config, InferenceConfig):
        return tuple(sorted(config.as_dict().items()))
    if isinstance(config, (tuple, list)):
        items = tuple((str(k), v) for k, v in config)
        InferenceConfig(**dict(items))  # validates
        return tuple(sorted(items))
    raise ConfigError("config", "must be an InferenceConfig", config)


@attr.s(frozen=True, slots=True)
class InferenceReleaseDpEvent(BoundDpEvent):
    """One private forecast release (paper Appendix H): Poisson keep rate r per context step,
    N(0, σ²) on kept values, mean imputation, a forecast; accounted with T15 (an upper bound).

    Attributes:
        config: The release's :class:`~tsdp.theorems.bounds.inference.InferenceConfig` (or its (field, value)
            pairs, validated; stored sorted).
        theorem: The bound's T-id (default T15).

    Raises:
        ConfigError: ``config`` is not an InferenceConfig, or a field is invalid.
    """

    config: Tuple[Tuple[str, object], ...] = attr.ib(converter=_inference_items)
    theorem: Optional[str] = attr.ib(default="T15", converter=_theorem_id)

    scope = Scope.RELEASE


def inference_event(config) -> dp_event.SelfComposedDpEvent:
    """``config.releases`` releases of overlapping contexts of one series: the release event self-composed.

    Each release draws its own keep pattern and noise; a (w, v)-event touches at most m = min(w, L_C)
    steps of any context, so every release is dominated by T15 and k releases by its k-fold composition.

    Args:
        config: The :class:`~tsdp.theorems.bounds.inference.InferenceConfig`.

    Returns:
        The release event self-composed ``config.releases`` times.
    """
    return dp_event.SelfComposedDpEvent(InferenceReleaseDpEvent(config.with_(releases=1)), config.releases)


@dataclass(frozen=True)
class LedgerEntry:
    """One run of identical events in a composed ledger (:func:`ledger_summary`).

    Attributes:
        event: the event's class name (``TrainingStepDpEvent``, ``TrainingEpochDpEvent``, ...).
        count: how many times it was composed in a row (steps, or epochs for an epoch-scoped scheme).
        theorem: the bound the event names (None: the accountant's default, the tightest sound one); None, with
            ``config`` None, for an event that is no bound event.
        config: the configuration fields that differ from the first entry's (all of them for the first); None for
            an event that carries no configuration (then ``as_dict`` has neither ``theorem`` nor ``config``).
        steps_run: the steps a partial shuffled epoch ran (:class:`TrainingEpochDpEvent`'s ``steps_run``); None for
            a whole epoch or a step event (then ``as_dict`` has no ``steps_run``).
    """

    event: str
    count: int
    theorem: Optional[str] = None
    config: Optional[dict] = None
    steps_run: Optional[int] = None

    def as_dict(self) -> dict:
        """The JSON form: ``event`` and ``count``, then ``theorem``, ``steps_run`` (a partial epoch only) and
        ``config`` where the event carries them."""
        out = {"event": self.event, "count": self.count}
        if self.config is not None:
            out["theorem"] = self.theorem
            if self.steps_run is not None:
                out["steps_run"] = self.steps_run
            out["config"] = self.config
        return out


def ledger_summary(event: dp_event.DpEvent) -> Tuple[LedgerEntry, ...]:
    """A composed event as one :class:`LedgerEntry` per run of identical events, in order, each naming only the
    configuration fields that differ from the first entry's (all of them for the first).

    Args:
        event: A composed event.

    Returns:
        One entry per run of identical events, in order.
    """
    flat: list = []

    def walk(e, count):
        if isinstance(e, dp_event.SelfComposedDpEvent):
            walk(e.event, count * e.count)
        elif isinstance(e, dp_event.ComposedDpEvent):
            for inner in e.events:
                walk(inner, count)
        elif not isinstance(e, dp_event.NoOpDpEvent):
            flat.append((e, count))

    walk(event, 1)
    out, first = [], None
    for e, count in flat:
        if isinstance(e, BoundDpEvent):
            fields = dict(e.config)
            first = fields if first is None else first
            out.append(LedgerEntry(type(e).__name__, count, e.theorem,
                                   {k: v for k, v in fields.items() if fields is first or first.get(k) != v},
                                   getattr(e, "steps_run", None)))
        else:
            out.append(LedgerEntry(type(e).__name__, count))
    return tuple(out)
