"""The one adapter to dp-accounting's internals: every read of a private attribute of the library's PLD objects.

dp-accounting's ``PrivacyLossDistribution`` and its PMFs (``pld_pmf.DensePLDPmf``,
``pld_pmf.SparsePLDPmf``) expose no accessor for what the accountant's own composition, ε reader
and disk cache need: the grid gap, the masses, the lowest loss, the infinity mass, the estimate's
direction, the two directions of a PLD. They are read here and nowhere else in tsdp, so a release
that renames or redefines one of them breaks this module only; ``tests/verify/test_pld_adapter.py``
checks every function below against the library's public API (the PLD built through its public
constructors, δ(ε) read back through ``get_delta_for_epsilon``), and pyproject.toml bounds the
dp-accounting versions these names were checked on. The library's public classes and functions
(``DensePLDPmf(...)``, ``compose_pmfs``, ``self_compose``, ``to_dense_pmf``) are called directly
where they are used.

A dense PMF holds the mass ``probs(pmf)[i]`` at the privacy loss ``(lower_loss(pmf) + i) * gap(pmf)``
and ``infinity_mass(pmf)`` at +∞; a sparse one maps the integer loss k (the loss k·gap) to its
mass (:func:`loss_probs`).
"""
from __future__ import annotations

import numpy as np


def gap(pmf) -> float:
    """The grid gap d of a PMF (the library's ``value_discretization_interval``).

    Args:
        pmf: A library PMF (dense or sparse).

    Returns:
        The gap d.
    """
    return pmf._discretization  # noqa: SLF001 - the library's PMFs expose no public accessor


def probs(pmf) -> np.ndarray:
    """The masses of a dense PMF, on the losses ``lower_loss(pmf)``, ``lower_loss(pmf) + 1``, ... (times the gap).

    Args:
        pmf: A dense library PMF.

    Returns:
        The masses, as an array.
    """
    return pmf._probs  # noqa: SLF001


def lower_loss(pmf) -> int:
    """The integer index of a dense PMF's lowest loss (its loss is this times the gap).

    Args:
        pmf: A dense library PMF.

    Returns:
        The lowest loss's index.
    """
    return pmf._lower_loss  # noqa: SLF001


def infinity_mass(pmf) -> float:
    """The mass of a PMF at the privacy loss +∞.

    Args:
        pmf: A library PMF (dense or sparse).

    Returns:
        The mass at +∞.
    """
    return pmf._infinity_mass  # noqa: SLF001


def pessimistic(pmf) -> bool:
    """Whether a PMF is a pessimistic (upper) estimate, else an optimistic (lower) one.

    Args:
        pmf: A library PMF (dense or sparse).

    Returns:
        True for a pessimistic PMF.
    """
    return pmf._pessimistic_estimate  # noqa: SLF001


def loss_probs(pmf) -> dict:
    """A sparse PMF's masses: integer loss index -> mass.

    Args:
        pmf: A sparse library PMF.

    Returns:
        Loss index -> mass.
    """
    return pmf._loss_probs  # noqa: SLF001


def max_sparse_size() -> int:
    """The most losses the library's ``pld_pmf.create_pmf`` stores as a sparse PMF (more become a dense one)."""
    from dp_accounting.pld import pld_pmf

    return pld_pmf._MAX_PMF_SPARSE_SIZE  # noqa: SLF001


def pmfs(pld) -> tuple:
    """(remove, add) PMFs of a library PLD, add None when it is symmetric.

    Args:
        pld: A library ``PrivacyLossDistribution``.

    Returns:
        (remove PMF, add PMF or None).
    """
    return pld._pmf_remove, (None if pld._symmetric else pld._pmf_add)  # noqa: SLF001


def from_pmfs(remove, add):
    """The library's PLD of the two directions (symmetric when ``add`` is None): the inverse of :func:`pmfs`.

    Args:
        remove: The REMOVE direction's PMF.
        add: The ADD direction's PMF (None: symmetric).

    Returns:
        The library's ``PrivacyLossDistribution``.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return PrivacyLossDistribution(remove, add)


def discretization_of(pld) -> float:
    """The grid gap of a library PLD (its coarser direction): the discretisation it answers at,
    which :func:`fit_grid` or :func:`compose` may have coarsened from the one asked for.

    Args:
        pld: A library ``PrivacyLossDistribution``.

    Returns:
        Its grid gap.
    """
    return max(gap(p) for p in pmfs(pld) if p is not None)
