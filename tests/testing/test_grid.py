"""The accountant checks' grid is the paper's grid (one home, :mod:`tsdp.verify.checks.grid`): Section 5's default
N = 320, Λ = 32, σ = 1, L_C = L_F = 1, L = 20 at 1, 10, 100 and 1000 steps, its five scheme variants, then seeded
random cells; ``restrict`` keeps a scheme or names the flag."""
from __future__ import annotations

import pytest

from tsdp.testing.grid import default_grid, random_cells, restrict, section5_cells
from tsdp.theorems.config import ConfigError
from tsdp.verify.checks.grid import PAPER, fixed_grid, section5_variants


def _fields(config) -> tuple:
    return (config.N, config.batch_size, config.sigma, config.context_length, config.forecast_length, config.L,
            config.top, config.bottom, config.instances, config.sigma_context, config.sigma_forecast)


def test_section5_is_the_papers_default_at_its_steps_then_its_variants():
    cells = section5_cells()
    paper = (320, 32, 1.0, 1, 1, 20, "wor", "wr", 1, 0.0, 0.0)
    assert [(_fields(c.config), c.steps) for c in cells[:4]] == [(paper, s) for s in (1, 10, 100, 1000)]
    variants = [(_fields(c.config), c.steps) for c in cells[4:]]
    assert variants == [
        ((320, 32, 1.0, 1, 1, 20, "deterministic", "wr", 1, 0.0, 0.0), 10),
        ((320, 32, 1.0, 1, 1, 20, "deterministic", "wr", 1, 0.0, 0.0), 100),
        ((320, 32, 1.0, 1, 1, 20, "wor", "wr", 2, 0.0, 0.0), 100),
        ((320, 32, 1.0, 1, 1, 20, "wor", "poisson", 1, 0.0, 0.0), 100),
        ((320, 32, 1.0, 1, 1, 20, "wor", "wr", 1, 1.0, 1.0), 100),
        ((320, 32, 1.0, 1, 1, 20, "pooled", "wr", 1, 0.0, 0.0), 100),
    ]


def test_the_checks_fixed_grid_and_the_accountant_grid_start_from_one_paper_configuration():
    assert fixed_grid()[0].config is PAPER and section5_cells()[0].config is PAPER
    assert {c.config for c in section5_variants()} <= {c.config for c in section5_cells()}


def test_the_default_grid_appends_seeded_random_cells():
    grid = default_grid(random=3, seed=5)
    assert grid[:len(section5_cells())] == section5_cells()
    assert grid[len(section5_cells()):] == random_cells(3, 5) != random_cells(3, 6)


def test_restrict_keeps_a_scheme_or_names_the_flag():
    assert {c.config.top for c in restrict(section5_cells(), top="pooled")} == {"pooled"}
    with pytest.raises(ConfigError, match="top"):
        restrict(section5_cells(), top="sideways")
    with pytest.raises(ConfigError, match="leaves no cell"):
        restrict(section5_cells(), top="shuffle")
