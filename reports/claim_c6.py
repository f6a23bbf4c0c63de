"""Claim C6 (Appendix C.2): black-box T13 (one record) underestimates the pooled loop's leakage.

On the pooled version of the configuration, one step, δ = 1e-3: ε_T13 is the **sound** ε of
the standard one-record guarantee (upper, rounded up) - a bound for a *different relation*:
it covers a change of one record (one window), while the attack changes one element of a
series, which lies in k windows (event-level relation); ε_T14 the **attained** ε of the
element-level construction (lower, rounded down); the audit's ``epsilon_lower`` a **lower**
confidence bound measured through the real pooled loop (attacks.montecarlo.audit). An audit above ε_T13
is therefore the claim, not a privacy violation. One cell: the pooled configuration.

What the audit can show at its trials is computed, not assumed: the designed test's expected certified ε at the trials
run (its ideal, :func:`tsdp.attacks.montecarlo.design.design_test`) and the trials per world at which it would
certify ε_T13 at the audit's confidence (:func:`tsdp.attacks.montecarlo.design.trials_to_certify`; none when
ε_T14 ≤ ε_T13: the construction cannot).
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import List, Tuple

from tsdp.attacks.montecarlo.verdict import percent_text
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.constructions import RELATION_MISMATCH as WHY_BELOW
from tsdp.verify import accounting

from .claim_base import (CONFIRMED, NOT_EVALUATED, QUALIFIED, REFUTED, Cells, Claim, ClaimContext, Computed, lower4,
                         upper4)
from .schema import AuditStatus

DELTA = 1e-3
CONFIDENCE = 0.95
"""The audit's confidence (the auditor's default), at which the trials needed are computed."""
SEARCH_CAP = 10**7
"""The largest trial count :func:`power` searches (the test design's cost grows with the trials)."""


def power(pooled: TrainingConfig, trials: int, target: float, attained: float) -> dict:
    """What the element-level construction's audit can certify: ``ideal``, the designed test's expected ε lower bound
    at ``trials`` trials per world (None for no trials), and ``trials_needed``, the trials per world at which it
    would certify ``target`` (ε_T13) at :data:`CONFIDENCE` (None: not within :data:`SEARCH_CAP`, or never when
    ``attained`` (ε_T14, the limit at infinitely many trials) is not above it: ``cannot``).

    Args:
        pooled: The pooled configuration.
        trials: Trials per world (0: none).
        target: ε_T13, the ε to certify.
        attained: ε_T14, the limit at infinitely many trials.

    Returns:
        ``{"ideal", "trials_needed", ...}`` (JSON data).
    """
    from tsdp.attacks.montecarlo.constructions import build, pair_numeric
    from tsdp.attacks.montecarlo.design import design_test, trials_to_certify
    from tsdp.attacks.montecarlo.laws import statistic_law

    law = statistic_law(pair_numeric(build("T14", pooled).pair), 1)
    ideal = design_test(law, trials, DELTA, CONFIDENCE).expected_union if trials else None
    cannot = attained is None or not attained > target
    needed = None if cannot else trials_to_certify(law, target, DELTA, CONFIDENCE, start=max(trials, 1000),
                                                   cap=SEARCH_CAP)
    return {"ideal": ideal, "trials_needed": needed, "cannot": cannot, "confidence": CONFIDENCE,
            "search_cap": SEARCH_CAP}



def c6_config(config: TrainingConfig) -> TrainingConfig:
    """The pooled-window version of the configuration (every window of every series, Λ WOR).

    Args:
        config: The configuration.

    Returns:
        Its pooled-window version.
    """
    return config.with_(top="pooled", bottom="wr", instances=1, sigma_context=0.0, sigma_forecast=0.0, lengths=None)


def reach_text(reach, trials: int, t13: float) -> str:
    """The power clause of C6's reason: the audit's ideal at its trials and the trials that would certify ε_T13.

    Args:
        reach (dict | None): What :func:`power` returned (None or empty: no clause).
        trials: The audit's trials per world.
        t13: ε_T13.

    Returns:
        The clause ('' without ``reach``).
    """
    if not reach:
        return ""
    conf = percent_text(reach["confidence"])
    out = (f": at {trials} trials per world the designed test expects to certify ε ≥ {lower4(reach['ideal'])} (its ideal)"
           if reach["ideal"] is not None and trials else "")
    if reach["cannot"]:
        return out + "; the element-level construction cannot certify ε_T13 at any number of trials"
    if reach["trials_needed"] is None:
        return out + f"; it would need more than {reach['search_cap']:.0e} trials per world to certify ε_T13"
    return out + (f"; about {reach['trials_needed']:.2g} trials per world would certify ε_T13 = {upper4(t13)} at "
                  f"{conf} confidence")


class C6(Claim):
    """Claim C6 (THEOREMS.md; paper Appendix C.2): black-box use of the standard guarantee (T13, Prop. C.1, tight for
    one record) underestimates the leakage of the pooled-window loop, where one element lies in k windows: an
    attack exceeds it, a relation mismatch, not a privacy violation. Runs the Monte Carlo auditor
    (:attr:`audits`); :attr:`statement` words it, :meth:`rule` judges it."""

    id = "C6"
    on_configuration = True
    audits = True
    statement = ("black-box use of the standard guarantee (T13, one record) underestimates the leakage: an attack on the "
                 "pooled-window loop exceeds it")

    def compute(self, config: TrainingConfig, quick: bool, ctx: ClaimContext) -> Computed:
        pooled = c6_config(config)
        t13 = accounting.epsilon(pooled, DELTA, steps=1, theorem="T13")
        t14 = accounting.epsilon(pooled, DELTA, steps=1, theorem="T14")
        audit = None
        if ctx.audit_fn is not None:
            ctx.step(f"audit of T14, {ctx.trials:.0e} trials per world")
            audit = ctx.audit_fn("T14", pooled, trials=ctx.trials, steps=1, delta=DELTA, seed=ctx.seed)
        ctx.step("C6: what the audit can certify (test design)")
        try:
            reach = power(pooled, ctx.trials if audit is not None else 0, t13.epsilon, t14.epsilon_attained)
        except ImportError:  # the construction needs torch
            reach = None
        cells = Cells(grid=1, evaluated=[f"pooled configuration (N_tot = {pooled.n_windows_total}, k = {pooled.k})"])
        numbers = {"delta": DELTA, "k": pooled.k, "N_tot": pooled.n_windows_total, "batch_size": pooled.batch_size,
                   "epsilon_T13_sound": t13.epsilon, "epsilon_T14_attained": t14.epsilon_attained, "audit": audit,
                   "audit_status": AuditStatus.RAN if audit is not None else AuditStatus.NOT_AVAILABLE,
                   "why_T13_below": WHY_BELOW.format(k=pooled.k), "power": reach, "cells": cells.as_dict(quick)}
        return Computed(numbers, {"delta": DELTA})

    @staticmethod
    def rule(numbers: dict) -> Tuple[str, str]:
        """Confirmed when the audit's lower bound exceeds ε_T13; qualified when only theory shows it
        (ε_T14 > ε_T13) because no audit ran or it was not significant; refuted when
        ε_T14 ≤ ε_T13 (nothing to underestimate, e.g. k = 1); not evaluated without ε_T14."""
        t13, t14, audit = numbers["epsilon_T13_sound"], numbers["epsilon_T14_attained"], numbers["audit"]
        if t14 is None:
            return NOT_EVALUATED, "no attained ε for T14"
        if not t14 > t13:
            return REFUTED, (f"ε_T14 (attained) {lower4(t14)} ≤ ε_T13 (sound) {upper4(t13)} at k = {numbers['k']}: the "
                             "one-record guarantee covers this configuration")
        if audit is not None and audit["epsilon_lower"] > t13:
            return CONFIRMED, (f"the audit of the pooled loop certifies ε ≥ {lower4(audit['epsilon_lower'])} "
                               f"({percent_text(audit['confidence'])} confidence, {audit['trials']} trials per world) > "
                               f"ε_T13 = {upper4(t13)}, theory ε_T14 = {lower4(t14)}; {numbers['why_T13_below']}")
        if audit is None:
            return QUALIFIED, (f"audit not available; theory only: ε_T14 (attained) {lower4(t14)} > ε_T13 (sound) {upper4(t13)}"
                               + reach_text(numbers.get("power"), 0, t13))
        return QUALIFIED, (f"theory ε_T14 = {lower4(t14)} > ε_T13 = {upper4(t13)}, but the audit's lower bound "
                           f"{lower4(audit['epsilon_lower'])} ({audit['trials']} trials per world) does not exceed ε_T13"
                           + reach_text(numbers.get("power"), audit["trials"], t13))

    def figure(self, result: dict, out: Path) -> List[str]:
        """ε of the pooled configuration at δ = 1e-3, one step: T13 (sound, one record), T14
        (attained, element level) and the audit's lower confidence bound, with why T13 sits below."""
        from .figures import WIDTH_IN, save, show_zero, plt

        n = result["numbers"]
        fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.4), layout="constrained")
        names = ["T13 sound (one record)", "T14 attained (element)"]
        values = [n["epsilon_T13_sound"], n["epsilon_T14_attained"]]
        colors, sides = ["C0", "C1"], [upper4, lower4]  # each label on its bound's safe side
        if n["audit"] is not None:
            names.append(f"audit LCB ({n['audit']['trials']:.0e} trials)")
            values.append(n["audit"]["epsilon_lower"])
            colors.append("C3")
            sides.append(lower4)
        ax.barh(names, values, color=colors)
        for y, (v, side) in enumerate(zip(values, sides)):
            if v > 0:
                ax.text(v, y, f" {side(v)}", va="center")
        show_zero(ax, values)
        ax.set_xlabel(f"ε at δ = {n['delta']:g}, one step (pooled windows, k = {n['k']})")
        ax.set_xlim(0, 1.25 * max(values))
        ax.set_title("C6: why the one-record bound T13 sits below the attack")
        fig.supxlabel(textwrap.fill(n["why_T13_below"], 100), ha="left", x=0.01)
        return [save(fig, out, "c6.png")]


CLAIM = C6()
