"""Section 1 of the report: the configuration and its accounting (paper Appendix B.3).

Sound ε (upper bound, connect-the-dots, rounded up) and attained ε (the construction's pair,
optimistic, a lower bound rounded down; None without a construction) at δ ∈ {1e-5, 1e-7}
after 1, 100, 1000 steps and 1, 10 epochs, each straight from :func:`verify.accounting.epsilon`
with the tightest sound bound for the scheme (:func:`theorems.registry.select_bound`).
"""
from __future__ import annotations

from typing import Callable, Optional

from tsdp.theorems.config import TrainingConfig
from tsdp.verify import accounting

DELTAS = (1e-5, 1e-7)
SCHEDULES = (("steps", 1), ("steps", 100), ("steps", 1000), ("epochs", 1), ("epochs", 10))


def derived(config: TrainingConfig) -> dict:
    """The configuration's derived quantities (THEOREMS.md notation): T, k, r, ρ, φ, N', steps per epoch."""
    return {"T": config.T, "k": config.k, "r": float(config.r), "rho": float(config.rho), "phi": float(config.phi),
            "q": float(config.q), "sequences_per_step": config.sequences_per_step,
            "compositions_per_epoch": config.compositions_per_epoch,
            "steps_per_epoch": accounting.steps_per_epoch(config), "N_tot": config.n_windows_total}


def accounting_section(config: TrainingConfig, theorem: Optional[str] = None,
                       tick: Optional[Callable[[], None]] = None) -> dict:
    """ε of the configuration at δ ∈ {1e-5, 1e-7} after 1/100/1000 steps and 1/10 epochs.

    Each row is one :func:`verify.accounting.epsilon` call (default discretisation 1e-4):
    ``epsilon_sound`` an upper bound on ε (rounded up), ``epsilon_attained`` a lower bound
    (rounded down) or None where the bound has no construction. ``tick`` is called after
    each row (progress).
    """
    rows = []
    theorem_used, reason, kind = None, None, None
    for delta in DELTAS:
        for unit, n in SCHEDULES:
            res = accounting.epsilon(config, delta, theorem=theorem, **{unit: n})
            theorem_used, reason, kind = res.theorem, res.reason, res.kind
            rows.append({"delta": delta, unit: n, "steps": res.steps, "epochs": res.epochs,
                         "compositions": res.compositions, "epsilon_sound": res.epsilon,
                         "epsilon_attained": res.epsilon_attained, "construction": res.construction,
                         "discretization": res.discretization})
            if tick is not None:
                tick()
    return {"config": config.as_dict(), "derived": derived(config), "theorem": theorem_used, "kind": kind,
            "reason": reason, "rows": rows}
