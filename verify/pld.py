"""One-step privacy loss distributions (dp-accounting PLDs) from the catalogue's bounds.

Paper Appendix B.3 accounts with PLDs built by the pessimistic connect-the-dots
construction (Doroshenko et al. 2022, "Connect the Dots", Algorithm 1): δ(ε) of the
one-step privacy profile is evaluated on the grid ε_i = i·d and handed to the library's
``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``; composition, FFT and tail
truncation are the library's own. This module evaluates δ(ε) on the grid, fast:
every pair of the catalogue has a monotone privacy loss (THEOREMS.md), so the grid is
inverted at once (:func:`theorems.hockey_stick.loss_root`: interpolation on a coarse z-grid, then bracketed
Newton, vectorised) and H_α = P(Z > z*) - α Q(Z > z*) is read off Gaussian tails.
Where the library loops in Python or repeats work, its steps are written out here with the
same floating-point operations, each tested equal to the library bit for bit: the PMF
construction (:func:`connect_dots_pmf`, :func:`_pmf_of_array`), the
pairwise composition (:func:`_compose_pmfs`, :func:`fftconvolve`) and the ε reader
(:func:`epsilon_for_delta`). The answers are the library's, only sooner; the one-FFT
self-composition uses the real half spectrum and binary powering and a truncation window that
contains the library's, so it equals the library's up to rounding (1e-15 absolute on a unit
mass, tested), where the library's own FFT rounding lies too.

Soundness directions
--------------------
* :func:`profile_pld` / :func:`sound_pld` (pessimistic, an **upper** estimate): the
  connect-the-dots PLD's δ'(ε) is the chord interpolation, in α = e^ε, of the profile
  H(α) through the grid points (with H(0) = 1 and infinity mass δ at the top grid point);
  a profile is convex and non-increasing, so δ' ≥ H everywhere and every composed ε rounds
  up. The grid values themselves carry a float-error bound (1e-12 of the two tail terms
  whose difference they are, plus 1e-12 relative) so that float error never rounds them down.
* :func:`pair_pld` with ``pessimistic=False`` (optimistic, a **lower** estimate): privacy
  buckets with the loss rounded *down* to the grid and the mass below the grid dropped,
  the library's ``pessimistic_estimate=False`` discretisation (Meiser & Mohammadi 2018),
  built vectorised and wrapped in the library's ``PLDPmf``. δ(ε) = E_P[(1 - e^{ε-L})_+] is
  non-decreasing in every loss, so every composed δ (hence ε) rounds down; the one
  exception is the library's own composition, which adds its tail-truncation mass
  (1e-15 by default) to the infinity mass.

Bounded size (memory and time by construction)
----------------------------------------------
Every grid and every convolution is sized before it is allocated, under a memory ceiling
(:func:`resolve_memory_limit`: ``memory_limit=`` keyword, else the ``TSDP_MEMORY_LIMIT`` environment
variable, else 2 GiB). A one-step grid larger than :func:`max_grid_points` is built at a
coarser gap d·2^j (still connect-the-dots, still pessimistic; optimistic buckets stay
optimistic) up to d = 1; beyond that :class:`PldTooLargeError` says how many points it would
need. :func:`compose` uses the library's ``self_compose`` when its FFT fits, else repeated
squaring with tail truncation, coarsening the operands (losses rounded up for a pessimistic
PMF, down for an optimistic one, so directions are kept) whenever a convolution would
exceed the ceiling: never a grid proportional to the number of compositions. A coarsening
is announced by a :class:`PldCoarsenedWarning` naming the gap used.
"""
from __future__ import annotations

import functools
import itertools
import math
import os
import warnings
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

import numpy as np
from scipy.special import log_ndtr, logsumexp, ndtr

from tsdp.theorems.bounds.base import Bound
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.hockey_stick import loss_root, orient
from tsdp.theorems.mixture import MixturePair, NumericMixturePair

DEFAULT_DISCRETIZATION = 1e-4
"""Width d of the privacy-loss grid (the library's default ``value_discretization_interval``)."""

DEFAULT_LOG_MASS_TRUNCATION = -50.0
"""The library's default ``log_mass_truncation_bound``: the grid ends where δ ≤ ½·e^{-50}."""

DEFAULT_TAIL_MASS_TRUNCATION = 1e-15
"""The library's default ``tail_mass_truncation`` of ``self_compose`` / ``compose``."""

_SAFETY = 1e-12  # relative inflation of the grid δ values (pessimistic path only)
_COARSE_STEP = 0.25

ProfileFn = Callable[[np.ndarray], np.ndarray]

DEFAULT_MEMORY_LIMIT = 2 * 2**30
"""Default memory ceiling of one PLD construction or convolution, in bytes (2 GiB)."""

MEMORY_LIMIT_ENV = "TSDP_MEMORY_LIMIT"
"""Environment variable overriding :data:`DEFAULT_MEMORY_LIMIT` (bytes, or with K/M/G/T suffix, binary)."""

