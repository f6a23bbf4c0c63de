"""A structural check of a results.json dict against the schema documented in :mod:`tsdp.reports.schema` (keys and
types of a complete report, not the numbers: the tests recompute those independently)."""
from __future__ import annotations

from typing import List

from tsdp.reports.claim_base import VERDICTS
from tsdp.reports.claims import CLAIMS
from tsdp.reports.errata import ERRATA, STATUSES
from tsdp.reports.schema import SCHEMA_VERSION, RunStatus

TOP_KEYS = ("schema_version", "meta", "accounting", "claims", "consistency", "tightness", "errata", "inference",
            "violation", "violations")


def validate(results: dict) -> List[str]:
    """Structural problems of a results.json dict (empty list when it follows the schema above).

    Checks keys and types of a complete report, not the numbers (those are the claims' and
    the accountant's; the tests recompute them independently).

    Args:
        results: results.json's data.

    Returns:
        The problems, one line each.
    """
    problems = []
    for k in TOP_KEYS:
        if k not in results:
            problems.append(f"missing top-level key {k!r}")
    if problems:
        return problems
    if results["schema_version"] != SCHEMA_VERSION:
        problems.append(f"schema_version {results['schema_version']!r} != {SCHEMA_VERSION}")
    if results["meta"].get("status") != RunStatus.COMPLETE:
        problems.append(f"status {results['meta'].get('status')!r}")
        return problems
    acc = results["accounting"]
    for k in ("config", "derived", "theorem", "rows"):
        if k not in acc:
            problems.append(f"accounting.{k} missing")
    if len(acc.get("rows", [])) != 10:
        problems.append(f"accounting.rows has {len(acc.get('rows', []))} rows, expected 10")
    ids = [c.get("id") for c in results["claims"]]
    if ids != list(CLAIMS):
        problems.append(f"claims ids {ids}")
    for c in results["claims"]:
        for k in ("statement", "verdict", "verdict_text", "reason", "cells", "numbers", "other_verdicts", "figures"):
            if k not in c:
                problems.append(f"claim {c.get('id')}: {k} missing")
        for v in [c, *c.get("other_verdicts", [])]:
            if v.get("verdict") not in VERDICTS:
                problems.append(f"claim {c.get('id')}: verdict {v.get('verdict')!r}")
    if set(results["consistency"].get("summary", {})) < {"pass", "fail", "finding", "total"}:
        problems.append("consistency.summary incomplete")
    t = results["tightness"]
    for k in ("audit_status", "bounds", "upper_gaps", "composition"):
        if k not in t:
            problems.append(f"tightness.{k} missing")
    if not isinstance(results["violation"], bool) or not isinstance(results["violations"], list):
        problems.append("violation must be a bool and violations a list")
    if [e.get("erratum") for e in results["errata"]] != list(ERRATA):
        problems.append(f"errata must list {', '.join(map(str, ERRATA))}")
    if any(e.get("status") not in STATUSES for e in results["errata"]):
        problems.append(f"an erratum's status is not one of {', '.join(STATUSES)}")
    for k in ("brackets",):
        if k not in t:
            problems.append(f"tightness.{k} missing")
    inf = results["inference"]
    if not isinstance(inf, dict) or "synthetic" not in inf or "grunfeld_status" not in inf:
        problems.append("inference must hold the synthetic table and the grunfeld status")
    return problems
