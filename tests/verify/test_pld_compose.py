"""verify.pld.convolve._compose_pmfs: the library's ``compose_pmfs`` bit for bit, with its tail scan vectorised; verify.pld.fftconvolve:
scipy.signal.fftconvolve bit for bit; the one-FFT self-composition: the library's bounds and ``self_compose`` bit for bit."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from dp_accounting.pld import common, pld_pmf
from scipy import signal

from tsdp.theorems.config import TrainingConfig
from tsdp.verify import accountant
from tsdp.verify.events import TrainingStepDpEvent
from tsdp.verify.pld import PldSettings

from tsdp.verify import pld
from tsdp.verify.pld import adapter, build, composition, convolve, epsilon


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
    ours, theirs = convolve._compose_pmfs(a, b, truncation), pld_pmf.compose_pmfs(a, b, truncation)
    assert type(ours) is type(theirs)
    assert (ours._lower_loss, ours._infinity_mass) == (theirs._lower_loss, theirs._infinity_mass)
    assert np.array_equal(ours._probs, theirs._probs)


def test_prefix_scan_crosses_blocks_like_the_library_loop():
    probs = np.full(3 * convolve._SCAN_CHUNK + 5, 1e-20)
    probs[2 * convolve._SCAN_CHUNK + 7] = 1.0
    threshold = 5e-16
    s, expected = 0, len(probs)  # the library's _find_prefix_to_truncate, written out
    for i, v in enumerate(probs):
        s += v
        if s > threshold:
            expected = i
            break
    assert convolve._prefix_within(probs, threshold) == expected == 2 * convolve._SCAN_CHUNK + 7
    assert convolve._prefix_within(np.zeros(10), threshold) == 10


@pytest.mark.parametrize("seed", range(20))
def test_fftconvolve_equals_scipy_bit_for_bit(seed):
    """Sizes from 1 (scipy's plain product) to 5e4, distinct operands and a squaring (one transform)."""
    rng = np.random.default_rng(seed)
    a = rng.random(int(rng.integers(1, 50000))) ** 8
    b = rng.random(int(rng.integers(1, 50000))) ** 8 if seed % 3 else a
    ours, theirs = pld.fftconvolve(a, b), signal.fftconvolve(a, b)
    assert ours.shape == theirs.shape and np.array_equal(ours, theirs)


@pytest.mark.parametrize("seed", range(6))
def test_dense_squaring_equals_the_library_bit_for_bit(seed):
    rng = np.random.default_rng(100 + seed)
    a = _pmf(rng, int(rng.integers(1, 20000)), bool(seed % 2))
    ours, theirs = convolve._compose_pmfs(a, a, 1e-15), pld_pmf.compose_pmfs(a, a, 1e-15)
    assert (ours._lower_loss, ours._infinity_mass) == (theirs._lower_loss, theirs._infinity_mass)
    assert np.array_equal(ours._probs, theirs._probs)


@pytest.mark.parametrize("seed", range(40))
def test_self_convolve_window_contains_the_library_bounds(seed):
    """Random PMFs (long runs of tiny values, one point, zeros at the ends), counts 2..1e6, truncations 1e-17..1e-3:
    the window holds the library's (so it truncates no more mass than the library, at most τ), wider by at most the
    estimates' slack (1e-6 of its width, and a point at each end)."""
    rng = np.random.default_rng(200 + seed)
    probs = _pmf(rng, int(rng.integers(1, 60000)), bool(seed % 2))._probs
    if seed % 5 == 0:
        probs = np.concatenate((np.zeros(int(rng.integers(1, 100))), probs, np.zeros(3)))
    count, truncation = int(10 ** rng.uniform(0.3, 6)), float(10 ** rng.uniform(-17, -3))
    lo, hi = pld.self_convolve_bounds(probs, count, truncation)
    lib_lo, lib_hi = common.compute_self_convolve_bounds(probs, count, truncation)
    assert lo <= lib_lo and lib_hi <= hi, ((lo, hi), (lib_lo, lib_hi))
    assert (lib_lo - lo) + (hi - lib_hi) <= 2 + 1e-6 * (lib_hi - lib_lo), ((lo, hi), (lib_lo, lib_hi))


@pytest.mark.parametrize("config", [TrainingConfig(), TrainingConfig(sigma=0.7, instances=3)], ids=["default", "l3"])
@pytest.mark.parametrize("count", [2, 1000, pytest.param(30000, marks=pytest.mark.slow)])
def test_self_composition_is_the_librarys_up_to_rounding(config, count):
    """The accountant's one-step PLDs (sound: one PMF; attained: two), composed as the library's ``self_compose``: the
    same infinity mass, a window that holds the library's, the library's probabilities on it to 1e-15 (FFT rounding
    of a unit mass) and at most τ outside it, and the same ε at δ = 1e-3, 1e-5 and 1e-8 to 1e-6 relative or one grid step
    (the reader can land on the next grid point; measured at most 2e-7 relative off the grid)."""
    event = TrainingStepDpEvent(config)
    for estimate in ("sound", "attained"):
        one = accountant.one_step_pld(event, estimate, PldSettings(1e-3))
        plan = composition._checked_plan(one, count, 1e-15, pld.resolve_memory_limit())
        assert plan is not None
        ours, theirs = composition._composed(one, count, 1e-15, pld.resolve_memory_limit(), plan), one.self_compose(count)
        for a, b in zip(adapter.pmfs(ours), adapter.pmfs(theirs)):
            assert (a is None) == (b is None)
            if a is not None:
                assert a._infinity_mass == b._infinity_mass
                start = b._lower_loss - a._lower_loss
                assert start >= 0 and a.size >= start + b.size
                common_part = a._probs[start:start + b.size]
                assert np.max(np.abs(common_part - b._probs)) <= 1e-15  # FFT rounding of a unit mass (measured 5e-17)
                assert a._probs.sum() - common_part.sum() <= 1e-15
        for delta in (1e-3, 1e-5, 1e-8):
            mine, library = ours.get_epsilon_for_delta(delta), theirs.get_epsilon_for_delta(delta)
            assert abs(mine - library) <= max(1e-6 * library, 1e-3), (delta, mine, library)


def _epsilon_in_one_pass(pmf, delta):
    """The ε reader before the block scan: the whole PMF at once, the reference for the blocks."""
    inf_mass, probs = pmf._infinity_mass, pmf._probs[::-1]
    top = (pmf._lower_loss + pmf.size - 1) * pmf._discretization
    if inf_mass > delta:
        return float("inf")
    losses = np.cumsum(np.concatenate(([top], np.full(pmf.size - 1, -pmf._discretization))))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        upper = inf_mass + np.concatenate(([0.0], np.cumsum(probs)))
        lower = np.concatenate(([0.0], np.cumsum(np.exp(-losses) * probs)))
        stop = (upper[:-1] > delta) & (lower[:-1] > 0)
        stop &= np.log(np.where(stop, upper[:-1] - delta, 1.0) / np.where(stop, lower[:-1], 1.0)) >= losses
        zero = (upper[1:] >= delta) & (lower[1:] == 0)
    i_stop = int(np.argmax(stop)) if stop.any() else probs.size
    i_zero = int(np.argmax(zero)) if zero.any() else probs.size
    if i_zero < i_stop:
        return max(0.0, float(losses[i_zero]))
    u, w = upper[i_stop], lower[i_stop]
    return 0.0 if u <= w + delta else float(np.log((u - delta) / w))


@pytest.mark.parametrize("seed", range(30))
def test_block_epsilon_reader_equals_one_pass_bit_for_bit(seed):
    """Random PMFs over several scan blocks (stops in the first, a later or no block; zero tails), every δ."""
    rng = np.random.default_rng(300 + seed)
    pmf = _pmf(rng, int(rng.integers(1, 6 * convolve._SCAN_CHUNK)), bool(seed % 2), gap=float(10 ** rng.uniform(-4, -1)))
    if seed % 4 == 0:  # a top run of zeros: the zero-W exit
        pmf = pld_pmf.DensePLDPmf(pmf._discretization, pmf._lower_loss,
                                  np.concatenate((pmf._probs, np.zeros(int(rng.integers(1, 3 * convolve._SCAN_CHUNK))))),
                                  pmf._infinity_mass, pmf._pessimistic_estimate)
    for delta in (0.9, 0.5, 1e-2, 1e-5, 1e-9, 1e-12, 1e-16):
        assert epsilon._pmf_epsilon(pmf, delta) == _epsilon_in_one_pass(pmf, delta), delta


@pytest.mark.parametrize("count", [1, 1000])
def test_block_epsilon_reader_on_the_accountants_plds(count):
    for estimate in ("sound", "attained"):
        one = accountant.one_step_pld(TrainingStepDpEvent(TrainingConfig()), estimate, PldSettings(1e-3))
        for pmf in adapter.pmfs(pld.compose(one, count)):
            if pmf is not None:
                for delta in (1e-3, 1e-5, 1e-10):
                    assert epsilon._pmf_epsilon(pmf, delta) == _epsilon_in_one_pass(pmf.to_dense_pmf(), delta)


@pytest.mark.parametrize("seed", range(12))
def test_connect_the_dots_pmf_is_the_librarys_bit_for_bit(seed, monkeypatch):
    """pld.connect_dots_pmf builds the library's create_pmf_pessimistic_connect_dots_fixed_gap PMF itself: the same
    masses (dense or sparse), lowest loss and infinity mass, for profiles of 2 to 3e5 grid points."""
    rng = np.random.default_rng(400 + seed)
    size = int(10 ** rng.uniform(0.31, 5.5))
    deltas = np.sort(rng.random(size) ** rng.uniform(1, 30))[::-1].copy()
    gap, k_lo = float(10 ** rng.uniform(-4, -1)), int(rng.integers(-10 ** 5, 10))
    monkeypatch.setattr(build, "fit_grid", lambda *args, **kwargs: (gap, k_lo, k_lo + size - 1))
    profile = SimpleNamespace(safe=lambda: lambda eps: deltas[np.rint(eps / gap).astype(int) - k_lo])
    ours = pld.connect_dots_pmf(profile, pld.PldSettings(gap))
    theirs = pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(gap, k_lo, k_lo + size - 1, deltas)
    assert type(ours) is type(theirs) and ours._infinity_mass == theirs._infinity_mass
    a, b = ours.to_dense_pmf(), theirs.to_dense_pmf()
    assert a._lower_loss == b._lower_loss and np.array_equal(a._probs, b._probs)


@pytest.mark.parametrize("size", [1, 999, 1000, 1001, 50000])
def test_pmf_of_array_is_the_librarys_create_pmf(size):
    rng = np.random.default_rng(size)
    probs = rng.random(size)
    ours = build._pmf_of_array(1e-3, -17, probs, 1e-9, False)
    theirs = pld_pmf.create_pmf(dict(zip(range(-17, -17 + size), probs.tolist())), 1e-3, 1e-9, False)
    assert type(ours) is type(theirs)
    a, b = ours.to_dense_pmf(), theirs.to_dense_pmf()
    assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass) and np.array_equal(a._probs, b._probs)


