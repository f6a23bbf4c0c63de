"""Property 8: composition through the accountant (:mod:`verify.accounting`, paper Appendix B.3).

For every bound with a construction (T1-T4, T6-T10, T13, T14), the sound composed ε (the
theorem's profile, pessimistic connect-the-dots, composed; an upper bound) must be ≥ the
attained composed ε (the construction's pair, optimistic buckets, composed; a lower bound),
and both must be non-decreasing in the number of steps (paper Lemma `general_composition`:
composing more mechanisms never decreases the profile).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from tsdp.theorems.bounds.base import Bound, PairBound
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY

from .result import CheckResult, config_dict, result

COMPOSITION_TOL = 1e-9
"""Absolute slack on ε for the comparisons (the accountant's float arithmetic)."""

DISCRETIZATION = 1e-3
"""The paper's value discretisation (Appendix B.3); dp-accounting's default is 1e-4."""


def composition(b: Bound, config: TrainingConfig, label: str = "", schedule: Sequence[int] = (1, 10, 100),
                delta: float = 1e-5, discretization: float = DISCRETIZATION,
                construction: Optional[PairBound] = None) -> CheckResult:
    """Property 8 for bound ``b`` (every T-id with a construction): sound ε ≥ attained ε, both monotone.

    The accountant's building blocks on the bound object itself: sound one-step PLD
    ``verify.pld.sound_pld(b, config)`` (pessimistic connect-the-dots of b's profile) and
    attained ``verify.pld.pair_pld(construction pair, pessimistic=False)`` read through
    ``verify.pld.attained_envelope`` (max over 1, 2, 4, ..., n compositions) (``construction``
    defaults to the registry's ``b.construction``: T7 → T9, T2 → T3, T8 → T10, ...),
    each composed ``verify.accounting.compositions(b, config, steps|epochs=S)`` times for S
    in ``schedule`` (steps for step-scoped bounds, epochs for epoch-scoped ones), ε at
    δ = 1e-5, discretisation 1e-3, tolerance 1e-9 on ε. When ``b`` is the registry's
    object, the public ``verify.accounting.epsilon(..., theorem=b.id)`` must return the
    same two numbers (to 1e-9): the accountant is what is being checked.
    """
    from tsdp.verify.accounting import compositions as n_compositions
    from tsdp.verify.accounting import epsilon as account
    from tsdp.verify.pld import attained_envelope, compose, pair_pld, sound_pld

    if construction is None:
        construction = REGISTRY.get(b.construction) if b.construction else None
    if not isinstance(construction, PairBound):
        return result(f"P8.composition[{b.id}]@{label}", 8, (b.id,), False,
                      f"{b.id} has no construction pair to attain", config=config_dict(config))
    sound_one = sound_pld(b, config, discretization)
    att_one = pair_pld(construction.pair(config, check=False), discretization, pessimistic=False)
    via_accountant = REGISTRY.get(b.id) is b
    rows, worst_mismatch = [], 0.0
    for s in schedule:
        kw = {"epochs": s} if b.scope == "epoch" else {"steps": s}
        n = n_compositions(b, config, **kw)
        sound = float(compose(sound_one, n).get_epsilon_for_delta(delta))
        attained = attained_envelope(att_one, n, lambda p: float(p.get_epsilon_for_delta(delta)))
        row = {"S": s, "compositions": n, "sound": sound, "attained": attained}
        if via_accountant:
            acc = account(config, delta, theorem=b.id, discretization=discretization, **kw)
            row["accountant"] = [acc.epsilon, acc.epsilon_attained]
            worst_mismatch = max(worst_mismatch, abs(acc.epsilon - sound),
                                 abs((acc.epsilon_attained if acc.epsilon_attained is not None else np.inf) - attained))
        rows.append(row)
    sound = np.array([r["sound"] for r in rows])
    attained = np.array([r["attained"] for r in rows])
    gap = float(np.min(sound - attained))
    drop_sound = float(np.max(sound[:-1] - sound[1:])) if len(rows) > 1 else float("-inf")
    drop_att = float(np.max(attained[:-1] - attained[1:])) if len(rows) > 1 else float("-inf")
    ok = (gap >= -COMPOSITION_TOL and drop_sound <= COMPOSITION_TOL and drop_att <= COMPOSITION_TOL
          and worst_mismatch <= COMPOSITION_TOL)
    if ok:
        text = (f"sound ≥ attained ε(δ={delta}) after {list(schedule)} {b.scope}s, both non-decreasing"
                + ("; accountant agrees" if via_accountant else ""))
    else:
        text = (f"sound - attained min {gap:.3g}, sound drops by {drop_sound:.3g}, attained drops by "
                f"{drop_att:.3g}, accountant mismatch {worst_mismatch:.3g}")
    ids = (b.id,) + ((construction.id,) if construction.id != b.id else ())
    return result(
        f"P8.composition[{b.id}]@{label}", 8, ids, ok, text,
        measured={"rows": rows, "min_sound_minus_attained": gap, "max_sound_drop": drop_sound,
                  "max_attained_drop": drop_att, "accountant_mismatch": worst_mismatch if via_accountant else None,
                  "delta": delta, "discretization": discretization},
        tolerance={"abs_eps": COMPOSITION_TOL}, config=config_dict(config),
    )
