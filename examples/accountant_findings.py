"""Check Opacus's RDP, PRV and GDP accountants and dp-accounting's Poisson PLD, each at both guessed sampling rates,
and tsdp's own accountant, for the 1-event and 2-user relations; write docs/accountant-findings.json and .md.

    python examples/accountant_findings.py            # a few minutes on 2 cores

The JSON holds each run's :meth:`tsdp.testing.CheckReport.as_dict` (what `tsdp check-accountant --json` prints,
less each verdict's message, which its other fields determine);
the Markdown page is :func:`tsdp.testing.findings.render` of it.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from tsdp.testing import Substitution, check_accountant, default_grid, opacus_accountant, poisson_pld, tsdp_accountant
from tsdp.testing.findings import render
from tsdp.verify.json_data import json_data

DOCS = Path(__file__).resolve().parents[1] / "docs"
RELATIONS = (Substitution("event", 1), Substitution("user", 2))


def accountants():
    for rate in ("series", "window"):
        for kind in ("rdp", "prv", "gdp"):
            yield opacus_accountant(kind, rate)
        yield poisson_pld(rate)
    yield tsdp_accountant()


def main() -> list:
    runs = []
    for relation in RELATIONS:
        for fn in accountants():
            report = check_accountant(fn, default_grid(), relation=relation, progress=True)
            print(report.summary(), f"[{fn.name}, {relation.name}]", file=sys.stderr)
            d = report.as_dict()
            for v in d["verdicts"]:
                del v["message"]  # derivable from the other fields (Verdict.message); keeps the file small
            runs.append({"relation": relation.name, "report": d})
    (DOCS / "accountant-findings.json").write_text(json.dumps(json_data(runs), allow_nan=False) + "\n", encoding="utf-8")
    (DOCS / "accountant-findings.md").write_text(render(runs), encoding="utf-8")
    return runs


if __name__ == "__main__":
    main()
