"""Fixed-size shuffling: the other sequences can signal the hidden position (THEOREMS.md, "Shuffled iteration").

The hidden-position epoch (T1's step pair at a uniform step, every other step N(0, σ²)) takes the other sequences'
gradients silent. Under fixed-size shuffling the step that holds the changed sequence holds N' - 1 others and every
other step N': if each other sequence's gradient is C·u with u orthogonal to the target's direction e_1, the
target's step is C lower along u, a signal on the position of the target's own strength. One epoch then releases,
in units of C, standardised by σ (here σ = 1), per step t: X_t along e_1 and Y_t along u (centred),

    X_t = 2 B [t = J] + N(0, 1),   Y_t = -a [t = J] + N(0, 1),   B ~ Bernoulli(r) in world P, B = 0 in world Q,

J uniform on the m steps, a = 1 (a = 0: the silent hidden-position epoch; a → ∞: the known position, T1). The
likelihood ratio is exact: p/q = 1 - r + r Σ_t w_t e^{2 X_t - 2}, w = softmax(-a Y) (the posterior of J).
References here use numpy and scipy only (Gauss-Legendre quadrature of the m = 2 epoch with the last coordinate in
closed form; a Monte Carlo of the likelihood ratio at m = 10); the code under test gives the printed sound and
attained ε they are compared with.
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
    b = R * (1 - w1) * np.ones_like(c)
    weight = w_d[:, None] * w_x[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        k = alpha - c  # remove: E[(c + b e^{μX - μ²/2} - α)_+]
        x0 = (np.log(np.abs(k) / b) + mu * mu / 2) / mu
        remove = np.where(k <= 0, c - alpha + b, -k * ndtr(-x0) + b * ndtr(mu - x0))
        k2 = 1 / alpha - c  # add: E[(1 - α (c + b e^{μX - μ²/2}))_+]
        x2 = (np.log(np.abs(k2) / b) + mu * mu / 2) / mu
        add = np.where(k2 <= 0, 0.0, alpha * (k2 * ndtr(x2) - b * ndtr(x2 - mu)))
    return max(float((weight * remove).sum()), float((weight * add).sum()))


def test_two_steps_quadrature_reproduces_the_known_and_the_hidden_position_values():
    """The reference holds at both ends: with a = 8 (position nearly known) it reaches T1's sound ε (δ at
    ε_T1 - 0.02 is above 1e-3), with a = 0 the printed attained ε (the max statistic) is a lower bound of the silent
    epoch (δ at it ≥ 1e-3 up to the quadrature's 5e-3 in ε)."""
    printed = epsilon(TWO_STEPS, 1e-3, steps=2)
    assert _delta_two_steps(printed.epsilon - 0.02, a=8.0) > 1e-3
    assert _delta_two_steps(printed.epsilon + 0.02, a=8.0) < 1e-3
    assert _delta_two_steps(printed.epsilon_attained - 5e-3, a=0.0) >= 1e-3


@pytest.mark.parametrize("delta,between", [(1e-3, 3.25), (1e-5, 6.05)])
def test_signalling_others_leak_more_than_the_hidden_position_epoch_and_less_than_t1(delta, between):
    """m = 2: silent others (a = 0) give ε = 3.048 at δ = 1e-3 (the printed attained 3.048), others signalling the
    position through the short batch (a = 1) give 3.347, T1 (known position) 3.717 (dblquad; at δ = 1e-5: 5.884,
    6.234, 6.576). So the silent hidden-position pair is not a dominating pair for fixed-size shuffling: an adversary
    who chooses the others' gradients gets more (δ at ``between`` is above ``delta`` with a = 1, below it with
    a = 0), and still less than T1."""
    printed = epsilon(TWO_STEPS, delta, steps=2)
    assert _delta_two_steps(between, a=1.0) > delta > _delta_two_steps(between, a=0.0)
    assert printed.epsilon_attained < between < printed.epsilon
    assert _delta_two_steps(printed.epsilon, a=1.0) < delta


def test_the_changed_sequences_own_position_signal_lowers_the_two_step_epsilon():
    """Under substitution the changed sequence is in both worlds, so its unchanged windows' gradient can mark its step
    too: g0 = C(-cos θ e_1 + sin θ u), g1 = C(cos θ e_1 + sin θ u), others silent (the random-allocation case), is
    a = sin θ, μ = 2 cos θ. At m = 2, δ = 1e-3 this lowers ε (3.051, 3.013, 2.908 at θ = 0, 0.1, 0.2 by this
    quadrature): no counterexample to the silent pair there, but no proof either (THEOREMS.md)."""
    at = {th: _delta_two_steps(3.0, a=math.sin(th), mu=2 * math.cos(th)) for th in (0.0, 0.1, 0.2)}
    assert at[0.0] > at[0.1] > at[0.2] and at[0.0] > 1e-3 > at[0.2]


def _signalling_delta(eps: float, *, epochs: int, a: float, n: int, seed: int, tilt: float = 0.25):
    """Monte Carlo δ(ε) (remove direction, E_P[(1 - e^ε q/p)_+]) of ``epochs`` signalling epochs at the default
    configuration (m = 10, r = 0.1, σ = 1), and its standard error. B is drawn with probability ``tilt`` and
    reweighted (importance sampling, bounded weights ≤ 1.2^epochs); the likelihood ratio of each epoch is exact."""
    rng = np.random.default_rng(seed)
    m, chunk, values = 10, 100_000, []
    for _ in range(n // chunk):
        log_lr, log_w = np.zeros(chunk), np.zeros(chunk)
        for _ in range(epochs):
            x, y = rng.standard_normal((chunk, m)), rng.standard_normal((chunk, m))
            b = rng.random(chunk) < tilt
            x[:, 0] += MU * b  # J = 0: the law is symmetric in J
            y[:, 0] -= a
            log_w += np.where(b, math.log(R / tilt), math.log((1 - R) / (1 - tilt)))
            post = -a * y - logsumexp(-a * y, axis=1, keepdims=True)
            log_lr += np.logaddexp(math.log(1 - R), math.log(R) + logsumexp(post + MU * x - MU * MU / 2, axis=1))
        values.append(np.exp(log_w) * np.maximum(0.0, -np.expm1(eps - log_lr)))
    v = np.concatenate(values)
    return float(v.mean()), float(v.std() / math.sqrt(len(v)))


@pytest.mark.slow
@pytest.mark.parametrize("steps,delta,eps", [(10, 1e-3, 2.15), (10, 1e-5, 4.9), (100, 1e-3, 4.4), (100, 1e-5, 7.5)])
def test_default_configuration_signalling_others_exceed_the_printed_attained(steps, delta, eps):
    """At the default configuration the signalling construction's δ at ``eps`` (fixed from a pilot at another seed)
    is above ``delta`` by 4 standard errors (false failure ≈ 3e-5 each; 10^6 samples, 2·10^6 at δ = 1e-5, where
    a pilot at seed 99 gave δ = 1.94e-5 ± 0.20e-5 and 2.27e-5 ± 0.23e-5 at 10^6): its ε exceeds ``eps``, above the printed
    attained ε (1.612, 4.285, 3.44, 6.36) and below the sound T1 (3.717, 6.575, 7.74, 12.48). Pilot point values:
    2.25, 5.25, 4.55, 8.05; silent others by the same Monte Carlo (a = 0): 1.60, 4.30, 3.45, 6.40."""
    printed = epsilon(DEFAULT, delta, steps=steps)
    assert printed.epsilon_attained < eps < printed.epsilon
    mean, se = _signalling_delta(eps, epochs=steps // 10, a=1.0, n=1_000_000 if delta >= 1e-3 else 2_000_000, seed=steps + int(-math.log10(delta)))
    assert mean - 4 * se > delta, (mean, se)
