"""Composition of PLDs in bounded memory and time: n-fold (one FFT or repeated squaring), pairwise, and the
attained envelope over the powers of 2."""
from __future__ import annotations

import functools
import itertools
import warnings
from typing import Callable, Optional

import numpy as np

from tsdp.theorems.config import ConfigError

from . import adapter
from .adapter import discretization_of
from .convolve import _convolve
from .limits import MAX_SQUARING_POINTS, PldCoarsenedWarning, _progress, max_fft_points, resolve_memory_limit
from .self_compose import _fft_length, _from_spectrum, _self_compose_pmf, _self_compose_plan, self_convolve_windows

DEFAULT_TAIL_MASS_TRUNCATION = 1e-15
"""The library's default ``tail_mass_truncation`` of ``self_compose`` / ``compose``."""


def _power(pmf, n: int, tail_mass_truncation: float, max_points: int):
    """pmf composed n times by repeated squaring (binary powering), each convolution bounded."""
    result, power = None, pmf
    with _progress(n.bit_length(), f"composing {n}x by squaring") as bar:
        while True:
            if n & 1:
                result = power if result is None else _convolve(result, power, tail_mass_truncation, max_points)
            n >>= 1
            bar.update(1)
            if not n:
                return result
            power = _convolve(power, power, tail_mass_truncation, max_points)


def _announce(before: float, pld, what: str):
    after = discretization_of(pld)
    if after > before:
        warnings.warn(PldCoarsenedWarning(f"{what} at discretisation {after:.3g} instead of {before:.3g} to fit the "
                                          "memory limit; the estimate keeps its direction (sound: upper, attained: "
                                          "lower)"), stacklevel=3)
    return pld


MAX_MASS_GROWTH = 1.0
"""The most log-mass n·η a composition may gain from a pessimistic PMF's excess mass η (a factor e)."""


def _check_mass_growth(pld, compositions: int) -> None:
    """Refuse a count at which a pessimistic PMF's excess mass η (total mass 1 + η: the float
    safety margin of the grid δ values and the library's clipping of negative connect-the-dots
    masses, about 4e-8 at d = 1e-4 and 3e-12 at d = 0.02) compounds past a factor e: (1 + η)^n
    grows without bound (3e14 compositions overflow). Extra mass only raises δ, so anything
    below the limit stays an upper bound."""
    for pmf in adapter.pmfs(pld):
        if pmf is None or not adapter.pessimistic(pmf):
            continue
        dense = pmf.to_dense_pmf()
        excess = float(np.sum(adapter.probs(dense))) + adapter.infinity_mass(dense) - 1.0
        if excess > 0 and compositions * excess > MAX_MASS_GROWTH:
            most = int(MAX_MASS_GROWTH / excess)
            raise ConfigError("steps", f"{compositions} compositions are more than the accountant resolves at "
                              f"discretisation {adapter.gap(dense):g}: the one-step PLD's excess mass {excess:.2g} "
                              f"(float safety margin) would compound by more than e; at most {most:.3g} compositions "
                              "(a coarser discretisation has less excess)")


def compose(pld, compositions: int, tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION, *,
            memory_limit: Optional[int] = None):
    """``pld`` composed ``compositions`` times, in bounded memory and time.

    The library's ``self_compose`` (one FFT) when its output range fits the memory ceiling
    (:func:`resolve_memory_limit`) and :data:`MAX_SELF_COMPOSE_POINTS`; otherwise repeated squaring with the library's tail
    truncation at each step, each convolution at most :data:`MAX_SQUARING_POINTS` points
    (operands coarsened first, :func:`_coarsen`), so 10^9 compositions take about 60
    convolutions and never a grid proportional to the count. Keeps the direction of
    ``pld``'s estimate (pessimistic stays an upper estimate; an optimistic one stays a lower
    estimate up to the tail_mass_truncation the library adds to the infinity mass).

    Args:
        pld: The one-step PLD.
        compositions: How many times it is composed (≥ 1).
        tail_mass_truncation: The library's ``tail_mass_truncation``.
        memory_limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The composed PLD (its direction kept).
    """
    if compositions < 1:
        raise ValueError(f"compositions must be >= 1, got {compositions}")
    if compositions == 1:
        return pld
    limit = resolve_memory_limit(memory_limit)
    return _composed(pld, compositions, tail_mass_truncation, limit,
                     _checked_plan(pld, compositions, tail_mass_truncation, limit))


