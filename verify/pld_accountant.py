"""The accountant, :class:`PldAccountant`: one dp-accounting ``PrivacyAccountant`` over tsdp's privacy events, the
only place in tsdp that composes PLDs (:mod:`tsdp.verify.accountant` describes its three estimates)."""
from __future__ import annotations

import math
import threading
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np
from dp_accounting import dp_event, privacy_accountant

from tsdp.theorems.config import ConfigError, check_delta, check_epsilon

from .estimate import DeltaTooSmallError, Estimate, UnsupportedBoundError
from .events import BoundDpEvent, count_compositions
from .one_step import one_step_pld, refusal
from .pld import (
    DEFAULT_DISCRETIZATION,
    DEFAULT_LOG_MASS_TRUNCATION,
    DEFAULT_TAIL_MASS_TRUNCATION,
    PldSettings,
    attained_envelope,
    compose,
    compose_pair,
    discretization_of,
    epsilon_for_delta,
    prime_allocator,
)
from .resolution import Resolutions

_READ_LOCK = threading.Lock()
_EPS_FAR = 1e300  # an ε past every finite privacy loss: δ there is the PLD's infinity mass


class PldAccountant(privacy_accountant.PrivacyAccountant):
    """Privacy accountant for structured-subsampling DP-SGD (paper Appendix B.3), on dp-accounting PLDs.

    ``compose(event, count)``, ``supports(event)``, ``get_epsilon(δ)``, ``get_delta(ε)`` and
    ``ledger`` as in dp-accounting.

    Args:
        estimate: "sound" (upper bound, rounds up; the default, and the only one a budget may
            use), "attained" (lower bound, rounds down) or "attained_upper" (the attained pair's
            pessimistic composition).
        discretization: Width of the privacy-loss grid, in (0, 1].
        tail_mass_truncation: The library's ``tail_mass_truncation`` of each composition, in [0, 1).
        log_mass_truncation_bound: The library's ``log_mass_truncation_bound`` (where the grid ends).
        resolutions: The command's resolutions of bound events, shared with its other accountants
            (:func:`tsdp.verify.events.resolved`; None: this accountant's own, each event resolved once).

    Raises:
        ConfigError: An unknown ``estimate``, or a grid parameter out of its range.

    Attributes:
        estimate: The estimate this accountant composes (an :class:`Estimate`; its string is accepted).
        settings: The three numerical settings as one :class:`~tsdp.verify.pld.PldSettings`.
    """

    def __init__(self, estimate: str = "sound", *, discretization: float = DEFAULT_DISCRETIZATION,
                 tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
                 log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION,
                 resolutions: Optional[Resolutions] = None):
        super().__init__(privacy_accountant.NeighboringRelation.REPLACE_ONE)
        self.estimate = Estimate.of("estimate", estimate)
        self.settings = PldSettings(discretization, tail_mass_truncation, log_mass_truncation_bound)
        prime_allocator()
        self._resolutions: Resolutions = {} if resolutions is None else resolutions
        self._components: List[Tuple[BoundDpEvent, int]] = []  # (event, count), in order, neighbours merged
        self._gap_read = 0.0  # coarsest grid gap of a PLD read so far
        self._non_private = False
        self._composed = None  # (key, PLD) of the last composition

    @classmethod
    def with_settings(cls, estimate: str, settings: PldSettings,
                      resolutions: Optional[Resolutions] = None) -> "PldAccountant":
        """An accountant of ``estimate`` at ``settings`` (the one object the accounting fronts pass down).

        Args:
            estimate: The estimate.
            settings: The numerical settings.
            resolutions: The command's resolutions (None: the accountant's own).

        Returns:
            The accountant.
        """
        return cls(estimate, **settings.as_dict(), resolutions=resolutions)

    @property
    def discretization(self) -> float:
        """The grid width asked for (``settings.discretization``)."""
        return self.settings.discretization

    @property
    def tail_mass_truncation(self) -> float:
        """``settings.tail_mass_truncation``."""
        return self.settings.tail_mass_truncation

    @property
    def log_mass_truncation_bound(self) -> float:
        """``settings.log_mass_truncation_bound``."""
        return self.settings.log_mass_truncation_bound

    # ----- dp-accounting interface
    def _maybe_compose(self, event: dp_event.DpEvent, count: int, do_compose: bool):
        if isinstance(event, dp_event.NoOpDpEvent):
            return None
        if isinstance(event, dp_event.NonPrivateDpEvent):
            if do_compose:
                self._non_private = True
            return None
        if isinstance(event, dp_event.SelfComposedDpEvent):
            return self._maybe_compose(event.event, count * event.count, do_compose)
        if isinstance(event, dp_event.ComposedDpEvent):
            for inner in event.events:
                error = self._maybe_compose(inner, count, do_compose)
                if error is not None:
                    return error
            return None
        if isinstance(event, BoundDpEvent):
            reason = refusal(event, self.estimate, self._resolutions)
            if reason is not None:
                return self.CompositionErrorDetails(invalid_event=event, error_message=reason)
            if do_compose and count > 0:
                if self._components and self._components[-1][0] == event:
                    self._components[-1] = (event, self._components[-1][1] + count)
                else:
                    self._components.append((event, count))
            return None
        return self.CompositionErrorDetails(
            invalid_event=event, error_message=f"{type(event).__name__} is not an event of the structured-subsampling "
                                               "accountant")

    def compose(self, event: dp_event.DpEvent, count: int = 1) -> "PldAccountant":
        """Record ``event`` ``count`` times (the ledger); :class:`UnsupportedBoundError` (one line) if refused.

        Args:
            event: The event.
            count: How many times (≥ 1).

        Returns:
            The accountant.

        Raises:
            UnsupportedBoundError: The event is refused with this estimate.
            ConfigError: A bad count.
        """
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"`event` must be a DpEvent, got {type(event).__name__}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ConfigError("count", "must be an integer >= 1", count)
        error = self._maybe_compose(event, count, False)
        if error is not None:
            raise UnsupportedBoundError(error.error_message)
        self._ledger.compose(event, count)
        self._maybe_compose(event, count, True)
        return self

    @property
    def discretization_used(self) -> Optional[float]:
        """The coarsest grid gap of the PLDs the answers so far were read from: ``discretization``, or more where
        the memory ceiling coarsened a grid (:class:`tsdp.verify.pld.PldCoarsenedWarning`; the direction of the
        estimate is kept). None before the first read of a composed PLD."""
        return self._gap_read or None

    @property
    def compositions(self) -> int:
        """Bound events composed so far (steps for step-scoped schemes, epochs for epoch-scoped ones)."""
        return count_compositions(self.ledger)

    def get_epsilon(self, target_delta: float) -> float:
        """ε at δ of everything composed so far, in the direction of ``estimate`` (0 for nothing, inf if non-private).

        Args:
            target_delta: The target δ.

        Returns:
            ε (sound: upper, rounded up; attained: lower, rounded down).

        Raises:
            DeltaTooSmallError: δ below the composed PLD's resolution.
        """
        delta = check_delta(target_delta)
        epsilon = float(self._read(lambda pld: epsilon_for_delta(pld, delta)))
        if not math.isfinite(epsilon) and not self._non_private:  # δ below the infinity mass: refused
            mass = float(self._read(lambda pld: float(pld.get_delta_for_epsilon(_EPS_FAR))))
            raise DeltaTooSmallError(delta, min(0.99, max(mass, delta) * 1.01))
        return epsilon

    def get_delta(self, target_epsilon: float) -> float:
        """δ at ε of everything composed so far, in the direction of ``estimate`` (0 for nothing, 1 if non-private).

        Args:
            target_epsilon: The target ε.

        Returns:
            δ in the direction of the estimate.
        """
        epsilon = check_epsilon(target_epsilon)
        if self._non_private:
            return 1.0
        if not self._components:
            return 0.0
        return float(self._read(lambda pld: self._deltas_of(pld, [epsilon])[0]))

    def _deltas_of(self, pld, epsilons: Sequence[float]) -> np.ndarray:
        """δ at each of ``epsilons`` of one composed PLD, kept at or above what its estimate can be: a pessimistic
        PLD's δ is its infinity mass plus non-negative terms, so at least that mass (δ at :data:`_EPS_FAR`, read once
        per PLD); an optimistic one's at least 0. Far in the tail the library's sum of FFT-composed masses cancels to
        float noise (about 1e-15 on a unit mass): the sound δ at ε = 30 after 10 steps of the paper's configuration
        read -4.6e-16, below its attained 1e-15. Raising a sound reading to its floor keeps it an upper bound; a
        lower bound of 0 always holds."""
        deltas = np.array([float(pld.get_delta_for_epsilon(float(e))) for e in epsilons])
        floor = 0.0 if self.estimate == Estimate.ATTAINED else float(pld.get_delta_for_epsilon(_EPS_FAR))
        return np.maximum(deltas, floor)

    def get_delta_curve(self, epsilons: Union[Sequence[float], np.ndarray]) -> np.ndarray:
        """δ at every ε of ``epsilons`` (an array), in the direction of ``estimate``; the composition is
        built once (for ``attained`` the envelope's maximum is taken per ε).

        Args:
            epsilons: The ε values.

        Returns:
            δ at each.
        """
        eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
        for e in eps:
            check_epsilon(float(e))
        if self._non_private:
            return np.ones_like(eps)
        if not self._components:
            return np.zeros_like(eps)
        # one ε at a time: the library's scalar read is numpy, its list read a Python loop over the PMF
        return np.asarray(self._read(lambda pld: self._deltas_of(pld, eps)), dtype=float)

    # ----- composition (the one place)
    def _one(self, event: BoundDpEvent):
        return one_step_pld(event, self.estimate, self.settings, resolutions=self._resolutions)

    def _product(self):
        key = tuple(self._components)
        if self._composed is None or self._composed[0] != key:
            pld = None
            for event, count in self._components:
                part = compose(self._one(event), count, self.tail_mass_truncation)
                pld = part if pld is None else compose_pair(pld, part, self.tail_mass_truncation)
            self._composed = (key, pld)
        return self._composed[1]

    def _read(self, read):
        """``read`` of the composed PLD; for ``attained`` the maximum (elementwise for arrays) over the
        whole run and every component's envelope of sub-runs (each a lower bound on the whole run)."""
        if self._non_private:
            return math.inf
        if not self._components:
            return 0.0

        def tracked(pld):  # every read notes the grid it was made at (discretization_used)
            with _READ_LOCK:  # reads of one envelope may run side by side (verify.cpus.each)
                self._gap_read = max(self._gap_read, discretization_of(pld))
            return read(pld)

        if self.estimate != Estimate.ATTAINED:
            return tracked(self._product())
        if len(self._components) == 1:
            event, count = self._components[0]
            return attained_envelope(self._one(event), count, tracked, self.tail_mass_truncation)
        best = tracked(self._product())
        for event, count in self._components:
            best = np.maximum(best, attained_envelope(self._one(event), count, tracked, self.tail_mass_truncation))
        return best