MAX_GRID_POINTS = 2**19
"""Time ceiling of a one-step grid (about 2 s to build on one core; the paper's default
configuration needs 315001 points at d = 1e-4)."""

MAX_SELF_COMPOSE_POINTS = 2**23
"""Time ceiling of the library's one-FFT ``self_compose`` (about 2 s); longer goes by squaring."""

MAX_SQUARING_POINTS = 2**18
"""Time ceiling of one convolution on the repeated-squaring path (about 0.05 s each)."""

MAX_COARSE_DISCRETIZATION = 1.0
"""The coarsest gap a one-step grid is built at; beyond it the construction is refused."""

_BYTES_PER_GRID_POINT = 512  # one-step build: chunked profile, the library's loss->prob dict and arrays
_BYTES_PER_FFT_POINT = 96  # a convolution: complex spectra, their product, the real result, truncation copies
_CHUNK = 1 << 15  # profile evaluations per chunk (bounds the points x mixture-components matrices)
_EPS_CEILING = 1e300  # the profile search gives up here: no finite grid


class PldTooLargeError(ConfigError):
    """A PLD whose grid cannot fit the memory ceiling even at the coarsest gap (names σ).

    ``points`` is the number of grid points it would need, ``max_points`` what the ceiling allows.
    """

    def __init__(self, constraint: str, points: float, max_points: int):
        self.points = points
        self.max_points = max_points
        super().__init__("sigma", constraint)


class PldCoarsenedWarning(UserWarning):
    """A PLD was built or composed at a coarser gap than asked, to fit the memory ceiling (still sound)."""


def resolve_memory_limit(value: Optional[int] = None) -> int:
    """The memory ceiling in bytes: ``value`` if given, else ``$TSDP_MEMORY_LIMIT``, else 2 GiB.

    Raises ConfigError naming the keyword or the environment variable for a value that is not
    a positive size.
    """
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError("memory_limit", "must be a positive number of bytes", value)
        return value
    text = os.environ.get(MEMORY_LIMIT_ENV)
    if text is None or not text.strip():
        return DEFAULT_MEMORY_LIMIT
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in units and t[-1:] != "" else ""
    try:
        number = float(t[: len(t) - len(unit)])
    except ValueError:
        number = float("nan")
    if not (math.isfinite(number) and number * units[unit] >= 1):
        raise ConfigError(MEMORY_LIMIT_ENV, "must be a positive size in bytes, e.g. 2G or 2147483648", text)
    return int(number * units[unit])


