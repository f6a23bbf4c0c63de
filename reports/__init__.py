"""Tightness reports: `tsdp report` writes reports/out/<name>/ with index.html,
report.md, results.json and PNG figures; the claims C1-C7 of THEOREMS.md get computed verdicts.

Layering (DESIGN.md): reports imports theorems, verify and (lazily) attacks; nothing imports reports.
"""
