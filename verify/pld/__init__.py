"""One-step privacy loss distributions (dp-accounting PLDs) from the catalogue's bounds, and their composition.

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
  up. The grid values themselves carry a float-error bound (read at ε - 1e-12 for the float
  weights' rounding, 1e-12 of the two tail terms whose difference they are, plus 1e-12 relative)
  so that float error never rounds them down.
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

Modules (one concept each, as dp-accounting's own ``pld`` package is split)
---------------------------------------------------------------------------
* :mod:`.limits`: the memory ceiling and the sizes it allows; :class:`PldTooLargeError`, :class:`PldCoarsenedWarning`.
* :mod:`.profile`: the one-step privacy profile δ(ε) of a bound or a pair (:class:`OneStepProfile`).
* :mod:`.grid`: the grid of a one-step PLD (its ends and gap, :func:`fit_grid`).
* :mod:`.build`: one-step PMFs and PLDs (connect-the-dots, privacy buckets: :func:`sound_pld`, :func:`pair_pld`).
* :mod:`.convolve`: pairwise composition of PMFs (:func:`fftconvolve`).
* :mod:`.self_compose`: the one-FFT n-fold self-composition.
* :mod:`.epsilon`: ε(δ) of a PLD (:func:`epsilon_for_delta`).
* :mod:`.composition`: composition in bounded memory and time (:func:`compose`, :func:`compose_pair`,
  :func:`attained_envelope`).
* :mod:`.settings`: the accountant's three numerical settings as one object (:class:`PldSettings`).
* :mod:`.adapter`: the one module that reads or builds dp-accounting's PLD objects through their internals.
"""
from .adapter import discretization_of
from .build import buckets_pmf_optimistic, connect_dots_pmf, pair_pld, profile_pld, sound_pld, survival_pld
from .composition import DEFAULT_TAIL_MASS_TRUNCATION, MAX_MASS_GROWTH, attained_envelope, compose, compose_pair
from .convolve import fftconvolve
from .epsilon import epsilon_for_delta
from .grid import fit_grid, grid_range
from .limits import (
    DEFAULT_MEMORY_LIMIT,
    MAX_COARSE_DISCRETIZATION,
    MAX_GRID_POINTS,
    MAX_SELF_COMPOSE_POINTS,
    MAX_SQUARING_POINTS,
    MEMORY_LIMIT_ENV,
    PldCoarsenedWarning,
    PldTooLargeError,
    max_fft_points,
    max_grid_points,
    prime_allocator,
    resolve_memory_limit,
)
from .profile import OneStepProfile, ProfileFn, one_step_profile, pair_profile, pair_profile_on
from .self_compose import self_convolve_bounds, self_convolve_windows
from .settings import DEFAULT_DISCRETIZATION, DEFAULT_LOG_MASS_TRUNCATION, PldSettings

__all__ = [
    "DEFAULT_DISCRETIZATION", "DEFAULT_LOG_MASS_TRUNCATION", "DEFAULT_MEMORY_LIMIT", "DEFAULT_TAIL_MASS_TRUNCATION",
    "MAX_COARSE_DISCRETIZATION", "MAX_GRID_POINTS", "MAX_MASS_GROWTH", "MAX_SELF_COMPOSE_POINTS", "MAX_SQUARING_POINTS",
    "MEMORY_LIMIT_ENV", "OneStepProfile", "PldCoarsenedWarning", "PldSettings", "PldTooLargeError", "ProfileFn",
    "attained_envelope", "buckets_pmf_optimistic", "compose", "compose_pair", "connect_dots_pmf", "discretization_of",
    "epsilon_for_delta", "fftconvolve", "fit_grid", "grid_range", "max_fft_points", "max_grid_points",
    "one_step_profile", "pair_pld", "pair_profile", "pair_profile_on", "prime_allocator", "profile_pld",
    "resolve_memory_limit", "self_convolve_bounds", "self_convolve_windows", "sound_pld", "survival_pld",
]
