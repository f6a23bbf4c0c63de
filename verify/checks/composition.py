"""Property 8: composition through the accountant (:mod:`tsdp.verify.accountant`, paper Appendix B.3).

For every bound with a construction (T1-T4, T6-T11, T13, T14), the sound composed ε (the
theorem's profile, pessimistic connect-the-dots, composed; an upper bound) must be ≥ the
attained composed ε (the construction's pair, optimistic buckets, composed; a lower bound),
and both must be non-decreasing in the number of steps (paper Lemma `general_composition`:
composing more mechanisms never decreases the profile). The numbers are the accountant's
own (the check composes nothing itself); a bound under test that is not the registry's
object (a mutant) is substituted into the registry for the check
(:func:`tsdp.theorems.registry.substituted`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from tsdp.theorems.bounds.base import Bound, PairBound, Scope
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY, attained_pair, substituted

from .result import CheckResult, config_dict, result

if TYPE_CHECKING:
    from tsdp.verify.pld import PldSettings

COMPOSITION_TOL = 1e-9
"""Absolute slack on ε for the comparisons (the accountant's float arithmetic)."""

DISCRETIZATION = 1e-3
"""The paper's value discretisation (Appendix B.3); dp-accounting's default is 1e-4."""


def composition(b: Bound, config: TrainingConfig, label: str = "", schedule: Sequence[int] = (1, 10, 100),
                delta: float = 1e-5, settings: Optional[PldSettings] = None,
                construction: Optional[PairBound] = None) -> CheckResult:
    """Property 8 for bound ``b`` (every T-id with a construction): sound ε ≥ attained ε, both monotone.

    ``tsdp.verify.accounting.epsilon(config, δ, theorem=b.id, steps|epochs=S)`` for S in
    ``schedule`` (steps for step-scoped bounds, epochs for epoch-scoped ones), with ``b``
    (and ``construction``, default the registry's ``b.construction``: T7 → T9, T2 → T3, ...)
    in the registry; ε at δ = 1e-5, discretisation 1e-3, tolerance 1e-9 on ε. A lower bound
    (T3, T9, T10, T14) has no sound value: its attained ε is checked for monotonicity only.

    Args:
        b: The bound checked.
        config: The configuration.
        label: The configuration's label.
        schedule: The numbers of steps (epochs, for epoch scope) composed.
        delta: The δ at which ε is read.
        settings: The accountant's grid and truncations (None: discretisation :data:`DISCRETIZATION`, the
            library's truncations).
        construction: The pair a real attack attains (None: the registry's ``b.construction``).

    Returns:
        The check's result, with the sound and attained ε per composition count.
    """
    from tsdp.verify.accounting import epsilon_with
    from tsdp.verify.pld import PldSettings

    settings = PldSettings(DISCRETIZATION) if settings is None else settings

    if construction is None and b.attained_build is None and b.construction is not None:
        construction = REGISTRY.get(b.construction)  # the real attack, read before ``b`` enters the registry
    if construction is not None:  # the attack attains the construction's pair whatever ``b`` claims
        b = replace(b, attained_build=construction.build)
    if attained_pair(b, config) is None:
        return result(f"P8.composition[{b.id}]@{label}", 8, (b.id,), False,
                      f"{b.id} has no construction pair to attain", config=config_dict(config))
    with substituted(b):
        rows = []
        for s in schedule:
            kw = {"epochs": s} if b.scope == Scope.EPOCH else {"steps": s}
            acc = epsilon_with(config, delta, settings, theorem=b.id, **kw)
            rows.append({"S": s, "compositions": acc.compositions, "sound": acc.epsilon,
                         "attained": acc.epsilon_attained})
    lower_only = rows[0]["sound"] is None
    sound = np.array([np.inf if r["sound"] is None else r["sound"] for r in rows])
    attained = np.array([r["attained"] for r in rows])
    gap = float("inf") if lower_only else float(np.min(sound - attained))
    drop_sound = float(np.max(sound[:-1] - sound[1:])) if len(rows) > 1 and not lower_only else float("-inf")
    drop_att = float(np.max(attained[:-1] - attained[1:])) if len(rows) > 1 else float("-inf")
    ok = gap >= -COMPOSITION_TOL and drop_sound <= COMPOSITION_TOL and drop_att <= COMPOSITION_TOL
    if ok:
        text = (f"attained ε(δ={delta}) non-decreasing after {list(schedule)} {b.scope}s ({b.id} is a lower bound)"
                if lower_only else
                f"sound ≥ attained ε(δ={delta}) after {list(schedule)} {b.scope}s, both non-decreasing")
    else:
        text = f"sound - attained min {gap:.3g}, sound drops by {drop_sound:.3g}, attained drops by {drop_att:.3g}"
    ids = (b.id,) + ((construction.id,) if construction is not None and construction.id != b.id else ())
    return result(
        f"P8.composition[{b.id}]@{label}", 8, ids, ok, text,
        measured={"rows": rows, "min_sound_minus_attained": gap, "max_sound_drop": drop_sound,
                  "max_attained_drop": drop_att, "delta": delta, "discretization": settings.discretization},
        tolerance={"abs_eps": COMPOSITION_TOL}, config=config_dict(config),
    )