@pytest.mark.parametrize("config,count", [(TrainingConfig(), 1000), (TrainingConfig(sigma=0.7, instances=3), 300),
                                          (TrainingConfig(), 64)], ids=["default-1000", "l3-300", "default-64"])
def test_the_envelope_is_the_maximum_over_the_librarys_self_compositions(config, count):
    """attained_envelope on the one-FFT path (every n-fold composition from one spectrum, :func:`_composed_counts`)
    against a second method: the library's own ``self_compose(n)`` for n = 1, 2, 4, ..., S, read at δ and maximised
    (agreement to 1e-6 relative or one grid step, the compositions differing only by FFT rounding and the
    windows); the S-fold one is the one ``compose`` gives, bit for bit; reads in the background or in turn give
    the same value, bit for bit."""
    one = accountant.one_step_pld(TrainingStepDpEvent(config), "attained", PldSettings(1e-3))
    counts = [1 << k for k in range(count.bit_length()) if 1 << k < count] + [count]
    library = max(float((one if n == 1 else one.self_compose(n, 1e-15)).get_epsilon_for_delta(1e-5)) for n in counts)
    read = lambda p: float(pld.epsilon_for_delta(p, 1e-5))  # noqa: E731
    envelope = pld.attained_envelope(one, count, read, 1e-15)
    assert abs(envelope - library) <= max(1e-6 * library, 1e-3), (envelope, library)
    plan = composition._checked_plan(one, count, 1e-15, pld.resolve_memory_limit())
    *_, whole = composition._composed_counts(one, counts, 1e-15, plan)
    direct = composition._composed(one, count, 1e-15, pld.resolve_memory_limit(), plan)
    for a, b in zip(adapter.pmfs(whole), adapter.pmfs(direct)):
        assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass)
        assert np.array_equal(a._probs, b._probs)
    made = lambda: composition._composed_counts(one, counts, 1e-15, plan)  # noqa: E731
    assert composition._read_as_made(read, [one], made(), background=True) == \
        composition._read_as_made(read, [one], made(), background=False) == envelope
