"""verify/pld/adapter.py: the private attributes of dp-accounting's PLD objects that tsdp reads mean, in the installed
release, what the adapter says they mean. Each reading is checked against the library's public API: PMFs built by
its public constructors from known masses, δ(ε) recomputed from the adapter's fields and compared with the library's
``get_delta_for_epsilon``. A release that renames or redefines a field fails here, not silently in a bound."""
from __future__ import annotations

import math
import re
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf, privacy_loss_distribution

from tsdp.verify.pld import adapter

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

ROOT = Path(__file__).resolve().parents[2]
EPSILONS = (-0.5, 0.0, 0.3, 1.0, 2.5)


def _delta(losses: np.ndarray, masses: np.ndarray, inf_mass: float, eps: float) -> float:
    """δ(ε) = m_∞ + Σ_l p_l (1 - e^{ε - l})_+ (the hockey-stick divergence of a PMF over the privacy loss)."""
    return inf_mass + float(np.sum(masses * np.maximum(0.0, -np.expm1(eps - losses))))


def _delta_from_adapter(pmf, eps: float) -> float:
    dense = pmf.to_dense_pmf()
    losses = (adapter.lower_loss(dense) + np.arange(adapter.probs(dense).size)) * adapter.gap(dense)
    return _delta(losses, adapter.probs(dense), adapter.infinity_mass(dense), eps)


@pytest.mark.parametrize("pessimistic", [True, False])
def test_dense_fields_are_the_pmf_the_library_was_given(pessimistic):
    """A dense PMF from known masses on the losses -3d..(n-4)d: probs, lower_loss, gap, infinity_mass and pessimistic
    read back exactly what was given, and δ(ε) recomputed from them is the library's own δ(ε) (to 1e-12)."""
    rng = np.random.default_rng(7)
    size = adapter.max_sparse_size() + 5  # past the sparse limit: create_pmf makes a dense PMF
    masses = rng.random(size)
    masses *= (1 - 1e-3) / masses.sum()
    gap, lower = 1e-2, -3
    pmf = pld_pmf.create_pmf(dict(zip(range(lower, lower + size), masses.tolist())), gap, 1e-3, pessimistic)
    assert isinstance(pmf, pld_pmf.DensePLDPmf)
    assert np.array_equal(adapter.probs(pmf), masses)
    assert (adapter.lower_loss(pmf), adapter.gap(pmf), adapter.infinity_mass(pmf)) == (lower, gap, 1e-3)
    assert adapter.pessimistic(pmf) is pessimistic
    for eps in EPSILONS:
        assert _delta_from_adapter(pmf, eps) == pytest.approx(pmf.get_delta_for_epsilon(eps), rel=1e-12, abs=1e-15)


def test_the_sparse_limit_and_sparse_fields():
    """create_pmf keeps exactly max_sparse_size() losses sparse (one more is dense), and loss_probs is the loss
    index -> mass map it was given; δ(ε) from it is the library's."""
    limit = adapter.max_sparse_size()
    assert limit >= 1
    given = {k: 1.0 / (limit + 1) for k in range(-2, limit - 2)}
    sparse = pld_pmf.create_pmf(given, 0.1, 1.0 / (limit + 1), True)
    assert isinstance(sparse, pld_pmf.SparsePLDPmf)
    assert adapter.loss_probs(sparse) == given and adapter.gap(sparse) == 0.1
    dense = pld_pmf.create_pmf({**given, limit - 2: 1e-9}, 0.1, 0.0, True)
    assert isinstance(dense, pld_pmf.DensePLDPmf)
    losses = np.array(sorted(given)) * 0.1
    masses = np.array([given[k] for k in sorted(given)])
    for eps in EPSILONS:
        assert _delta(losses, masses, adapter.infinity_mass(sparse), eps) == pytest.approx(
            sparse.get_delta_for_epsilon(eps), rel=1e-12, abs=1e-15)


def test_the_directions_of_a_pld():
    """pmfs gives (remove, add) as the library's PrivacyLossDistribution(remove, add) holds them, add None for a
    symmetric PLD; from_pmfs builds the PLD whose δ(ε) is the library's for those PMFs; a public Gaussian PLD's
    fields give its δ(ε)."""
    remove = pld_pmf.create_pmf({0: 0.5, 3: 0.5}, 0.5, 0.0, True)
    add = pld_pmf.create_pmf({-1: 0.25, 2: 0.75}, 0.5, 0.0, True)
    two = privacy_loss_distribution.PrivacyLossDistribution(remove, add)
    one = privacy_loss_distribution.PrivacyLossDistribution(remove)
    assert adapter.pmfs(two)[0] is remove and adapter.pmfs(two)[1] is add
    assert adapter.pmfs(one)[0] is remove and adapter.pmfs(one)[1] is None
    for eps in EPSILONS:
        assert adapter.from_pmfs(remove, add).get_delta_for_epsilon(eps) == two.get_delta_for_epsilon(eps)
        assert adapter.from_pmfs(remove, None).get_delta_for_epsilon(eps) == one.get_delta_for_epsilon(eps)
        # the larger δ of the two directions (the library's PLD answers for the worse neighbour)
        expected = max(_delta_from_adapter(remove, eps), _delta_from_adapter(add, eps))
        assert expected == pytest.approx(two.get_delta_for_epsilon(eps), rel=1e-12, abs=1e-15)
    gauss = privacy_loss_distribution.from_gaussian_mechanism(1.0, value_discretization_interval=1e-3)
    assert adapter.discretization_of(gauss) == 1e-3
    for eps in EPSILONS:
        ours = max(_delta_from_adapter(p, eps) for p in adapter.pmfs(gauss) if p is not None)
        assert ours == pytest.approx(gauss.get_delta_for_epsilon(eps), rel=1e-9, abs=1e-15)
        # and the Gaussian mechanism's exact δ(ε) = Φ(1/2 - ε) - e^ε Φ(-1/2 - ε) (σ = Δ = 1; Balle & Wang 2018),
        # which the pessimistic grid of gap 1e-3 exceeds by less than 1e-3
        exact = 0.5 * math.erfc((eps - 0.5) / math.sqrt(2)) - math.exp(eps) * 0.5 * math.erfc((eps + 0.5) / math.sqrt(2))
        assert 0.0 <= ours - exact < 1e-3, (eps, ours, exact)

def test_the_installed_dp_accounting_is_within_the_pinned_range():
    """pyproject.toml bounds dp-accounting from above: the installed release is inside the range the adapter was
    checked on (a release outside it is refused by pip before anything reaches this module)."""
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    (spec,) = [d for d in deps if d.startswith("dp-accounting")]
    lower, upper = re.fullmatch(r"dp-accounting>=([\d.]+),<([\d.]+)", spec).groups()
    key = lambda v: tuple(int(x) for x in v.split(".")[:3])  # noqa: E731
    installed = metadata.version("dp-accounting")
    assert key(lower) <= key(installed) < key(upper), (installed, spec)
