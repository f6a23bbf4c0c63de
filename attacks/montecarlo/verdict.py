"""An audit's verdict against its sound claim: the one rule, for a fresh audit and for a stored audit record.

:func:`sound_exceeded` is what :func:`attacks.montecarlo.audit.audit` decides (``sound_exceeded``, and ``violation``
where the sound bound covers the audited relation); :func:`record_sound_exceeded` recomputes it from a stored
record's own numbers (the report's audit records, `tsdp audit --json`), so a reader never trusts a stored verdict
written under another rule. Light: no torch, so the report reads it without the auditor.
"""
from __future__ import annotations

from typing import Mapping, Optional

from tsdp.verify.rounded import rounded_down

AUDIT_RECORD_VERSION = 2
"""The rule an audit record was written under (its ``record_version``): 2 — ``violation`` is the violation test's
verdict or ``epsilon_lower`` > ``epsilon_sound`` (strictly), and the record carries the test's verdict alone as
``test_violation``; 1 (a record without ``record_version``) — ``violation`` was the violation test's verdict alone."""

__all__ = ["AUDIT_RECORD_VERSION", "percent_text", "record_sound_exceeded", "sound_exceeded", "verdict_confidence",
           "verdict_confidence_text"]


def sound_exceeded(epsilon_lower: float, epsilon_sound: float, test_violation: bool) -> bool:
    """Whether an audit certifies the sound claim exceeded: its violation test rejects the sound profile (or ε_sound
    at δ), or its certified estimate lies strictly above the sound ε. Each errs with probability at most 1 -
    confidence on a correct loop. A violation (a privacy bug) where the sound bound covers the audited relation.

    Args:
        epsilon_lower: The audit's certified ε (a **lower** confidence bound).
        epsilon_sound: The sound bound's composed ε (an **upper** bound).
        test_violation: The violation test's verdict.

    Returns:
        True when the sound claim is exceeded.
    """
    return bool(test_violation) or epsilon_lower > epsilon_sound


def record_sound_exceeded(record: Mapping) -> bool:
    """:func:`sound_exceeded` recomputed from a stored audit record's own numbers: its ``epsilon_lower``, its
    ``epsilon_sound`` and its violation test's verdict (the ``violation_test`` summary of `tsdp audit --json`, else
    ``test_violation`` of a version-2 record, else, version 1, ``violation``, which was then the test's verdict
    alone). The stored ``violation`` of a version-2 record is never read.

    Args:
        record: The audit record.

    Returns:
        True when the record's audit exceeds its sound claim (whatever the relation).

    Raises:
        ValueError: The record's ``record_version`` is newer than :data:`AUDIT_RECORD_VERSION` (recompute the audit).
    """
    version = record.get("record_version", 1)
    if version > AUDIT_RECORD_VERSION:
        raise ValueError(f"audit record_version {version} is newer than this tsdp's {AUDIT_RECORD_VERSION}: its "
                         "violation rule is unknown here; recompute the audit")
    if isinstance(record.get("violation_test"), Mapping):
        test = record["violation_test"]["violation"]
    elif version >= 2:
        test = record["test_violation"]
    else:
        test = record.get("violation", False)
    return sound_exceeded(record["epsilon_lower"], record["epsilon_sound"], test)


def verdict_confidence(confidence: float) -> float:
    """The confidence of a :func:`sound_exceeded` verdict, and of the larger of the two certified ε it cites: either of
    two tests, each erring with probability at most 1 - ``confidence`` on a correct loop, so 1 - 2 (1 - ``confidence``)
    by the union bound (a **lower** bound on the probability that the verdict is right).

    Args:
        confidence: Each test's confidence level.

    Returns:
        1 - 2 (1 - confidence), at least 0.
    """
    return max(0.0, 1 - 2 * (1 - confidence))


def percent_text(probability: float) -> str:
    """A confidence (a **lower** bound on a probability) as a percent, rounded down to 4 significant digits, so the text
    never claims more than holds (0.999 reads 99.9%, never 100%); float noise below 1e-9 percent is ignored first
    (1 - 2 (1 - 0.95) = 0.8999999999999999 reads 90%), but never up to 100%: only a probability of 1 reads 100%.

    Args:
        probability: The probability, in [0, 1].

    Returns:
        The text, e.g. ``95%``.
    """
    percent = round(100 * probability, 9)
    return rounded_down(percent if percent < 100 or probability >= 1 else 100 * probability, 4) + "%"


def verdict_confidence_text(confidence: Optional[float]) -> str:
    """A verdict's confidence in words, e.g. ``confidence 90%: two tests at 95% each, union bound``
    (:func:`verdict_confidence`); a record without its confidence says so.

    Args:
        confidence: Each test's confidence level (None: not recorded).

    Returns:
        The words.
    """
    if confidence is None:
        return "confidence not recorded"
    return (f"confidence {percent_text(verdict_confidence(confidence))}: two tests at {percent_text(confidence)} each, "
            "union bound")
