"""Section 3 of the report: the summary of `tsdp verify --quick`, every failure and finding.

Runs the checks through the runner's Python API (:func:`verify.checks.runner.verify`), not a
subprocess. A ``fail`` is a broken property of the toolkit or the catalogue; a ``finding`` a
documented erratum of the paper as printed (THEOREMS.md "Errata"), never a hidden failure.
"""
from __future__ import annotations


def consistency_section(seed: int = 0) -> dict:
    """The quick consistency run: summary counts, theorems covered, and every non-passing check
    (name, theorem ids, status, explanation, measured numbers). Also returns all checks by name
    and status so the errata table (:mod:`reports.errata`) can reuse their measurements.

    Args:
        seed: The seed of the checks' random parts.

    Returns:
        The section's JSON data.
    """
    from tsdp.verify.checks.runner import verify

    report = verify(quick=True, seed=seed, jobs=1, progress=False)
    checks = [c.as_dict() for c in report.checks]
    issues = [{"name": c["name"], "theorems": c["theorems"], "status": c["status"], "explanation": c["explanation"],
               "measured": c["measured"]} for c, result in zip(checks, report.checks) if not result.passed]
    return {"mode": report.mode, "seed": report.seed, "elapsed_s": report.elapsed_s,
            "summary": report.summary, "theorems_covered": list(report.theorems_covered),
            "failures_and_findings": issues,
            "checks": [{"name": c["name"], "status": c["status"], "explanation": c["explanation"]} for c in checks]}
