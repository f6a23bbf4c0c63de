"""Fixed-size shuffling: what the other sequences can signal about the hidden position (THEOREMS.md, "What the
other sequences can signal under fixed-size shuffling").

The step J that holds the changed sequence holds N' - 1 others, every other step N'. With every other sequence's
clipped gradient c and the changed sequence's g0 (g1 on a marked window, probability r), the centred release of
step t is, in units of C and standardised by σ, the mark [t = J] (g - c)/σ plus N(0, I): m_Q = (g0 - c)/σ in world
Q, m_P = (g1 - c)/σ with probability r in world P, every gradient of norm ≤ 1 (clipping to C). The exact
likelihood ratio of an epoch is p/q = 1 - r + r Σ_t w_t e^{<V_t, m_P> - |m_P|²/2 - <V_t, m_Q> + |m_Q|²/2},
w = softmax(<V, m_Q>). The silent construction (T1's, c = g0 = -e_1, g1 = e_1) is m_Q = 0, m_P = 2e_1/σ.
References here use numpy and scipy only (Gauss-Legendre quadrature of the m = 2 epoch with the last coordinate in
closed form for marks m_Q = (0, -a), m_P = (μ, -a); a Monte Carlo of the likelihood ratio for any marks; T1's
one-epoch pair in closed form); the code under test gives the printed sound and attained ε they are compared with.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit, logsumexp, ndtr

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.accounting import epsilon

R = 0.1  # r at the default configuration (L = 20, L_C = L_F = 1)
MU = 2.0  # T1's shift in units of σ at σ = 1
TWO_STEPS = TrainingConfig(top="shuffle", N=64)  # m = 2 steps of N' = 32, otherwise the default configuration
DEFAULT = TrainingConfig(top="shuffle")  # m = 10


def _over_the_shift(c, b, alpha: float, mu: float):
    """E over X ~ N(0, 1) of (L - α)_+ and of (1 - α L)_+ for L = c + b e^{μX - μ²/2} (b > 0; closed form, elementwise):
    the two directions' integrands of a step whose release is N(μ, 1) with weight b and N(0, 1) otherwise."""
    with np.errstate(divide="ignore", invalid="ignore"):
        k = alpha - c  # remove: E[(c + b e^{μX - μ²/2} - α)_+]
        x0 = (np.log(np.abs(k) / b) + mu * mu / 2) / mu
        remove = np.where(k <= 0, c - alpha + b, -k * ndtr(-x0) + b * ndtr(mu - x0))
        k2 = 1 / alpha - c  # add: E[(1 - α (c + b e^{μX - μ²/2}))_+]
        x2 = (np.log(np.abs(k2) / b) + mu * mu / 2) / mu
        add = np.where(k2 <= 0, 0.0, alpha * (k2 * ndtr(x2) - b * ndtr(x2 - mu)))
    return remove, add


def _delta_two_steps(eps: float, a: float, mu: float = MU, nodes: int = 241) -> float:
    """δ(ε) of the m = 2 epoch with position signal ``a`` and shift ``mu``, the larger of both directions, by quadrature.

    Under Q with J = 1 (the law is symmetric in J): D = Y_1 - Y_2 ~ N(-a, 2), X_1, X_2 ~ N(0, 1) and w_1 =
    expit(-a D). The expectation over X_2 of (L - α)_+ and of (1 - α L)_+ is closed-form (L is c + b e^{μ X_2 - μ²/2});
    D and X_1 by 241-node Gauss-Legendre on ±14 (D, var 2) and 1 ± 10 (X_1): 5e-3 in ε at most against scipy's
    adaptive dblquad at 1e-10 (3.0484, 3.3467, 3.7174 at a = 0, 1, 8 and δ = 1e-3, measured once)."""
    alpha = math.exp(eps)
    t, wt = np.polynomial.legendre.leggauss(nodes)
    d = -a + 14 * t
    w_d = 14 * wt * np.exp(-(d + a) ** 2 / 4) / math.sqrt(4 * math.pi)
    x1 = 1 + 10 * t
    w_x = 10 * wt * np.exp(-x1 ** 2 / 2) / math.sqrt(2 * math.pi)
    w1 = expit(-a * d)[:, None]
    c = 1 - R + R * w1 * np.exp(mu * x1[None, :] - mu * mu / 2)
    remove, add = _over_the_shift(c, R * (1 - w1) * np.ones_like(c), alpha, mu)
    weight = w_d[:, None] * w_x[None, :]
    return max(float((weight * remove).sum()), float((weight * add).sum()))


