"""Checked values: the one-line :class:`~tsdp.theorems.errors.ConfigError` checks of counts, reals, δ, ε, a
calibration target and an output path that every layer's arguments go through, and the limits they enforce."""
from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Optional, Tuple

from .errors import ConfigError

SIGMA_MIN = 1e-150
"""The smallest noise multiplier accepted: below it 1/σ² (the privacy loss scale) is not a finite float64."""

SIGMA_MAX = 1e150
"""The largest noise multiplier accepted: above it σ² (the noise variance) is not a finite float64."""

SEED_MAX = 2**63 - 1
"""The largest random seed (numpy and torch take seeds below 2^63)."""

MAX_COUNT = 2**53
"""The largest count (steps, trials, samples, lengths) accepted anywhere: beyond it float64 loses integers."""


def check_int(name: str, value, minimum: int, maximum: int = MAX_COUNT) -> int:
    """``value`` as a Python int in [minimum, maximum] (numpy integers accepted), or :class:`ConfigError` naming ``name``.

    Args:
        name: The field (in the error).
        value: The value.
        minimum: The smallest allowed.
        maximum: The largest allowed.

    Returns:
        The int.

    Raises:
        ConfigError: Not an integer in range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(name, "must be an integer", value)
    value = int(value)
    if value < minimum:
        raise ConfigError(name, f"must be >= {minimum}", value)
    if value > maximum:
        raise ConfigError(name, f"must be <= {maximum:.6g}", value)
    return value


def check_real(name: str, value, *, low: Optional[float] = None, high: Optional[float] = None,
               low_open: bool = False, high_open: bool = False):
    """``value`` as a finite real in the interval (numpy floats accepted, returned as float; a Fraction is kept),
    or :class:`ConfigError` naming ``name`` and the constraint.

    Args:
        name: The field (in the error).
        value: The value.
        low: The lower end (None: none).
        high: The upper end (None: none).
        low_open: Exclude ``low``.
        high_open: Exclude ``high``.

    Returns:
        The float (or Fraction).

    Raises:
        ConfigError: Not a finite real in the interval.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(name, "must be a real number", value)
    if not isinstance(value, Fraction):
        value = int(value) if isinstance(value, numbers.Integral) else float(value)
    if not math.isfinite(value):
        raise ConfigError(name, "must be finite (not NaN or inf)", value)
    if low is not None and (value <= low if low_open else value < low):
        raise ConfigError(name, f"must be {'>' if low_open else '>='} {low:g}", value)
    if high is not None and (value >= high if high_open else value > high):
        raise ConfigError(name, f"must be {'<' if high_open else '<='} {high:g}", value)
    return value


def check_delta(delta) -> float:
    """δ as a float in (0, 1), or :class:`ConfigError` naming ``delta``.

    Args:
        delta: The value.

    Returns:
        δ.

    Raises:
        ConfigError: Not in (0, 1).
    """
    return float(check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True))


def check_confidence(confidence) -> float:
    """An audit's confidence as a float in (0.5, 1), or :class:`ConfigError` naming ``confidence``: the one rule of
    `tsdp audit`, `tsdp audit-fn` and `tsdp audit-model` (and of :class:`tsdp.attacks.montecarlo.options.Confidence`).
    At 0.5 or below a lower bound holds no more often than it fails, and `tsdp audit`'s verdict, resting on two
    tests at this level, holds at 1 - 2 (1 - confidence): nothing.

    Args:
        confidence: The value.

    Returns:
        The confidence.

    Raises:
        ConfigError: Not a real number in (0.5, 1).
    """
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise ConfigError("confidence", "must be a real number", confidence)
    value = float(confidence)
    if value >= 1:
        raise ConfigError("confidence", "must be in (0.5, 1): a probability below 1 (no sample certifies with "
                                        "certainty), e.g. 0.95 for 95%", value)
    if not 0.5 < value:  # NaN too
        raise ConfigError("confidence", "must be in (0.5, 1): at 0.5 or below a lower bound holds no more often than "
                                        "it fails", value)
    return value


def check_epsilon(epsilon) -> float:
    """ε as a finite float >= 0, or :class:`ConfigError` naming ``epsilon``.

    Args:
        epsilon: The value.

    Returns:
        ε.

    Raises:
        ConfigError: Not finite and >= 0.
    """
    return float(check_real("epsilon", epsilon, low=0.0))


TOLERANCE_MIN = 1e-12
"""The finest relative tolerance a σ calibration bisects to: float64 resolves σ to about 1e-16, and a
finer target would bisect without end (the bracket stops shrinking)."""


def check_calibration_target(target_epsilon, tolerance) -> Tuple[float, float]:
    """(target ε, relative tolerance) of a σ calibration: ε finite and > 0, tolerance in
    [:data:`TOLERANCE_MIN`, 1); ConfigError naming ``epsilon`` or ``tolerance`` otherwise.

    Args:
        target_epsilon: The ε budget.
        tolerance: The relative tolerance on σ.

    Returns:
        (ε, tolerance).

    Raises:
        ConfigError: Either out of range.
    """
    target = float(check_real("epsilon", target_epsilon, low=0.0, low_open=True))
    return target, float(check_real("tolerance", tolerance, low=TOLERANCE_MIN, high=1.0, high_open=True))


def check_output_path(name: str, path, *, directory: bool = False) -> None:
    """:class:`ConfigError` naming ``name`` unless ``path`` can be written: a file (not a directory, in an
    existing directory) or, with ``directory``, a directory (not a file; missing parents are created
    under the nearest existing one). Checked by creating and removing a temporary entry there, before
    any work that would end by writing it.

    Args:
        name: The flag (in the error).
        path: The path.
        directory: A directory is wanted.

    Raises:
        ConfigError: It cannot be written.
    """
    import os
    import tempfile
    from pathlib import Path

    target = Path(path)
    try:  # os.stat itself fails on a path the file system cannot name (ENAMETOOLONG) or a symbolic link loop (ELOOP)
        try:
            target.stat()
        except (FileNotFoundError, NotADirectoryError):
            pass  # made by the write (or its parent refused below)
        if directory:
            if target.exists() and not target.is_dir():
                raise ConfigError(name, "exists and is not a directory", str(target))
            home = next(p for p in (target, *target.parents) if p.exists() or p == Path(p.anchor))
            if not home.is_dir():
                raise ConfigError(name, f"{home} is not a directory, so nothing can be created under it", str(target))
        else:
            if target.is_dir():
                raise ConfigError(name, "is a directory; give a file name", str(target))
            home = target.parent
            if not home.is_dir():
                raise ConfigError(name, f"its directory {home} does not exist", str(target))
    except OSError as exc:
        raise ConfigError(name, f"cannot be used as a path here ({exc.strerror or exc})", str(target)) from None
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".tsdp-write-check-", dir=home))
    except OSError as exc:
        raise ConfigError(name, f"cannot write in {home} ({exc.strerror or exc})", str(target)) from None
