"""The PLD work's size limits (paper Appendix B.3 accounting in bounded memory and time): the memory ceiling,
the grid and convolution sizes it allows, the errors and warnings that report them, and progress bars."""
from __future__ import annotations

import contextlib
import functools
import math
import os
from typing import Iterator, Optional

import numpy as np

from tsdp.theorems.config import ConfigError

DEFAULT_MEMORY_LIMIT = 2 * 2**30
"""Default memory ceiling of one PLD construction or convolution, in bytes (2 GiB)."""

MEMORY_LIMIT_ENV = "TSDP_MEMORY_LIMIT"
"""Environment variable overriding :data:`DEFAULT_MEMORY_LIMIT` (bytes, or with K/M/G/T suffix, binary)."""

NO_PROGRESS_ENV = "TSDP_NO_PROGRESS"
"""Environment variable that hides the PLD work's progress bars (:func:`_progress`) when set to anything but '' or
'0': in this process and the worker processes it starts. ``--no-progress`` sets it for the command's run
(:func:`progress_bars_hidden`)."""

MAX_GRID_POINTS = 2**19
"""Time ceiling of a one-step grid (about 2 s to build on one core; the paper's default
configuration needs 315001 points at d = 1e-4)."""

MAX_SELF_COMPOSE_POINTS = 2**23
"""Time ceiling of the library's one-FFT ``self_compose`` (about 2 s); longer goes by squaring."""

MAX_SQUARING_POINTS = 2**18
"""Time ceiling of one convolution on the repeated-squaring path (about 0.05 s each)."""

MAX_COARSE_DISCRETIZATION = 1.0
"""The coarsest gap a one-step grid is built at; beyond it the construction is refused."""

_BYTES_PER_GRID_POINT = 512  # one-step build: chunked profile, the library's loss->prob dict and arrays
_BYTES_PER_FFT_POINT = 96  # a convolution: complex spectra, their product, the real result, truncation copies


class PldTooLargeError(ConfigError):
    """A PLD whose grid cannot fit the memory ceiling even at the coarsest gap (names σ).

    ``points`` is the number of grid points it would need, ``max_points`` what the ceiling allows.

    Args:
        constraint: What the PLD is of (names σ).
        points: Grid points it would need.
        max_points: What the ceiling allows.
    """

    def __init__(self, constraint: str, points: float, max_points: int):
        self.points = points
        self.max_points = max_points
        super().__init__("sigma", constraint)


class PldCoarsenedWarning(UserWarning):
    """A PLD was built or composed at a coarser gap than asked, to fit the memory ceiling (still sound)."""


def resolve_memory_limit(value: Optional[int] = None) -> int:
    """The memory ceiling in bytes: ``value`` if given, else ``$TSDP_MEMORY_LIMIT``, else 2 GiB.

    Raises ConfigError naming the keyword or the environment variable for a value that is not
    a positive size.

    Args:
        value: The ceiling in bytes (None: the environment's, else 2 GiB).

    Returns:
        The ceiling in bytes.

    Raises:
        ConfigError: A value that is no positive integer.
    """
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError("memory_limit", "must be a positive number of bytes", value)
        return value
    text = os.environ.get(MEMORY_LIMIT_ENV)
    if text is None or not text.strip():
        return DEFAULT_MEMORY_LIMIT
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in units and t[-1:] != "" else ""
    try:
        number = float(t[: len(t) - len(unit)])
    except ValueError:
        number = float("nan")
    if not (math.isfinite(number) and number * units[unit] >= 1):
        raise ConfigError(MEMORY_LIMIT_ENV, "must be a positive size in bytes, e.g. 2G or 2147483648", text)
    return int(number * units[unit])


def max_grid_points(limit: Optional[int] = None) -> int:
    """The most points a one-step grid may have under the ceiling (and :data:`MAX_GRID_POINTS`).

    Args:
        limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The most grid points.
    """
    return max(16, min(MAX_GRID_POINTS, resolve_memory_limit(limit) // _BYTES_PER_GRID_POINT))


def max_fft_points(limit: Optional[int] = None) -> int:
    """The longest convolution result the memory ceiling allows.

    Args:
        limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The longest convolution result.
    """
    return max(16, resolve_memory_limit(limit) // _BYTES_PER_FFT_POINT)


_ALLOCATOR_PRIME_BYTES = 31 * 2**20  # just under glibc's ceiling (32 MiB) for its adaptive mmap threshold


@functools.lru_cache(maxsize=None)
def prime_allocator() -> None:
    """Once per process: allocate and free one 31 MiB block, so glibc's malloc keeps PLD-sized arrays on its heap.

    glibc serves a large allocation by a fresh ``mmap`` (every page faulted in and zeroed
    again, each time) until a block that large has been freed; it then raises its threshold
    to that size by itself. Freeing one 31 MiB block first (``np.empty`` touches no page) makes
    that adaptation happen before the PLD work instead of part-way through it: the first
    composition of a process then runs at the speed of later ones (about 0.4 s saved on the
    default question). Only timing changes, never a number; on other allocators it is one
    cheap allocation.
    """
    np.empty(_ALLOCATOR_PRIME_BYTES // 8)


def _bytes(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


@contextlib.contextmanager
def progress_bars_hidden(hidden: bool = True) -> Iterator[None]:
    """Hide the PLD work's progress bars while the block runs, in this process and the workers it starts
    (:data:`NO_PROGRESS_ENV`): what ``--no-progress`` asks of the accountant under a command's own bar. The switch
    is put back as it was when the block ends, an error included, so a caller that runs a command in its own process
    (``tsdp.cli.main.main([..., "--no-progress"])``) keeps its bars afterwards.

    Args:
        hidden: Hide them (False: leave the switch alone).

    Yields:
        Nothing: the block runs with the bars hidden.
    """
    before = os.environ.get(NO_PROGRESS_ENV)
    if hidden:
        os.environ[NO_PROGRESS_ENV] = "1"
    try:
        yield
    finally:
        if hidden:
            if before is None:
                os.environ.pop(NO_PROGRESS_ENV, None)
            else:
                os.environ[NO_PROGRESS_ENV] = before


PROGRESS_DELAY_S = 2.0
"""The PLD work's bars appear only once it has run this long (on a file or a pipe: a line when it ends, if it ran
this long; :func:`tsdp.verify.progress.progress_bar`)."""


def _progress(total: int, desc: str):
    """A progress bar on stderr that appears only if the work is still running after :data:`PROGRESS_DELAY_S` (none
    where :data:`NO_PROGRESS_ENV` is set)."""
    from tsdp.verify.progress import progress_bar

    hidden = os.environ.get(NO_PROGRESS_ENV, "") not in ("", "0")
    return progress_bar(total=total, desc=desc, leave=False, delay=PROGRESS_DELAY_S, dynamic_ncols=True,
                        disable=hidden)
