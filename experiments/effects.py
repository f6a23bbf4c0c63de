"""Does a factor of the training (top-level scheme, batch size) change utility? A balanced two-way analysis of variance
with replication and the power of its F-tests.

The design: ``values[i, j, s]``, the test CRPS of level i of factor A, level j of factor B and seed s (every cell the
same number n ≥ 2 of seeds). The F-test of a factor compares its mean square with the error mean square (within
cells, ab(n - 1) degrees of freedom); it is exact under normal errors of equal variance. Its power against the
smallest effect of interest Δ (two levels of the factor whose means differ by Δ, the others between them) uses the
noncentral F distribution with noncentrality n·(levels of the other factor)·Δ²/(2σ²), σ² estimated by the error mean
square; ``detectable`` is the Δ that test would see with power :data:`POWER`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence, Tuple

import numpy as np

POWER = 0.8
"""The power a 'no effect' finding needs to count (below it the test could not have seen the effect)."""


@dataclass(frozen=True)
class FactorTest:
    """The F-test of one factor: its levels and their means (over the other factor and the seeds), degrees of freedom,
    F, p-value, the level α it is judged at and whether p < α; the smallest effect of interest Δ, the test's power
    against it, and the Δ it detects with power :data:`POWER`.

    Attributes:
        factor: The factor's name.
        levels: Its levels.
        means: Their means.
        df: The factor's degrees of freedom.
        df_error: The error's.
        f: The F statistic.
        p_value: Its p-value.
        alpha: The level it is judged at.
        significant: Whether p < α.
        effect: The smallest effect of interest Δ.
        power: The power against Δ.
        detectable: The Δ detected with the target power.
    """

    factor: str
    levels: Tuple[str, ...]
    means: Tuple[float, ...]
    df: int
    df_error: int
    f: float
    p_value: float
    alpha: float
    significant: bool
    effect: float
    power: float
    detectable: float

    def as_dict(self) -> dict:
        """The JSON form: the fields in order, ``levels`` and ``means`` as lists."""
        return {**asdict(self), "levels": list(self.levels), "means": list(self.means)}


def power_of(df: int, df_error: int, noncentrality: float, alpha: float) -> float:
    """Power of an F-test at level ``alpha`` with (df, df_error) degrees of freedom against ``noncentrality``.

    Args:
        df: The factor's degrees of freedom.
        df_error: The error's.
        noncentrality: The noncentrality parameter.
        alpha: The test's level.

    Returns:
        The power.
    """
    from scipy.stats import f, ncf

    critical = f.isf(alpha, df, df_error)
    return float(ncf.sf(critical, df, df_error, noncentrality)) if noncentrality > 0 else float(alpha)


def _detectable(df: int, df_error: int, per_effect: float, alpha: float) -> float:
    """The Δ whose noncentrality ``per_effect`` · Δ² gives power :data:`POWER`."""
    from scipy.optimize import brentq

    if per_effect <= 0:
        return float("inf")
    hi = 1.0
    while power_of(df, df_error, per_effect * hi * hi, alpha) < POWER:
        hi *= 2
    return float(brentq(lambda d: power_of(df, df_error, per_effect * d * d, alpha) - POWER, 0.0, hi, xtol=1e-12))


def two_way_anova(values: np.ndarray, names: Tuple[str, str], levels: Tuple[Sequence, Sequence], *, alpha: float,
                  effect: float) -> Tuple[FactorTest, FactorTest]:
    """The F-tests of both factors of a balanced two-way design with replication (module docstring).

    Args:
        values: array (a, b, n) of the measured numbers, n ≥ 2 per cell.
        names: the two factors' names.
        levels: the two factors' levels (their labels, in the array's order).
        alpha: each test's level (the caller splits its family level over the tests).
        effect: the smallest effect of interest Δ, in the values' units.

    Returns:
        (test of the first factor, test of the second).

    Raises:
        ValueError: for fewer than 2 replicates, a factor with one level, a non-finite value, or no variation
            within cells.
    """
    x = np.asarray(values, dtype=float)
    a, b, n = x.shape
    if n < 2 or a < 2 or b < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"two_way_anova needs finite values, ≥ 2 levels per factor and ≥ 2 replicates, got {x.shape}")
    grand = x.mean()
    cell = x.mean(axis=2)
    mean_a, mean_b = cell.mean(axis=1), cell.mean(axis=0)
    ss_error = float(((x - cell[:, :, None]) ** 2).sum())
    df_error = a * b * (n - 1)
    ms_error = ss_error / df_error
    if ms_error <= 0:
        raise ValueError("two_way_anova: the replicates of every cell are equal (no error variance to test against)")
    out = []
    from scipy.stats import f as f_dist

    for name, lv, means, other in ((names[0], levels[0], mean_a, b), (names[1], levels[1], mean_b, a)):
        df = len(means) - 1
        ms = n * other * float(((means - grand) ** 2).sum()) / df
        f = ms / ms_error
        p = float(f_dist.sf(f, df, df_error))
        per_effect = n * other / (2 * ms_error)
        out.append(FactorTest(name, tuple(str(v) for v in lv), tuple(float(m) for m in means), df, df_error, float(f),
                              p, alpha, p < alpha, effect, power_of(df, df_error, per_effect * effect ** 2, alpha),
                              _detectable(df, df_error, per_effect, alpha)))
    return out[0], out[1]