def test_two_steps_quadrature_reproduces_the_known_and_the_hidden_position_values():
    """The reference holds at both ends: with a = 8 (position nearly known) it reaches T1's sound ε (δ at
    ε_T1 - 0.02 is above 1e-3), with a = 0 the printed attained ε (the max statistic) is a lower bound of the silent
    epoch (δ at it ≥ 1e-3 up to the quadrature's 5e-3 in ε)."""
    printed = epsilon(TWO_STEPS, 1e-3, steps=2)
    assert _delta_two_steps(printed.epsilon - 0.02, a=8.0) > 1e-3
    assert _delta_two_steps(printed.epsilon + 0.02, a=8.0) < 1e-3
    assert _delta_two_steps(printed.epsilon_attained - 5e-3, a=0.0) >= 1e-3


def _eps_at(delta_of, delta: float, hi: float = 30.0) -> float:
    """The ε at which the non-increasing ``delta_of(ε)`` crosses ``delta`` (bisection to 1e-4)."""
    lo = 0.0
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta_of(mid) > delta else (lo, mid)
    return lo


@pytest.mark.parametrize("delta,below,between", [(1e-3, 3.0, 3.25), (1e-5, 5.85, 6.05)])
def test_a_position_signal_costs_shift_when_the_others_obey_the_clipping_bound(delta, below, between):
    """m = 2, σ = 1. Marking J in world Q while keeping it hidden along e_1 needs g0·e_1 = c·e_1; with the signal
    c = (-cos η, sin η) along u and g0 = -cos η e_1, g1 = e_1 (all of norm 1) the marks are a = sin η, μ = 1 + cos η:
    δ at ``below`` falls with η, so the silent epoch (η = 0; ε = 3.051 at δ = 1e-3, 5.886 at 1e-5, above
    ``below``) is the largest of the family (ε = 3.034, 2.988, 2.667 at η = 0.1, 0.2, 0.5, δ = 1e-3). The model
    with the full shift and a unit signal (a = 1, μ = 2: 3.347 and 6.234) lies above it (δ at ``between`` above
    ``delta``, the silent one's below), but needs c = -e_1 + u, of norm √2: not realisable under clipping, so it is
    no lower bound on a tsdp run (THEOREMS.md's correction)."""
    at = [_delta_two_steps(below, a=math.sin(eta), mu=1 + math.cos(eta)) for eta in (0.0, 0.1, 0.2, 0.5)]
    assert at[0] > at[1] > at[2] > at[3] and at[0] > delta
    assert _delta_two_steps(between, a=1.0, mu=MU) > delta > _delta_two_steps(between, a=0.0, mu=MU)


def test_the_changed_sequences_own_position_signal_lowers_the_two_step_epsilon():
    """Under substitution the changed sequence is in both worlds, so its unchanged windows' gradient can mark its step
    too: g0 = C(-cos θ e_1 + sin θ u), g1 = C(cos θ e_1 + sin θ u), others silent (the random-allocation case), is
    a = sin θ, μ = 2 cos θ. At m = 2, δ = 1e-3 this lowers ε (3.051, 3.013, 2.908 at θ = 0, 0.1, 0.2 by this
    quadrature): no counterexample to the silent pair there, but no proof either (THEOREMS.md)."""
    at = {th: _delta_two_steps(3.0, a=math.sin(th), mu=2 * math.cos(th)) for th in (0.0, 0.1, 0.2)}
    assert at[0.0] > at[0.1] > at[0.2] and at[0.0] > 1e-3 > at[0.2]


