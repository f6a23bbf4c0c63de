"""One-run f-DP audit of canary scores (Mahloujifar, Melis & Chaudhuri 2025, "Auditing f-Differential Privacy in One Run").

Numpy/scipy only. Pure functions: arrays in, arrays (or JSON-ready dicts) out.

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

What is reported (soundness direction: every number is a LOWER bound, rounded down)
-----------------------------------------------------------------------------------
* ``dp``: the largest ε such that the (ε, δ)-DP curve f_{ε,δ}(α) = max(0, 1 - δ - e^ε α,
  e^{-ε} (1 - δ - α)) is rejected: the training is not (ε, δ)-DP, with probability
  ≥ confidence, for any ε below it. No assumption on the mechanism's curve.
* ``gdp``: the largest μ such that G_μ(α) = Φ(Φ⁻¹(1 - α) - μ) is rejected (the training
  is not μ-GDP, no assumption), and ε_μ(δ) from the exact GDP curve
  δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2), reported as ``epsilon_if_gaussian``: a lower
  bound on ε at δ **only if the training's trade-off curve is Gaussian** (as for the Gaussian
  mechanism and, approximately, for DP-SGD with many steps; under other curves, e.g.
  randomized response, it can exceed the true ε): the "empirical ε" of the f-DP audit
  literature. It is a separate statement at its own confidence, outside the verdict, so it
  takes no share of the error of the reported bound.
* ``claimed``: a claimed privacy profile δ(ε) (tsdp's accountant after ``compose``, a
  dp-accounting PLD, a function, or arrays) turned into its trade-off curve
  f(α) = sup_ε max(0, 1 - δ(ε) - e^ε α, e^{-ε} (1 - δ(ε) - α)) over a finite ε grid (a
  sup over fewer ε is a lower curve: a weaker hypothesis, so the test stays sound) and
  tested: ``violation`` means the claim is rejected at the stated confidence.
* ``steinke``: Steinke, Nasr & Jagielski (2023)'s (ε, δ) bound on the same guess sets
  (P[W ≥ c] ≤ P[Binom(k, e^ε/(1+e^ε)) ≥ c] + 2 m δ max_i P[c > Binom ≥ c - i]/i), the
  baseline. :func:`certify` splits 1 - confidence between the analyses that feed the
  reported bound and the verdict ("dp", "steinke", "claimed") in shares fixed by its
  arguments (:data:`SHARES`), never after seeing the scores, so the maximum of the
  assumption-free bounds and the curve test hold together at the stated confidence.

:func:`plan` says what an audit of m canaries can see (the ε each analysis certifies when
every guess is right, and the m needed to reach a claimed ε); :func:`certify` reports it
with the result and classifies the result as limited by the audit's size or by the training.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
from scipy import special, stats

from . import steinke_bound
from .steinke_bound import EPS_MAX

MARGIN = 1e-9  # relative margin on r_0 + h_0 > k/m (floating point never creates a rejection)
SHARES = {"dp": 1.0, "claimed": 1.0, "steinke": 1.0}  # relative shares of 1 - confidence: the verdict's analyses
ON_ITS_OWN = ("gdp",)  # analyses under an assumption: each at the full 1 - confidence, a statement of its own
MU_MAX = 40.0  # search ceiling on μ


# ----------------------------------------------------------------------------- trade-off curves

def gdp_delta(epsilon, mu):
    """δ(ε) of μ-GDP, exact: Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2) (0 for μ = 0)."""
    epsilon, mu = np.broadcast_arrays(np.asarray(epsilon, dtype=float), np.asarray(mu, dtype=float))
    out = np.zeros(epsilon.shape)
    pos = mu > 0
    e, u = epsilon[pos], mu[pos]
    # e^ε Φ(-ε/μ - μ/2) in log space (no overflow for large ε)
    second = np.exp(e + special.log_ndtr(-e / u - u / 2))
    out[pos] = np.maximum(special.ndtr(-e / u + u / 2) - second, 0.0)
    return out if out.ndim else float(out)


def gdp_epsilon(delta: float, mu, tol: float = 1e-6):
    """ε of μ-GDP at δ (bisection on the exact curve, vectorised over μ): the LOWER end of the bracket."""
    mu = np.asarray(mu, dtype=float)
    lo, hi = np.zeros(mu.shape), np.full(mu.shape, EPS_MAX)
    while np.any(hi - lo > tol):
        mid = (lo + hi) / 2
        above = gdp_delta(mid, mu) > delta
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out = np.where(gdp_delta(0.0, mu) > delta, lo, 0.0)
    return out if out.ndim else float(out)


def dp_tradeoff(alpha, epsilon, delta):
    """f_{ε,δ}(α) = max(0, 1 - δ - e^ε α, e^{-ε}(1 - δ - α)), the trade-off curve of (ε, δ)-DP."""
    alpha = np.asarray(alpha, dtype=float)
    return np.maximum.reduce([np.zeros(np.broadcast(alpha, epsilon).shape), 1 - delta - np.exp(epsilon) * alpha,
                              np.exp(-np.asarray(epsilon, dtype=float)) * (1 - delta - alpha)])


def profile_deltas(profile, epsilons) -> np.ndarray:
    """δ(ε) on ``epsilons`` from a claimed profile: tsdp's accountant (``get_delta_curve``, e.g.
    ``PldAccountant("sound").compose(event)``), a dp-accounting PLD (``get_delta_for_epsilon``) or a callable.

    The profile must bound both orders of the neighbouring pair (DP's definition; dp-accounting
    PLDs and the accountant's reads take the larger of the two).
    """
    epsilons = np.asarray(epsilons, dtype=float)
    if hasattr(profile, "get_delta_curve"):
        return np.asarray(profile.get_delta_curve(epsilons), dtype=float)
    if hasattr(profile, "get_delta_for_epsilon"):
        return np.array([float(profile.get_delta_for_epsilon(float(e))) for e in epsilons])
    if callable(profile):
        return np.asarray([float(profile(float(e))) for e in epsilons])
    raise TypeError("a claimed profile is an accountant (get_delta_curve), a PLD (get_delta_for_epsilon), "
                    "a callable δ(ε) or a pair (ε_grid, δ_grid)")


def profile_tradeoff(alpha, epsilons, deltas):
    """f(α) = max over the grid of max(0, 1 - δ(ε) - e^ε α, e^{-ε}(1 - δ(ε) - α)): the claimed profile's curve.

    A sup over a finite grid is at most the sup over all ε: a lower (weaker) curve, so a
    rejection of it is a rejection of the claim.
    """
    alpha = np.asarray(alpha, dtype=float)
    eps = np.asarray(epsilons, dtype=float).reshape((-1,) + (1,) * alpha.ndim)
    dl = np.asarray(deltas, dtype=float).reshape(eps.shape)
    return np.max(dp_tradeoff(alpha[None], eps, dl), axis=0)


def claimed_curve(profile, epsilons: Optional[Sequence[float]] = None):
    """(ε grid, δ grid) of a claimed profile (:func:`profile_deltas`'s kinds, or a pair (ε_grid, δ_grid) as given);
    ``epsilons`` defaults to 0, 0.05, ..., 20."""
    if isinstance(profile, tuple) and len(profile) == 2:
        eps, dl = (np.asarray(x, dtype=float) for x in profile)
        if eps.shape != dl.shape or eps.ndim != 1:
            raise ValueError("a claimed profile as arrays is (ε_grid, δ_grid) of one shape")
        return eps, dl
    eps = np.linspace(0.0, 20.0, 401) if epsilons is None else np.asarray(epsilons, dtype=float)
    return eps, profile_deltas(profile, eps)


# ----------------------------------------------------------------------------- the recursion

def _inverse(family: str, delta: float = 0.0, claim=None) -> Callable:
    """f̄⁻¹(y, θ) = f_θ(1 - y) of a family: "gdp" (θ = μ), "dp" (θ = ε at ``delta``), "claimed" (θ unused)."""
    if family == "gdp":
        return lambda y, mu: special.ndtr(special.ndtri(y) - mu)
    if family == "dp":
        return lambda y, eps: np.maximum.reduce([np.zeros_like(y), 1 - delta - np.exp(eps) * (1 - y),
                                                 np.exp(-eps) * (y - delta)])
    if family == "claimed":
        eps, dl = claim
        return lambda y, _theta: profile_tradeoff(1 - y, eps, dl)
    raise ValueError(f"unknown family {family!r}")


def rejects(inverse: Callable, theta, m: int, k, c, tau) -> np.ndarray:
    """Whether c correct of k guesses among m canaries rejects f_θ at level τ (module docstring's theorem).

    ``inverse(y, θ)`` is f̄⁻¹(y) = f_θ(1 - y), vectorised; θ, k, c, τ broadcast together.
    True means P[W ≥ c] < τ for every f_θ-DP training.
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
    """Whether the claimed curve (ε grid, δ grid) is rejected by any guess set (Bonferroni over ``sets``)."""
    counts = np.asarray(counts)
    k = np.broadcast_to(sets.sum(axis=1), counts.shape)
    rej = rejects(_inverse("claimed", claim=claim), 0.0, m, k, counts, significance / len(sets))
    return rej.any(axis=-1)


def certify(scores, included, delta: float, confidence: float = 0.95, *,
            analyses: Sequence[str] = ("dp", "gdp", "steinke"), claimed=None,
            sets: Optional[np.ndarray] = None, seed: int = 0) -> dict:
    """One-run audit of one score vector: every analysis in ``analyses`` on the same guess sets, JSON-ready.

    ``scores`` (higher = more likely included) and ``included`` are 1-D of length m. ``sets``
    (rows (k_in, k_out); default :func:`guess_grid`) must be fixed before the scores are seen:
    one row is a guess set fixed a priori, tested at the analysis's full share.

    ``claimed``: a claimed profile (callable δ(ε), a PLD, or (ε_grid, δ_grid)); adds the
    "claimed" analysis (``violation``). The significance 1 - confidence is split between the
    analyses that feed the verdict in the fixed shares :data:`SHARES` (decided by the arguments,
    before the scores), so ``epsilon_lower`` (the larger of the assumption-free "dp" and "steinke"
    ε) and ``violation`` hold together at ``confidence``; ``epsilon_if_gaussian`` (the "gdp"
    analysis) is a statement of its own at ``confidence``, true only if the training's trade-off
    curve is Gaussian, and takes nothing from the verdict's error. Ties in the scores are broken by
    an independent random permutation (``seed``). Bad arrays (NaN scores, ``included`` not
    boolean-valued, lengths that differ, no guess sets) raise ValueError. ``ceiling`` is :func:`plan`'s perfect-guess ε per analysis for
    this m and these shares; ``limited_by`` (:func:`limited_by`) says which of the audit's size
    and the training limits the result.
    """
    scores, included = steinke_bound.check_evidence(scores, included)
    if scores.size < 2:
        raise ValueError("need at least 2 canaries")
    if not (0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1) (got {confidence})")
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1) (got {delta})")
    m = scores.size
    names = [a for a in analyses if a != "claimed"] + (["claimed"] if claimed is not None else [])
    share = _shares(names, confidence)
    sets = guess_grid(m) if sets is None else _check_sets(sets, m)
    counts = correct_counts(scores, included, sets, np.random.default_rng(seed))
    out = {"canaries": m, "delta": delta, "confidence": confidence, "guess_sets": len(sets),
           "significance": share, "analyses": {}}
    for a in names:
        if a == "claimed":
            claim = claimed_curve(claimed)
            out["analyses"][a] = {"violation": bool(claim_rejected(counts, sets, m, share[a], claim))}
            continue
        b = fdp_bounds(counts, sets, m, delta, share[a], a)
        best = int(b["best"])
        row = {"epsilon_lower": float(b["epsilon"]), "k_in": int(sets[best, 0]), "k_out": int(sets[best, 1]),
               "correct": int(counts[best])}
        if a == "gdp":  # holds only under its assumption: named so, never "epsilon_lower"
            row = {"epsilon_if_gaussian": row.pop("epsilon_lower"), "mu_lower": float(b["value"]), **row}
        out["analyses"][a] = row
    free = [out["analyses"][a]["epsilon_lower"] for a in ("dp", "steinke") if a in out["analyses"]]
    out["epsilon_lower"] = max(free) if free else None
    if "gdp" in out["analyses"]:
        out["epsilon_if_gaussian"] = out["analyses"]["gdp"]["epsilon_if_gaussian"]
    out["violation"] = out["analyses"].get("claimed", {}).get("violation", False)
    out["ceiling"] = ceilings(m, delta, confidence, analyses=names, sets=sets)
    out["limited_by"] = limited_by(out, out["ceiling"])
    return out


def limited_by(result: dict, ceiling: dict) -> str:
    """"audit size" when some analysis reaches its perfect-guess ceiling (``ceiling``: ε per analysis) in the sense
    of :func:`attacks.canary.steinke_bound.limited_by`, else "training"."""
    sizes = [steinke_bound.limited_by(row["epsilon_lower"], ceiling[a])
             for a, row in result["analyses"].items() if a in ceiling and "epsilon_lower" in row]
    return "audit size" if "audit size" in sizes else "training"


def _shares(names: Sequence[str], confidence: float) -> dict:
    """Each analysis's significance (a function of the names only): 1 - confidence split in the fixed :data:`SHARES`
    between the verdict's analyses; each of :data:`ON_ITS_OWN` (a statement under an assumption) at 1 - confidence."""
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
    """Per analysis (not "claimed"), the ε that m canaries certify if every guess is right: :func:`certify`'s sets and
    shares at ``confidence``."""
    share = _shares(list(analyses), confidence)
    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    return {a: float(fdp_bounds(sets.sum(axis=1)[None], sets, m, delta, share[a], a)["epsilon"][0])
            for a in analyses if a != "claimed"}


def _ranked_families(analyses: Sequence[str]) -> tuple:
    """The families a perfect ranking's ε is computed from: "dp" alone where the analyses run it, else "steinke".

    The certified ε is the larger of the two, so one of them is a **lower** bound on it. On a perfect ranking the
    f-DP test's "dp" bound was never below Steinke et al.'s (m = 20 to 20000, the default guess grid:
    tests/attacks/test_fdp_bound.py checks it), and it costs a fraction: Steinke et al.'s p-value sums a binomial
    window of up to 4096 terms per (k, correct) pair, thousands of pairs at m = 10^7 (minutes for a plan)."""
    return ("dp",) if "dp" in analyses else tuple(a for a in ("steinke",) if a in analyses)


def _ranked_counts(m: int, n: np.ndarray, sets: np.ndarray, missed: int = 0) -> np.ndarray:
    """Correct guesses of each set, shaped (len(n), len(sets)), with n included, ranked first but for at most
    ``missed`` of them (which may rank anywhere below): at least min(k_in, n - missed) "in" and
    min(k_out - missed, m - n) "out" guesses are right (each at least 0); with ``missed`` = 0 exactly the perfect
    ranking's min(k_in, n) + min(k_out, m - n) (:func:`perfect_ranking`)."""
    return (np.minimum(sets[:, 0], np.maximum(n[:, None] - missed, 0))
            + np.maximum(np.minimum(sets[:, 1] - missed, m - n[:, None]), 0))


def _ranked_pairs(counts: np.ndarray, sets: np.ndarray) -> tuple:
    """The distinct (k, correct) pairs of ``counts`` (rows of correct counts per set), and the index of each cell's
    pair, shaped like ``counts``."""
    pairs, inverse = np.unique(np.stack([np.broadcast_to(sets.sum(axis=1), counts.shape).ravel(), counts.ravel()], 1),
                               axis=0, return_inverse=True)
    return pairs, inverse.reshape(counts.shape)


def _ranked_epsilon(m: int, n: np.ndarray, sets: np.ndarray, delta: float, share: dict,
                    analyses: Sequence[str], families: Optional[Sequence[str]] = None) -> np.ndarray:
    """ε(n) of a perfect ranking with n included (:func:`perfect_ranking`): the largest bound of ``families``
    (default :func:`_ranked_families`; ("dp", "steinke") is the certified ε itself) over ``sets``, a **lower** bound
    on what :func:`certify` reports, each bound computed once per distinct (k, correct) pair (they depend on nothing
    else)."""
    pairs, cell = _ranked_pairs(_ranked_counts(m, n, sets), sets)
    best = np.zeros(len(pairs))
    for a in (_ranked_families(analyses) if families is None else families):
        if a in ("dp", "steinke") and a in analyses:
            best = np.maximum(best, _family_bound(a, m, pairs[:, 0], pairs[:, 1], share[a] / len(sets), delta))
    return best[cell].max(axis=1)


BISECTION_TOL = 1e-4
"""The bisection tolerance of the reported bounds (:func:`largest_rejected`, Steinke et al.'s): a bound reported above
θ implies a rejection at θ + this, and a rejection there implies a reported bound above θ."""


def _beyond(m: int, k: np.ndarray, c: np.ndarray, tau: dict, delta: float, theta: float,
            analyses: Sequence[str]) -> np.ndarray:
    """Per (k, c): whether a bound of :func:`_ranked_families` (at its level ``tau[family]``) that :func:`certify`
    reports (its bisection's lower end) is above θ, decided by one test at θ + :data:`BISECTION_TOL` instead of a
    bisection: the bisection keeps a rejected lower end and an accepted upper end within the tolerance, so a
    rejection at θ + tol leaves the lower end above θ (only "no" can err, towards fewer flags: a **lower** bound on
    what is flagged)."""
    out = np.zeros(np.shape(k), dtype=bool)
    if theta + BISECTION_TOL > EPS_MAX:  # no bound is searched above EPS_MAX
        return out
    for a in _ranked_families(analyses):
        if a == "steinke":
            out |= (k > 0) & (steinke_bound.p_value(m, k, c, theta + BISECTION_TOL, delta) < tau[a])
        else:
            out |= rejects(_inverse(a, delta), theta + BISECTION_TOL, m, k, c, tau[a])
    return out


def flag_rate(m: int, claimed_epsilon: float, delta: float, confidence: float = 0.95, *,
              participation: float = 1.0, quantile: float = 0.1,
              analyses: Sequence[str] = ("dp", "gdp", "steinke"), sets: Optional[np.ndarray] = None) -> float:
    """A **lower** bound on the probability that an audit of m canaries of a training without noise reports an ε
    lower bound above ``claimed_epsilon`` (:func:`certify`'s sets and shares at ``confidence``).

    The model of a training without noise: each canary is included with probability 1/2 and takes part in at least
    one step with probability ``participation`` (q), independently; the included canaries that took part score
    above every other canary (a canary that took part in no step left no mark: it scores like an excluded one, in
    an order independent of its inclusion). So A, the number of included canaries that took part, is
    Binomial(m, q/2), and every "included"-only guess set (k, 0) with k ≤ A is all right: the rate is at least
    P[A ≥ k*], k* the least such k whose all-right bound is above the claim. Second, the near-balanced sets: B, the
    included canaries without a mark, is Binomial(m, (1 - q)/2), at most b with probability ≥ 1 - ``quantile`` / 10
    (b = 0 when q = 1: the perfect ranking of :func:`perfect_ranking`); with n included and B ≤ b each set's right
    guesses are at least :func:`_ranked_counts`' (b wrong at most on each side), and the rate is at least
    1 - ``quantile`` where every n of the narrowest band of mass 1 - ``quantile`` (less the share of B's tail;
    :func:`perfect_ranking_quantile`'s band when q = 1) is flagged at those counts (a union bound). The larger of the
    two is returned. Guesses among the canaries without a mark are right about half the time; counting them as wrong
    makes the rate a lower bound (measured on the hand-written loop without noise, and on this model with the real
    certifier: tests/attacks/test_plan_calibration.py).
    """
    if not 0 <= participation <= 1:
        raise ValueError(f"participation must be in [0, 1] (got {participation})")
    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    tau = {a: s / len(sets) for a, s in _shares(list(analyses), confidence).items()}
    k = sets.sum(axis=1)
    if not _beyond(m, k, k, tau, delta, claimed_epsilon, analyses).any():  # the ceiling: not even all right flags
        return 0.0
    ks = np.unique(sets[sets[:, 1] == 0, 0])
    flagged = ks[_beyond(m, ks, ks, tau, delta, claimed_epsilon, analyses)]
    rate = float(stats.binom.sf(flagged.min() - 1, m, participation / 2)) if flagged.size else 0.0
    if rate < 1 - quantile:  # the band: n included near m / 2, at most `missed` of them without a mark
        spill = 0.0 if participation == 1 else quantile / 10
        missed = 0 if participation == 1 else int(stats.binom.isf(spill, m, (1 - participation) / 2))
        reach = _band_reach(m, quantile - spill)
        counts = _ranked_counts(m, np.arange((m - reach) // 2, (m + reach) // 2 + 1), sets, missed)
        pairs, cell = _ranked_pairs(counts, sets)
        if _beyond(m, pairs[:, 0], pairs[:, 1], tau, delta, claimed_epsilon, analyses)[cell].any(axis=1).all():
            rate = 1 - quantile
    return rate


def perfect_ranking(m: int, delta: float, confidence: float = 0.95, *,
                    analyses: Sequence[str] = ("dp", "gdp", "steinke"), sets: Optional[np.ndarray] = None) -> dict:
    """What a perfectly ranked audit certifies: every included canary scored above every excluded one.

    That is what a training without noise shows when every canary leaves its mark (AUC 1);
    unlike :func:`plan`'s ceiling it cannot choose the number of canaries included, which is
    Binomial(m, 1/2). Given n included, guess set (k_in, k_out) has min(k_in, n) + min(k_out,
    m - n) correct guesses, so :func:`certify`'s ``epsilon_lower`` (the larger of "dp" and
    "steinke", same sets and shares) is a function ε(n). Returns {"n": n's with probability
    mass above 1e-12, "epsilon": ε(n), "probability": Binomial(m, 1/2) mass} (no sampling).
    """
    from scipy.stats import binom

    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    lo, hi = int(binom.ppf(1e-12, m, 0.5)), int(binom.isf(1e-12, m, 0.5))
    n = np.arange(lo, hi + 1)
    return {"n": n, "epsilon": _ranked_epsilon(m, n, sets, delta, _shares(list(analyses), confidence), analyses),
            "probability": binom.pmf(n, m, 0.5)}


def _band_reach(m: int, quantile: float) -> int:
    """The smallest D (of the parity of m, at most m) with P[|2N - m| <= D] >= 1 - ``quantile``, N ~ Binomial(m, 1/2),
    by bisection over D (the probability grows with D): two binomial CDFs a step, not one per D."""
    from scipy.stats import binom

    def covered(distance: int) -> bool:
        return binom.cdf((m + distance) // 2, m, 0.5) - binom.cdf((m - distance) // 2 - 1, m, 0.5) >= 1 - quantile

    lo, hi = 0, m // 2  # D = m % 2 + 2 * index
    if not covered(m % 2 + 2 * hi):
        return m % 2 + 2 * hi
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if covered(m % 2 + 2 * mid) else (mid + 1, hi)
    return m % 2 + 2 * lo


def perfect_ranking_quantile(m: int, delta: float, confidence: float = 0.95, quantile: float = 0.1, *,
                             analyses: Sequence[str] = ("dp", "gdp", "steinke"),
                             sets: Optional[np.ndarray] = None) -> float:
    """An ε that a perfectly ranked audit of m canaries certifies in at least 1 - ``quantile`` of runs: the smallest
    :func:`perfect_ranking` ε(n) over the narrowest band |2n - m| ≤ D of numbers included whose Binomial(m, 1/2)
    mass is at least 1 - ``quantile`` (at most the ``quantile`` of ε(N), never above it; equal to it when ε(n) does
    not increase with |2n - m|, as for guess sets with k_in = k_out only)."""
    from scipy.stats import binom

    sets = guess_grid(m) if sets is None else np.asarray(sets, dtype=np.int64)
    reach = _band_reach(m, quantile)
    n = np.arange((m - reach) // 2, (m + reach) // 2 + 1)
    return float(_ranked_epsilon(m, n, sets, delta, _shares(list(analyses), confidence), analyses).min())


def plan(m: int, delta: float, confidence: float = 0.95, claimed_epsilon: Optional[float] = None, *,
         analyses: Sequence[str] = ("dp", "gdp", "steinke"), sets: Optional[np.ndarray] = None,
         scores: int = 1, quantile: float = 0.1, m_max: int = 10 ** 6,
         grid: Callable[[int], np.ndarray] = guess_grid, participation: float = 1.0) -> dict:
    """What an audit with m canaries can see, before any training: its ceiling, and what a perfect ranking certifies.

    Same guess sets (:func:`guess_grid` unless ``sets``) and significance shares as
    :func:`certify` with the same ``analyses`` ("claimed" takes its share but has no
    ceiling), each of ``scores`` score vectors at confidence 1 - (1 - confidence) / scores (the
    Bonferroni of :func:`attacks.canary.evidence.certify_evidence`). ``ceiling``: per analysis,
    the ε if every guess is right. ``perfect_ranking``: the ε that a perfectly ranked audit
    (:func:`perfect_ranking`, what a training without noise shows) certifies in
    1 - ``quantile`` of runs. With ``claimed_epsilon``: ``canaries_needed``, the smallest m
    whose audit of a training without noise, each canary taking part in a step with probability
    ``participation`` (gradient canaries: :func:`attacks.canary.gradient.participation_probability`
    of the batching and steps; 1: every canary, a perfect ranking), is flagged against the claim in at least
    1 - ``quantile`` of audits by :func:`flag_rate`'s lower bound (doubling, then bisection over m, where it grows
    with m; None above ``m_max``), and ``participation``. ``grid(m)``: the certifier's guess sets of m canaries (default
    :func:`guess_grid`; Steinke et al.'s alone: :func:`attacks.canary.steinke_bound.guess_sets`).
    """
    each = 1 - (1 - confidence) / scores

    def ranked(n: int) -> float:
        return perfect_ranking_quantile(n, delta, each, quantile, analyses=analyses,
                                        sets=sets if (sets is not None and n == m) else grid(n))

    out = {"canaries": m, "delta": delta, "confidence": confidence, "scores": scores,
           "ceiling": ceilings(m, delta, each, analyses=analyses, sets=grid(m) if sets is None else sets),
           "perfect_ranking": ranked(m),
           "quantile": quantile}
    if claimed_epsilon is not None:
        def reaches(n: int) -> bool:  # one rejection test per (k, correct) at the claim, no bisection
            return flag_rate(n, claimed_epsilon, delta, each, participation=participation, quantile=quantile,
                             analyses=analyses, sets=grid(n)) >= 1 - quantile

        lo, hi = 1, 2
        while hi <= m_max and not reaches(hi):
            lo, hi = hi, hi * 2
        if hi > m_max and reaches(m_max):
            lo, hi = hi // 2, m_max
        if hi > m_max:
            needed = None
        else:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
            needed = hi
        out["claimed_epsilon"] = claimed_epsilon
        out["participation"] = participation
        out["canaries_needed"] = needed
    return out