"""Shuffled iteration's attained law: one epoch with the target's step hidden, read through the max statistic.

Under shuffled top-level iteration each epoch applies Algorithm 3 to a fresh uniform permutation of
the N sequences, so the step of the epoch that holds the changed sequence is random and unknown to
the adversary. The deterministic-order constructions (T1, T3 for T2, T4; THEOREMS.md) place the
changed sequence in a known step; under shuffling the same constructions do not reach their value.

This law takes the other sequences silent: a **lower** bound only. Under tsdp's fixed-size shuffling the
changed sequence's batch holds one other sequence fewer, so the others' gradients could in principle mark its
step, and gradients that change from step to step can probe it: at m = 2 a construction that probes in one step
and strikes in the other attains more than the silent pair at small δ, so the silent pair does not dominate
(THEOREMS.md, "Probe then strike"). The sound bound for shuffling stays the deterministic order's (T1-T4).

The same constructions under shuffling (THEOREMS.md, "Shuffled iteration: the hidden-position lower
bound"): in every step that does not hold the changed sequence the centred, C-normalised release
is pure noise N(0, σ²) in both worlds (the other sequences' gradients are known constants); the step
that holds it releases the construction's per-step pair (P_step in world P, Q_step in world Q).
With π_t = |batch t| / N the probability that step t holds it, an epoch of m steps releases
P = Σ_t π_t [P_step on coordinate t, N(0, σ²) elsewhere] and Q likewise with Q_step. The
**maximum** over the m releases is a post-processing, so any divergence of its laws is a
**lower** bound on the epoch's; it does not depend on π (the max is symmetric):

    F_P^max(x) = Φ(x/σ)^(m-1) F_Pstep(x),    F_Q^max(x) = Φ(x/σ)^(m-1) F_Qstep(x).

A run that stops after s < m steps of an epoch sees the changed sequence with probability
ρ = Σ_{t<s} π_t = s N' / N (every step before the last is full), uniformly among its s steps (and so does a whole
epoch that drops its last step, ``TrainingConfig.drop_last``: ρ = m N' / N, the other N - m N' sequences sit out):

    F_X^max(x) = (1 - ρ) Φ(x/σ)^s + ρ Φ(x/σ)^(s-1) F_Xstep(x),    X ∈ {P, Q}.

Epochs draw independent permutations and the constructions' gradients do not depend on θ, so
E epochs release the product of the per-epoch laws, and composing the per-epoch max pairs stays a
lower bound. :mod:`tsdp.verify.hidden_position` bins the max (another post-processing) into the
discrete pair the accountant composes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
from scipy.special import log_ndtr, ndtr

from .config import Top, TrainingConfig
from .mixture import MixturePair, NumericMixturePair

HIDDEN_POSITION_TOP = (Top.SHUFFLE,)
"""Top levels whose attained law is the hidden-position epoch (the others know the changed sequence's step)."""


@dataclass(frozen=True)
class HiddenPositionEpoch:
    """The max statistic of one shuffled epoch of a construction (module docstring), in standardised units z = x/σ.

    ``step``: the construction's per-step pair (standardised means ``a``/``b``, weights ``p``/``q``);
    ``steps_per_epoch`` m; ``steps_run`` s ≤ m; ``in_run`` ρ, the probability that the changed
    sequence's step is among the s steps run (1 for a whole epoch that keeps its last step). Lower-bound
    direction: every divergence of (P^max, Q^max) is at most the epoch's.

    Attributes:
        step: The construction's per-step pair.
        steps_per_epoch: m.
        steps_run: The steps of the epoch that ran.
        in_run: ρ, the probability that the changed sequence's step is among them.
    """

    step: NumericMixturePair
    steps_per_epoch: int
    steps_run: int
    in_run: float

    @property
    def partial(self) -> bool:
        return self.steps_run < self.steps_per_epoch

    def _world(self, z: np.ndarray, means: np.ndarray, weights: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """(CDF, survival) of the max in one world at ``z``, each accurate in its own small tail."""
        z = np.asarray(z, dtype=float)
        s, rho = self.steps_run, self.in_run
        log_bg = log_ndtr(z)  # log Φ(z): the background steps
        cdf_step = ndtr(z[..., None] - means) @ weights
        sf_step = ndtr(means - z[..., None]) @ weights
        bg_rest = np.exp((s - 1) * log_bg)  # Φ^(s-1)
        cdf = (1 - rho) * np.exp(s * log_bg) + rho * bg_rest * cdf_step
        # 1 - Φ^k = -expm1(k log Φ): no cancellation where the survival is small
        sf = (1 - rho) * -np.expm1(s * log_bg) + rho * (-np.expm1((s - 1) * log_bg) + bg_rest * sf_step)
        return cdf, sf

    def cdf(self, z) -> Tuple[np.ndarray, np.ndarray]:
        """(F_P^max(z), F_Q^max(z)) at standardised ``z``.

        Args:
            z: Standardised values.

        Returns:
            (F_P^max(z), F_Q^max(z)).
        """
        return self._world(z, self.step.a, self.step.p)[0], self._world(z, self.step.b, self.step.q)[0]

    def sf(self, z) -> Tuple[np.ndarray, np.ndarray]:
        """(1 - F_P^max(z), 1 - F_Q^max(z)) at standardised ``z``, accurate in the upper tail.

        Args:
            z: Standardised values.

        Returns:
            (1 - F_P^max(z), 1 - F_Q^max(z)).
        """
        return self._world(z, self.step.a, self.step.p)[1], self._world(z, self.step.b, self.step.q)[1]

    def bin_masses(self, edges: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """Exact masses of the bins (-inf, e_0), [e_0, e_1), ..., [e_last, inf) of the max, world P and world Q.

        Binning is a post-processing, so the binned pair is still a lower bound's pair. Each bin's mass is a
        CDF difference below the median and a survival difference above it (no cancellation in either tail).

        Args:
            edges: The inner bin edges, increasing.

        Returns:
            (masses in world P, masses in world Q).
        """
        edges = np.asarray(edges, dtype=float)
        out = []
        for means, weights in ((self.step.a, self.step.p), (self.step.b, self.step.q)):
            cdf, sf = self._world(edges, means, weights)
            inner = np.where(cdf[1:] <= 0.5, np.diff(cdf), -np.diff(sf))
            out.append(np.clip(np.concatenate([cdf[:1], inner, sf[-1:]]), 0.0, None))
        return out[0], out[1]

    def support(self, reach: float = 10.0) -> Tuple[float, float]:
        """A standardised range holding all but ~Φ(-reach) · m of either world's max.

        Args:
            reach: Standard deviations beyond the extreme means.

        Returns:
            (low, high).
        """
        means = np.concatenate([self.step.a, self.step.b, [0.0]])
        return float(means.min() - reach), float(means.max() + reach)

    def log_density_ratio(self, z) -> np.ndarray:
        """log f_P^max(z) / f_Q^max(z): the Neyman-Pearson statistic of one epoch's max (standardised ``z``).

        Args:
            z: Standardised values.

        Returns:
            The log ratio at each.
        """
        z = np.asarray(z, dtype=float)
        return self._log_density(z, self.step.a, self.step.p) - self._log_density(z, self.step.b, self.step.q)

    def _log_density(self, z: np.ndarray, means: np.ndarray, weights: np.ndarray) -> np.ndarray:
        s, rho = self.steps_run, self.in_run
        log_bg, log_phi = log_ndtr(z), -0.5 * z ** 2 - 0.5 * np.log(2 * np.pi)
        cdf_step = ndtr(z[..., None] - means) @ weights
        pdf_step = np.exp(-0.5 * (z[..., None] - means) ** 2 - 0.5 * np.log(2 * np.pi)) @ weights
        # d/dz [(1-ρ) Φ^s + ρ Φ^(s-1) F] = (1-ρ) s Φ^(s-1) φ + ρ [(s-1) Φ^(s-2) φ F + Φ^(s-1) f]
        rest = np.exp((s - 1) * log_bg)
        tail = np.exp((s - 2) * log_bg + log_phi) * (s - 1) * cdf_step if s > 1 else 0.0
        dens = (1 - rho) * s * rest * np.exp(log_phi) + rho * (tail + rest * pdf_step)
        return np.log(np.maximum(dens, 1e-300))

    def as_dict(self) -> dict:
        """The JSON form.

        Returns:
            steps_per_epoch, steps_run, in_run and the step pair's means, weights and σ.
        """
        return {"steps_per_epoch": self.steps_per_epoch, "steps_run": self.steps_run, "in_run": self.in_run,
                "step_pair": {"a": self.step.a.tolist(), "p": self.step.p.tolist(), "b": self.step.b.tolist(),
                              "q": self.step.q.tolist(), "sigma": self.step.sigma}}


def hidden_position_name(construction: str) -> str:
    """The attained law of shuffled iteration in words (what `tsdp epsilon` prints for it).

    Args:
        construction: The construction's id.

    Returns:
        The words.
    """
    return f"hidden-position epoch (shuffled), max statistic over the epoch's steps, {construction}'s step pair"


def in_run_probability(config: TrainingConfig, steps_run: Optional[int] = None) -> float:
    """ρ = P(the changed sequence's step is among the first ``steps_run`` of a shuffled epoch) = min(1, s N'/N).

    The exact probability under Algorithm 3 on a uniform permutation (used by the lower bound
    :func:`hidden_position_epoch`): the first s steps hold s N' of the N sequences, every step but a short last one
    being full. A whole epoch holds all N (ρ = 1), or, with ``drop_last``, its m N' ≤ N (ρ = m N'/N).

    Args:
        config: The training configuration.
        steps_run: s (None: the whole epoch, s = m).

    Returns:
        ρ.
    """
    steps = config.steps_per_epoch if steps_run is None else steps_run
    return min(1.0, steps * config.sequences_per_step / config.N)


def hidden_position_epoch(pair: MixturePair, config: TrainingConfig,
                          steps_run: Optional[int] = None) -> HiddenPositionEpoch:
    """The hidden-position max law of one shuffled epoch of ``config`` whose construction's step pair is ``pair``.

    Lower bound (THEOREMS.md, the shuffled lower bound; module docstring): ``pair`` is the per-step pair of
    the deterministic construction (T1's for T1, T3's for T2, T4's for T4) and every other step is N(0, σ²).
    ``steps_run``: steps of the epoch that ran (None: all m).

    Args:
        pair: The construction's per-step pair.
        config: The training configuration (shuffled iteration).
        steps_run: Steps of the epoch that ran (None: all).

    Returns:
        The epoch's max law.
    """
    m = config.steps_per_epoch
    s = m if steps_run is None else int(steps_run)
    if not 1 <= s <= m:
        raise ValueError(f"steps_run must be in 1..{m}, got {steps_run}")
    return HiddenPositionEpoch(pair.numeric(), m, s, in_run_probability(config, s))


__all__ = ["HIDDEN_POSITION_TOP", "HiddenPositionEpoch", "hidden_position_epoch", "hidden_position_name",
           "in_run_probability"]
