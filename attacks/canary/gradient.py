"""White-box gradient canaries for DP-SGD (Nasr et al. 2023, "Tight auditing of differentially private machine
learning"; Andrew et al. 2023, "One-shot empirical privacy estimation for federated learning").

A canary is an extra training *element* whose clipped gradient is a direction of norm C:
canary i has a unit direction u_i of parameter space (a uniformly random orthonormal set when
m ≤ d parameters, so no canary's signal leaks into another's score) and, in a step where K_{t,i}
of the step's windows hold it, adds K_{t,i} · C · u_i to the clipped sum ĝ_t of Algorithm 2,
before the noise (C less a rounding margin, so that its norm is ≤ C in the dtype it is added in: :func:`canary_strength`). With more canaries than parameters no set is orthonormal: the directions are
then i.i.d. uniform unit vectors drawn afresh at every step (u_{t,i}, from the run's seed and t),
so the others' projections on a canary's direction are fresh noise at each step (variance
Σ_j [j in] K_{t,j}² / d in units of C) rather than an offset fixed by the directions that
accumulates over the steps (measured on the ideal audit, d = 385, 30 steps, σ = 0.7: 1000
canaries certify 0.81 with fixed i.i.d. directions, 1.78 with fresh ones, 300 orthonormal
ones 1.57). An element's clipped gradient may change from step to step (it does with θ_t); it
is a function of the step only, fixed before the run.
Each canary is included in the run independently with probability 1/2 (the one-run game).

Participation (:class:`Participation`): the canaries are elements of *virtual* datasets of
the configuration's shape (N sequences of its lengths; independent replicas as many as the
canaries need), placed at distinct positions at least L_C + L_F apart (no window holds two of
them, so every window's clipped gradient keeps norm ≤ C) in sequences of the shortest length
and where an element lies in the most windows (the accountant's r = k / T). Every step draws
each replica's batch with the configured scheme's own sampler
(:func:`training.samplers.make_sampler`, the code the loop uses) and K_{t,i} counts the
drawn windows that hold canary i. So each canary takes part in steps with
exactly the law of one element under the scheme the accountant accounts, independently of the
real data's batches.

Why the training's claimed ε covers each canary (the direction a lower bound needs). Fix the
other canaries' inclusions. The virtual mechanism (all replicas) "release V_t = Σ_i K_{t,i} C u_i [i included]
+ N(0, σ² C² I)" is DP-SGD on the virtual dataset whose windows have fixed clipped gradients
(0, or C u_i for windows holding canary i); including canary i or not changes one element's
windows' clipped gradients by at most C, a pair of event-level neighbours, so the sound
accountant's (ε, δ) bounds it. The real update is V_t plus the real data's clipped sum, a
function of the earlier updates and of randomness independent of the canaries: the real
transcript is a post-processing of the virtual one, hence (ε, δ)-DP in each canary. The
auditor observes the released gradients g̃_t (:meth:`GradientCanaries.observe_gradient`, optionally
less the data's part, :mod:`attacks.canary.data_span`) or the parameter deltas Δθ_t
(:meth:`GradientCanaries.observe`), both within the transcript DP-SGD's guarantee covers. Not under a claim of
amplification by augmentation (T11): the canaries' fixed clipped gradients never pass through the inputs' noise it
amplifies by, so an augmented claim is refused (:func:`check_canaries_covered`).

Scores (:meth:`GradientCanaries.evidence`), from the projections x_{t,i} = ⟨g̃_t, u_i⟩ (or
-⟨Δθ_t, u_i⟩, which with SGD is η ⟨g̃_t, u_i⟩): given the participations it is Gaussian with mean
K_{t,i} C / Λ when i is included (plus the nearly orthogonal other canaries and the data's
gradient) and without that mean when not.

* ``sum``: s_i = Σ_t x_{t,i}, the Neyman-Pearson statistic of a Gaussian shift in a known
  direction summed over the steps (Nasr et al.'s white-box gradient canaries; on the final
  model delta, Andrew et al.'s one-run Gaussian canaries). Optimal when a canary takes part
  in every step; under subsampling most steps carry no signal and add only noise.
* ``mixture``: the log-likelihood ratio of the subsampled Gaussian mechanism the accountant
  bounds, Σ_t log(1 - p + p exp(μ z_{t,i} - μ²/2)), with z_{t,i} = (x_{t,i} - med_t x_{t,i}) / s_t:
  the projection less its median over the steps (the data's gradient moves the parameters
  coherently over many steps, a persistent offset ⟨Σ_t D_t, u_i⟩ per canary that the sum
  accumulates; a canary taking part in fewer than half the steps has median signal 0) in
  units of its spread across the canaries at step t (s_t = 1.4826 · median absolute
  deviation; both functions of the output only), μ = 1/σ the signal of one participation in noise
  units under the configuration's σ and p = :func:`participation_rate` (E[K_t], as a
  participation probability): the Neyman-Pearson statistic of the paper's mixture pair when
  the canary's participation is unknown to the auditor. The median centring costs power when
  the noise dominates (the median then moves with about ρ times the signal): measured, the
  ``sum`` carries the private runs and the ``mixture`` the runs without noise
  (:mod:`attacks.canary.whitebox`).

Observed through the updates, other optimizers (Adam) transform g̃_t; any function of the
transcript and of public quantities (σ, the scheme, the non-canary data) is a valid score, it
may only lose power. The scores are fixed
before the run, so a one-run certifier (e.g. :func:`attacks.canary.steinke_bound.certify`,
Bonferroni over the scores) turns them into a **lower** bound on ε.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, List, Optional, Sequence, Union

import numpy as np
import torch

from tsdp.theorems.config import Bottom, ConfigError, Top, TrainingConfig

from tsdp.training.samplers import make_sampler, n_starts_of

from .evidence import Evidence


def _placements(config: TrainingConfig, m: int, rng: np.random.Generator):
    """(replica, sequence, padded column) of m canary elements of the virtual datasets (module docstring).

    Candidates: in each replica of the configuration's dataset, the shortest sequences and in
    each the columns whose element lies in the largest number of windows, every
    (L_C + L_F)-th of them (no window holds two canaries). As many independent replicas as m
    needs; the m slots are a uniform choice among theirs.
    """
    n_starts = n_starts_of(config).numpy()
    k = config.window_length
    shortest = np.flatnonzero(n_starts == n_starts.min())
    t = int(n_starts.min())
    column = np.arange(config.context_length, config.context_length + t + config.forecast_length - 1)
    held = np.minimum(column, t - 1) - np.maximum(column - k + 1, 0) + 1  # windows holding each column
    best = column[held == held.max()][::k]
    per_replica = len(shortest) * len(best)
    replicas = -(-m // per_replica)
    flat = rng.choice(replicas * per_replica, size=m, replace=False)
    slot = flat % per_replica
    return flat // per_replica, shortest[slot // len(best)], best[slot % len(best)], replicas


class Participation:
    """K_{t,i}: how many windows of step t hold canary i, drawn by the configured scheme's sampler (module docstring).

    The canaries live in independent replicas of a virtual dataset of the configuration's shape
    (as many as the canaries need, each canary in one); every replica's batches are drawn by the
    scheme's sampler, one epoch at a time from the first step on, as the training loop draws its
    own (deterministic and shuffled iteration restart their epoch order every epoch). A draw of
    R epochs of an epoch-structured sampler is R independent epochs, one per replica.

    Args:
        config: The scheme whose sampler draws the replicas' batches.
        m: The canaries.
        rng: Places the canaries in the replicas.
        generator: The sampler's random stream.
    """

    def __init__(self, config: TrainingConfig, m: int, rng: np.random.Generator, generator: torch.Generator):
        self.config = config
        self.sampler = make_sampler(config)
        replica, seq, column, self.replicas = _placements(config, m, rng)
        self.replica, self.seq, self.column = (torch.as_tensor(a, device=generator.device)
                                               for a in (replica, seq, column))
        self.generator = generator
        self.n_starts = int(n_starts_of(config).max())
        self._epoch: Optional[torch.Tensor] = None
        self._next = 0

    def _draw_epoch(self) -> torch.Tensor:
        """(steps_per_epoch, m) window counts of one epoch of every replica's batches."""
        per = self.sampler.steps_per_epoch
        index = self.sampler.sample(per * self.replicas, self.generator)
        device = index.seq.device
        hist = torch.zeros(index.n_steps, self.config.N, self.n_starts + 1, device=device)
        step = torch.arange(index.n_steps, device=device)[:, None].expand_as(index.seq)
        hist.index_put_((step, index.seq, index.start + 1), index.mask.to(hist.dtype), accumulate=True)
        cum = hist.cumsum(-1)  # cum[s, n, t + 1] = windows of sequence n starting at ≤ t in step s
        k = self.config.window_length
        hi = torch.clamp(self.column, max=self.n_starts - 1) + 1
        lo = torch.clamp(self.column - k + 1, min=0)
        rows = self.replica * per + torch.arange(per, device=device)[:, None]  # (per, m): step s of each replica
        return (cum[rows, self.seq, hi] - cum[rows, self.seq, lo]).round().long()

    def next(self) -> torch.Tensor:
        """The (m,) window counts of the next step."""
        if self._epoch is None or self._next == self._epoch.shape[0]:
            self._epoch, self._next = self._draw_epoch(), 0
        self._next += 1
        return self._epoch[self._next - 1]