def max_grid_points(limit: Optional[int] = None) -> int:
    """The most points a one-step grid may have under the ceiling (and :data:`MAX_GRID_POINTS`)."""
    return max(16, min(MAX_GRID_POINTS, resolve_memory_limit(limit) // _BYTES_PER_GRID_POINT))


def max_fft_points(limit: Optional[int] = None) -> int:
    """The longest convolution result the memory ceiling allows."""
    return max(16, resolve_memory_limit(limit) // _BYTES_PER_FFT_POINT)


_ALLOCATOR_PRIME_BYTES = 31 * 2**20  # just under glibc's ceiling (32 MiB) for its adaptive mmap threshold


@functools.lru_cache(maxsize=None)
def prime_allocator() -> None:
    """Once per process: allocate and free one 31 MiB block, so glibc's malloc keeps PLD-sized arrays on its heap.

    glibc serves a large allocation by a fresh ``mmap`` (every page faulted in and zeroed
    again, each time) until a block that large has been freed; it then raises its threshold
    to that size by itself. Freeing one 31 MiB block first (``np.empty`` touches no page) makes
    that adaptation happen before the PLD work instead of part-way through it: the first
    composition of a process then runs at the speed of later ones (about 0.4 s saved on the
    default question). Only timing changes, never a number; on other allocators it is one
    cheap allocation.
    """
    np.empty(_ALLOCATOR_PRIME_BYTES // 8)


def _bytes(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def _progress(total: int, desc: str):
    """A tqdm bar on stderr that appears only if the work is still running after 2 s."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, leave=False, delay=2.0, dynamic_ncols=True)


def _chunked(fn: ProfileFn, eps: np.ndarray) -> np.ndarray:
    """fn over eps in chunks of 2^15 points (element-wise, so the same values as one call)."""
    if eps.size <= _CHUNK:
        return np.asarray(fn(eps), dtype=float)
    parts = []
    with _progress(eps.size, "PLD grid") as bar:
        for i in range(0, eps.size, _CHUNK):
            parts.append(np.asarray(fn(eps[i:i + _CHUNK]), dtype=float))
            bar.update(min(_CHUNK, eps.size - i))
    return np.concatenate(parts)


def pair_profile_on(pair: NumericMixturePair, eps: np.ndarray, *, upper: bool = False) -> np.ndarray:
    """H_{e^ε}(P ‖ Q) for an array of ε, through :func:`theorems.hockey_stick.loss_root` (vectorised over ε).

    The profile-from-PLD identity H_α = Pr[L_PQ > log α] - α Pr[L_QP < -log α]
    (Balle et al. 2018, Thm 5) with Gaussian tails at the single root. Exact up to float
    rounding; agrees with :func:`theorems.hockey_stick.hockey_stick` (tests). With
    ``upper=True`` a float-error bound is added, 1e-12·(P(Z > z*) + α Q(Z > z*)) (the
    cancellation in the difference) plus 1e-12 relative: an upper estimate, never rounded down.
    """
    eps = np.asarray(eps, dtype=float)
    o = orient(pair)
    out = np.zeros_like(eps)
    everything = eps <= o.lower
    out[everything] = -np.expm1(eps[everything])
    inner = (~everything) & (eps < o.upper)
    if inner.any():
        e = eps[inner]
        z = loss_root(o, e)
        tail_p = ndtr(o.a[None, :] - z[:, None]) @ np.exp(o.log_p)
        # α Q(Z > z*) in log space: e^ε overflows past ε ≈ 709 where Q's tail underflows to 0
        log_tail_q = logsumexp(o.log_q[None, :] + log_ndtr(o.b[None, :] - z[:, None]), axis=1)
        with np.errstate(over="ignore"):
            scaled_q = np.exp(e + log_tail_q)
        out[inner] = tail_p - scaled_q
        if upper:
            out[inner] += _SAFETY * (tail_p + scaled_q)
    if upper:
        out = out * (1.0 + _SAFETY)
    with np.errstate(over="ignore"):  # 1 - e^ε → -inf past ε ≈ 709: the floor is 0 there
        floor = np.maximum(0.0, -np.expm1(eps))
    return np.clip(np.maximum(out, floor), 0.0, 1.0)


# ----------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class OneStepProfile:
    """δ(ε) of one bound for one configuration, vectorised over ε, with its grid range.

    ``delta(eps)`` is the theorem's profile exactly as stated (a pair form: the α ≥ 1 pair
    for ε ≥ 0 and the swapped pair for ε < 0, mixed with weight w; see :func:`one_step_profile`).
    ``upper_pair`` is the pair whose ε_hi fixes the grid's upper end, ``lower_pair`` the
    pair whose ε_hi, negated, fixes the lower end (see :func:`grid_range`).
    """

    bound_id: str
    delta: ProfileFn
    upper: ProfileFn
    lower: ProfileFn
    delta_upper: ProfileFn = None  # δ plus a float-error bound (defaults to ``delta``)

    def safe(self) -> ProfileFn:
        """δ(ε) rounded up by its float-error bound (the pessimistic path's input)."""
        return self.delta_upper if self.delta_upper is not None else self.delta


def _pair_fn(pair: NumericMixturePair, upper: bool = False) -> ProfileFn:
    return lambda eps: pair_profile_on(pair, eps, upper=upper)


def _switch_fn(ge: NumericMixturePair, lt: NumericMixturePair, upper: bool = False) -> ProfileFn:
    def fn(eps):
        eps = np.asarray(eps, dtype=float)
        out = np.empty_like(eps)
        hi = eps >= 0
        out[hi] = pair_profile_on(ge, eps[hi], upper=upper)
        out[~hi] = pair_profile_on(lt, eps[~hi], upper=upper)
        return out

    return fn


def one_step_profile(bound: Bound, config: TrainingConfig, *, check: bool = True) -> OneStepProfile:
    """The bound's one-step (one-epoch for epoch scope; one release for T15) profile δ(ε), ready for a PLD grid.

    A bound with a :class:`~tsdp.theorems.bounds.base.PairForm` (T1-T4, T6-T14: w = 1 for a
    pair, w = ρ for T7/T8, Thms F.1/F.2): (1 - w) max(0, 1 - e^ε) + w H_{e^ε}(ge) for ε ≥ 0 and
    the swapped pair for ε < 0 (α-symmetry, Zhu et al. 2022, Lemma 31). Any other bound answers
    δ(ε) itself (``bound.delta_eps``, T15), or raises: no silent fallback. Exact up to float
    rounding (no directed rounding here; the PLD builders add their own).
    """
    form = bound.pair_form(config, check=check, numeric=True)  # the same floats, no sympy
    if form is None:
        if check:
            bound.check(config)
        fn = lambda eps: bound.delta_eps(config, eps, check=False)  # noqa: E731
        return OneStepProfile(bound.id, fn, fn, fn, lambda eps: bound.delta_eps(config, eps, upper=True, check=False))
    nge, nlt = form.ge.numeric(), form.lt.numeric()
    w = float(form.weight)

    def mix(f: ProfileFn) -> ProfileFn:
        if w == 1.0:
            return f
        def mixed(eps):
            with np.errstate(over="ignore"):  # 1 - e^ε → -inf past ε ≈ 709: its floor 0 is what counts
                return (1 - w) * np.maximum(0.0, -np.expm1(eps)) + w * f(eps)
        return mixed

    return OneStepProfile(bound.id, mix(_switch_fn(nge, nlt)), _pair_fn(nge), _pair_fn(nge),
                          mix(_switch_fn(nge, nlt, True)))


def pair_profile(pair: MixturePair) -> OneStepProfile:
    """δ(ε) = H_{e^ε}(P ‖ Q) of one fixed pair for every ε (no switch): one adjacency direction.

    The grid's lower end comes from the reversed pair (Q, P): by the α-symmetry identity
    H_α(P‖Q) = 1 - α + α H_{1/α}(Q‖P), the mass of L_PQ below ε is governed by H_{e^{-ε}}(Q‖P).
    """
    num = pair.numeric()
    rev = pair.swapped().numeric()
    return OneStepProfile("pair", _pair_fn(num), _pair_fn(num), _pair_fn(rev), _pair_fn(num, True))


def _first_below(fn: ProfileFn, threshold: float, what: str = "privacy profile") -> float:
    """The first ε ≥ 0 on the 0.25-spaced grid with fn(ε) ≤ threshold (fn non-increasing).

    Scans [0, 16) at once; beyond, an exponential search then bisection on the multiples of
    0.25 (the same point for a non-increasing fn, in O(log ε) evaluations, so a tiny σ whose
    loss reaches 1e11 costs no more than σ = 1). Raises :class:`PldTooLargeError` when fn
    stays above the threshold up to ε = 1e300.
    """
    eps = np.arange(0.0, 16.0, _COARSE_STEP)
    below = np.flatnonzero(fn(eps) <= threshold)
    if below.size:
        return float(eps[below[0]])

    def above(k: int) -> bool:
        return bool(fn(np.array([k * _COARSE_STEP]))[0] > threshold)

    lo, hi = eps.size - 1, 2 * eps.size  # fn(lo) > threshold
    while above(hi):
        lo, hi = hi, 2 * hi
        if hi * _COARSE_STEP > _EPS_CEILING:
            raise PldTooLargeError(f"the {what} stays above {threshold:.3g} at every ε up to {_EPS_CEILING:g}: "
                                   "no finite privacy-loss grid (σ too small)", math.inf, 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if above(mid) else (lo, mid)
    return hi * _COARSE_STEP


def _eps_range(profile: OneStepProfile, log_mass_truncation_bound: float) -> Tuple[float, float]:
    level = 0.5 * math.exp(log_mass_truncation_bound)
    what = f"{profile.bound_id} one-step privacy profile"
    return -_first_below(profile.lower, level, what), _first_below(profile.upper, level, what)


def _ends(eps_lo: float, eps_hi: float, discretization: float) -> Tuple[int, int]:
    k_hi = math.ceil(eps_hi / discretization)
    k_lo = math.floor(eps_lo / discretization)
    return k_lo, max(k_hi, k_lo + 1)


def grid_range(profile: OneStepProfile, discretization: float, log_mass_truncation_bound: float) -> Tuple[int, int]:
    """Integer grid ends (k_lo, k_hi), the PLD support being {k·d : k_lo ≤ k ≤ k_hi}.

    Upper end: the first ε with δ(ε) ≤ ½·e^{log_mass_truncation_bound} (the library's mass
    truncation level); its δ becomes the infinity mass. Lower end: minus the same level for
    the reversed direction, where the dropped lower-tail excess δ(ε) - (1 - e^ε) is
    e^ε·H_{e^{-ε}}(reversed) ≤ e^ε·½e^{bound}. Both truncations move mass up (pessimistic).
    No size check here: see :func:`fit_grid`.
    """
    return _ends(*_eps_range(profile, log_mass_truncation_bound), discretization)


def fit_grid(profile: OneStepProfile, discretization: float, log_mass_truncation_bound: float, *,
             memory_limit: Optional[int] = None) -> Tuple[float, int, int]:
    """(d, k_lo, k_hi): :func:`grid_range` at the finest gap d = discretization·2^j that fits.

    At most :func:`max_grid_points` points, checked before anything is allocated. A coarser
    gap keeps the construction's direction (connect-the-dots stays an upper estimate at any
    gap, privacy buckets a lower one), and is announced by a :class:`PldCoarsenedWarning`.
    Raises :class:`PldTooLargeError` (with the number of points it would need) when even
    d = 1 does not fit.
    """
    eps_lo, eps_hi = _eps_range(profile, log_mass_truncation_bound)
    cap = max_grid_points(memory_limit)
    d, span = discretization, eps_hi - eps_lo
    if span / d + 3 > cap:  # in floats first: ε / 1e-308 is no integer
        d = math.ldexp(d, math.ceil(math.log2(span + 3 * d) - math.log2(d) - math.log2(cap)))  # d·2^j, exact
        while span / d + 3 > cap:
            d *= 2
        if d > MAX_COARSE_DISCRETIZATION:
            need = span / MAX_COARSE_DISCRETIZATION
            raise PldTooLargeError(
                f"the {profile.bound_id} one-step privacy loss spans ε in [{eps_lo:.4g}, {eps_hi:.4g}]: a PLD grid "
                f"of {need:.3g} points even at discretisation {MAX_COARSE_DISCRETIZATION:g}, more than the {cap} "
                f"that the memory limit of {_bytes(resolve_memory_limit(memory_limit))} allows ({MEMORY_LIMIT_ENV}); "
                "raise σ", need, cap)
    k_lo, k_hi = _ends(eps_lo, eps_hi, d)
    if d != discretization:
        warnings.warn(PldCoarsenedWarning(
            f"{profile.bound_id}: one-step PLD at discretisation {d:.3g} instead of {discretization:g} "
            f"(the loss spans ε in [{eps_lo:.4g}, {eps_hi:.4g}]; at most {cap} grid points); the estimate "
            "keeps its direction (sound: upper, attained: lower)"), stacklevel=3)
    return d, k_lo, k_hi


# ----------------------------------------------------------------------------- PLD builders


def _check_discretization(discretization: float) -> None:
    from tsdp.theorems.config import ConfigError

    if not (isinstance(discretization, (int, float)) and math.isfinite(discretization) and 0 < discretization <= 1):
        raise ConfigError("discretization", "must be in (0, 1]", discretization)


def connect_dots_pmf(profile: OneStepProfile, discretization: float = DEFAULT_DISCRETIZATION,
                     log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION, *,
                     memory_limit: Optional[int] = None):
    """Pessimistic connect-the-dots PMF of a profile (upper estimate; rounds every δ, ε up).

    Doroshenko et al. 2022, Algorithm 1; paper Appendix B.3 (connect-the-dots accounting).
    δ(ε) on the grid k·d, k_lo ≤ k ≤ k_hi (:func:`fit_grid`: d coarsened to fit the memory
    ceiling), inflated by a relative 1e-12, goes to the library's
    ``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``.
    """
    from dp_accounting.pld import pld_pmf

    _check_discretization(discretization)
    d, k_lo, k_hi = fit_grid(profile, discretization, log_mass_truncation_bound, memory_limit=memory_limit)
    eps = np.arange(k_lo, k_hi + 1) * d
    deltas = np.minimum(1.0, _chunked(profile.safe(), eps))
    deltas = np.minimum.accumulate(deltas)  # a profile is non-increasing; remove float wiggles upward-safe
    if deltas.size < 2:
        return pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap(d, k_lo, k_hi, deltas)
    # the library's create_pmf_pessimistic_connect_dots_fixed_gap (Algorithm 1) for non-increasing δ in [0, 1], the
    # same operations, without its dictionary round trip (a third of a one-step build)
    diffs = np.diff(deltas)
    probs = np.zeros_like(deltas)
    probs[0] = 1 - deltas[0] + diffs[0] / math.expm1(d)
    probs[1:-1] = (diffs[1:] - diffs[:-1] * math.exp(d)) / math.expm1(d)
    probs[-1] = diffs[-1] / math.expm1(-d)
    return _pmf_of_array(d, k_lo, np.maximum(0.0, probs), deltas[-1], True)


def buckets_pmf_optimistic(pair: MixturePair, discretization: float = DEFAULT_DISCRETIZATION,
                           log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION, *,
                           memory_limit: Optional[int] = None):
    """Optimistic privacy-buckets PMF of one pair (lower estimate; rounds every δ, ε down).

    The library's ``pessimistic_estimate=False`` discretisation (privacy buckets, Meiser &
    Mohammadi 2018, as in dp_accounting ``_create_pld_pmf_from_monotone_privacy_loss``): P-mass
    with loss in [k d, (k+1) d) goes to k d, mass above the grid to its top point, mass
    below the grid is dropped. The bucket masses P(L > k d) are read at the loss roots of
    the whole grid at once (:func:`theorems.hockey_stick.loss_root`), in chunks; the grid is
    sized by :func:`fit_grid` (a coarser gap stays optimistic).
    """
    _check_discretization(discretization)
    prof = pair_profile(pair)
    d, k_lo, k_hi = fit_grid(prof, discretization, log_mass_truncation_bound, memory_limit=memory_limit)
    o = orient(pair.numeric())

    def survival(eps):  # P(L > eps)
        surv = np.empty_like(eps)
        surv[eps <= o.lower] = 1.0
        surv[eps >= o.upper] = 0.0
        inner = (eps > o.lower) & (eps < o.upper)
        if inner.any():
            z = loss_root(o, eps[inner])
            surv[inner] = ndtr(o.a[None, :] - z[:, None]) @ np.exp(o.log_p)
        return surv

    return _buckets_pmf(_chunked(survival, np.arange(k_lo, k_hi + 1) * d), k_lo, d)


def _buckets_pmf(surv: np.ndarray, k_lo: int, discretization: float):
    """Optimistic buckets from P(L > k d), k = k_lo.. (mass between grid points to the lower one)."""
    surv = np.minimum.accumulate(np.clip(surv, 0.0, 1.0))
    probs = np.empty_like(surv)
    probs[:-1] = surv[:-1] - surv[1:]
    probs[-1] = surv[-1]
    probs = np.maximum(probs, 0.0)
    keep = np.flatnonzero(probs > 0)
    if keep.size == 0:
        keep = np.array([0])
    lo, hi = keep[0], keep[-1]
    return _pmf_of_array(discretization, int(k_lo + lo), probs[lo:hi + 1], 0.0, False)


def _pmf_of_array(discretization: float, lower: int, probs: np.ndarray, infinity_mass: float, pessimistic: bool):
    """The library's ``pld_pmf.create_pmf`` of the losses lower, lower + 1, ... with masses ``probs``, the same
    PMF without its dictionary round trip for a dense one (a sparse one, at most the library's sparse size,
    is made by the library)."""
    from dp_accounting.pld import pld_pmf

    if probs.size <= pld_pmf._MAX_PMF_SPARSE_SIZE:  # noqa: SLF001
        loss_probs = dict(zip(range(lower, lower + probs.size), probs.tolist()))
        return pld_pmf.create_pmf(loss_probs, discretization, infinity_mass, pessimistic_estimate=pessimistic)
    return pld_pmf.DensePLDPmf(discretization, lower, np.array(probs, dtype=float), infinity_mass, pessimistic)


def survival_pld(survival: ProfileFn, profile: OneStepProfile, discretization: float = DEFAULT_DISCRETIZATION,
                 log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION, *,
                 memory_limit: Optional[int] = None):
    """Optimistic (a **lower** estimate) symmetric PLD from a loss survival ε ↦ P(L > ε).

    For a construction whose privacy loss law is the same in both directions and known in
    closed form (T15's ``loss_survival``: a mixture over an observed label, no 1-D pair);
    buckets as :func:`buckets_pmf_optimistic`, on the grid range of ``profile``.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    _check_discretization(discretization)
    d, k_lo, k_hi = fit_grid(profile, discretization, log_mass_truncation_bound, memory_limit=memory_limit)
    surv = _chunked(survival, np.arange(k_lo, k_hi + 1) * d)
    return PrivacyLossDistribution(_buckets_pmf(surv, k_lo, d))


def profile_pld(profile: OneStepProfile, discretization: float = DEFAULT_DISCRETIZATION,
                log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION, *, memory_limit: Optional[int] = None):
    """A symmetric ``PrivacyLossDistribution`` holding the connect-the-dots PMF of ``profile``.

    Pessimistic (upper estimate): see :func:`connect_dots_pmf`.
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    return PrivacyLossDistribution(connect_dots_pmf(profile, discretization, log_mass_truncation_bound,
                                                    memory_limit=memory_limit))


def sound_pld(bound: Bound, config: TrainingConfig, discretization: float = DEFAULT_DISCRETIZATION,
              log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION, *, memory_limit: Optional[int] = None):
    """The one-step PLD of the bound's profile as the theorem states it (paper Appendix B.3).

    Connect-the-dots of :func:`one_step_profile` (the α < 1 branch from the swapped pair, or
    (1-ρ) max(0, 1-α) + ρ H_base for T7/T8). Pessimistic: composing it gives an upper
    bound on the composed ε of any mechanism the profile dominates.
    """
    return profile_pld(one_step_profile(bound, config), discretization, log_mass_truncation_bound,
                       memory_limit=memory_limit)


def pair_pld(pair: MixturePair, discretization: float = DEFAULT_DISCRETIZATION, *, pessimistic: bool = False,
             log_mass_truncation_bound: float = DEFAULT_LOG_MASS_TRUNCATION, memory_limit: Optional[int] = None):
    """The two-direction PLD of one fixed pair: REMOVE slot (P, Q), ADD slot (Q, P).

    The library's ``get_epsilon_for_delta`` then reports the larger ε of the two
    directions, as ``from_mixture_gaussian_mechanism`` does. ``pessimistic=False`` (default):
    optimistic privacy buckets, a **lower** estimate (:func:`buckets_pmf_optimistic`);
    ``pessimistic=True``: connect-the-dots per direction, an **upper** estimate of the
    same pair's composition (:func:`connect_dots_pmf`). Both directions share one gap (the
    coarser of the two when :func:`fit_grid` had to coarsen one).
    """
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    def build(p, d):
        if pessimistic:
            return connect_dots_pmf(pair_profile(p), d, log_mass_truncation_bound, memory_limit=memory_limit)
        return buckets_pmf_optimistic(p, d, log_mass_truncation_bound, memory_limit=memory_limit)

    fwd, rev = build(pair, discretization), build(pair.swapped(), discretization)
    if _gap(fwd) < _gap(rev):
        fwd = build(pair, _gap(rev))
    elif _gap(rev) < _gap(fwd):
        rev = build(pair.swapped(), _gap(fwd))
    return PrivacyLossDistribution(fwd, rev)


# ----------------------------------------------------------------------------- bounded composition


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


def _coarsen(pmf, factor: int):
    """``pmf`` on the grid of gap d·factor: losses rounded up (pessimistic PMF) or down
    (optimistic), so an upper estimate stays one and a lower estimate stays one
    (δ(ε) = E[(1 - e^{ε-L})_+] + m_∞ is non-decreasing in every loss)."""
    from dp_accounting.pld import pld_pmf

    dense = pmf.to_dense_pmf()
    if factor == 1:
        return dense
    idx = dense._lower_loss + np.arange(dense.size)  # noqa: SLF001
    pess = dense._pessimistic_estimate  # noqa: SLF001
    j = -((-idx) // factor) if pess else idx // factor
    probs = np.bincount(j - j[0], weights=dense._probs)  # noqa: SLF001
    return pld_pmf.DensePLDPmf(_gap(dense) * factor, int(j[0]), probs, dense._infinity_mass, pess)  # noqa: SLF001


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
    probs, lower, d = pmf._probs, pmf._lower_loss, _gap(pmf)  # noqa: SLF001
    pess, inf_mass = pmf._pessimistic_estimate, pmf._infinity_mass  # noqa: SLF001
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
    has one point, without importing scipy.signal (it imports scipy.stats: 0.6 s,
    :mod:`tsdp.verify.deferred`). A squaring (``b is a``) transforms once: the product of the
    spectrum with itself is the product scipy forms of two equal spectra.
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
    probs, pess = fftconvolve(a._probs, b._probs), a._pessimistic_estimate  # noqa: SLF001
    inf_a, inf_b = a._infinity_mass, b._infinity_mass  # noqa: SLF001
    lower, inf_mass = a._lower_loss + b._lower_loss, inf_a + inf_b - inf_a * inf_b  # noqa: SLF001
    left = _prefix_within(probs, tail_mass_truncation / 2)
    right = max(probs.size - _prefix_within(probs[::-1], tail_mass_truncation / 2), left + 1)
    left_mass, right_mass = np.sum(probs[:left]), np.sum(probs[right:])
    kept = probs[left:right]
    if pess:
        kept[0] += left_mass
    else:
        kept[-1] += right_mass
        right_mass = 0
    return pld_pmf.DensePLDPmf(_gap(a), lower + left, kept, inf_mass + right_mass, pess)


def _ratio(coarse: float, fine: float) -> int:
    r = coarse / fine
    if abs(r - round(r)) > 1e-9 * r:
        raise ValueError(f"cannot compose PLDs with discretisations {fine:g} and {coarse:g} (not a multiple)")
    return int(round(r))


def _convolve(a, b, tail_mass_truncation: float, max_points: int):
    """a ∘ b (the library's ``compose_pmfs``, :func:`_compose_pmfs`) on a common gap, both operands coarsened by a
    power of 2 first when the result would exceed ``max_points`` (checked before allocating)."""
    from dp_accounting.pld import pld_pmf

    d = max(_gap(a), _gap(b))
    factor, max_points = 1, max(max_points, 16)  # two operands of at least one point each always fit
    while -(-a.size * _gap(a) // (d * factor)) + -(-b.size * _gap(b) // (d * factor)) + 2 > max_points:
        factor *= 2
    if factor > 1 or _gap(a) != _gap(b):
        square = b is a  # stays one operand: fftconvolve transforms it once
        a = _coarsen(a, _ratio(d, _gap(a)) * factor)
        b = a if square else _coarsen(b, _ratio(d, _gap(b)) * factor)
    finite = float(np.sum(a.to_dense_pmf()._probs)) * float(np.sum(b.to_dense_pmf()._probs))  # noqa: SLF001
    if finite <= tail_mass_truncation:  # (almost) all mass is at +inf: the library's truncation would empty it
        ia, ib = a._infinity_mass, b._infinity_mass  # noqa: SLF001
        pess = a._pessimistic_estimate  # noqa: SLF001
        inf_mass = min(1.0, ia + ib - ia * ib + (max(finite, 0.0) if pess else 0.0))
        return pld_pmf.DensePLDPmf(_gap(a), 0, np.zeros(1), inf_mass, pess)
    return _clean(_compose_pmfs(a, b, tail_mass_truncation))


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
    """
    return self_convolve_windows(probs, [compositions], tail_mass_truncation)[0]


def self_convolve_windows(probs: np.ndarray, counts: Sequence[int], tail_mass_truncation: float) -> list:
    """:func:`self_convolve_bounds` for each n of ``counts``, from one evaluation of the moment sums."""
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
    for pmf in _pmfs(pld):
        if pmf is None:
            plan.append(None)
            continue
        probs = pmf.to_dense_pmf()._probs  # noqa: SLF001
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
    spectrum = _spectrum_power(fft.rfft(pmf._probs, length), compositions)  # noqa: SLF001
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
    inf_prob = tail_mass_truncation - math.expm1(compositions * math.log1p(-pmf._infinity_mass))  # noqa: SLF001
    return pld_pmf.DensePLDPmf(_gap(pmf), pmf._lower_loss * compositions + lo, probs, inf_prob,  # noqa: SLF001
                               pmf._pessimistic_estimate)  # noqa: SLF001


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
    inf_mass = dense._infinity_mass  # noqa: SLF001
    if inf_mass > delta:
        return math.inf
    probs, gap = dense._probs[::-1], _gap(dense)  # noqa: SLF001
    loss = (dense._lower_loss + dense.size - 1) * gap  # noqa: SLF001 - the top loss, then each block's last
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
    """
    return max(_pmf_epsilon(p, delta) for p in _pmfs(pld) if p is not None)


MAX_MASS_GROWTH = 1.0
"""The most log-mass n·η a composition may gain from a pessimistic PMF's excess mass η (a factor e)."""


def _check_mass_growth(pld, compositions: int) -> None:
    """Refuse a count at which a pessimistic PMF's excess mass η (total mass 1 + η: the float
    safety margin of the grid δ values and the library's clipping of negative connect-the-dots
    masses, about 4e-8 at d = 1e-4 and 3e-12 at d = 0.02) compounds past a factor e: (1 + η)^n
    grows without bound (3e14 compositions overflow). Extra mass only raises δ, so anything
    below the limit stays an upper bound."""
    for pmf in _pmfs(pld):
        if pmf is None or not pmf._pessimistic_estimate:  # noqa: SLF001
            continue
        dense = pmf.to_dense_pmf()
        excess = float(np.sum(dense._probs)) + dense._infinity_mass - 1.0  # noqa: SLF001
        if excess > 0 and compositions * excess > MAX_MASS_GROWTH:
            most = int(MAX_MASS_GROWTH / excess)
            raise ConfigError("steps", f"{compositions} compositions are more than the accountant resolves at "
                              f"discretisation {_gap(dense):g}: the one-step PLD's excess mass {excess:.2g} (float "
                              f"safety margin) would compound by more than e; at most {most:.3g} compositions (a "
                              "coarser --discretization has less excess)")


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
    from .cpus import each

    if plan is not None:  # the two directions side by side where there are CPUs
        parts = each(lambda pb: None if pb[0] is None else _self_compose_pmf(pb[0], compositions, tail_mass_truncation,
                                                                               pb[1]), list(zip(_pmfs(pld), plan)))
        return _from_pmfs(*parts)
    cap = min(MAX_SQUARING_POINTS, max_fft_points(limit))
    parts = [None if p is None else _power(p, compositions, tail_mass_truncation, cap) for p in _pmfs(pld)]
    return _announce(discretization_of(pld), _from_pmfs(*parts), f"{compositions} compositions")


def compose_pair(a, b, tail_mass_truncation: float = DEFAULT_TAIL_MASS_TRUNCATION, *,
                 memory_limit: Optional[int] = None, max_points: Optional[int] = None):
    """The library's ``a.compose(b)`` with its size checked first (heterogeneous runs).

    PLDs of different gaps (one coarsened by :func:`fit_grid`) are brought to the coarser
    one; a result longer than ``max_points`` (default: what the memory ceiling allows) is
    computed from coarsened operands. Directions kept as in :func:`compose`.
    """
    limit = resolve_memory_limit(memory_limit)
    cap = max_fft_points(limit) if max_points is None else max_points
    from .cpus import each

    (ar, aa), (br, ba) = _pmfs(a), _pmfs(b)
    pairs = [(ar, br), None if aa is None and ba is None else (ar if aa is None else aa, br if ba is None else ba)]
    # the two directions are independent convolutions: side by side where there are CPUs
    remove, add = each(lambda pair: None if pair is None else _convolve(*pair, tail_mass_truncation, cap), pairs)
    return _announce(min(discretization_of(a), discretization_of(b)), _from_pmfs(remove, add), "composition")


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
    """
    if compositions < 1:
        raise ValueError(f"compositions must be >= 1, got {compositions}")
    if compositions == 1:
        return read(pld)
    limit = resolve_memory_limit(memory_limit)
    plan = _checked_plan(pld, compositions, tail_mass_truncation, limit)
    counts = [1 << k for k in range(compositions.bit_length()) if 1 << k < compositions] + [compositions]
    parts = None if plan is None else _composed_counts(pld, counts, tail_mass_truncation, plan)
    from .cpus import available_cpus, each

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

    from .cpus import each

    total = counts[-1]
    pmfs = [p for p in _pmfs(pld) if p is not None]
    if not all(isinstance(p, pld_pmf.DensePLDPmf) for p in pmfs):
        return None
    sides = []  # per direction: its PMF, the S-fold FFT length, the window of each count after the first
    for pmf, bounds in zip(pmfs, [b for b in plan if b is not None]):
        length = _fft_length(pmf, bounds)
        windows = self_convolve_windows(pmf._probs, counts[1:-1], tail_mass_truncation) + [bounds]  # noqa: SLF001
        if any(hi - lo + 1 > length for lo, hi in windows):
            return None
        sides.append((pmf, length, windows))

    def composed(n: int, spectra: list, window_index: int):
        parts = each(lambda i: _from_spectrum(sides[i][0], n, spectra[i], sides[i][1], sides[i][2][window_index],
                                              tail_mass_truncation), range(len(sides)))
        return _from_pmfs(parts[0], parts[1] if len(parts) > 1 else None)

    def generate():
        power = [fft.rfft(pmf._probs, length) for pmf, length, _ in sides]  # noqa: SLF001 - spectrum^(2^k)
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
