"""The accountant: one dp-accounting ``PrivacyAccountant`` over tsdp's privacy events.

Paper Appendix B.3: the one-step (one-epoch) privacy profile of the bound an event names
becomes a PLD by connect-the-dots (:mod:`tsdp.verify.pld`), and the library composes it.
This module is the only place in tsdp that composes PLDs; the training loop, the canary
audit, the Monte Carlo auditors, the checks and the report all get their ε from it.

Three estimates over the same events (``PldAccountant(estimate=...)``):

* ``"sound"`` (default): the theorem's profile exactly as stated, pessimistic
  connect-the-dots, composed. For an upper or tight bound this is an **upper** bound on the
  composed ε and it rounds up. A lower bound (T3, T9, T10, T14) is refused: a lower bound
  never stands in for a budget. A shuffled epoch that holds the changed sequence with probability
  ρ < 1 only (a partial last epoch, or an epoch that drops its last step) is that profile mixed with
  silence by ρ (:func:`tsdp.verify.pld.mixture.revealed_mixture`).
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

The jobs are split: the one-step PLD of an event and the refusals (:mod:`tsdp.verify.one_step`), the choice of
bound (:mod:`tsdp.verify.resolution`), this accountant, both estimates of one event
(:func:`~tsdp.verify.event_accounting.account`) and the budget search (:mod:`tsdp.verify.budget`); their names are
re-exported here.

Events (:mod:`tsdp.verify.events`): ``TrainingStepDpEvent``, ``TrainingEpochDpEvent`` (or any
``BoundDpEvent``), composed with the library's ``SelfComposedDpEvent`` / ``ComposedDpEvent``;
``NoOpDpEvent`` costs nothing, ``NonPrivateDpEvent`` makes ε infinite. Composition is lazy:
``compose`` records the event in the ledger, ``get_epsilon`` / ``get_delta`` compose the
recorded PLDs once (cached) in the recorded order.
"""
from __future__ import annotations

from tsdp.theorems.config import ConfigError, check_delta, check_epsilon

from .budget import largest_within, max_steps
from .estimate import ESTIMATES, SOUND_KINDS, DeltaTooSmallError, Estimate, UnsupportedBoundError, check_estimates
from .event_accounting import EventAccounting, account
from .one_step import attained_law_name, one_step_pld
from .pld_accountant import PldAccountant

__all__ = ["PldAccountant", "Estimate", "ESTIMATES", "SOUND_KINDS", "UnsupportedBoundError", "DeltaTooSmallError",
           "check_estimates", "one_step_pld", "attained_law_name", "EventAccounting", "account", "max_steps",
           "largest_within", "ConfigError", "check_delta", "check_epsilon"]
