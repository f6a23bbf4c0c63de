"""verify.pld._compose_pmfs: the library's ``compose_pmfs`` bit for bit, with its tail scan vectorised."""
from __future__ import annotations

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf

from tsdp.verify import pld


def _pmf(rng, size, pessimistic, gap=1e-3):
    probs = rng.random(size) ** rng.uniform(1, 80)  # long runs of tiny values: tails to scan
    probs /= probs.sum() * rng.uniform(1, 1.001)
    return pld_pmf.DensePLDPmf(gap, int(rng.integers(-500, 500)), probs, float(rng.uniform(0, 1e-9)), pessimistic)


@pytest.mark.parametrize("seed", range(40))
def test_dense_composition_equals_the_library_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    pessimistic = bool(seed % 2)
    a, b = _pmf(rng, int(rng.integers(1, 20000)), pessimistic), _pmf(rng, int(rng.integers(1, 20000)), pessimistic)
    truncation = float(10 ** rng.uniform(-17, -3))
    ours, theirs = pld._compose_pmfs(a, b, truncation), pld_pmf.compose_pmfs(a, b, truncation)
    assert type(ours) is type(theirs)
    assert (ours._lower_loss, ours._infinity_mass) == (theirs._lower_loss, theirs._infinity_mass)
    assert np.array_equal(ours._probs, theirs._probs)


def test_prefix_scan_crosses_blocks_like_the_library_loop():
    probs = np.full(3 * pld._SCAN_CHUNK + 5, 1e-20)
    probs[2 * pld._SCAN_CHUNK + 7] = 1.0
    threshold = 5e-16
    s, expected = 0, len(probs)  # the library's _find_prefix_to_truncate, written out
    for i, v in enumerate(probs):
        s += v
        if s > threshold:
            expected = i
            break
    assert pld._prefix_within(probs, threshold) == expected == 2 * pld._SCAN_CHUNK + 7
    assert pld._prefix_within(np.zeros(10), threshold) == 10
