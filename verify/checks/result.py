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

from tsdp.theorems.config import Choice
from tsdp.verify.json_data import Record, json_data


class Status(Choice):
    """A check's status (module docstring); its string is what the JSON holds."""

    PASS = "pass"
    FAIL = "fail"
    FINDING = "finding"


PASS, FAIL, FINDING = Status.PASS, Status.FAIL, Status.FINDING
STATUSES = Status.values()

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
    (non-finite numbers as null).

    Args:
        x: A number or a container of them.

    Returns:
        Plain JSON data.
    """
    return json_data(x)


@dataclass(frozen=True)
class CheckResult:
    """One check: property number, name, theorem ids, configuration, numbers, tolerance, status.

    Attributes:
        name: The check's name (property, theorem, configuration label).
        property: The property number (1-8, THEOREMS.md).
        theorems: The T-ids checked.
        status: pass, fail or finding (a :class:`Status`; its string is accepted).
        explanation: One line saying what was found.
        measured: The numbers measured.
        tolerance: The tolerances they were held to.
        config: The configuration's fields (None: none).
        elapsed_s: Seconds the check took.
    """

    name: str
    property: int
    theorems: Tuple[str, ...]
    status: Status
    explanation: str
    measured: Dict[str, Any] = field(default_factory=dict)
    tolerance: Dict[str, Any] = field(default_factory=dict)
    config: Optional[Dict[str, Any]] = None
    elapsed_s: float = 0.0

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        object.__setattr__(self, "status", Status(self.status))
        if self.property not in PROPERTIES:
            raise ValueError(f"unknown property {self.property}")

    @property
    def passed(self) -> bool:
        """Whether the check passed."""
        return self.status == Status.PASS

    def as_dict(self) -> dict:
        """The JSON form of ``tsdp verify --json``: name, property (and its name), theorem ids, status, explanation,
        measured numbers, tolerance, configuration and elapsed seconds."""
        return {
            "name": self.name,
            "property": self.property,
            "property_name": PROPERTIES[self.property],
            "theorems": list(self.theorems),
            "status": self.status.value,
            "explanation": self.explanation,
            "measured": jsonable(self.measured),
            "tolerance": jsonable(self.tolerance),
            "config": jsonable(self.config),
            "elapsed_s": round(self.elapsed_s, 4),
        }


def config_dict(config) -> Optional[dict]:
    """The configuration as a dict (``TrainingConfig.as_dict``), or None.

    Args:
        config: A configuration, or None.

    Returns:
        Its fields, or None.
    """
    return None if config is None else config.as_dict()


def result(name: str, prop: int, theorems: Sequence[str], ok: bool, explanation: str, *, measured=None,
           tolerance=None, config=None) -> CheckResult:
    """A pass/fail result (never ``finding``): ``ok`` decides.

    Args:
        name: The check's name.
        prop: The property number.
        theorems: The T-ids checked.
        ok: Whether it passed.
        explanation: One line saying what was found.
        measured: The numbers measured.
        tolerance: The tolerances they were held to.
        config: The configuration.

    Returns:
        The result, pass or fail.
    """
    return CheckResult(name, prop, tuple(theorems), PASS if ok else FAIL, explanation, dict(measured or {}),
                       dict(tolerance or {}), config)


def error_result(name: str, prop: int, theorems: Sequence[str], exc: BaseException, config=None) -> CheckResult:
    """A check that raised: a failure of our code, with the exception as explanation.

    Args:
        name: The check's name.
        prop: The property number.
        theorems: The T-ids checked.
        exc: The exception raised.
        config: The configuration.

    Returns:
        A fail result naming the exception.
    """
    return CheckResult(name, prop, tuple(theorems), FAIL, f"check raised {type(exc).__name__}: {exc}", {}, {}, config)


def summarise(results: Sequence[CheckResult]) -> dict:
    """Counts by status, plus the total.

    Args:
        results: The results.

    Returns:
        Status -> count, and "total".
    """
    out = {s: 0 for s in STATUSES}
    for r in results:
        out[r.status] += 1
    out["total"] = len(results)
    return out


@dataclass(frozen=True)
class VerifyReport(Record):
    """What ``tsdp verify`` ran and found: the checks in the plan's order and their counts. Its JSON form
    (``as_dict``) is ``tsdp verify --json``'s object.

    Attributes:
        mode: quick (the paper default only) or full.
        seed: The seed of the random configurations and mixtures.
        elapsed_s: Seconds the run took (rounded to 0.01).
        checks: The results, in the order of the plan.
        summary: Status -> count, and "total" (:func:`summarise`).
        theorems_covered: The T-ids the checks exercised, in catalogue order.
    """

    mode: str
    seed: int
    elapsed_s: float
    checks: Tuple[CheckResult, ...]
    summary: Dict[str, int]
    theorems_covered: Tuple[str, ...]

    @property
    def failed(self) -> int:
        """How many checks failed (``tsdp verify`` exits 1 when any did)."""
        return self.summary[FAIL.value]

    def with_status(self, status: Status) -> Tuple[CheckResult, ...]:
        """The checks of one status, in the plan's order.

        Args:
            status: The status (a :class:`Status`; its string is accepted).

        Returns:
            The checks.
        """
        return tuple(c for c in self.checks if c.status == status)