def _checked_plan(pld, compositions: int, tail_mass_truncation: float, limit: int) -> Optional[tuple]:
    """Refuse a count the PMF's excess mass cannot take (:func:`_check_mass_growth`), then plan the
    library's ``self_compose`` (:func:`_self_compose_plan`: its bounds, or None when it does not fit)."""
    _check_mass_growth(pld, compositions)
    return _self_compose_plan(pld, compositions, tail_mass_truncation, limit)


def _composed(pld, compositions: int, tail_mass_truncation: float, limit: int, plan: Optional[tuple]):
    """:func:`compose` for ``compositions`` ≥ 2 planned by :func:`_checked_plan` (``plan``: its answer): the
    library's ``self_compose`` (:func:`_self_compose_pmf` per PMF) where it fits, else repeated squaring."""
    from ..cpus import each

    if plan is not None:  # the two directions side by side where there are CPUs
        parts = each(lambda pb: None if pb[0] is None else _self_compose_pmf(pb[0], compositions, tail_mass_truncation,
                                                                               pb[1]),
                     list(zip(adapter.pmfs(pld), plan)))
        return adapter.from_pmfs(*parts)
    cap = min(MAX_SQUARING_POINTS, max_fft_points(limit))
    parts = [None if p is None else _power(p, compositions, tail_mass_truncation, cap) for p in adapter.pmfs(pld)]
    return _announce(discretization_of(pld), adapter.from_pmfs(*parts), f"{compositions} compositions")


def compose_pair(a, b, tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION, *,
                 memory_limit: Optional[int] = None, max_points: Optional[int] = None):
    """The library's ``a.compose(b)`` with its size checked first (heterogeneous runs).

    PLDs of different gaps (one coarsened by :func:`fit_grid`) are brought to the coarser
    one; a result longer than ``max_points`` (default: what the memory ceiling allows) is
    computed from coarsened operands. Directions kept as in :func:`compose`.

    Args:
        a: The first PLD.
        b: The second PLD.
        tail_mass_truncation: The library's ``tail_mass_truncation``.
        memory_limit: The memory ceiling in bytes (None: the resolved one).
        max_points: The largest result allowed (None: from the ceiling).

    Returns:
        The composition of ``a`` and ``b``.
    """
    limit = resolve_memory_limit(memory_limit)
    cap = max_fft_points(limit) if max_points is None else max_points
    from ..cpus import each

    (ar, aa), (br, ba) = adapter.pmfs(a), adapter.pmfs(b)
    pairs = [(ar, br), None if aa is None and ba is None else (ar if aa is None else aa, br if ba is None else ba)]
    # the two directions are independent convolutions: side by side where there are CPUs
    remove, add = each(lambda pair: None if pair is None else _convolve(*pair, tail_mass_truncation, cap), pairs)
    return _announce(min(discretization_of(a), discretization_of(b)), adapter.from_pmfs(remove, add), "composition")


def attained_envelope(pld, compositions: int, read: Callable, tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION,
                      *, memory_limit: Optional[int] = None):
    """max of ``read(pld composed n times)`` over n ∈ {1, 2, 4, ..., 2^⌊log2 S⌋, S}: a lower bound.

    ``read`` may return a number or an array (δ on an ε grid); the maximum is elementwise.

    For an optimistic (lower-estimate) ``pld`` each composed value is a lower bound on the
    true ε or δ after n ≤ S compositions, hence after S (the true values are non-decreasing
    in n), so their maximum is too. The envelope undoes the optimistic discretisation's
    downward drift (up to one grid step per composition), which otherwise makes the
    composed lower bound fall as S grows when the per-step loss is below the grid width.
    Where the S-fold composition fits one FFT (:func:`_checked_plan`), every n-fold one is the
    library's one-FFT self-composition (:func:`_self_compose_pmf`) taken from one spectrum and
    its powers (:func:`_composed_counts`); otherwise the whole run goes by squaring and the
    powers 2^k by repeated squaring, each size bounded as in :func:`compose` (a coarsened power
    rounds down: still a lower bound). The maximum is exact, so the value does not depend on
    the order the reads are taken in.

    Args:
        pld: The one-step PLD (optimistic).
        compositions: The run's compositions S.
        read: Reads a number or an array from a composed PLD.
        tail_mass_truncation: The library's ``tail_mass_truncation``.
        memory_limit: The memory ceiling in bytes (None: the resolved one).

    Returns:
        The maximum read (elementwise for arrays): a lower bound on the run's value.
    """
    if compositions < 1:
        raise ValueError(f"compositions must be >= 1, got {compositions}")
    if compositions == 1:
        return read(pld)
    limit = resolve_memory_limit(memory_limit)
    plan = _checked_plan(pld, compositions, tail_mass_truncation, limit)
    counts = [1 << k for k in range(compositions.bit_length()) if 1 << k < compositions] + [compositions]
    parts = None if plan is None else _composed_counts(pld, counts, tail_mass_truncation, plan)
    from ..cpus import available_cpus, each

    if parts is not None:
        return _read_as_made(read, [pld], parts, background=available_cpus() > 1)

    cap = min(MAX_SQUARING_POINTS, max_fft_points(limit))

    def whole():
        return read(_composed(pld, compositions, tail_mass_truncation, limit, None))

    def powers():  # the reads at n = 1, 2, 4, ... < S and their maximum
        best, power, n = None, pld, 1
        while n < compositions:
            value = read(power)
            best = value if best is None else np.maximum(best, value)
            n *= 2
            if n < compositions:
                power = compose_pair(power, power, tail_mass_truncation, memory_limit=limit, max_points=cap)
        return best

    best, chain = each(lambda part: part(), (whole, powers))  # independent: side by side where there are CPUs
    return np.maximum(best, chain)


