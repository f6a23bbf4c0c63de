"""The options of an audit of your training function (:func:`attacks.canary.user_training.audit_training`), one
object per concern: which canaries and how they are placed (:class:`CanaryOptions`), how the audit certifies and
runs (:class:`AuditOptions`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Union

from .data_span import MAX_ENTRIES


@dataclass(frozen=True)
class CanaryOptions:
    """Which canaries an audit places, and how.

    Attributes:
        kind: "gradient" (white-box, hooked into your optimizer) or "spike" (black-box, scored on the returned model).
        spike: The spike canaries' size in standard deviations of their series.
        clip: Gradient canaries' clipping norm C for a plain optimizer (Opacus's ``max_grad_norm`` is read from its
            DP optimizer).
        gradient_scale: What your loop multiplies the noisy clipped sum by before the step (None: 1/Λ for a plain
            optimizer, read from Opacus); give it when your loop divides by more than Λ, else each canary would be
            stronger than an element.
        span_entries: Gradient canaries' most per-window gradient entries held per step
            (:mod:`attacks.canary.data_span`; raise it to keep every window of a large dataset).
        data_canaries: Gradient canaries' clipping test gets that many series of the data scaled by
            :data:`attacks.canary.user_training.DATA_CANARY_SCALE`.
        device: Where gradient canaries' own torch work runs: "auto", "cpu", "cuda" or "cuda:N"; None: your
            optimizer's parameters' device.
    """

    kind: str = "gradient"
    spike: float = 10.0
    clip: float = 1.0
    gradient_scale: Optional[float] = None
    span_entries: int = MAX_ENTRIES
    data_canaries: int = 0
    device: Optional[str] = None

    @classmethod
    def of(cls, canary: Union[str, "CanaryOptions"]) -> "CanaryOptions":
        """``canary`` as options: a kind's name (at the edges) is that kind with the defaults.

        Args:
            canary: "gradient", "spike" or a :class:`CanaryOptions`.

        Returns:
            The :class:`CanaryOptions`.
        """
        return canary if isinstance(canary, CanaryOptions) else cls(kind=canary)

    def with_(self, **changes: object) -> "CanaryOptions":
        """A copy with ``changes``.

        Args:
            **changes: Attributes and their new values.

        Returns:
            The changed copy.
        """
        return replace(self, **changes)


@dataclass(frozen=True)
class AuditOptions:
    """How an audit certifies and runs.

    Attributes:
        confidence: The probability with which ``epsilon_lower`` holds.
        analysis: "fdp" (the f-DP one-run test with Steinke et al.'s bound as its baseline,
            :func:`attacks.canary.evidence.fdp`) or "steinke" alone.
        timeout: The most seconds a run may take (None: no limit); a ``train`` (or ``loss``) still running then is
            stopped with the processes it started (POSIX, main thread: :mod:`attacks.canary.time_limit`).
        progress: A bar of the audited steps on stderr.
    """

    confidence: float = 0.95
    analysis: str = "fdp"
    timeout: Optional[float] = None
    progress: bool = False

    def with_(self, **changes: object) -> "AuditOptions":
        """A copy with ``changes``.

        Args:
            **changes: Attributes and their new values.

        Returns:
            The changed copy.
        """
        return replace(self, **changes)


__all__ = ["AuditOptions", "CanaryOptions"]
