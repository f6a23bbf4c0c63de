"""docs/THEOREMS.md numbers its errata once each, 1, 2, 3, ... across the page (the T15 section continues the list),
and its claims C1, C2, ... once each: a number cited by the report (``errata`` rows), the checks' names
(``E.erratum1``) and the code's statements means one item."""
from __future__ import annotations

import re

from .fences import ROOT

THEOREMS = (ROOT / "docs" / "THEOREMS.md").read_text(encoding="utf-8")
_ERRATUM = re.compile(r"^(\d+)\. ", re.M)
_CLAIM = re.compile(r"^- C(\d+)\b", re.M)


def _after(heading: str) -> str:
    return THEOREMS[THEOREMS.index(heading):]


def test_the_errata_are_numbered_once_each_in_order():
    numbers = [int(n) for n in _ERRATUM.findall(_after("## Errata and readings"))]
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(numbers) >= 18


def test_the_claims_are_numbered_once_each_in_order():
    numbers = [int(n) for n in _CLAIM.findall(THEOREMS)]
    assert numbers == list(range(1, len(numbers) + 1))


def test_the_reports_errata_are_items_of_the_list():
    from tsdp.reports.errata import ERRATA

    numbers = {int(n) for n in _ERRATUM.findall(_after("## Errata and readings"))}
    assert set(ERRATA) <= numbers