def participation_rate(config: TrainingConfig) -> float:
    """E[K_t]: expected windows holding one canary per step under ``config``'s scheme (canaries as :class:`Participation` places them).

    The canaries sit in the shortest series, each in k_c = min(L_C + L_F, T) windows (T at the shortest, as
    ``config.r`` and ``config.q`` are), not the configuration's k, which is taken at the longest series. Top level:
    ρ = N'/N for WOR and Poisson, 1/steps per epoch for deterministic and shuffled iteration (one step per epoch holds
    the sequence); bottom level: λ k_c / T (WR) or k_c q (Poisson); pooled windows: k_c Λ / N_tot.

    Only the ``mixture`` score reads it (its p): a score may be any function of the output and of public quantities
    fixed before the run, and the one-run certifiers are valid for every such score, so a rate off the canaries'
    own would cost the audit power, never make its lower bound unsupported.

    Args:
        config: The batching.

    Returns:
        E[K_t].
    """
    held = min(config.window_length, config.T)  # windows holding a canary in the shortest series (_placements)
    if config.top == Top.POOLED:
        return float(held * config.batch_size / config.n_windows_total)
    top = float(config.rho) if config.top in (Top.WOR, Top.POISSON) else 1.0 / config.steps_per_epoch
    bottom = config.instances * held / config.T if config.bottom == Bottom.WR else float(held * config.q)
    return top * bottom