def _delta_probe_then_strike(eps: float, sigma: float, nodes: int = 241) -> float:
    """δ(ε) of the m = 2 epoch whose first step probes and whose second strikes, the larger of both directions.

    Gradients (units of C, every one of norm ≤ 1): step 1 (probe) the changed sequence's windows give +e in both
    worlds (its data do not enter), every other sequence's -e; step 2 (strike) the silent construction, g0 = -e_1,
    g1 = e_1 (probability r, world P), others -e_1. Centred and divided by σ, step 1 releases N(b [J = 1], 1) with
    b = |e - (-e)|/σ = 2/σ in both worlds, step 2 N(μ [J = 2, B], 1) with μ = 2/σ in world P, N(0, 1) in Q. So
    p/q = 1 - r w_2 + r w_2 e^{μ X_2 - μ²/2} with w_2 = expit(-(b Y_1 - b²/2)) the posterior of J = 2 given the
    probe; under Q, X_2 ~ N(0, 1) and Y_1 ~ (N(b, 1) + N(0, 1))/2, by 241-node Gauss-Legendre on [-10, b + 10]."""
    probe_mark = np.linalg.norm(np.array([1.0, 0.0]) - np.array([-1.0, 0.0])) / sigma
    mu = np.linalg.norm(np.array([1.0, 0.0]) - np.array([-1.0, 0.0])) / sigma
    t, wt = np.polynomial.legendre.leggauss(nodes)
    half = (probe_mark + 20) / 2
    y1 = probe_mark / 2 + half * t
    w_y = half * wt * (np.exp(-(y1 - probe_mark) ** 2 / 2) + np.exp(-y1 ** 2 / 2)) / (2 * math.sqrt(2 * math.pi))
    w2 = expit(-(probe_mark * y1 - probe_mark ** 2 / 2))
    remove, add = _over_the_shift(1 - R * w2, R * w2, math.exp(eps), mu)
    return max(float((w_y * remove).sum()), float((w_y * add).sum()))


@pytest.mark.parametrize("sigma,delta,silent,probe", [(1.0, 1e-5, 5.8838, 5.9938), (2.0, 1e-5, 1.1635, 1.2277),
                                                      (1.0, 1e-3, 3.0484, 2.9257)])
def test_probing_the_position_in_one_step_and_striking_in_the_other_beats_the_silent_epoch(sigma, delta, silent, probe):
    """A counterexample to the silent pair as a dominating pair (C-silent, and C-swap for Lemma S1's two-position
    swap; THEOREMS.md): at m = 2 a construction that spends step 1 on revealing whether the changed sequence is there
    (a gradient its data do not change, against the others' opposite one) and strikes in step 2 with T1's silent
    pair attains more than the silent epoch at δ = 1e-5 (σ = 1 and 2), less at δ = 1e-3. ``silent`` and ``probe``
    were measured once by a 6001² grid quadrature of both pairs' densities (THEOREMS.md's figures); this test's
    quadratures must agree within 5e-3 and the printed attained (the silent max statistic) and sound (T1) ε bracket
    them as stated."""
    config = TrainingConfig(top="shuffle", N=64, sigma=sigma)
    printed = epsilon(config, delta, steps=2)
    at_probe = _eps_at(lambda e: _delta_probe_then_strike(e, sigma), delta)
    at_silent = _eps_at(lambda e: _delta_two_steps(e, a=0.0, mu=2 / sigma), delta)
    assert at_probe == pytest.approx(probe, abs=5e-3) and at_silent == pytest.approx(silent, abs=5e-3)
    assert printed.epsilon_attained <= at_silent + 5e-3 and max(at_probe, at_silent) < printed.epsilon
    assert (at_probe > at_silent + 0.05) == (delta == 1e-5)