def _composed_counts(pld, counts, tail_mass_truncation: float, plan: tuple):
    """The n-fold compositions of ``pld`` for n in ``counts`` (1, then increasing powers of 2 below S, then S),
    each :func:`_self_compose_pmf`'s, from one real FFT per direction: spectrum^(2^k) by squaring, spectrum^S as
    the product of those of S's bits (the products :func:`_spectrum_power` forms, so the S-fold composition is
    the one :func:`compose` gives, bit for bit). An iterator over n > 1, one PLD at a time; None when a window
    (the Chernoff bounds of :func:`self_convolve_bounds`) does not fit the S-fold FFT length or a PMF is sparse."""
    from dp_accounting.pld import pld_pmf
    from scipy import fft

    from ..cpus import each

    total = counts[-1]
    pmfs = [p for p in adapter.pmfs(pld) if p is not None]
    if not all(isinstance(p, pld_pmf.DensePLDPmf) for p in pmfs):
        return None
    sides = []  # per direction: its PMF, the S-fold FFT length, the window of each count after the first
    for pmf, bounds in zip(pmfs, [b for b in plan if b is not None]):
        length = _fft_length(pmf, bounds)
        windows = self_convolve_windows(adapter.probs(pmf), counts[1:-1], tail_mass_truncation) + [bounds]
        if any(hi - lo + 1 > length for lo, hi in windows):
            return None
        sides.append((pmf, length, windows))

    def composed(n: int, spectra: list, window_index: int):
        parts = each(lambda i: _from_spectrum(sides[i][0], n, spectra[i], sides[i][1], sides[i][2][window_index],
                                              tail_mass_truncation), range(len(sides)))
        return adapter.from_pmfs(parts[0], parts[1] if len(parts) > 1 else None)

    def generate():
        power = [fft.rfft(adapter.probs(pmf), length) for pmf, length, _ in sides]  # spectrum^(2^k)
        product = [None] * len(sides)  # spectrum^(S's bits up to k)
        k = 0
        while True:
            if total >> k & 1:
                product = [p.copy() if q is None else np.multiply(q, p, out=q) for p, q in zip(power, product)]
            if total >> (k + 1) == 0:
                break
            power = [np.multiply(p, p, out=p if k else None) for p in power]  # the spectrum itself is kept once
            k += 1
            if (1 << k) < total:
                yield composed(1 << k, power, k - 1)
        yield composed(total, product, -1)

    return generate()


def _read_as_made(read: Callable, first: list, more, *, background: bool):
    """The elementwise maximum of ``read`` over the PLDs of ``first`` and then of the iterator ``more``. With
    ``background`` the reads run on a thread of their own while the next PLD is made, at most two PLDs waiting
    (memory of about three compositions); the maximum is exact, so the value is the same either way."""
    if not background:
        best = None
        for pld in itertools.chain(first, more):
            value = read(pld)
            best = value if best is None else np.maximum(best, value)  # elementwise for an array of δ
        return best
    from concurrent.futures import ThreadPoolExecutor

    values, pending = [], []
    with ThreadPoolExecutor(1) as reader:
        for pld in itertools.chain(first, more):
            if len(pending) == 2:
                values.append(pending.pop(0).result())
            pending.append(reader.submit(read, pld))
        values += [f.result() for f in pending]
    return functools.reduce(np.maximum, values)