def likelihood_ratio(z: np.ndarray, sigma: float, rate: float) -> np.ndarray:
    """Σ_t log(1 - p + p exp(μ z_t - μ²/2)) per canary from (steps, m) observations z in noise units, μ = 1/σ:
    the log-likelihood ratio of the subsampled Gaussian mechanism (participation probability p = ``rate``)
    against its null (σ = 0 is read as a tiny σ).

    Args:
        z: (steps, m) observations in noise units.
        sigma: σ.
        rate: The participation probability p.

    Returns:
        (m,) log-likelihood ratios.
    """
    mu = 1.0 / max(sigma, 1e-3)
    p = min(max(rate, 1e-12), 1.0)
    return np.logaddexp(np.log1p(-p) if p < 1 else -np.inf, np.log(p) + mu * z - mu * mu / 2).sum(axis=0)


def mixture_scores(projections: np.ndarray, sigma: float, rate: float) -> np.ndarray:
    """:func:`likelihood_ratio` of (steps, m) projections standardised per step (module docstring, ``mixture``).

    Args:
        projections: (steps, m) projections.
        sigma: σ.
        rate: The participation probability.

    Returns:
        (m,) scores.
    """
    if projections.shape[0] == 0:
        return np.zeros(projections.shape[1])
    y = projections - np.median(projections, axis=0, keepdims=True)
    spread = 1.4826 * np.median(np.abs(y - np.median(y, axis=1, keepdims=True)), axis=1, keepdims=True)
    return likelihood_ratio(y / np.where(spread > 0, spread, 1.0), sigma, rate)


def _coarsest(dtypes: Iterable[torch.dtype]) -> torch.dtype:
    """The floating dtype of largest unit roundoff among ``dtypes`` (:func:`canary_strength`'s u).

    Args:
        dtypes: Floating dtypes.

    Returns:
        The coarsest of them.
    """
    return max(dtypes, key=lambda t: torch.finfo(t).eps)


