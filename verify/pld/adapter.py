"""The one adapter to dp-accounting's internals: what tsdp reads from and builds into the library's PLD objects."""
from __future__ import annotations

def _gap(pmf) -> float:
    return pmf._discretization  # noqa: SLF001 - the library's PMFs expose no public accessor


def _pmfs(pld) -> tuple:
    """(remove, add) PMFs of a library PLD, add None when it is symmetric."""
    return pld._pmf_remove, (None if pld._symmetric else pld._pmf_add)  # noqa: SLF001


def _from_pmfs(remove, add):
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return PrivacyLossDistribution(remove, add)


def discretization_of(pld) -> float:
    """The grid gap of a library PLD (its coarser direction): the discretisation it answers at,
    which :func:`fit_grid` or :func:`compose` may have coarsened from the one asked for."""
    return max(_gap(p) for p in _pmfs(pld) if p is not None)
