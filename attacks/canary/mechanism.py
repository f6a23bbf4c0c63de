"""Mechanism tests of a white-box audit: does the optimizer step on the noise the claim declares? (one-sided tests)

The ε lower bound of a one-run canary audit (:mod:`attacks.canary.fdp_bound`) can only reach what
its canaries can certify (its ceiling), so a claim above that ceiling is never rejected by it,
however broken the training. The gradient the optimizer stepped on says more: DP-SGD's claim
(Algorithm 2 of the paper; the accountants of T1-T15 all assume it) is that it steps on

    g̃_t = s · (Σ_{windows of the step} clip_C(∇ℓ) + N(0, σ² C² I_d)),

s the gradient's scale (1/Λ for a mean over the batch, :mod:`attacks.canary.optimizer_canaries`).
The audit sees g̃_t at every step (torch's own optimizers only read ``.grad``), knows its own
canaries' part of it exactly, and knows σ, C and s from the claim. Each test below is a
hypothesis test of the claimed mechanism with a false-alarm rate fixed before the run; its
rejection is evidence, at that rate, of the named bug, whatever the claimed ε and whether or
not the claim is above the canaries' ceiling.

Noise (:func:`noise_test`). Let r_t = g̃_t / s less the canaries' part, restricted to the parameters
that have a gradient in the step (a loop adds no noise where there is none), and, when the data's
span at θ_t is known (:mod:`attacks.canary.data_span`, mode "span": a basis of every window's
gradient at θ_t, a function of θ_t and the data only), less its projection on that span. Under the
claim r_t = P (D_t + n_t) with D_t the data's clipped sum (fixed given the past) and n_t ~
N(0, σ² C² I) independent of the past, P a projection of rank k_t fixed given the past. So
S_t = |r_t|² / (σ C)² is non-central χ²_{k_t} with non-centrality |P D_t|² / (σ C)² ≥ 0, which is
stochastically larger than the central χ²_{k_t}: P[S_t ≤ χ²_{k_t}(a)] ≤ a for every a, given the
past (the data's gradients only add variance). The test pools the steps (Σ_t S_t against
χ²_{Σ k_t}: by coupling step by step the sum dominates a sum of independent central χ²s) and
takes the least step (the smallest per-step lower-tail p-value p_min; given the past each p_t is
stochastically ≥ uniform, so P[p_min ≤ a] ≤ 1 - (1 - a)^T): noise missing on some steps only
shows. The two are combined by Bonferroni at :data:`NOISE_ALPHA` (half each). Reported: the
measured noise std per coordinate in units of C, √(Σ S_t / Σ k_t) · σ on the gradient stepped on
(times s), against the declared σ · C · s. Not tested (said) when the optimizer's parameter
updates are observed (an optimizer class of its own: its step may add noise after ``.grad``) or
σ = 0 is declared (nothing to fall short of).

Clipping (:func:`clipping_test`). Under the claim |Q_t^T r_t| ≤ |D_t| + |Q_t^T n_t| ≤ B C + σ C
χ_{j_t} for any orthonormal Q_t (d × j_t) fixed given the past, B the most windows a step can hold
(``most_windows``: the configured batch of a fixed-size scheme, else every window of the data):
the step moved at most B · C plus the noise. The statistic is
(|Q_t^T r_t| / C - B)_+ / σ, whose square is at most a χ²_{j_t} variable: its upper tail, least
over the steps (P[p_min ≤ a] ≤ 1 - (1 - a)^T), tested at :data:`CLIP_ALPHA`. Q_t is the data's
span when it is known (the data's gradients live there, the noise in few of its dimensions), else
the whole parameter space. It sees a missing clip only where some step's unclipped windows
exceed B C by more than the noise: the canaries of the one-run test enter after the user's
clipping and cannot show it; data of large raw gradient (``data_canaries`` of
:mod:`attacks.canary.user_training`: series whose windows' raw gradients are far above C, passed
through the user's own per-window path) make it show.

Sampling (:func:`sampling_test`). The amplification by subsampling the claim rests on (T1-T15) assumes each
step holds the declared batch: Λ windows under a fixed-size scheme (both levels draw a fixed number,
:func:`attacks.canary.optimizer_canaries.fixed_batch`). Let v_t be the unit mean of the data's per-window
gradients at θ_t, each clipped to C (under the ``loss`` given; a function of θ_t and the data, fixed given
the past; a loss other than the training's only costs power). Under the claim ⟨r_t, v_t⟩ ≤ Σ_{windows of
the step} ⟨c_w ∇ℓ_w, v_t⟩ + ⟨n_t, v_t⟩ ≤ Λ C + σ C Z_t, Z_t ~ N(0, 1) independent of the past: every window
moves the step along v_t by at most C, whatever it is. So x_t = ⟨r_t, v_t⟩ / C - Λ, pooled
(Σ_t x_t / (σ √T) is at most a standard normal) and least over the steps (P[p_min ≤ a] ≤ 1 - (1 - a)^T),
combined by Bonferroni at :data:`SAMPLING_ALPHA`, at the declared σ or, when larger, the noise std the noise
test measures (√(Σ S_t / Σ k_t); it holds the data's residual too, so it errs high): a loop adding more noise
than declared is not taken for a larger batch. Its rejection says some step moved along the data's
mean clipped gradient more than Λ windows of norm ≤ C plus the noise can, i.e. it held more windows than
declared (or the loop multiplies the gradient by more than the declared scale). Its power comes from the
windows pointing alike: with a_t = |mean of the clipped gradients| / C (the mean alignment, reported) a step
of B drawn windows moves about B a_t C along v_t, so a batch B shows once B a_t > Λ (measured on the
hand-written loop, :mod:`bench.handwritten_dpsgd`, σ = 2, Λ = 4, 30 steps, seeds 0-4: a_t
0.64-0.75; the correct loop passes with p = 1, estimated 3.0-4.8 windows a step; a loader of 3Λ is flagged
in 5 of 5, p ≤ 5e-16, 10-13 windows; of 2Λ in 2 of 5, p from 7e-11 to 0.04, 7-9 windows: a margin of about
1.2 C a step against noise of 2 C needs about a hundred steps). It is reported as the estimated windows per
step Σ_t ⟨r_t, v_t⟩ / Σ_t a_t C (unbiased when every window is drawn alike).
It is tested only when the clipping test passes (its bound needs every window clipped to C; a missing clip
moves the step further and is the clipping test's to name), the scheme's batch is fixed (a Poisson level
draws a random number of windows, up to all of them) and the data's per-window gradients are known at the
steps' parameters (a ``loss`` the model takes under ``torch.func``, :mod:`attacks.canary.data_span`).

What the audit cannot see of the sampling, and does not test. Which windows or series a step drew: one
window moves a step by at most C against noise of σ C in every direction, so at the σ of a claim (≳ 0.5)
single windows are not identified per step; hence not the epoch structure either (a series used in more
steps per epoch than the scheme allows, sampling with replacement across an epoch where shuffling is
declared), nor the bottom level's count per series, nor a batch that is larger but averaged over its own
size (the data and the noise then both shrink by Λ / B: the noise test sees the noise below σ C at the
declared scale). The canaries' participation cannot show any of it: the audit draws it itself with the
declared scheme's sampler (:class:`attacks.canary.gradient.Participation`), whatever the loop's loader does.
Nor the number of steps (the audit accounts for the steps it saw).

The tests assume Gaussian noise (the claim's); non-Gaussian noise of the declared variance
passes the noise test in the large-k limit (the χ² lower tail is a variance test). Both read the
gradient at the declared scale s: a loop that multiplies the noisy sum by less (a larger divisor
than Λ, or a post-processing that shrinks it, such as clipping the noisy mean) fails the noise
test although its noise before the scaling may be right; the finding says so (the ε bound of such
a loop needs its true scale too, :mod:`attacks.canary.optimizer_canaries`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np
from scipy import stats

from tsdp.verify.json_data import Record, noted

NOISE_ALPHA = 1e-3
"""False-alarm rate of the noise test on a training that steps on the declared noise (half pooled, half per step)."""

CLIP_ALPHA = 1e-3
"""False-alarm rate of the clipping test on a training that clips at C and adds the declared noise."""


SAMPLING_ALPHA = 1e-3
"""False-alarm rate of the sampling test on a training whose steps hold at most Λ windows, each clipped to C, and the
declared noise (half pooled, half per step)."""


OVERFLOW_NOTE = "null: the {} quantity is beyond float64's range (an overflow)"
"""What a null ``measured`` or ``declared`` of a mechanism test means (its JSON ``<key>_note``)."""


@dataclass(frozen=True)
class MechanismTest(Record):
    """One mechanism test's outcome (module docstring): ``name`` ("noise", "clipping"), ``tested`` (False: why in
    ``finding``), ``failed`` (the test rejects the claimed mechanism at ``alpha``), ``p_value`` (its one-sided
    p-value, None when untested), ``measured`` and ``declared`` (the test's quantity, units in ``finding``),
    ``steps_failing`` (steps whose own test, at ``alpha`` / T, rejects), ``steps`` and ``finding`` (one line).

    Attributes:
        name: "noise", "clipping" or "sampling".
        tested: Whether the test ran (False: why in ``finding``).
        failed: The test rejects the claimed mechanism at ``alpha``.
        alpha: The test's false-alarm rate.
        p_value: Its one-sided p-value (None when untested).
        measured: The test's quantity measured (units in ``finding``).
        declared: The quantity the claim declares.
        steps_failing: Steps whose own test, at ``alpha`` / T, rejects.
        steps: The steps tested.
        finding: What the test found, in words.
    """

    name: str
    tested: bool
    failed: bool
    alpha: float
    p_value: Optional[float]
    measured: Optional[float] = noted(OVERFLOW_NOTE.format("measured"))
    declared: Optional[float] = noted(OVERFLOW_NOTE.format("declared"))
    steps_failing: int
    steps: int
    finding: str


def _std(value: float) -> str:
    """A size in units of C for a finding: beyond float64's range it says so (never 'inf')."""
    return f"{value:.4g}·C" if math.isfinite(value) else "beyond float64's range (an overflow)"


def untested(name: str, alpha: float, steps: int, why: str) -> MechanismTest:
    """A test that could not run, ``why`` in its finding (never a failure).

    Args:
        name: The test's name.
        alpha: Its false-alarm rate.
        steps: The run's steps.
        why: Why it could not run.

    Returns:
        The untested :class:`MechanismTest`.
    """
    return MechanismTest(name, False, False, alpha, None, None, None, 0, steps, f"{name} not tested: {why}")


def p_text(p: float) -> str:
    """A p-value for a message: "p < 1e-9" below it, else "p = 0.0123".

    Args:
        p: The p-value.

    Returns:
        The text.
    """
    if p < 1e-9:
        return "p < 1e-9"
    return f"p = {p:.2g}"


def min_p(p_values: np.ndarray) -> float:
    """P[min of T p-values each stochastically ≥ uniform given the past ≤ the observed min] ≤ 1 - (1 - p_min)^T.

    Args:
        p_values: The T per-step p-values.

    Returns:
        The combined p-value.
    """
    p = float(np.min(p_values))
    return float(-np.expm1(len(p_values) * np.log1p(-p))) if p < 1 else 1.0


def noise_test(sums: np.ndarray, dims: np.ndarray, sigma: float, scale: float, clip: float,
               alpha: float = NOISE_ALPHA) -> MechanismTest:
    """The noise test (module docstring) from the per-step Σ r_t² in units of C² (``sums``, length T) over ``dims``
    k_t dimensions: a **lower**-tail χ² test that the noise stepped on has at least the declared std σ · C · s
    (``scale`` s). Rejection is evidence at ``alpha`` that the noise is smaller on some or all steps.

    Args:
        sums: Per step, Σ r_t² in units of C² (NaN: a step of a diverged training, left out).
        dims: Per step, the dimensions k_t.
        sigma: The declared noise multiplier σ.
        scale: The gradient's scale s.
        clip: The clipping norm C.
        alpha: The test's false-alarm rate.

    Returns:
        The :class:`MechanismTest`.
    """
    sums, dims = np.asarray(sums, dtype=float), np.asarray(dims, dtype=float)
    seen = ~np.isnan(sums)  # a NaN step (the training diverged) says nothing, and must not make the test pass
    sums, dims = sums[seen], dims[seen]
    steps = int(sums.size)
    declared = sigma * clip * scale
    if steps == 0 or dims.sum() == 0:
        return untested("noise", alpha, steps, "no step with a gradient was observed")
    if not sigma > 0:
        return untested("noise", alpha, steps, "the claim declares no noise (σ = 0)")
    var = sigma * sigma
    pooled = float(stats.chi2.cdf(sums.sum() / var, dims.sum()))
    has = dims > 0
    each = stats.chi2.cdf(sums[has] / var, dims[has])
    worst = min_p(each)
    p = min(1.0, 2 * min(pooled, worst))
    measured = math.sqrt(sums.sum() / dims.sum()) * clip * scale
    failing = int(np.sum(each <= alpha / 2 / each.size))
    failed = p <= alpha
    if failed:
        finding = (f"noise std {_std(measured)} < the declared {_std(declared)} on the gradient stepped on "
                   f"(σ = {sigma:g} × gradient scale {scale:.3g}; {p_text(p)})")
        if failing:
            finding += f": too little noise on {failing} of {steps} steps"
        finding += (" (or the loop multiplies the noisy sum by less than the gradient scale, or shrinks it after the "
                    "noise: give gradient_scale=, --gradient-scale)")
    else:
        finding = (f"noise std {_std(measured)}, not below the declared {_std(declared)} at the "
                   f"{alpha:g} level ({p_text(p)})")
    return MechanismTest("noise", True, failed, alpha, p, measured / clip, declared / clip, failing, steps, finding)


def clipping_test(norms: np.ndarray, dims: np.ndarray, most_windows: int, sigma: float, scale: float,
                  alpha: float = CLIP_ALPHA) -> MechanismTest:
    """The clipping test (module docstring) from the per-step |Q_t^T r_t| / C (``norms``) over ``dims`` j_t
    dimensions: an **upper**-tail test that no step moved more than ``most_windows`` · C plus the declared noise.
    Rejection is evidence at ``alpha`` that some window's contribution exceeded C (a missing or larger clip).

    Args:
        norms: Per step, |Q_t^T r_t| / C.
        dims: Per step, the dimensions j_t.
        most_windows: The most windows a step holds.
        sigma: The declared noise multiplier.
        scale: The gradient's scale s.
        alpha: The test's false-alarm rate.

    Returns:
        The :class:`MechanismTest`.
    """
    norms, dims = np.asarray(norms, dtype=float), np.asarray(dims, dtype=float)
    steps = int(norms.size)
    seen = ~np.isnan(norms)  # a NaN step (the training diverged) says nothing; an infinite one exceeds any bound
    norms, dims = norms[seen], dims[seen]
    if norms.size == 0 or dims.sum() == 0:
        return untested("clipping", alpha, steps, "no step with a gradient was observed")
    excess = np.maximum(norms - most_windows, 0.0)
    if sigma > 0:
        each = stats.chi2.sf((excess / sigma) ** 2, np.maximum(dims, 1))
    else:
        each = np.where(excess > 1e-6 * most_windows, 0.0, 1.0)  # no noise declared: any excess is beyond it
    p = min_p(each)
    failing = int(np.sum(each <= alpha / each.size))
    worst = float(norms.max())
    failed = p <= alpha
    steps = int(norms.size)
    if failed:
        finding = (f"a step moved {_std(worst)} (the canaries' part taken off), more than {most_windows} windows of "
                   f"norm ≤ C plus the declared noise allow ({p_text(p)}) on {failing} of {steps} steps: a "
                   "window's contribution exceeded C (clipping missing or larger than declared)")
    else:
        finding = (f"no step moved more than {most_windows} windows of norm ≤ C plus the noise allow (largest "
                   f"{_std(worst)}, {p_text(p)}); it sees a missing clip only on windows whose raw gradient is "
                   "far above C (data canaries: --data-canaries, data_canaries=)")
    return MechanismTest("clipping", True, failed, alpha, p, worst, float(most_windows), failing, steps, finding)


def sampling_test(moves: np.ndarray, alignments: np.ndarray, batch: int, sigma: float,
                  alpha: float = SAMPLING_ALPHA) -> MechanismTest:
    """The sampling test (module docstring) from the per-step ⟨r_t, v_t⟩ / C (``moves``: the gradient stepped on, the
    canaries' part off, at the declared scale, along the unit mean v_t of the data's clipped per-window gradients) and
    a_t, that mean's norm in units of C (``alignments``): an **upper**-tail test that no step moved along v_t more
    than ``batch`` Λ windows of norm ≤ C plus noise of std ``sigma`` · C (the declared σ, or the measured noise std
    when larger). Rejection is evidence at ``alpha`` that some step held more than Λ windows (or that the loop scales
    the gradient up).

    Args:
        moves: Per step, ⟨r_t, v_t⟩ / C.
        alignments: Per step, a_t, the data's clipped mean's norm in units of C.
        batch: The declared batch Λ.
        sigma: The noise multiplier the test assumes (the declared σ, or the measured one when larger).
        alpha: The test's false-alarm rate.

    Returns:
        The :class:`MechanismTest`.
    """
    moves, alignments = np.asarray(moves, dtype=float), np.asarray(alignments, dtype=float)
    seen = ~np.isnan(moves)  # a NaN step (the training diverged) says nothing; an infinite one exceeds any bound
    moves, alignments = moves[seen], alignments[seen]
    steps = int(moves.size)
    if steps == 0:
        return untested("sampling", alpha, steps, "no step with the data's per-window gradients was observed")
    excess = moves - batch
    if sigma > 0:
        each = stats.norm.sf(excess / sigma)
        pooled_p = float(stats.norm.sf(excess.sum() / (sigma * math.sqrt(steps))))
        p = min(1.0, 2 * min(pooled_p, min_p(each)))
        failing = int(np.sum(each <= alpha / 2 / steps))
    else:
        each = np.where(excess > 1e-6 * batch, 0.0, 1.0)  # no noise declared: any excess is beyond it
        p = min_p(each)
        failing = int(np.sum(each <= alpha / steps))
    mean, alignment = float(moves.mean()), float(alignments.mean())
    windows = (f"≈ {mean / alignment:.3g} windows a step of the data's mean alignment {alignment:.2f}"
               if alignment > 0 and math.isfinite(mean) else f"the data's mean alignment {alignment:.2f}")
    failed = p <= alpha
    if failed:
        alone = f"; {failing} beyond it alone" if failing else ""
        finding = (f"the steps moved {_std(mean)} a step on average along the data's mean clipped gradient "
                   f"({windows}), more than the declared batch of {batch} windows of norm ≤ C plus the declared noise "
                   f"allow ({p_text(p)} over {steps} steps{alone}): a step held more windows than declared (a "
                   "larger batch weakens the amplification by subsampling the claim rests on), or the loop multiplies "
                   "the gradient by more than the gradient scale")
    else:
        finding = (f"the steps moved {_std(mean)} a step on average along the data's mean clipped gradient "
                   f"({windows}), not more than the declared batch of {batch} windows of norm ≤ C plus the noise "
                   f"allow ({p_text(p)}); it sees a batch of B windows only where B times the alignment exceeds "
                   f"{batch}, and never which windows or series a step drew")
    return MechanismTest("sampling", True, failed, alpha, p, mean, float(batch), failing, steps, finding)


@dataclass(frozen=True)
class MechanismTests:
    """The mechanism tests of one white-box run (module docstring): ``tests`` in order, ``failed`` (any rejects:
    a violation, at most the sum of their ``alpha`` on a correct training).

    Attributes:
        tests: The tests, in order.
    """

    tests: tuple

    @property
    def failed(self) -> bool:
        return any(t.failed for t in self.tests)

    @property
    def alpha(self) -> float:
        return sum(t.alpha for t in self.tests if t.tested)

    def findings(self) -> List[str]:
        """Each test's finding, in the tests' order."""
        return [t.finding for t in self.tests]

    def as_dict(self) -> dict:
        """The JSON form: whether any test failed, the false-alarm rate ``alpha`` and each test's JSON form."""
        return {"failed": self.failed, "alpha": self.alpha, "tests": [t.as_dict() for t in self.tests]}


def pooled(runs: Sequence[MechanismTests]) -> MechanismTests:
    """The tests of R independent runs as one (Bonferroni over the runs: each test's p-value is R times its least
    over the runs, its finding the worst run's), at each test's own ``alpha``.

    Args:
        runs: Each run's tests.

    Returns:
        The pooled :class:`MechanismTests`.
    """
    if len(runs) == 1:
        return runs[0]
    out = []
    for tests in zip(*(r.tests for r in runs)):
        done = [t for t in tests if t.tested]
        if not done:
            out.append(tests[0])
            continue
        worst = min(range(len(done)), key=lambda i: done[i].p_value)
        t = done[worst]
        p = min(1.0, len(runs) * t.p_value)
        out.append(MechanismTest(t.name, True, p <= t.alpha, t.alpha, p, t.measured, t.declared, t.steps_failing,
                                 t.steps, f"{t.finding} (worst of {len(runs)} runs, Bonferroni {p_text(p)})"))
    return MechanismTests(tuple(out))


__all__ = ["CLIP_ALPHA", "MechanismTest", "MechanismTests", "NOISE_ALPHA", "SAMPLING_ALPHA", "clipping_test", "min_p",
           "noise_test", "p_text", "pooled", "sampling_test", "untested"]