def canary_strength(clip: float, d: int, dtype: torch.dtype) -> float:
    """C (1 - κ), the factor :func:`canary_sum` scales the unit directions by so that every canary's contribution per
    window has norm **at most** C in ``dtype``, rounding included (the sensitivity C of T1-T14 that the canary game
    assumes; a stronger canary could make an audit's **lower** bound exceed the true ε). κ is
    :func:`training.clipping.clip_margin`'s for ``dtype`` and d values, the margin a clipped gradient gets.

    Why it suffices, u the unit roundoff of ``dtype`` (the coarser of float32, the directions', and the parameters'),
    v = 2^-53. (1) A direction û of :func:`canary_directions` is normalised in float64: its norm N' = fl(√fl(Σ x_j²))
    is ≥ ||x|| √(1 - γ_d) (1 - v) (d - 1 additions of non-negative terms, d squares, γ_d = d v / (1 - d v)), and each
    û_j = fl(x_j / N') rounds once, so ||û|| ≤ (1 + v) / ((1 - v) √(1 - γ_d)) ≤ 1 + (d/2 + 3) v. (2) C (1 - κ) is two
    roundings of v. (3) In the step at most five roundings of u: û cast to float32, the strength cast, its product
    with the window count (an integer, exact), the product with û_j in the matrix product (with one canary in the
    step the others' terms are exact zeros), and the cast to the parameters' dtype. So a contribution's norm is at most
    C (1 - κ) (1 + u)^5 (1 + (d/2 + 5) v) ≤ C (1 - κ) (1 + 6u + 2 (d + 8) v) ≤ C, since κ ≥ 6u + 2 (d + 8) v (the
    spare u covers the second-order terms, for d v ≤ 2^-20). The sum over canaries and windows, and the division by
    Λ, are the sum's rounding, as for clipped gradients (:func:`training.clipping.clip_margin`).

    Args:
        clip: The clipping norm C.
        d: The parameters the directions span.
        dtype: The coarser of float32 and the dtype the canaries are added in.

    Returns:
        C (1 - κ).
    """
    from tsdp.training.clipping import clip_margin

    return clip * (1 - clip_margin(dtype, d))


def canary_sum(weights: torch.Tensor, directions: torch.Tensor, clip: float, dtype: torch.dtype) -> torch.Tensor:
    """Σ_i w_i C (1 - κ) u_i: a step's canary contributions, w_i = [i included] K_{t,i} (:func:`canary_strength`; each
    canary's contribution per window has norm ≤ C once cast to ``dtype``). Under
    :func:`training.full_precision.full_precision`: a TF32 or bf16 matrix product would round the directions at 2^-11
    or 2^-8 and break the margin.

    Args:
        weights: (..., m) window counts times the inclusion bits, in the directions' dtype.
        directions: (m, d) unit directions (float32).
        clip: The clipping norm C.
        dtype: The coarser of the directions' dtype and the dtype the canaries are added in.

    Returns:
        (..., d) the sums, in the directions' dtype.
    """
    from tsdp.training.full_precision import full_precision

    coarser = _coarsest([directions.dtype, dtype])
    with full_precision(directions.device.type):
        return (weights * canary_strength(clip, directions.shape[1], coarser)) @ directions


def canary_directions(m: int, d: int, seed: int, step: int = 0) -> torch.Tensor:
    """(m, d) unit canary directions (float64, CPU) from ``seed``: uniformly random orthonormal when m ≤ d (the Q of a
    Gaussian matrix, signs fixed by R's diagonal; the same at every step), i.i.d. uniform unit vectors of ``step``
    otherwise (module docstring).

    Args:
        m: The canaries.
        d: The dimensions.
        seed: The seed.
        step: The step (only for m > d).

    Returns:
        (m, d) unit directions.
    """
    if m > d:
        seed = int(np.random.SeedSequence([seed, step]).generate_state(1, np.uint64)[0] >> np.uint64(1))
    g = torch.Generator(device="cpu").manual_seed(seed)
    u = torch.randn(d, m, generator=g, dtype=torch.float64)
    if m <= d:
        q, r = torch.linalg.qr(u)
        u = q * torch.sign(torch.diagonal(r))
    return (u / u.norm(dim=0, keepdim=True)).T.contiguous()


@dataclass(frozen=True)
class CanaryEvidence(Evidence):
    """The evidence of gradient canaries in a run (:meth:`GradientCanaries.evidence`).

    Attributes:
        parameters: the trainable parameters d the canaries' directions live in.
    """

    parameters: int