# marks (g0 - c, g1 - c) in units of C: (m_Q, m_P) of the realisable constructions, g0 = -e_1, g1 = e_1
SILENT = ((0.0, 0.0), (2.0, 0.0))  # c = -e_1
ALONG_U = ((-1.0, -1.0), (1.0, -1.0))  # c = u
CLIPPED = ((-1 + 2 ** -0.5, -(2 ** -0.5)), (1 + 2 ** -0.5, -(2 ** -0.5)))  # c = (-e_1 + u)/√2: the loop's clipping
UNREALISABLE = ((0.0, -1.0), (2.0, -1.0))  # c = -e_1 + u, norm √2 (the withdrawn model)


def _epoch_losses(marks, *, m: int, sigma: float, epochs: int, n: int, seed: int, tilt: float = 0.25):
    """Monte Carlo of ``epochs`` epochs of m steps whose changed sequence's step carries ``marks`` (m_Q, m_P in units
    of C, divided by σ here): the exact log likelihood ratio in world P (B drawn with probability ``tilt`` and
    reweighted; weights ≤ 1.2^epochs) with its log weights, and in world Q. J = 0 (the law is symmetric in J)."""
    rng = np.random.default_rng(seed)
    m_q, m_p = (np.asarray(x, dtype=float) / sigma for x in marks)

    def loss(v):
        a_q, a_p = v @ m_q - m_q @ m_q / 2, v @ m_p - m_p @ m_p / 2
        return np.logaddexp(math.log(1 - R), math.log(R) + logsumexp(a_p, axis=1) - logsumexp(a_q, axis=1))

    lp, lw, lq = np.zeros(n), np.zeros(n), np.zeros(n)
    for _ in range(epochs):
        v = rng.standard_normal((n, m, 2))
        b = rng.random(n) < tilt
        v[:, 0, :] += np.where(b[:, None], m_p, m_q)
        lw += np.where(b, math.log(R / tilt), math.log((1 - R) / (1 - tilt)))
        lp += loss(v)
        v = rng.standard_normal((n, m, 2))
        v[:, 0, :] += m_q
        lq += loss(v)
    return lp, lw, lq


def _mc_delta(eps: float, lp, lw, lq) -> tuple:
    """(δ(ε), its standard error): the larger of E_P[(1 - e^ε q/p)_+] and E_Q[(1 - e^ε p/q)_+]."""
    remove = np.exp(lw) * np.maximum(0.0, -np.expm1(eps - lp))
    add = np.maximum(0.0, -np.expm1(eps + lq))
    best = max((remove, add), key=np.mean)
    return float(best.mean()), float(best.std() / math.sqrt(len(best)))


def _t1_delta(eps: float, sigma: float) -> float:
    """T1's one-epoch δ(ε) in closed form: H_{e^ε}((1 - r) N(0, σ²) + r N(2, σ²) ‖ N(0, σ²)) (the α ≥ 1 branch)."""
    alpha, mu = math.exp(eps), 2.0 / sigma
    if alpha <= 1 - R:
        return 1 - alpha
    x0 = (math.log((alpha - (1 - R)) / R) + mu * mu / 2) / mu  # the loss 1 - r + r e^{μx - μ²/2} crosses α
    return (1 - R) * float(ndtr(-x0)) + R * float(ndtr(mu - x0)) - alpha * float(ndtr(-x0))


