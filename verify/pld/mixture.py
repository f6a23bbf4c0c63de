"""The PLD of a mechanism that runs with probability w and releases nothing otherwise, the coin revealed.

If (P, Q) dominates a mechanism M and a data-independent coin decides whether M runs (probability w) or
nothing data-dependent is released, then revealing the coin is a post-processing in reverse, and the pair
P' = (1 - w) δ_⊥ ⊕ w P, Q' = (1 - w) δ_⊥ ⊕ w Q (⊕: the two outcomes tagged apart) dominates the whole:
H_α(P' ‖ Q') = (1 - w) max(0, 1 - α) + w H_α(P ‖ Q) for every α (joint convexity, with equality for the
tagged pair). Its privacy loss is 0 with probability 1 - w and L_PQ otherwise, so its PMF is w times the PMF
of (P, Q) plus 1 - w at the loss 0, and its mass at +∞ is w times theirs. The operation is exact and
linear in the PMF, so it keeps a PMF's direction: a pessimistic (upper) PMF of (P, Q) gives a pessimistic PMF of
(P', Q'), an optimistic one an optimistic one.

A shuffled epoch that runs s of its steps holds the changed sequence with probability ρ = s N'/N
(:func:`tsdp.theorems.hidden_position.in_run_probability`); given the permutation it is a deterministic-order
epoch, bounded by T1-T4 when it holds the changed sequence and silent otherwise, so its sound PLD is this
mixture of the whole epoch's with w = ρ (THEOREMS.md, "Partial epochs").
"""
from __future__ import annotations

from . import adapter


def _mixed_pmf(pmf, weight: float):
    """``weight`` × ``pmf`` plus 1 - ``weight`` at the loss 0, its +∞ mass times ``weight``, direction kept."""
    import numpy as np
    from dp_accounting.pld import pld_pmf

    d, inf_mass, pess = adapter.gap(pmf), adapter.infinity_mass(pmf), adapter.pessimistic(pmf)
    if isinstance(pmf, pld_pmf.SparsePLDPmf):
        losses = {k: weight * v for k, v in adapter.loss_probs(pmf).items()}
        losses[0] = losses.get(0, 0.0) + (1.0 - weight)
        return pld_pmf.SparsePLDPmf(losses, d, weight * inf_mass, pess)
    lower, probs = adapter.lower_loss(pmf), weight * adapter.probs(pmf)
    lo, hi = min(lower, 0), max(lower + probs.size - 1, 0)
    out = np.zeros(hi - lo + 1)
    out[lower - lo:lower - lo + probs.size] = probs
    out[-lo] += 1.0 - weight
    return pld_pmf.DensePLDPmf(d, lo, out, weight * inf_mass, pess)


def revealed_mixture(pld, weight: float):
    """The PLD of a mechanism dominated by ``pld``'s pair that runs with probability ``weight`` and is silent
    otherwise, the coin revealed (module docstring): loss 0 with probability 1 - ``weight``.

    Exact, so in the direction of ``pld``: an **upper** (pessimistic) PLD of the pair gives an upper PLD of the
    mixture, a lower one a lower one. Both directions (remove, add) are mixed alike.

    Args:
        pld: A library ``PrivacyLossDistribution`` of the pair that runs.
        weight: The probability w that it runs, in [0, 1].

    Returns:
        The mixture's ``PrivacyLossDistribution`` (``pld`` itself at w = 1).

    Raises:
        ValueError: ``weight`` outside [0, 1].
    """
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the probability that the mechanism runs must be in [0, 1], got {weight!r}")
    if weight == 1.0:
        return pld
    remove, add = adapter.pmfs(pld)
    return adapter.from_pmfs(_mixed_pmf(remove, weight), None if add is None else _mixed_pmf(add, weight))


__all__ = ["revealed_mixture"]
