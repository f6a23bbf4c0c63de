"""ε(δ) of a composed PLD: the library's ``get_epsilon_for_delta`` scan, vectorised."""
from __future__ import annotations

import math

import numpy as np

from . import adapter
from .convolve import _SCAN_CHUNK

def _pmf_epsilon(pmf, delta: float) -> float:
    """The library's ``PLDPmf.get_epsilon_for_delta`` (``pld_pmf._get_epsilon_for_delta``), vectorised.

    The same scan from the largest loss down, as cumulative sums (sequential, like the
    library's loop): the running masses U_i = m_∞ + Σ_{j<i} p_j and W_i = Σ_{j<i} e^{-l_j} p_j,
    stopping at the first i with U_i > δ, W_i > 0 and log((U_i - δ)/W_i) ≥ l_i (or, earlier, at the
    first i with U_{i+1} ≥ δ and W_{i+1} = 0: ε is then l_i). Block by block from the top, each
    block's sums carried into the next one's first term (the same sequential float sums as one
    pass), stopping at the first block that stops: the scan ends near ε, often far above the
    smallest loss.
    """
    dense = pmf.to_dense_pmf()
    inf_mass = adapter.infinity_mass(dense)
    if inf_mass > delta:
        return math.inf
    probs, gap = adapter.probs(dense)[::-1], adapter.gap(dense)
    loss = (adapter.lower_loss(dense) + dense.size - 1) * gap  # the top loss, then each block's last
    mass = weighted = 0.0  # Σ p_j and Σ e^{-l_j} p_j over the blocks scanned
    start, width = 0, _SCAN_CHUNK
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        while start < probs.size:
            p = probs[start:start + width]
            steps = np.full(p.size, -gap)
            steps[0] = loss if start == 0 else steps[0] + loss  # itertools.count's sums, carried
            losses = np.cumsum(steps)
            sums, terms = p.copy(), np.exp(-losses) * p
            sums[0] += mass
            terms[0] += weighted
            running = np.cumsum(sums)
            upper = inf_mass + np.concatenate(([mass], running))
            lower = np.concatenate(([weighted], np.cumsum(terms)))
            stop = (upper[:-1] > delta) & (lower[:-1] > 0)
            stop &= np.log(np.where(stop, upper[:-1] - delta, 1.0) / np.where(stop, lower[:-1], 1.0)) >= losses
            zero = (upper[1:] >= delta) & (lower[1:] == 0)
            i_stop = int(np.argmax(stop)) if stop.any() else p.size
            i_zero = int(np.argmax(zero)) if zero.any() else p.size
            if i_zero < i_stop:
                return max(0.0, float(losses[i_zero]))
            if i_stop < p.size:
                u, w = upper[i_stop], lower[i_stop]
                break
            loss, mass, weighted = losses[-1], running[-1], lower[-1]
            start, width = start + p.size, 2 * width
        else:
            u, w = inf_mass + mass, weighted
    if u <= w + delta:
        return 0.0
    return math.log((u - delta) / w)


def epsilon_for_delta(pld, delta: float) -> float:
    """``pld.get_epsilon_for_delta(delta)`` of the library, vectorised (the library loops in
    Python over every grid point: seconds on the millions of points a large composition has).

    The larger ε of the two directions, as the library's ``PrivacyLossDistribution``; the
    direction of the PLD's estimate is unchanged (the same number up to float rounding).

    Args:
        pld: A library ``PrivacyLossDistribution``.
        delta: The target δ.

    Returns:
        ε at δ, as the library computes it.
    """
    return max(_pmf_epsilon(p, delta) for p in adapter.pmfs(pld) if p is not None)
