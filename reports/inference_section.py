"""Report section: inference-time privacy (paper Section 4.4 and Appendix H, bound T15).

The shape of the paper's inference tables: test CRPS of private forecasts by ε and keep rate
r, σ calibrated per cell under T15's sound accounting (an upper bound, so every cell is at
least as private as its ε), on seeded synthetic data and on a real public panel shipped with
tsdp (Grunfeld's investment data as statsmodels has it, 11 firms x 20 years,
:func:`tsdp.datasets.formats.grunfeld`; each series scaled to unit standard deviation so
that v = 1 is one standard deviation). The numbers come from
:func:`tsdp.attacks.inference.crps_table.inference_table`; nothing is computed here.
"""
from __future__ import annotations

from typing import Callable, Optional

from tsdp.datasets.formats import grunfeld
from tsdp.datasets.series import SeriesData

from .claim_base import NOT_EVALUATED, NOT_REPRODUCED, QUALIFIED, REPRODUCED, p_value_text
from .schema import AuditStatus

QUICK = ({"epsilons": (1.0, 4.0), "rates": (1.0, 0.5)}, {"repeats": 2, "n_samples": 50})
FULL = ({}, {"repeats": 5, "n_samples": 100})
"""The (ε, r) grid's and the releases' settings of the quick and the full section (InferenceGrid, Releases)."""


def _unit_std(data) -> SeriesData:
    """``data`` with each series scaled to unit standard deviation (so that v = 1 is one standard deviation)."""
    return SeriesData(tuple(s / s.std() for s in data.series), data.starts)


def inference_section(*, quick: bool = False, seed: int = 0, tick: Optional[Callable[[str], None]] = None,
                      real_data=None) -> dict:
    """{"synthetic": table, "grunfeld": table, "grunfeld_status": "ran"}; tables as
    :func:`tsdp.attacks.inference.crps_table.inference_table` returns them. ``real_data``: (name, SeriesData)
    of the real panel (`tsdp report --data`), scaled like Grunfeld; None: Grunfeld's panel (``invest``), shipped
    with tsdp.

    Args:
        quick: The quick run (fewer releases).
        seed: The seed.
        tick: Called with what starts (progress; None: nothing).
        real_data (tuple | None): (name, SeriesData) of a real panel (None: Grunfeld's).

    Returns:
        The section's JSON data.
    """
    from tsdp.attacks.inference.crps_table import InferenceGrid, Releases, inference_table

    grid, releases = QUICK if quick else FULL
    opts = {"grid": InferenceGrid(**grid), "releases": Releases(seed=seed, **releases)}
    out = {"synthetic": inference_table(epochs=30, **opts).as_dict()}
    if tick is not None:
        tick("inference synthetic")
    if real_data is None:
        real, name = _unit_std(grunfeld()[0]), "grunfeld (statsmodels' copy), unit-std scaled"
    else:
        real, name = _unit_std(real_data[1]), f"{real_data[0]}, unit-std scaled"
    out["grunfeld"] = inference_table(data=real, data_name=name, context_length=4, forecast_length=2, epochs=30,
                                      **opts).as_dict()
    out["grunfeld_status"] = AuditStatus.RAN
    if tick is not None:
        tick("inference grunfeld")
    return out


SIGNIFICANCE = 0.05
"""The level of the two-sided Welch test of each measured comparison (r < 1 against r = 1 at one ε)."""