PARTICIPATION_SAMPLE, PARTICIPATION_STEPS, PARTICIPATION_WORK, PARTICIPATION_LEVEL = 8192, 4000, 2 * 10 ** 5, 1e-3
""":func:`participation_probability`'s simulated canaries, the most steps it simulates, the most replica-steps (each
step draws a batch of every replica of the virtual dataset), and the error level of its one-sided
confidence bound (with every simulated canary taking part the bound is 1e-3^(1/8192) = 0.99916)."""


def participation_probability(config: TrainingConfig, steps: int, seed: int = 0) -> float:
    """A **lower** bound on q, the probability that a gradient canary takes part in at least one of ``steps`` steps
    (K_{t,i} > 0 for some t) under ``config``'s batching, drawn by :class:`Participation` (the scheme's own sampler):
    the one-sided Clopper-Pearson bound at level :data:`PARTICIPATION_LEVEL` on :data:`PARTICIPATION_SAMPLE`
    simulated canaries over the first steps (at most :data:`PARTICIPATION_STEPS`, and :data:`PARTICIPATION_WORK`
    replica-steps; q grows with the steps, so fewer steps only lower it), stopping once every one has taken part.
    ConfigError naming ``steps`` when one epoch's draw would exceed :data:`MAX_DIRECTION_ENTRIES` entries.
    What a plan of an audit of a training without noise needs (:func:`attacks.canary.planning.flag_rate`): a
    canary that takes part in no step leaves no mark on any output.

    Args:
        config: The batching.
        steps: The training steps.
        seed: The simulation's seed.

    Returns:
        The lower bound on q.

    Raises:
        ConfigError: Naming ``steps`` when one epoch's draw is too large.
    """
    from scipy.stats import beta

    part = Participation(config, PARTICIPATION_SAMPLE, np.random.default_rng(seed),
                         torch.Generator().manual_seed(seed))
    entries = part.sampler.steps_per_epoch * part.replicas * config.N * (part.n_starts + 1)
    if entries > MAX_DIRECTION_ENTRIES:  # one epoch's batches are drawn at once, as a (step, sequence, start) table
        raise ConfigError("steps", f"the canaries' participation is drawn an epoch at a time, a table of "
                                   f"{entries:.3g} (step, sequence, start) entries here, more than "
                                   f"{MAX_DIRECTION_ENTRIES:.3g}: plan without it (every canary taking part)", steps)
    seen = np.zeros(PARTICIPATION_SAMPLE, dtype=bool)
    for _ in range(min(steps, PARTICIPATION_STEPS, max(1, PARTICIPATION_WORK // part.replicas))):
        seen |= part.next().cpu().numpy() > 0
        if seen.all():
            break
    hits = int(seen.sum())
    return float(beta.ppf(PARTICIPATION_LEVEL, hits, PARTICIPATION_SAMPLE - hits + 1)) if hits else 0.0


def check_canaries_covered(config: TrainingConfig) -> None:
    """ConfigError naming ``sigma_context`` (or ``sigma_forecast``) when ``config`` claims amplification by augmentation
    (σ_C or σ_F > 0: tsdp's accountant then selects T11, Thm G.1), which covers no canary: T11 bounds one element that
    changes by at most v and reaches the gradient through the inputs' noise, whereas a gradient canary enters the
    clipped sum after that noise and a spike canary moves its element by its own size. Against T11's ε the canaries'
    own law (T6's, without the amplification) is flagged on a correct loop (tests/attacks/test_canary_augmentation.py:
    3 of 3 seeds). The same claim without augmentation covers the canaries and any loop that augments.

    Args:
        config: The claimed configuration.

    Raises:
        ConfigError: ``config`` is augmented.
    """
    if config.augmented:
        name = "sigma_context" if config.sigma_context > 0 else "sigma_forecast"
        raise ConfigError(name, "a canary audit cannot test amplification by augmentation (T11): it covers an element "
                                "changed by at most v seen through the inputs' noise, and the canaries are not (a "
                                "gradient canary enters after that noise, a spike moves its element by its own size, "
                                "not by at most v); audit "
                                "the claim without augmentation (σ_C = σ_F = 0), which covers them and your loop",
                          getattr(config, name))


@lru_cache(maxsize=16)
def sound_profile(config: TrainingConfig, steps: int) -> tuple:
    """The claim gradient canaries are tested against: tsdp's sound accountant (an **upper** bound on the correct
    loop's δ(ε); the T-id its scheme selects) of ``config`` composed over ``steps`` steps, read on the f-DP test's ε
    grid (:func:`attacks.canary.tradeoff.claimed_curve`: (ε grid, δ grid)). Kept per (``config``, ``steps``) in the
    process: audits of one configuration (a bench's seeds) read the accountant once (the reads are most of a small
    audit's time).

    Args:
        config: The claimed batching and σ.
        steps: The training steps.

    Returns:
        (ε grid, δ grid) of the sound profile.
    """
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    from .tradeoff import claimed_curve

    eps, deltas = claimed_curve(PldAccountant().compose(training_event(config, steps=steps)))
    eps.flags.writeable = deltas.flags.writeable = False  # shared by every caller
    return eps, deltas


MAX_DIRECTION_ENTRIES = 2 ** 28
"""The most m · d canary-direction entries a run holds (1 GiB in float32; twice that while they are drawn)."""

SCORES = ("sum", "mixture")
"""The scores of a gradient-canary run, in :meth:`GradientCanaries.evidence`'s order (module docstring)."""


def _flat(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1) for t in tensors])


class GradientCanaries:
    """m white-box gradient canaries of a DP-SGD run (module docstring): directions, inclusion, participation, score.

    ``config`` is the batching the canaries take part in (the scheme your loader draws, whose
    accounting you claim), ``clip`` the clipping norm C. ``seed`` (an int or a
    ``numpy.random.SeedSequence``) fixes inclusion, placements, participation and directions.
    Use: :meth:`attach` to the trained parameters, then per step :meth:`gradient` (the canaries'
    clipped sum, to add to ĝ before the noise), :meth:`snapshot` before and :meth:`observe`
    after the optimizer's step; :meth:`evidence` gives the scores and inclusion bits. Memory: the
    directions are an (m, d) float32 matrix on the parameters' device and the projections a
    (steps, m) record, so m · d must fit (4 GB for m = 1000 and d = 10^6).

    Args:
        config: The batching the canaries take part in (and the claimed σ).
        m: The canaries, at least 2.
        clip: The clipping norm C (each canary's norm).
        seed: An int or a ``numpy.random.SeedSequence``.

    Raises:
        ConfigError: ``m`` below 2, ``clip`` not positive, or an augmented ``config`` (:func:`check_canaries_covered`).
    """

    def __init__(self, config: TrainingConfig, m: int, *, clip: float,
                 seed: Union[int, np.random.SeedSequence] = 0):
        if isinstance(m, bool) or not isinstance(m, int) or m < 2:
            raise ConfigError("canaries", "must be an integer >= 2", m)
        if not clip > 0:
            raise ConfigError("clip", "must be > 0", clip)
        check_canaries_covered(config)
        seeds = np.random.SeedSequence(seed) if isinstance(seed, int) else seed
        inclusion, placement, steps, directions = seeds.spawn(4)
        self.config, self.m, self.clip = config, m, float(clip)
        self.included = np.random.default_rng(inclusion).random(m) < 0.5
        self._placement_rng = np.random.default_rng(placement)
        self._steps_seed = int(steps.generate_state(1, np.uint64)[0] >> np.uint64(1))
        self._directions_seed = int(directions.generate_state(1, np.uint64)[0] >> np.uint64(1))
        self.params: List[torch.Tensor] = []
        self.participations = np.zeros(m, dtype=np.int64)  # Σ_t K_{t,i}, included or not (the law's record)
        self.steps = 0

    def attach(self, params: Iterable[torch.Tensor],
               device: Optional[Union[str, torch.device]] = None) -> "GradientCanaries":
        """Bind to the trained parameters (those with ``requires_grad``); draws the directions, the participations and
        the projections on ``device`` (a ``torch.device`` or its name; None: the parameters' device), moving each
        step's canary sum to the parameters and what is observed to ``device`` (the participations' random stream is
        the device's generator's).

        Args:
            params: The trained parameters (those with ``requires_grad`` are kept, in order).
            device: Where the canaries' own tensors live (None: the parameters' device).

        Returns:
            These canaries, attached.

        Raises:
            ValueError: No trainable parameter.
            ConfigError: m · d above the direction entries held in memory, naming ``canaries``.
        """
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("no trainable parameters to attach gradient canaries to")
        device = self.params[0].device if device is None else torch.device(device)
        d = sum(p.numel() for p in self.params)
        if self.m * d > MAX_DIRECTION_ENTRIES:
            raise ConfigError("canaries", f"m · d = {self.m} canaries × {d} parameters exceeds the "
                                          f"{MAX_DIRECTION_ENTRIES:.3g} direction entries held in memory: use at most "
                                          f"{max(MAX_DIRECTION_ENTRIES // d, 1)} canaries per run and more runs", self.m)
        self._device = device
        self.directions = self._directions_of(0)
        self.participation = Participation(self.config, self.m, self._placement_rng,
                                           torch.Generator(device=device).manual_seed(self._steps_seed))
        self._mask = torch.as_tensor(self.included, device=device, dtype=torch.float32)
        self._projections: List[torch.Tensor] = []
        return self

    def _directions_of(self, step: int) -> torch.Tensor:
        d = sum(p.numel() for p in self.params)
        return canary_directions(self.m, d, self._directions_seed, step).to(device=self._device, dtype=torch.float32)

    def gradient(self) -> List[torch.Tensor]:
        """This step's canary clipped sum Σ_i [i included] K_{t,i} C (1 - κ) u_{t,i} (:func:`canary_sum`: each canary's
        norm ≤ C in the parameters' dtype), split like the parameters (advances a step; with more canaries than
        parameters the step's fresh directions are drawn first)."""
        if self.steps and self.m > self.directions.shape[1]:
            self.directions = self._directions_of(self.steps)
        counts = self.participation.next()
        self.participations += counts.cpu().numpy()
        self.steps += 1
        flat = canary_sum(counts.to(torch.float32) * self._mask, self.directions, self.clip,
                          _coarsest(p.dtype for p in self.params))
        out, offset = [], 0
        for p in self.params:
            out.append(flat[offset:offset + p.numel()].view_as(p).to(device=p.device, dtype=p.dtype))
            offset += p.numel()
        return out

    def snapshot(self) -> torch.Tensor:
        """The parameters as one flat vector (take it before the optimizer's step)."""
        return _flat(self.params)

    def observe(self, before: torch.Tensor) -> None:
        """Record the step's projections x_{t,i} = -⟨Δθ_t, u_i⟩ from the parameters before it (module docstring).

        Args:
            before: The flat parameters before the step (:meth:`snapshot`).
        """
        self._record(before - _flat(self.params))

    def observe_gradient(self, basis: Optional[torch.Tensor] = None) -> None:
        """Record x_{t,i} = ⟨g̃_t, u_i⟩ of the gradient the optimizer stepped on (each parameter's ``.grad``, the
        canaries' part included; zero where there is none), less its projection on the data's gradients when a
        ``basis`` of their span at the step's parameters is given (:meth:`attacks.canary.data_span.DataSpan.basis`).

        Args:
            basis: A (d, k) orthonormal basis of the data's gradients' span (None: nothing taken off).
        """
        from .data_span import DataSpan

        self._record(DataSpan.residual(self.stepped_gradient(), basis))

    def stepped_gradient(self) -> torch.Tensor:
        """The gradient the optimizer steps on, flat (each parameter's ``.grad``; zero where there is none)."""
        return _flat([p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params])

    def _record(self, observed: torch.Tensor) -> None:
        self._projections.append(self.directions @ observed.to(self.directions.device, self.directions.dtype))

    def evidence(self) -> CanaryEvidence:
        """The run's evidence (module docstring).

        Returns:
            The ``sum`` and ``mixture`` scores (m,), the inclusion bits and the parameters d.
        """
        x = (torch.stack(self._projections).double().cpu().numpy() if self._projections
             else np.zeros((0, self.m)))
        values = (x.sum(axis=0), mixture_scores(x, self.config.sigma, participation_rate(self.config)))
        return CanaryEvidence(scores=dict(zip(SCORES, values)), included=self.included.copy(),
                              parameters=sum(p.numel() for p in self.params))


__all__ = ["SCORES", "CanaryEvidence", "GradientCanaries", "Participation", "canary_directions", "canary_strength",
           "canary_sum", "check_canaries_covered",
           "likelihood_ratio", "mixture_scores", "participation_probability", "participation_rate", "sound_profile"]
