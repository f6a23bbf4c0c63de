"""The tests' whole-run view of the Monte Carlo loop: every trial's released updates in one tensor, and their fit to
the construction's law from the raw samples (the audits fit histograms: ``binned_goodness_of_fit``)."""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np
import torch
from scipy import stats

from tsdp.attacks.montecarlo.constructions import Construction
from tsdp.attacks.montecarlo.fit import GoodnessOfFit
from tsdp.attacks.montecarlo.statistics import mixture_cdf
from tsdp.attacks.montecarlo.trials import released_update_chunks


def released_updates(construction: Construction, world: str, trials: int, steps: int, generator: torch.Generator,
                     **loop: Any) -> torch.Tensor:
    """All chunks of :func:`tsdp.attacks.montecarlo.trials.released_update_chunks` as one tensor.

    Args:
        construction: The construction.
        world: ``"p"`` or ``"q"``.
        trials: The runs.
        steps: Compositions per run.
        generator: The loop's generator.
        **loop: ``released_update_chunks``'s keyword overrides.

    Returns:
        The (trials, steps) float64 centred released updates.
    """
    return torch.cat(list(released_update_chunks(construction, world, trials, steps, generator, **loop)))


def goodness_of_fit(y_p: np.ndarray, y_q: np.ndarray, pair_numeric: Tuple) -> GoodnessOfFit:
    """Kolmogorov-Smirnov tests of the observed one-step updates against the construction's mixtures.

    World P against P's CDF, world Q against Q's CDF; the combined p-value is the Bonferroni
    min(1, 2 min(p_P, p_Q)). A small value says the loop's output law is not the theorem's
    mixture (e.g. a sampler bug: padding off by one, WOR drawing with replacement).

    Args:
        y_p: World P's one-step updates.
        y_q: World Q's.
        pair_numeric: The construction's numeric pair.

    Returns:
        The :class:`tsdp.attacks.montecarlo.fit.GoodnessOfFit`.
    """
    a, p, b, q, sigma = pair_numeric
    res_p = stats.kstest(y_p, lambda x: mixture_cdf(x, a, p, sigma))
    res_q = stats.kstest(y_q, lambda x: mixture_cdf(x, b, q, sigma))
    combined = min(1.0, 2 * min(res_p.pvalue, res_q.pvalue))
    return GoodnessOfFit(float(combined), float(res_p.pvalue), float(res_q.pvalue), float(res_p.statistic),
                         float(res_q.statistic))
