"""The structured result every consistency check returns (``tsdp verify``).

A :class:`CheckResult` names the property (1-8 of the verification plan), the theorem
ids of THEOREMS.md it exercises, the configuration(s), the measured numbers, the
tolerance and the status:

* ``pass`` - the property holds within the stated tolerance;
* ``fail`` - it does not (our code, or the catalogue, is wrong), or the check crashed;
* ``finding`` - a documented disagreement with the paper as printed (an erratum of
  THEOREMS.md, with the numbers that show it and a one-line explanation). A finding is
  only ever produced by the erratum checks, and only when the measurement reproduces the
  documented erratum; a check of our own code never returns ``finding``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence, Tuple

from tsdp.verify.json_data import json_data

PASS, FAIL, FINDING = "pass", "fail", "finding"
STATUSES = (PASS, FAIL, FINDING)

PROPERTIES = {
    1: "privacy-profile axioms",
    2: "order between bounds",
    3: "alpha-symmetry",
    4: "monotonicity claims",
    5: "mixture lemmas",
    6: "evaluation paths",
    7: "symbolic reductions",
    8: "composition",
    9: "errata",
}


def jsonable(x: Any) -> Any:
    """Numbers and containers as plain JSON values, the one convention of :mod:`tsdp.verify.json_data`
    (non-finite numbers as null)."""
    return json_data(x)


@dataclass(frozen=True)
class CheckResult:
    """One check: property number, name, theorem ids, configuration, numbers, tolerance, status."""

    name: str
    property: int
    theorems: Tuple[str, ...]
    status: str
    explanation: str
    measured: Dict[str, Any] = field(default_factory=dict)
    tolerance: Dict[str, Any] = field(default_factory=dict)
    config: Optional[Dict[str, Any]] = None
    elapsed_s: float = 0.0

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.property not in PROPERTIES:
            raise ValueError(f"unknown property {self.property}")

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "property": self.property,
            "property_name": PROPERTIES[self.property],
            "theorems": list(self.theorems),
            "status": self.status,
            "explanation": self.explanation,
            "measured": jsonable(self.measured),
            "tolerance": jsonable(self.tolerance),
            "config": jsonable(self.config),
            "elapsed_s": round(self.elapsed_s, 4),
        }


def config_dict(config) -> Optional[dict]:
    """The configuration as a dict (``TrainingConfig.as_dict``), or None."""
    return None if config is None else config.as_dict()


def result(name: str, prop: int, theorems: Sequence[str], ok: bool, explanation: str, *, measured=None,
           tolerance=None, config=None) -> CheckResult:
    """A pass/fail result (never ``finding``): ``ok`` decides."""
    return CheckResult(name, prop, tuple(theorems), PASS if ok else FAIL, explanation, dict(measured or {}),
                       dict(tolerance or {}), config)


def error_result(name: str, prop: int, theorems: Sequence[str], exc: BaseException, config=None) -> CheckResult:
    """A check that raised: a failure of our code, with the exception as explanation."""
    return CheckResult(name, prop, tuple(theorems), FAIL, f"check raised {type(exc).__name__}: {exc}", {}, {}, config)


def summarise(results: Sequence[CheckResult]) -> dict:
    """Counts by status, plus the total."""
    out = {s: 0 for s in STATUSES}
    for r in results:
        out[r.status] += 1
    out["total"] = len(results)
    return out
