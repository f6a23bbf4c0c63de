"""Section 1 of the report: the configuration and its accounting (paper Appendix B.3).

Sound ε (upper bound, connect-the-dots, rounded up) and attained ε (the construction's pair,
optimistic, a lower bound rounded down; None without a construction; for shuffled iteration the
hidden-position epoch's max statistic, ``attained_law``) at δ ∈ {1e-5, 1e-7}
after 1, 100, 1000 steps and 1, 10 epochs, each from :func:`verify.accounting.epsilon` through the report's one
accounting (:class:`reports.report_accounting.ReportAccounting`) with the tightest sound bound for the scheme
(:func:`theorems.registry.select_bound`).
"""
from __future__ import annotations

from typing import Callable, Optional

from tsdp.theorems.bounds.base import Scope, TheoremError
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import REGISTRY
from tsdp.verify.events import EPOCH_SCOPED_TOP
from tsdp.verify.pld import PldSettings

from .report_accounting import ReportAccounting

CATALOGUE_DELTA = 1e-5
CATALOGUE_DISCRETIZATION = 1e-3

DELTAS = (1e-5, 1e-7)
SCHEDULES = (("steps", 1), ("steps", 100), ("steps", 1000), ("epochs", 1), ("epochs", 10))


def derived(config: TrainingConfig) -> dict:
    """The configuration's derived quantities (THEOREMS.md notation): T, k, r, ρ, φ, N', steps per epoch.

    Args:
        config: The configuration.

    Returns:
        The quantities by name.
    """
    return {"T": config.T, "k": config.k, "r": float(config.r), "rho": float(config.rho), "phi": float(config.phi),
            "q": float(config.q), "sequences_per_step": config.sequences_per_step,
            "compositions_per_epoch": config.compositions_per_epoch,
            "steps_per_epoch": config.steps_per_epoch, "N_tot": config.n_windows_total}


def accounting_section(config: TrainingConfig, theorem: Optional[str] = None,
                       tick: Optional[Callable[[], None]] = None,
                       answers: Optional[ReportAccounting] = None) -> dict:
    """ε of the configuration at δ ∈ {1e-5, 1e-7} after 1/100/1000 steps and 1/10 epochs.

    Each row is one :func:`verify.accounting.epsilon` answer (default discretisation 1e-4):
    ``epsilon_sound`` an upper bound on ε (rounded up; None for a lower-bound theorem),
    ``epsilon_attained`` a lower bound (rounded down) or None where the bound has no
    construction. Schedules of the same composed run (1 epoch = 10 steps at the default) share one
    answer (:class:`~reports.report_accounting.ReportAccounting`). ``tick`` is called after each row (progress).

    Args:
        config: The configuration.
        theorem: The bound to account with (None: the registry's choice for the scheme).
        tick: Called after each row (None: nothing).
        answers: The report's accounting (None: one of this section's own).

    Returns:
        The section's JSON data: the configuration, its derived quantities, the bound and the rows.
    """
    answers = ReportAccounting() if answers is None else answers
    rows = []
    theorem_used, reason, kind, law = None, None, None, None
    for delta in DELTAS:
        for unit, n in SCHEDULES:
            res = answers.epsilon(config, delta, theorem=theorem, **{unit: n})
            theorem_used, reason, kind, law = res.theorem, res.reason, res.kind, res.attained_law
            rows.append({"delta": delta, unit: n, "steps": n if unit == "steps" else None,
                         "epochs": n if unit == "epochs" else None, "compositions": res.compositions,
                         "epsilon_sound": res.epsilon, "epsilon_attained": res.epsilon_attained,
                         "construction": res.construction,
                         "discretization": res.discretization_used or res.discretization})
            if tick is not None:
                tick()
    return {"config": config.as_dict(), "derived": derived(config), "theorem": theorem_used, "kind": kind,
            "reason": reason, "attained_law": law, "rows": rows, "catalogue": catalogue(config, answers)}


def catalogue(config: TrainingConfig, answers: Optional[ReportAccounting] = None) -> list:
    """Every training bound of the registry at this configuration: one composition's ε at δ = 1e-5.

    Iterates :data:`tsdp.theorems.registry.REGISTRY` (a bound added there appears here with no
    other edit). For each bound: whether it applies to the configured scheme (and why not),
    its sound ε (upper bound; None for a lower bound) and attained ε (lower bound; None
    without a construction), discretisation 1e-3.

    Args:
        config: The configuration.
        answers: The report's accounting (None: one of its own).

    Returns:
        One row per bound of the registry.
    """
    answers = ReportAccounting() if answers is None else answers
    rows = []
    unit = "epochs" if config.top in EPOCH_SCOPED_TOP else "steps"
    for bound in REGISTRY.values():
        if bound.scope not in (Scope.STEP, Scope.EPOCH):
            continue
        row = {"theorem": bound.id, "reference": bound.reference, "kind": bound.kind, "scope": bound.scope,
               "applies": True, "why_not": None, "epsilon_sound": None, "epsilon_attained": None}
        try:
            res = answers.epsilon(config, CATALOGUE_DELTA, theorem=bound.id,
                                  settings=PldSettings(CATALOGUE_DISCRETIZATION), **{unit: 1})
            row.update(epsilon_sound=res.epsilon, epsilon_attained=res.epsilon_attained)
        except TheoremError as exc:
            row.update(applies=False, why_not=str(exc))
        rows.append(row)
    return rows
