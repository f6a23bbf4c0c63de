"""The accountant's three numerical settings, one object (:class:`PldSettings`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from tsdp.verify.json_data import Record
from tsdp.theorems.config import ConfigError

from .composition import DEFAULT_TAIL_MASS_TRUNCATION

DEFAULT_DISCRETIZATION = 1e-4
"""Width d of the privacy-loss grid (the library's default ``value_discretization_interval``)."""

DEFAULT_LOG_MASS_TRUNCATION = -50.0
"""The library's default ``log_mass_truncation_bound``: the grid ends where δ ≤ ½·e^{-50}."""


@dataclass(frozen=True)
class PldSettings(Record):
    """How finely a PLD accounting is computed: the settings every accountant, accounting front and one-step PLD
    passes down together (their defaults are the library's, :data:`DEFAULT_DISCRETIZATION`,
    :data:`DEFAULT_TAIL_MASS_TRUNCATION`, :data:`DEFAULT_LOG_MASS_TRUNCATION`). None of them changes a direction:
    at any setting the sound estimate is an upper bound and the attained one a lower bound. How tight they are
    moves with the settings but not monotonically (at 100 steps on a 0.002 grid, no truncation gave a sound ε
    2e-8 above the default truncation's), so a σ calibrated at one setting is checked at the setting training
    accounts with (:func:`tsdp.verify.calibration.calibrate_sigma`).

    Attributes:
        discretization: Width of the privacy-loss grid, in (0, 1] (the library's ``value_discretization_interval``).
        tail_mass_truncation: The library's ``tail_mass_truncation`` of each composition, in [0, 1).
        log_mass_truncation_bound: The library's ``log_mass_truncation_bound`` (where a one-step grid ends).

    Raises:
        ConfigError: A setting out of its range, naming it.
    """

    discretization: float = DEFAULT_DISCRETIZATION
    tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION
    log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION

    def __post_init__(self):
        d, tail = self.discretization, self.tail_mass_truncation
        if not (isinstance(d, (int, float)) and math.isfinite(d) and 0 < d <= 1):
            raise ConfigError("discretization", "must be in (0, 1]", d)
        if not (isinstance(tail, (int, float)) and 0 <= tail < 1):
            raise ConfigError("tail_mass_truncation", "must be in [0, 1)", tail)
        for name in ("discretization", "tail_mass_truncation", "log_mass_truncation_bound"):
            object.__setattr__(self, name, float(getattr(self, name)))
