"""The one-FFT self-composition (the library's ``self_compose``): its Chernoff window, real half spectrum, binary powers."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

from . import adapter
from .limits import MAX_SELF_COMPOSE_POINTS, max_fft_points

_MGF_BLOCK = 256  # block length of the two-stage moment sums (:func:`_log_mgfs`)
_MGF_TOLERANCE = 1e-9
"""Bound on |fast log-MGF - the library's log-MGF| (:func:`self_convolve_bounds`): both are within 1e-11 of the
true value for every PMF a one-step grid or its fit allows (at most 2^23 non-negative points; measured 1e-14)."""


def _log_mgfs(probs: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """log Σ_i p_i e^{i t} at every order t (|i t| ≤ 20), as two-stage sums: one matrix product over blocks of
    :data:`_MGF_BLOCK` points, then the blocks' sum. Every term is non-negative, so each stage's relative error is
    at most its length times the unit roundoff (well inside :data:`_MGF_TOLERANCE`)."""
    blocks = -(-probs.size // _MGF_BLOCK)
    padded = np.zeros(blocks * _MGF_BLOCK)
    padded[:probs.size] = probs
    inner = padded.reshape(blocks, _MGF_BLOCK) @ np.exp(np.outer(np.arange(_MGF_BLOCK), orders))
    return np.log(np.sum(inner * np.exp(np.outer(np.arange(blocks) * float(_MGF_BLOCK), orders)), axis=0))


def self_convolve_bounds(probs: np.ndarray, compositions: int, tail_mass_truncation: float) -> Tuple[int, int]:
    """A window (lo, hi) of the n-fold self-convolution that contains the library's
    ``common.compute_self_convolve_bounds(probs, compositions, tail_mass_truncation)`` (each end at most one point
    wider), without its log-sum-exps over the whole PMF.

    The library takes the tightest Chernoff bound b_t = (n·log E[e^{tL}] + log(2/τ)) / t over its 40 default
    orders t: the mass outside [max_{t<0} ⌊b_t⌋, min_{t>0} ⌈b_t⌉] is at most τ. Every order's bound is
    estimated here from :func:`_log_mgfs` with an error of at most s_t = n·:data:`_MGF_TOLERANCE`/|t| (plus
    1e-12 relative), and the window rounds outward from b_t ± s_t: it contains the library's, so the mass it
    truncates is at most the library's, at most τ. A PMF with a negative or non-finite entry, or no mass, or an
    order whose estimate is not finite, gets the library's own bounds.

    Args:
        probs: The one-step masses.
        compositions: n.
        tail_mass_truncation: The library's ``tail_mass_truncation``.

    Returns:
        (lo, hi).
    """
    return self_convolve_windows(probs, [compositions], tail_mass_truncation)[0]


def self_convolve_windows(probs: np.ndarray, counts: Sequence[int], tail_mass_truncation: float) -> list:
    """:func:`self_convolve_bounds` for each n of ``counts``, from one evaluation of the moment sums.

    Args:
        probs: The one-step masses.
        counts: The n values.
        tail_mass_truncation: The library's ``tail_mass_truncation``.

    Returns:
        (lo, hi) per n.
    """
    from dp_accounting.pld import common

    size = probs.size
    if tail_mass_truncation == 0 or size < 2 or not (np.all(probs >= 0) and np.all(np.isfinite(probs))) \
            or not probs.sum() > 0:
        return [common.compute_self_convolve_bounds(probs, n, tail_mass_truncation) for n in counts]
    orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / size  # the library's default orders
    up, down = orders > 0, orders < 0
    log_mgfs = _log_mgfs(probs, orders)
    windows = []
    for n in counts:
        with np.errstate(over="ignore", invalid="ignore"):
            bound = (n * log_mgfs + math.log(2 / tail_mass_truncation)) / orders
            slack = n * _MGF_TOLERANCE / np.abs(orders) + 1e-12 * (np.abs(bound) + 1)
        if not np.all(np.isfinite(bound) & np.isfinite(slack)):
            windows.append(common.compute_self_convolve_bounds(probs, n, tail_mass_truncation))
            continue
        hi = min((size - 1) * n, math.ceil(float(np.min((bound + slack)[up]))))
        lo = max(0, math.floor(float(np.max((bound - slack)[down]))))
        windows.append((lo, hi))
    return windows


def _self_compose_plan(pld, compositions: int, tail_mass_truncation: float, limit: int) -> Optional[tuple]:
    """The library's truncation bounds per PMF (remove, add; None where absent) when its ``self_compose`` FFT
    (the Chernoff output range, :func:`self_convolve_bounds`) fits the ceiling, else None: the composition
    (:func:`_self_compose_pmf`) reuses them."""
    from scipy import fft

    cap = min(MAX_SELF_COMPOSE_POINTS, max_fft_points(limit))

    def fits(lo, hi, size):
        return hi - lo + 1 <= cap and fft.next_fast_len(max(hi - lo + 1, size)) <= cap

    plan = []
    for pmf in adapter.pmfs(pld):
        if pmf is None:
            plan.append(None)
            continue
        probs = adapter.probs(pmf.to_dense_pmf())
        if float(probs.sum()) ** compositions <= tail_mass_truncation:
            return None  # the library's truncation would empty it (an IndexError); _convolve handles it
        bounds = self_convolve_bounds(probs, compositions, tail_mass_truncation)
        if not fits(*bounds, probs.size):
            return None
        plan.append(bounds)
    return tuple(plan)


def _self_compose_pmf(pmf, compositions: int, tail_mass_truncation: float, bounds: Tuple[int, int]):
    """The library's ``pmf.self_compose(compositions, tail_mass_truncation)`` on the window ``bounds``
    (:func:`self_convolve_bounds`): ``common.self_convolve`` and ``DensePLDPmf.self_compose`` written out with the
    real half spectrum and :func:`_spectrum_power`, equal to the library's up to rounding (module docstring); a
    sparse PMF goes to the library. Its direction is the library's: the mass the window truncates (at most
    τ) is added to the infinity mass, as the library adds τ."""
    from dp_accounting.pld import pld_pmf
    from scipy import fft

    if not isinstance(pmf, pld_pmf.DensePLDPmf):
        return pmf.self_compose(compositions, tail_mass_truncation)
    length = _fft_length(pmf, bounds)
    # the PMF is real: its half spectrum (rfft / irfft) halves the library's complex transforms; the same circular
    # convolution of the same length, equal up to rounding (1e-15 absolute on a unit mass, tested)
    spectrum = _spectrum_power(fft.rfft(adapter.probs(pmf), length), compositions)
    return _from_spectrum(pmf, compositions, spectrum, length, bounds, tail_mass_truncation)


def _fft_length(pmf, bounds: Tuple[int, int]) -> int:
    """The library's FFT length for a self-composition into the window ``bounds``: at least the window and the PMF."""
    from scipy import fft

    return fft.next_fast_len(max(bounds[1] - bounds[0] + 1, pmf.size))