def measured_verdict(table: dict, name: str) -> dict:
    """Claim C11 on one measured inference table (an :class:`~reports.claim_base.OtherVerdict`'s dict): at each small ε
    (ε ≤ 1, else the smallest ε of the table), the best keep rate r < 1 against r = 1 by a two-sided Welch t-test on
    the releases' CRPS (``repeats`` each; the table's std is over releases, ddof 0) at :data:`SIGNIFICANCE`.
    'reproduced' when r < 1 is significantly better at some small ε (subsampling helps there), 'not reproduced' when
    r = 1 is significantly better at every small ε, 'qualified' when the test sees no difference (with the releases
    it had), 'not evaluated' without an r < 1 column. 'Helps' may be found at any of the m comparisons (small ε, r < 1)
    the best r < 1 is picked from, so each is tested at :data:`SIGNIFICANCE` / m (union bound: 'reproduced' errs with
    probability at most :data:`SIGNIFICANCE`); 'hurts' must hold at every small ε, each at :data:`SIGNIFICANCE`.

    Args:
        table: A measured inference table.
        name: The data's name (in the verdict's source).

    Returns:
        The verdict's JSON data.
    """
    from scipy.stats import ttest_ind_from_stats

    n = int(table["settings"]["repeats"])
    private = sorted({r["epsilon"] for r in table["rows"] if r["epsilon"] != float("inf")})
    small = [e for e in private if e <= 1] or private[:1]
    cell = {(r["epsilon"], r["r"]): r for r in table["rows"]}
    comparisons = sum(1 for r in table["rows"] if r["epsilon"] in small and r["r"] < 1
                      and (r["epsilon"], 1.0) in cell)
    found = []
    for eps in small:
        subs = [r for r in table["rows"] if r["epsilon"] == eps and r["r"] < 1]
        full = cell.get((eps, 1.0))
        if not subs or full is None or n < 2:
            continue
        sub = min(subs, key=lambda r: r["crps"])
        scale = (n / (n - 1)) ** 0.5
        p = float(ttest_ind_from_stats(sub["crps"], sub["crps_std"] * scale, n, full["crps"], full["crps_std"] * scale,
                                       n, equal_var=False).pvalue)
        found.append({"epsilon": eps, "r": sub["r"], "crps_r": sub["crps"], "crps_r1": full["crps"], "p_value": p,
                      "helps": sub["crps"] < full["crps"] and p < SIGNIFICANCE / comparisons,
                      "hurts": sub["crps"] > full["crps"] and p < SIGNIFICANCE})
    source = f"the report's section 6, measured on {name}"
    if not found:
        return {"source": source, "verdict": NOT_EVALUATED, "verdict_text": f"not evaluated on {name} (no r < 1 "
                "column at a small ε, or fewer than 2 releases)", "reason": "nothing to compare"}
    word = (REPRODUCED if any(f["helps"] for f in found) else
            NOT_REPRODUCED if all(f["hurts"] for f in found) else QUALIFIED)
    reason = "; ".join(f"ε = {f['epsilon']:g}: r = {f['r']:g} CRPS {f['crps_r']:.4g} against r = 1 {f['crps_r1']:.4g}, "
                       f"Welch p = {p_value_text(f['p_value'], f['helps'] or f['hurts'])}" for f in found)
    reason += (f" ({n} releases per cell, two-sided; r < 1 better at {SIGNIFICANCE:g} / {comparisons} over the "
               f"{comparisons} comparison{'s' if comparisons > 1 else ''} the best r < 1 is picked from (union bound), "
               f"worse at {SIGNIFICANCE:g} at every small ε)")
    if word == QUALIFIED:
        reason += ": no difference this test could see"
    return {"source": source, "verdict": word,
            "verdict_text": f"{word} on {name} ({len(found)} small-ε cell{'s' if len(found) > 1 else ''})",
            "reason": reason}


def attach_measured(claims: list, inference: dict) -> None:
    """Add the inference section's measured verdicts (:func:`measured_verdict`, synthetic and the real panel) to claim
    C11's other verdicts in ``claims`` (results.json's list), once the section has run.

    Args:
        claims: results.json's claims (changed in place).
        inference: The inference section.
    """
    c11 = next((c for c in claims if c["id"] == "C11"), None)
    if c11 is None or inference is None:
        return
    for key in ("synthetic", "grunfeld"):
        table = inference.get(key)
        if table is not None:
            name = "synthetic data" if key == "synthetic" else table["settings"].get("data", key)
            c11["other_verdicts"].append(measured_verdict(table, name))
