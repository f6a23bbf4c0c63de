"""The declared grid of an accountant check: the paper's Section 5 configurations plus seeded random ones.

The paper's grid has one home, :mod:`tsdp.verify.checks.grid`: its default configuration at each of
:data:`~tsdp.verify.checks.grid.PAPER_STEPS` training steps, the deterministic variant at 10 and 100 steps
(epochs), the other scheme variants (:func:`~tsdp.verify.checks.grid.section5_variants`) at 100; then
``random`` seeded configurations of the schemes tsdp bounds, at 100 steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from tsdp.theorems.config import BOTTOM_LEVEL, TOP_LEVEL, ConfigError, Top, TrainingConfig, check_int
from tsdp.verify.checks.grid import PAPER, PAPER_STEPS, section5_variants

RANDOM_SCHEMES = (("wor", "wr"), ("wor", "poisson"), ("deterministic", "wr"), ("shuffle", "poisson"))
"""Schemes the random cells draw from (each has a sound and an attained ε in the catalogue)."""


@dataclass(frozen=True)
class Cell:
    """One cell of a grid: a configuration and a number of training steps.

    Attributes:
        config: The configuration.
        steps: The number of training steps (an integer ≥ 1; ConfigError otherwise).
    """

    config: TrainingConfig
    steps: int

    def __post_init__(self):
        object.__setattr__(self, "steps", check_int("steps", self.steps, 1))


def section5_cells() -> Tuple[Cell, ...]:
    """The paper's Section 5 configuration at its steps, then its variants (module docstring).

    Returns:
        The cells.
    """
    cells = [Cell(PAPER, s) for s in PAPER_STEPS]
    for variant in section5_variants():
        steps = (10, 100) if variant.config.top == Top.DETERMINISTIC else (100,)
        cells += [Cell(variant.config, s) for s in steps]
    return tuple(cells)


def random_cells(n: int, seed: int = 0, steps: int = 100) -> Tuple[Cell, ...]:
    """``n`` configurations drawn with ``numpy.random.default_rng(seed)`` over :data:`RANDOM_SCHEMES`, λ = 1.

    Args:
        n: How many, 0 to 10000.
        seed: The seed (≥ 0).
        steps: The training steps of each cell.

    Returns:
        The cells.

    Raises:
        ConfigError: ``n`` or ``seed`` out of range.
    """
    rng = np.random.default_rng(check_int("seed", seed, 0))
    cells = []
    for _ in range(check_int("random", n, 0, 10_000)):
        top, bottom = RANDOM_SCHEMES[rng.integers(len(RANDOM_SCHEMES))]
        forecast = int(rng.integers(1, 5))
        context = int(rng.integers(0, 9))
        N = int(rng.integers(50, 2001))
        config = TrainingConfig(N=N, L=int(rng.integers(forecast + context, 4 * (forecast + context) + 40)),
                                context_length=context, forecast_length=forecast,
                                batch_size=int(rng.integers(8, max(9, N // 4))), sigma=float(rng.choice([1.0, 2.0, 4.0])),
                                top=top, bottom=bottom)
        cells.append(Cell(config, steps))
    return tuple(cells)


def default_grid(random: int = 6, seed: int = 0) -> Tuple[Cell, ...]:
    """The declared grid: :func:`section5_cells` then :func:`random_cells`.

    Args:
        random: How many random cells (drawn over :data:`RANDOM_SCHEMES`, λ = 1, 100 steps each).
        seed: The seed of the random cells (``numpy.random.default_rng``).

    Returns:
        The Section 5 cells, then the random ones.
    """
    return section5_cells() + random_cells(random, seed)


def restrict(cells: Tuple[Cell, ...], top: Optional[str] = None, bottom: Optional[str] = None) -> Tuple[Cell, ...]:
    """The cells whose top / bottom level is ``top`` / ``bottom``.

    Args:
        cells: The grid.
        top: The top level kept (None: any).
        bottom: The bottom level kept (None: any).

    Returns:
        The cells kept.

    Raises:
        ConfigError: Naming ``top`` or ``bottom`` for a level that does not exist, or when no cell is left.
    """
    for name, value, levels in (("top", top, TOP_LEVEL), ("bottom", bottom, BOTTOM_LEVEL)):
        if value is not None and value not in levels:
            raise ConfigError(name, f"must be one of {', '.join(levels)}", value)
    kept = tuple(c for c in cells if top in (None, c.config.top) and bottom in (None, c.config.bottom))
    if not kept:
        also = f"with bottom = {bottom} " if top is not None and bottom is not None else ""
        raise ConfigError("top" if top is not None else "bottom",
                          f"{also}leaves no cell of the grid (its schemes: "
                          f"{', '.join(sorted({f'{c.config.top}/{c.config.bottom}' for c in cells}))})",
                          top if top is not None else bottom)
    return kept
