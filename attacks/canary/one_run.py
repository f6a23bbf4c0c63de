"""The f-DP one-run test (Mahloujifar, Melis & Chaudhuri 2025, "Auditing f-Differential Privacy in One Run"): does c
correct of k guesses reject a trade-off curve; the guess sets; each analysis's bound over them.

Numpy/scipy only. Pure functions: arrays in, arrays out. :func:`attacks.canary.fdp_bound.certify` certifies one score
vector with these; :mod:`attacks.canary.planning` plans an audit with them.

The game
--------
m canaries; each is included in the training independently with probability 1/2 (S_j).
After one run the auditor scores every canary from the output (the scores are a function
of the output and of public canary data only) and makes exactly k guesses: "in" on the
k_in highest scores and "out" on the k_out lowest (k = k_in + k_out, abstaining on the
rest). W is the number of correct guesses.

The theorem (f-DP version of the one-run bound; Mahloujifar et al., their recursion)
---------------------------------------------------------------------------------
Let the training be f-DP with respect to including or excluding one canary (the other
inclusions fixed), f a symmetric trade-off function (both orders of the pair are bounded,
as DP's definition requires), and let f̄⁻¹(y) = f(1 - y). For integers 0 ≤ c ≤ k ≤ m and
τ ∈ (0, 1] run, from r_c = τ c / m and h_c = τ (k - c) / m, for i = c - 1, ..., 0:

    h_i = max(h_{i+1}, f̄⁻¹(r_{i+1})),    r_i = r_{i+1} + i / (k - i) · (h_i - h_{i+1}).

If r_0 + h_0 > k / m then P[W ≥ c] < τ.

Proof (the form used here). Write p_i = P[W = i], R_t = Σ_{i≥t} i p_i / m and
H_t = Σ_{i≥t} (k - i) p_i / m. (1) For canary j and any t, the events "guess j in and at
least t correct guesses on the other canaries" and the same with "out" are tests on the
output given S_{-j}; f-DP in both orders and the concavity of 1 - f give
P[j correct, W_{-j} ≥ t] ≤ 1 - f(P[j wrong, W_{-j} ≥ t]); averaging over j (concavity
again) and counting gives R_{t+1} ≤ 1 - f(H_t), i.e. H_t ≥ f̄⁻¹(R_{t+1}). Also
R_t - R_{t+1} = t/(k - t) · (H_t - H_{t+1}) ≥ 0 and R_0 + H_0 = k/m. (2) If P[W ≥ c] ≥ τ
then R_c + H_c ≥ r_c + h_c and R_c - r_c ≥ (c/(k - c)) (H_c - h_c) (the correct fraction
of the mass at W ≥ c is at least c/k). (3) By induction downwards, using that
i/(k - i) increases with i and f̄⁻¹ is non-decreasing, both "R_t + H_t ≥ r_t + h_t" and
"R_t - r_t ≥ t/(k - t) · (H_t - h_t)" carry from t + 1 to t (the second gives
R_t ≥ r_t, hence H_t ≥ f̄⁻¹(r_{t+1})). At t = 0: k/m = R_0 + H_0 ≥ r_0 + h_0, which
contradicts r_0 + h_0 > k/m. ∎ The test is exact arithmetic on f̄⁻¹ except for a relative
margin of 1e-9 on the comparison (floating point never turns an acceptance into a
rejection). The recursion stops early when h does not grow (r and h then stay fixed) or
when r + h already exceeds k/m (r + h never decreases). The recursion is the authors'
("audit_rh_with_cap"); the proof above is this module's own write-up, and the tests check
the test numerically against exact probabilities of concrete mechanisms (randomized
response, where the binomial tail is the exact worst case: the test never rejects where
that tail is ≥ τ and matches Steinke et al.'s δ = 0 bound except in a few cells whose tail
is within 10% below τ; the tight (ε, δ) mechanism; an exhaustively enumerated ranked audit).

Assumptions: independent inclusion with probability 1/2; the number of guesses k and the
split (k_in, k_out) fixed before the scores are seen; the guesses a function of the output
(ties broken by an independent random permutation). Nothing is assumed about the scores'
distribution or the guessing rule's quality: a bad score only loses power.

Choosing k after seeing the scores
----------------------------------
Every candidate guess set (k_in, k_out) of a grid declared from m alone
(:func:`guess_grid`: both ends equally, geometrically spaced counts) is tested at
τ / (number of candidates) (Bonferroni), so the best candidate, picked after seeing the
scores, is valid at τ overall. Alternatively a single (k_in, k_out) fixed in advance is
tested at τ.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from . import steinke_bound
from .tradeoff import MU_MAX, _inverse, gdp_epsilon
from .steinke_bound import EPS_MAX

MARGIN = 1e-9  # relative margin on r_0 + h_0 > k/m (floating point never creates a rejection)
SHARES = {"dp": 1.0, "claimed": 1.0, "steinke": 1.0}  # relative shares of 1 - confidence: the verdict's analyses
ON_ITS_OWN = ("gdp",)  # analyses under an assumption: each at the full 1 - confidence, a statement of its own


# ----------------------------------------------------------------------------- the recursion

def rejects(inverse: Callable, theta, m: int, k, c, tau) -> np.ndarray:
    """Whether c correct of k guesses among m canaries rejects f_θ at level τ (module docstring's theorem).

    ``inverse(y, θ)`` is f̄⁻¹(y) = f_θ(1 - y), vectorised; θ, k, c, τ broadcast together.
    True means P[W ≥ c] < τ for every f_θ-DP training.

    Args:
        inverse: f̄⁻¹(y, θ), vectorised.
        theta: The curve's parameter θ.
        m: The canaries.
        k: The guesses.
        c: The correct guesses.
        tau: The level τ.

    Returns:
        Whether f_θ is rejected, broadcast over θ, k, c, τ.
    """
    theta, k, c, tau = np.broadcast_arrays(np.asarray(theta, dtype=float), np.asarray(k), np.asarray(c),
                                           np.asarray(tau, dtype=float))
    shape = theta.shape
    theta, k, c, tau = (x.ravel() for x in (theta, k.astype(np.int64), c.astype(np.int64), tau))
    if np.any((c < 0) | (c > k) | (k > m)):
        raise ValueError("need 0 <= c <= k <= m")
    r, h = tau * c / m, tau * (k - c) / m
    cap = k / m * (1 + MARGIN)
    out = np.zeros(r.shape, dtype=bool)
    idx = np.flatnonzero(c > 0)
    step = 0
    while idx.size:
        i = c[idx] - 1 - step  # the level this step fills
        h_new = np.maximum(h[idx], inverse(r[idx], theta[idx]))
        grow = h_new > h[idx]
        r[idx] += i / (k[idx] - i) * (h_new - h[idx])
        h[idx] = h_new
        hit = r[idx] + h[idx] > cap[idx]
        out[idx[hit]] = True
        idx = idx[grow & ~hit & (i > 0)]
        step += 1
    return out.reshape(shape)


def largest_rejected(inverse: Callable, m: int, k, c, tau, hi: float, tol: float = 1e-4) -> np.ndarray:
    """Per (k, c): the largest θ in [0, hi] whose curve f_θ is rejected (bisection, lower end), 0 if none.

    Rejection is monotone in θ for the families here (a larger θ is a lower curve, which
    every smaller θ's mechanism satisfies), so the rejected θ form an interval from 0.

    Args:
        inverse: f̄⁻¹(y, θ), vectorised.
        m: The canaries.
        k: The guesses.
        c: The correct guesses.
        tau: The level τ.
        hi: The search ceiling on θ.
        tol: The bisection tolerance.

    Returns:
        The largest rejected θ per element (a **lower** bound on it; 0 where θ = 0 is not rejected).
    """
    k, c, tau = np.broadcast_arrays(np.asarray(k), np.asarray(c), np.asarray(tau, dtype=float))
    return steinke_bound.largest_rejected(lambda theta, at: rejects(inverse, theta, m, k[at], c[at], tau[at]),
                                          k.shape, hi, tol)


# ----------------------------------------------------------------------------- guesses

def guess_grid(m: int, smallest: Optional[int] = None) -> np.ndarray:
    """Candidate guess sets (k_in, k_out), rows, from m alone: both ends equally, "included" only, and near-balanced
    splits of all m.

    Both ends: k_in = k_out in powers of 2 and m // 2; counts below ``smallest`` (default
    m // 128, at least 1) are left out (with few guesses even perfect ones certify little, and
    every candidate costs Bonferroni budget). Near-balanced splits: (a_j, m - a_{j+1}) for
    a_j = m // 2 + j s, s = ⌈√m / 4⌉ (half a standard deviation of the number included,
    Binomial(m, 1/2)), j = -8, ..., 7, clipped to [0, m]: a perfect ranking with n included
    makes every guess of the set with a_j ≤ n ≤ a_{j+1} right, k ≥ m - s guesses, whereas the
    symmetric sets lose k_in + k_out - m of theirs as soon as n ≠ m / 2. Without them a training
    without noise that ranks every canary right certifies, for m = 1000 at δ = 1e-5, 5.11 only
    when exactly half are included and 4.43 otherwise; with them 4.92 for every n within four
    standard deviations of m / 2. "Included" only: (k, 0) for the same counts k as both ends,
    abstaining on "not included". Under subsampling an included canary that took part in no
    step scores like an excluded one, so the lowest scores mix both and "out" guesses there
    are near coin flips, while the highest scores are the included canaries that took part:
    one-sided sets keep only the guesses that carry evidence (the one-run theorems hold for any
    k guesses fixed before the scores, whatever their sides).

    Args:
        m: The canaries.
        smallest: The fewest guesses of a set (default from m).

    Returns:
        Rows (k_in, k_out).
    """
    if m < 2:
        raise ValueError("need at least 2 canaries")
    half = m // 2
    smallest = max(1, m // 128) if smallest is None else max(1, int(smallest))
    ks = np.unique(np.concatenate([2 ** np.arange(int(np.log2(half)) + 1), [half]]))
    ks = ks[(ks >= min(smallest, half)) & (ks <= half)]
    both_ends = np.stack([ks, ks], axis=1)
    included_only = np.stack([ks, np.zeros_like(ks)], axis=1)
    step = int(np.ceil(np.sqrt(m) / 4))
    a = np.clip(half + step * np.arange(-SPLITS, SPLITS + 1), 0, m)
    splits = np.stack([a[:-1], m - a[1:]], axis=1)
    sets = np.unique(np.concatenate([both_ends, included_only, splits]), axis=0)
    return sets[sets.sum(axis=1) > 0].astype(np.int64)


SPLITS = 8
"""Near-balanced splits on each side of m / 2 in :func:`guess_grid` (eight half standard deviations: four)."""


def correct_counts(scores: np.ndarray, included: np.ndarray, sets: np.ndarray,
                   rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """Correct guesses of each guess set (k_in highest "in", k_out lowest "out"), vectorised over leading axes.

    ``scores`` and ``included`` are (..., m); ties are broken by a random permutation (``rng``,
    seeded 0 by default), independent of the inclusions, so the guesses are a function of the
    output only. Returns (..., number of sets).

    Args:
        scores: (..., m) scores.
        included: (..., m) inclusion bits.
        sets: Rows (k_in, k_out).
        rng: The generator of the tie-breaking permutation (default: a fixed seed).

    Returns:
        (..., len(sets)) correct guesses.
    """
    scores = np.asarray(scores, dtype=float)
    included = np.asarray(included, dtype=bool)
    rng = np.random.default_rng(0) if rng is None else rng
    m = scores.shape[-1]
    perm = rng.permutation(m)
    order = np.argsort(-scores[..., perm], axis=-1, kind="stable")
    ranked = np.take_along_axis(included[..., perm], order, axis=-1)  # inclusions from highest to lowest score
    top = np.concatenate([np.zeros(ranked.shape[:-1] + (1,), dtype=np.int64), np.cumsum(ranked, axis=-1)], axis=-1)
    out_from_bottom = np.concatenate([np.zeros(ranked.shape[:-1] + (1,), dtype=np.int64),
                                      np.cumsum(~ranked[..., ::-1], axis=-1)], axis=-1)
    k_in, k_out = sets[:, 0], sets[:, 1]
    if np.any(k_in + k_out > m):
        raise ValueError("a guess set guesses more than m canaries")
    return top[..., k_in] + out_from_bottom[..., k_out]


# ----------------------------------------------------------------------------- analyses

def _family_bound(family: str, m: int, k: np.ndarray, c: np.ndarray, tau, delta: float) -> np.ndarray:
    if family == "steinke":
        return steinke_bound.epsilon_lower_bound(m, k, c, delta, tau)
    hi = {"gdp": MU_MAX, "dp": EPS_MAX}[family]
    return largest_rejected(_inverse(family, delta), m, k, c, tau, hi)


def fdp_bounds(counts: np.ndarray, sets: np.ndarray, m: int, delta: float, significance: float,
               family: str = "gdp") -> dict:
    """Lower bounds from correct counts (..., n_sets) of the guess sets ``sets``, Bonferroni over the sets.

    ``family``: "gdp" (μ, and ε at δ under a Gaussian curve), "dp" (ε at δ, no assumption),
    "steinke" (the baseline). Each set is tested at significance / n_sets. Returns arrays
    over the leading axes: ``value`` (μ or ε), ``epsilon`` (ε at δ), ``best`` (index of the set).

    Args:
        counts: (..., n_sets) correct counts.
        sets: Rows (k_in, k_out).
        m: The canaries.
        delta: The δ of the bounds.
        significance: The level shared by the sets.
        family: "gdp", "dp" or "steinke".

    Returns:
        ``{"value", "epsilon", "best"}`` arrays over the leading axes (every value a **lower** bound).

    Raises:
        ValueError: No guess sets.
    """
    counts = np.asarray(counts)
    if len(sets) == 0:
        raise ValueError("no guess sets to test")
    k = sets.sum(axis=1)
    tau = significance / len(sets)
    kk = np.broadcast_to(k, counts.shape)
    values = _family_bound(family, m, kk, counts, tau, delta)
    best = np.argmax(values, axis=-1)
    value = np.take_along_axis(values, best[..., None], axis=-1)[..., 0]
    eps = gdp_epsilon(delta, value) if family == "gdp" else value
    return {"value": value, "epsilon": eps, "best": best}


def claim_rejected(counts: np.ndarray, sets: np.ndarray, m: int, significance: float, claim) -> np.ndarray:
    """Whether the claimed curve (ε grid, δ grid) is rejected by any guess set (Bonferroni over ``sets``).

    Args:
        counts: (..., n_sets) correct counts.
        sets: Rows (k_in, k_out).
        m: The canaries.
        significance: The claimed analysis's level.
        claim: (ε grid, δ grid) of the claimed profile.

    Returns:
        Whether some set rejects the claimed curve, over the leading axes.
    """
    counts = np.asarray(counts)
    k = np.broadcast_to(sets.sum(axis=1), counts.shape)
    rej = rejects(_inverse("claimed", claim=claim), 0.0, m, k, counts, significance / len(sets))
    return rej.any(axis=-1)


def significance_shares(names: Sequence[str], confidence: float) -> dict:
    """Each analysis's significance (a function of the names only): 1 - confidence split in the fixed :data:`SHARES`
    between the verdict's analyses; each of :data:`ON_ITS_OWN` (a statement under an assumption) at 1 - confidence.

    Args:
        names: The analyses run ("dp", "gdp", "steinke", ...).
        confidence: The verdict's confidence.

    Returns:
        {analysis: its significance}; the verdict's analyses' significances sum to 1 - ``confidence``.

    Raises:
        ValueError: An unknown analysis.
    """
    unknown = set(names) - set(SHARES) - set(ON_ITS_OWN)
    if unknown:
        raise ValueError(f"unknown analyses {sorted(unknown)} (known: {sorted(SHARES) + list(ON_ITS_OWN)})")
    total = sum(SHARES[a] for a in names if a in SHARES)
    return {a: (1 - confidence) * (SHARES[a] / total if a in SHARES else 1.0) for a in names}


def _check_sets(sets, m: int) -> np.ndarray:
    """``sets`` as integer rows (k_in, k_out), at least one, each of 1..m guesses (ValueError otherwise)."""
    sets = np.asarray(sets)
    if sets.ndim != 2 or sets.shape[1] != 2 or len(sets) == 0:
        raise ValueError(f"sets must be rows (k_in, k_out), at least one (got shape {sets.shape})")
    sets = sets.astype(np.int64)
    if np.any(sets < 0) or np.any(sets.sum(axis=1) < 1) or np.any(sets.sum(axis=1) > m):
        raise ValueError(f"every guess set makes 1 to m = {m} guesses with k_in, k_out >= 0")
    return sets


def ceilings(m: int, delta: float, confidence: float = 0.95, *, analyses: Sequence[str] = ("dp", "gdp", "steinke"),
             sets: Optional[np.ndarray] = None) -> dict:
    """Per analysis (not "claimed"), the ε that m canaries certify if every guess is right: :func:`attacks.canary.fdp_bound.certify`'s sets and
    shares at ``confidence``.

    Args:
        m: The canaries.
        delta: The δ of the bounds.
        confidence: The audit's confidence.
        analyses: The certifier's analyses.
        sets: Guess sets (default :func:`guess_grid`).

    Returns:
        The perfect-guess ε per analysis.
    """
    share = significance_shares(list(analyses), confidence)
    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    return {a: float(fdp_bounds(sets.sum(axis=1)[None], sets, m, delta, share[a], a)["epsilon"][0])
            for a in analyses if a != "claimed"}


__all__ = ["MARGIN", "ON_ITS_OWN", "SHARES", "SPLITS", "ceilings", "claim_rejected", "correct_counts", "fdp_bounds",
           "guess_grid", "largest_rejected", "rejects", "significance_shares"]
