"""The proofs' worst-case constructions as inputs to the real DP-SGD loop (:mod:`training`).

Each construction is a gradient function realised as a model (loss θ·c(window), so the
per-sample gradient is c(window), computed by the loop's torch.func code and clipped by
it), two neighbouring datasets that differ in one element, and the scheme the proof runs
(top/bottom-level sampler of :func:`training.samplers.make_sampler`). Nothing here
samples the mixture directly: the auditor pushes trials through the real sampler, window
cropping, augmentation, per-sample gradients, clipping and noise, and the construction
only says how to read the released update and which mixture pair it should follow.

Constructions (THEOREMS.md ids; the released update, centred and in units of C, follows
the pair (P, Q) in the worlds ``data_p`` / ``data_q``):

* T1 (Thm 4.2 / proof of Thm 4.3), T3 (Thm 4.3, λ > 1): deterministic top level, WR bottom
  level; g = +C on windows holding the marked value 1, -C otherwise. Attains T1 / T3.
* T6 (Thm 4.4, proof of Thm F.7), T9 (Thm F.7): the same with top-level WOR. Attains T6 / T9.
* The three under shuffled iteration (``top="shuffle"``): the same datasets and gradient function,
  a fresh permutation each epoch; the audit reads the max over each epoch's steps
  (:mod:`attacks.montecarlo.shuffled`), whose law is the hidden-position epoch's.
* T4 (Lemma E.9 in the proof of Thm E.8): deterministic top, Poisson bottom; x_1 holds -1
  (world P) or +1 (world Q), g = +C / -C on windows holding +1 / -1, 0 otherwise. Attains T4.
* T10 (Thm F.8): the same with top-level WOR. Attains T10 (the construction's pair).
* T11 (Thm G.1, a change of v under context/forecast augmentation): x_1 holds M + v (P) or M
  (Q) for a large M; g = +C when some augmented value exceeds M + v/2, -C otherwise. The
  released update is MoG([0, 2], [1-a, a]) vs MoG([0, 2], [1-b, b]) with a - b = T11's weight
  (``Bound.attained_pair`` of T11); T11 is not proven tight, so this pair is what an attack attains and the gap is measured.
* T13 / T14 (Props. C.1, C.2): the pooled-window loop (all windows of all series pooled,
  Λ drawn WOR), the WR construction's gradient function; one element lies in k windows,
  so the update attains T14's pair (and exceeds what T13's one-record guarantee claims, C6).

The changed element is element j = L_F (1-based) of sequence 0: with the L_C-zero front
padding of Algorithm 4 it lies in min(T, L_C + L_F) = k windows, the proofs' count (the
proofs' "first element" lies in only min(T, L_C + 1) windows of the real loop, which would
under-attain the bound when L_F > 1). The other sequences hold distinct constants in
(-1/4, 0) so the dataset is a proper set, as the proofs require.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch
from torch import nn

from tsdp.theorems.bounds.base import TheoremError
from tsdp.theorems.config import ConfigError, Relation, Top, TrainingConfig
from tsdp.theorems.constructions import CONSTRUCTIONS
from tsdp.theorems.hidden_position import HIDDEN_POSITION_TOP
from tsdp.theorems.mixture import MixturePair
from tsdp.theorems.registry import attained_pair, get

from tsdp.training.windows import pad_series

MARK = 1.0  # the marked value of the ±C constructions


class GradientFunctionModel(nn.Module):
    """A one-parameter model with loss θ·c(window): its per-sample gradient is the proofs' g(window).

    c = +C when some window value exceeds ``plus_above``; else -C when ``minus_below`` is set
    and some value lies below it; else ``default``·C (-C for the WR proofs, 0 for Poisson).
    Used by every construction of this module (proofs of Thms 4.3 (T3), E.8/Lemma E.9 (T4), F.7 (T9), F.8 (T10),
    G.1 (T11), Prop. C.2 (T14)), whose audits give **lower** bounds on ε. Gradients have norm ≤ C, so clipping to C
    never changes them.

    Args:
        clip: C, the clipping bound (the gradient's magnitude).
        plus_above: Windows with a value above it get +C.
        minus_below: Windows with a value below it (and none above ``plus_above``) get -C (None: no such rule).
        default: The gradient of every other window, in units of C.
    """

    def __init__(self, clip: float, plus_above: float, minus_below: Optional[float] = None, default: float = -1.0):
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(1))
        self.clip = float(clip)
        self.plus_above = float(plus_above)
        self.minus_below = minus_below
        self.default = float(default)

    def gradient_value(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        """c(window) of a batch of windows.

        Args:
            context: Context windows (B, L_C).
            forecast: Forecast windows (B, L_F).

        Returns:
            c(window), shape (B,), in the windows' dtype.
        """
        plus = (context > self.plus_above).any(dim=-1) | (forecast > self.plus_above).any(dim=-1)
        c = torch.where(plus, 1.0, self.default)
        if self.minus_below is not None:
            minus = (context < self.minus_below).any(dim=-1) | (forecast < self.minus_below).any(dim=-1)
            c = torch.where(minus & ~plus, -1.0, c)
        return (self.clip * c).to(context.dtype)

    def forward(self, context: torch.Tensor, forecast: torch.Tensor) -> torch.Tensor:
        """The per-window loss θ·c(window), whose gradient in θ is c(window).

        Args:
            context: Context windows (B, L_C).
            forecast: Forecast windows (B, L_F).

        Returns:
            The losses, shape (B,).
        """
        return self.theta[0] * self.gradient_value(context, forecast)


@dataclass(frozen=True)
class Construction:
    """One proof's worst case, ready for the loop.

    ``config``: the scheme actually run (the audited theorem fixes top/bottom level).
    ``data_p`` / ``data_q``: front-padded datasets (N, L_C + L) of the two neighbouring worlds.
    ``pair``: the exact law of the centred, C-normalised released update in world P / Q.
    ``offset``: Σ of per-sample gradients (units of C) of a step that draws no marked window.
    ``sound_theorem``: the bound whose ε is the sound claim; ``attained_theorem``: the registry
    bound whose pair this attains (None for T11, whose attained pair is built here).

    Attributes:
        theorem: The audited construction's theorem.
        config: The scheme actually run.
        sound_theorem: The bound whose ε is the sound claim (an upper bound).
        attained_theorem: The registry bound whose pair this attains (None: built here, T11).
        model: The gradient function as a model.
        data_p: World P's front-padded dataset (N, L_C + L).
        data_q: World Q's front-padded dataset (N, L_C + L).
        pair: The exact law of the centred, C-normalised released update in world P / Q (one step, or the
            changed sequence's step of an epoch).
        offset: Σ of per-sample gradients (units of C) of a step that draws no marked window.
        clip: C.
        target_sequence: The changed sequence's index.
        target_column: The changed element's column in the padded tensors.
    """

    theorem: str
    config: TrainingConfig
    sound_theorem: str
    attained_theorem: Optional[str]
    model: GradientFunctionModel
    data_p: torch.Tensor
    data_q: torch.Tensor
    pair: MixturePair
    offset: float
    clip: float
    target_sequence: int
    target_column: int  # column of the changed element in the padded tensors


def target_column(config: TrainingConfig) -> int:
    """Padded-tensor column of element j = L_F (1-based), which lies in min(T, L_C + L_F) windows.

    Args:
        config: The training configuration.

    Returns:
        The column, 0-based, in the L_C-front-padded tensors.
    """
    return config.context_length + config.forecast_length - 1


def scheme_config(theorem: str, config: TrainingConfig) -> TrainingConfig:
    """``config`` with the audited theorem's top/bottom level; refuses what the constructions do not cover.

    A deterministic-top construction (T1, T3, T4) keeps a shuffled top level: the same worst case under
    shuffled iteration, where the changed sequence's step is hidden (THEOREMS.md, the shuffled lower bound).

    Args:
        theorem: The audited construction's theorem (a key of the constructions' table).
        config: The training configuration whose sizes the construction takes.

    Returns:
        The configuration the construction runs.

    Raises:
        TheoremError: No construction for ``theorem``.
        ConfigError: A relation, length or size the construction does not cover, naming it.
    """
    key = str(theorem).upper()
    if key not in CONSTRUCTIONS:
        raise TheoremError(f"no worst-case construction for {theorem!r}; auditable: {', '.join(CONSTRUCTIONS)}")
    top, bottom, sound = CONSTRUCTIONS[key].top, CONSTRUCTIONS[key].bottom, CONSTRUCTIONS[key].sound
    if config.relation != Relation.EVENT or config.w != 1:
        raise ConfigError("relation", "the constructions change one element (event level, w = 1)",
                          (config.relation, config.w))
    if config.lengths is not None and len(set(config.lengths)) > 1:
        raise ConfigError("lengths", "the constructions use N series of the common length L")
    if top == Top.DETERMINISTIC and config.top in HIDDEN_POSITION_TOP:
        top = config.top  # the same construction, shuffled: its step is hidden (attacks.montecarlo.shuffled)
    changes = dict(top=top, bottom=bottom)
    if key != "T11":
        changes.update(sigma_context=0.0, sigma_forecast=0.0)
    out = config.with_(**changes)
    get(sound).check(out)
    if key == "T11" and config.T < config.window_length:
        raise ConfigError("L", f"the T11 construction needs T = L - L_F + 1 >= L_C + L_F = {config.window_length}",
                          config.L)
    return out


def build(theorem: str, config: TrainingConfig, *, clip: float = 1.0, device: Union[str, torch.device] = "cpu") -> Construction:
    """The worst-case construction of ``theorem``'s proof on ``config``'s sizes (module docstring).

    Lower-bound direction: the released update of the real loop on ``data_p`` vs ``data_q``
    follows ``pair``, so any test between the two worlds lower-bounds the mechanism's ε.

    Args:
        theorem: The audited construction's theorem.
        config: The training configuration whose sizes it takes (:func:`scheme_config` fixes the scheme).
        clip: C.
        device: The torch device of the model and datasets.

    Returns:
        The :class:`Construction`.
    """
    key = str(theorem).upper()
    cfg = scheme_config(key, config)
    sound, attained = CONSTRUCTIONS[key].sound, CONSTRUCTIONS[key].attained
    n, length = cfg.N, cfg.L
    others = [torch.full((length,), -(i / (4.0 * n))) for i in range(n)]
    col = target_column(cfg)
    j = cfg.forecast_length - 1  # 0-based index of element j = L_F in the unpadded series
    if key in ("T4", "T10"):
        p_value, q_value = -MARK, MARK
        model = GradientFunctionModel(clip, plus_above=MARK / 2, minus_below=-MARK / 2, default=0.0)
    elif key == "T11":
        big = cfg.v * (1.0 + 40.0 * max(1.0, cfg.sigma_context, cfg.sigma_forecast))
        p_value, q_value = big + cfg.v, big
        model = GradientFunctionModel(clip, plus_above=big + cfg.v / 2)
    else:
        p_value, q_value = MARK, 0.0
        model = GradientFunctionModel(clip, plus_above=MARK / 2)
    series_p = [s.clone() for s in others]
    series_q = [s.clone() for s in others]
    series_p[0] = torch.zeros(length)
    series_q[0] = torch.zeros(length)
    series_p[0][j] = p_value
    series_q[0][j] = q_value
    data_p, _ = pad_series(series_p, cfg.context_length)
    data_q, _ = pad_series(series_q, cfg.context_length)
    pair = attained_pair(get(attained), cfg)
    if key in ("T4", "T10"):
        offset = 0.0
    elif cfg.top == Top.POOLED:
        offset = -float(cfg.batch_size)
    else:
        offset = -float(cfg.sequences_per_step * cfg.instances)
    model = model.to(device)
    return Construction(key, cfg, sound, attained, model, data_p.to(device), data_q.to(device), pair, offset,
                        float(clip), 0, col)


def pair_numeric(pair: MixturePair):
    """(means of P, weights of P, means of Q, weights of Q, σ) as floats, in units of C.

    Args:
        pair: A one-step mixture pair.

    Returns:
        The five arrays (σ a float).
    """
    num = pair.numeric()
    return num.a * num.sigma, num.p, num.b * num.sigma, num.q, num.sigma


__all__ = [
    "Construction", "GradientFunctionModel", "build", "pair_numeric",
    "scheme_config", "target_column",
]