def _from_spectrum(pmf, compositions: int, spectrum: np.ndarray, length: int, bounds: Tuple[int, int],
                   tail_mass_truncation: float):
    """The n-fold self-composition of the dense ``pmf`` from its half spectrum to the n (length ``length``), cut to
    the window ``bounds`` as the library's ``self_convolve`` cuts it, with the library's infinity mass (τ added)."""
    from dp_accounting.pld import pld_pmf
    from scipy import fft

    lo, hi = bounds
    probs = np.array(np.roll(fft.irfft(spectrum, length), -lo)[:hi - lo + 1])
    inf_prob = tail_mass_truncation - math.expm1(compositions * math.log1p(-adapter.infinity_mass(pmf)))
    return pld_pmf.DensePLDPmf(adapter.gap(pmf), adapter.lower_loss(pmf) * compositions + lo, probs, inf_prob,
                               adapter.pessimistic(pmf))


def _spectrum_power(spectrum: np.ndarray, n: int) -> np.ndarray:
    """``spectrum ** n`` (n ≥ 1) by binary powering, in place: about log2(n) complex products where numpy's power of
    a complex array to n ≥ 100 calls ``cpow`` (exp and log per point, 2.5x slower); the same relative rounding, of
    order n times the unit roundoff, either way."""
    result, base = None, spectrum
    while True:
        if n & 1:
            result = base.copy() if result is None else np.multiply(result, base, out=result)
        n >>= 1
        if not n:
            return result
        base = np.multiply(base, base, out=base if base is not spectrum else None)