@pytest.mark.slow
@pytest.mark.parametrize("m", [2, 10])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
def test_realisable_signalling_constructions_stay_below_the_silent_epoch_and_t1(m, sigma):
    """m ∈ {2, 10}, σ ∈ {0.5, 1, 2}, δ ∈ {1e-3, 1e-5}, one epoch, 10^5 samples per world (common random numbers):
    the silent construction's ε (full likelihood ratio) is below T1's closed form, and the others along u and the
    clipped model reach at most 0.1 above the silent one (point values; in THEOREMS.md's table, 4·10^5 samples,
    they sit 0.01 to 6 below it). At δ = 1e-3 the silent ε is also certified below T1: δ at T1's ε is below δ by 4
    standard errors (false failure ≈ 3e-5 each). The unrealisable model is not a construction and not checked."""
    runs = {name: _epoch_losses(marks, m=m, sigma=sigma, epochs=1, n=100_000, seed=m)
            for name, marks in (("silent", SILENT), ("along_u", ALONG_U), ("clipped", CLIPPED))}
    for delta in (1e-3, 1e-5):
        t1 = _eps_at(lambda e: _t1_delta(e, sigma), delta)
        eps = {name: _eps_at(lambda e, run=run: _mc_delta(e, *run)[0], delta) for name, run in runs.items()}
        assert eps["silent"] < t1, (delta, eps, t1)
        assert eps["along_u"] < eps["silent"] + 0.1 and eps["clipped"] < eps["silent"] + 0.1, (delta, eps)
        if delta == 1e-3:
            mean, se = _mc_delta(t1, *runs["silent"])
            assert mean + 4 * se < delta, (mean, se, t1)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_default_configuration_realisable_signalling_stays_below_the_printed_attained(delta):
    """Default configuration (m = 10, σ = 1), one epoch (10 steps): the clipped model (what the loop makes of the
    withdrawn model) reaches less than the printed attained ε of the silent construction (1.612, 4.285): its δ
    there is below ``delta`` by 4 standard errors (2·10^5 samples per world; false failure ≈ 3e-5). The withdrawn
    model's point value is above it (2.26 and 5.21), which is why it was once read as a stronger attack."""
    printed = epsilon(DEFAULT, delta, steps=10)
    lp, lw, lq = _epoch_losses(CLIPPED, m=10, sigma=1.0, epochs=1, n=200_000, seed=10)
    mean, se = _mc_delta(printed.epsilon_attained, lp, lw, lq)
    assert mean + 4 * se < delta, (mean, se, printed.epsilon_attained)


@pytest.mark.parametrize("n,per_step,epochs", [(320, 32, 4000), (18, 4, 20_000)])
def test_partner_reveal_probabilities_hold_on_tsdps_shuffled_sampler(n, per_step, epochs):
    """Lemma S1's premises on tsdp's own shuffled top level (Algorithm 3 on a uniform permutation): the changed
    sequence 0 and a uniform other x* share a batch with probability Σ_t n_t (n_t - 1) / (N (N - 1)) ((N' - 1)/(N - 1)
    = 31/319 with full batches; 50/306 for N = 18, N' = 4, whose last batch holds 2), and when they do not, either
    order of their two batches is equally likely (x*'s batch earlier with probability ½). Binomial tests, two-sided,
    α = 1e-4 each (false failure ≤ 2e-4 per case), ``epochs`` epochs at a fixed seed."""
    import torch
    from scipy import stats

    from tsdp.training.samplers import ShuffleTopLevel

    m = -(-n // per_step)
    sizes = [min(per_step, n - per_step * t) for t in range(m)]
    p_same = sum(s * (s - 1) for s in sizes) / (n * (n - 1))
    batch = ShuffleTopLevel(n_sequences=n, per_step=per_step).sample(m * epochs, torch.Generator().manual_seed(5))
    seq = torch.where(batch.mask, batch.seq, -1).view(epochs, m, -1)
    partner = torch.from_numpy(np.random.default_rng(5).integers(1, n, epochs))
    step_of = lambda who: (seq == who.view(-1, 1, 1)).any(2).long().argmax(1)  # noqa: E731
    j, k = step_of(torch.zeros(epochs, dtype=torch.long)), step_of(partner)
    same = int((j == k).sum())
    assert stats.binomtest(same, epochs, p_same).pvalue > 1e-4, (same / epochs, p_same)
    earlier = int((k < j).sum())
    assert stats.binomtest(earlier, epochs - same, 0.5).pvalue > 1e-4
