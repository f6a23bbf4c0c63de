"""Tightness reports: `tsdp report` writes reports/out/<name>/ (in the current folder) with index.html,
report.md, results.json and PNG figures; the claims C1-C12 of THEOREMS.md get computed verdicts.

Layering (DESIGN.md): reports imports theorems, verify, datasets and (lazily) attacks and experiments; above it
sit only the benchmarks and the command line (`tsdp report`).
"""
