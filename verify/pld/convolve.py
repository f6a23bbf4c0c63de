"""Pairwise composition of PMFs (the library's ``compose_pmfs`` written out, its tail scan vectorised), bounded."""
from __future__ import annotations

import math

import numpy as np

from . import adapter

def _coarsen(pmf, factor: int):
    """``pmf`` on the grid of gap d·factor: losses rounded up (pessimistic PMF) or down
    (optimistic), so an upper estimate stays one and a lower estimate stays one
    (δ(ε) = E[(1 - e^{ε-L})_+] + m_∞ is non-decreasing in every loss)."""
    from dp_accounting.pld import pld_pmf

    dense = pmf.to_dense_pmf()
    if factor == 1:
        return dense
    idx = adapter.lower_loss(dense) + np.arange(dense.size)
    pess = adapter.pessimistic(dense)
    j = -((-idx) // factor) if pess else idx // factor
    probs = np.bincount(j - j[0], weights=adapter.probs(dense))
    return pld_pmf.DensePLDPmf(adapter.gap(dense) * factor, int(j[0]), probs, adapter.infinity_mass(dense), pess)


_LOSS_FLOOR = -600.0  # losses below go up to it (pessimistic) or are dropped (optimistic): e^{-l} stays finite


def _clean(pmf):
    """A convolution's PMF without FFT noise below 0 and without losses below -600, direction kept.

    Negative noise is set to 0 (an optimistic PMF is then scaled back to its total, so it
    gains no mass); mass below the floor moves up to it (pessimistic) or is dropped
    (optimistic; it adds nothing to δ(ε) at ε ≥ 0). Keeps repeated squaring stable (noise
    would otherwise grow with every step) and the library's ε reader finite (it takes e^{-l}).
    """
    from dp_accounting.pld import pld_pmf

    if not isinstance(pmf, pld_pmf.DensePLDPmf):
        return pmf
    probs, lower, d = adapter.probs(pmf), adapter.lower_loss(pmf), adapter.gap(pmf)
    pess, inf_mass = adapter.pessimistic(pmf), adapter.infinity_mass(pmf)
    if (probs < 0).any():
        total = float(probs.sum())
        probs = np.maximum(probs, 0.0)
        if not pess and probs.sum() > total:
            probs *= max(total, 0.0) / probs.sum()
    k_floor = math.ceil(_LOSS_FLOOR / d)
    if lower < k_floor:
        cut = min(k_floor - lower, probs.size)
        below = float(probs[:cut].sum())
        probs = probs[cut:] if cut < probs.size else np.zeros(1)
        if pess:
            probs = probs.copy()
            probs[0] += below
        lower = k_floor
    return pld_pmf.DensePLDPmf(d, lower, probs, inf_mass, pess)


_SCAN_CHUNK = 1 << 12  # tail scan block: the truncated tails are short next to a composed PMF


def _prefix_within(probs: np.ndarray, threshold: float) -> int:
    """The longest prefix of ``probs`` whose running sum stays ≤ ``threshold`` (the library's
    ``_find_prefix_to_truncate``: its Python loop as ``cumsum`` over blocks, the running sum carried
    into each block's first term, so the same sequential float sums, stopping at the first block
    that crosses)."""
    carry = 0.0
    for start in range(0, probs.size, _SCAN_CHUNK):
        block = probs[start:start + _SCAN_CHUNK].copy()
        block[0] += carry
        sums = np.cumsum(block)
        above = np.flatnonzero(sums > threshold)
        if above.size:
            return start + int(above[0])
        carry = sums[-1]
    return probs.size


def fftconvolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``scipy.signal.fftconvolve(a, b)`` (mode "full") of two 1-D float arrays, the same array bit for bit.

    The same real FFTs (``scipy.fft.rfftn`` / ``irfftn``) at the same padded length
    (``next_fast_len(len(a) + len(b) - 1, True)``), and scipy's plain product when an operand
    has one point. A squaring (``b is a``) transforms once, where scipy transforms both operands:
    the product of the spectrum with itself is the product scipy forms of two equal spectra.

    Args:
        a: A 1-D float array.
        b: A 1-D float array.

    Returns:
        Their full convolution.
    """
    from scipy import fft

    if a.size == 1 or b.size == 1:
        return a * b
    n = a.size + b.size - 1
    size = fft.next_fast_len(n, True)
    spectrum = fft.rfftn(a, [size], axes=[0])
    other = spectrum if b is a else fft.rfftn(b, [size], axes=[0])
    return fft.irfftn(spectrum * other, [size], axes=[0])[:n].copy()


def _compose_pmfs(a, b, tail_mass_truncation: float):
    """The library's ``pld_pmf.compose_pmfs(a, b, tail_mass_truncation)``, the same PMF bit for bit.

    Two dense PMFs are convolved as the library's ``DensePLDPmf.compose`` does, untruncated
    (through :func:`fftconvolve`), and their tails truncated as the library's ``_truncate_tails``
    does (each tail at most half the truncation mass; a pessimistic PMF moves the left tail onto
    its first point and the right one to infinity, an optimistic one the right tail onto its last
    point and drops the left), with the scan vectorised (:func:`_prefix_within`): the library loops
    in Python over the tails, most of a squaring's time. Anything else goes to the library as it is.
    """
    from dp_accounting.pld import pld_pmf

    if not (isinstance(a, pld_pmf.DensePLDPmf) and isinstance(b, pld_pmf.DensePLDPmf)) or tail_mass_truncation == 0:
        return pld_pmf.compose_pmfs(a, b, tail_mass_truncation)
    a.validate_composable(b)
    probs, pess = fftconvolve(adapter.probs(a), adapter.probs(b)), adapter.pessimistic(a)
    inf_a, inf_b = adapter.infinity_mass(a), adapter.infinity_mass(b)
    lower, inf_mass = adapter.lower_loss(a) + adapter.lower_loss(b), inf_a + inf_b - inf_a * inf_b
    left = _prefix_within(probs, tail_mass_truncation / 2)
    right = max(probs.size - _prefix_within(probs[::-1], tail_mass_truncation / 2), left + 1)
    left_mass, right_mass = np.sum(probs[:left]), np.sum(probs[right:])
    kept = probs[left:right]
    if pess:
        kept[0] += left_mass
    else:
        kept[-1] += right_mass
        right_mass = 0
    return pld_pmf.DensePLDPmf(adapter.gap(a), lower + left, kept, inf_mass + right_mass, pess)


def _ratio(coarse: float, fine: float) -> int:
    r = coarse / fine
    if abs(r - round(r)) > 1e-9 * r:
        raise ValueError(f"cannot compose PLDs with discretisations {fine:g} and {coarse:g} (not a multiple)")
    return int(round(r))


def _convolve(a, b, tail_mass_truncation: float, max_points: int):
    """a ∘ b (the library's ``compose_pmfs``, :func:`_compose_pmfs`) on a common gap, both operands coarsened by a
    power of 2 first when the result would exceed ``max_points`` (checked before allocating)."""
    from dp_accounting.pld import pld_pmf

    d = max(adapter.gap(a), adapter.gap(b))
    factor, max_points = 1, max(max_points, 16)  # two operands of at least one point each always fit
    while -(-a.size * adapter.gap(a) // (d * factor)) + -(-b.size * adapter.gap(b) // (d * factor)) + 2 > max_points:
        factor *= 2
    if factor > 1 or adapter.gap(a) != adapter.gap(b):
        square = b is a  # stays one operand: fftconvolve transforms it once
        a = _coarsen(a, _ratio(d, adapter.gap(a)) * factor)
        b = a if square else _coarsen(b, _ratio(d, adapter.gap(b)) * factor)
    finite = float(np.sum(adapter.probs(a.to_dense_pmf()))) * float(np.sum(adapter.probs(b.to_dense_pmf())))
    if finite <= tail_mass_truncation:  # (almost) all mass is at +inf: the library's truncation would empty it
        ia, ib = adapter.infinity_mass(a), adapter.infinity_mass(b)
        pess = adapter.pessimistic(a)
        inf_mass = min(1.0, ia + ib - ia * ib + (max(finite, 0.0) if pess else 0.0))
        return pld_pmf.DensePLDPmf(adapter.gap(a), 0, np.zeros(1), inf_mass, pess)
    return _clean(_compose_pmfs(a, b, tail_mass_truncation))
