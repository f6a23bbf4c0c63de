"""One-run canary audits of trained forecasters (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run").

m event canaries (a marked spike added to one element at a random position of a random
series; distinct (series, position) pairs) are each inserted independently with probability
1/2; the model is trained once with the real loop (:func:`attacks.loop.train.train`). Every
canary gets two scores, larger meaning "was in the training data":

* black box: the drop of the model's loss on the canary's windows (the windows holding the
  spiked element) from the initial model to the trained one;
* white box: the inner product of the parameter change θ_0 - θ_final with the canary's
  centred gradient at θ_0 (its windows' summed gradient minus the mean over all canaries).

The auditor guesses "in" for the k highest and "out" for the k lowest scores and abstains on
the rest; with v correct of r = 2k guesses, Steinke et al.'s Theorem (one-run audit with
abstention, (ε, δ) version: P[W ≥ v] ≤ P[Binom(r, e^ε/(1+e^ε)) ≥ v] + 2 m δ max_i P[v > Binom ≥ v-i]/i)
gives a p-value for "the training was (ε, δ)-DP"; the reported ε is the largest one rejected
at the confidence level. The k's and the two scores are fixed in advance and Bonferroni-
corrected, so the bound is a **lower** bound on the ε of the element-level (event) relation
with probability ≥ confidence.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import torch
from scipy import stats

from theorems.config import TrainingConfig

from .loop.data import SeriesData, load, synthetic_for
from .loop.models import make_model
from .loop.step import per_sample_gradients
from .loop.train import resolve_device, train
from .loop.windows import gather_windows, pad_series, split_window

GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.2)  # k / m for the fixed set of top-k guesses


def p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """P[≥ v correct of r guesses] under (ε, δ)-DP with m canaries (Steinke et al. 2023, Theorem with δ; their code).

    β = P[Binom(r, q) ≥ v], q = e^ε/(1+e^ε), plus 2 m δ · max_{1≤i≤v} P[v > Binom(r, q) ≥ v - i] / i.
    """
    q = 1.0 / (1.0 + math.exp(-eps))
    beta = float(stats.binom.sf(v - 1, r, q))
    alpha, total = 0.0, 0.0
    pmf = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q) if v > 0 else np.array([])
    for i, mass in enumerate(pmf, start=1):
        total += float(mass)
        alpha = max(alpha, total / i)
    return min(1.0, beta + alpha * delta * 2 * m)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, significance: float) -> float:
    """Largest ε (bisection, to 1e-4) whose p-value is below ``significance``: a lower bound on ε (0 if none)."""
    if r == 0 or p_value(m, r, v, 0.0, delta) >= significance:
        return 0.0
    lo, hi = 0.0, 1.0
    while p_value(m, r, v, hi, delta) < significance:
        lo, hi = hi, 2 * hi
        if hi > 1e3:
            return lo
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2
        if p_value(m, r, v, mid, delta) < significance:
            lo = mid
        else:
            hi = mid
    return lo


def guess_bound(scores: np.ndarray, included: np.ndarray, delta: float, significance: float,
                fractions: Sequence[float] = GUESS_FRACTIONS) -> dict:
    """ε lower bound from the top-k / bottom-k guesses, Bonferroni over the fixed k's (lower-bound direction)."""
    m = len(scores)
    order = np.argsort(-scores, kind="stable")
    best = {"epsilon_lower": 0.0, "guesses": 0, "correct": 0}
    per = significance / len(fractions)
    for f in fractions:
        k = max(1, int(round(f * m / 2)))
        top, bottom = order[:k], order[-k:]
        v = int(included[top].sum() + (~included[bottom]).sum())
        eps = epsilon_lower_bound(m, 2 * k, v, delta, per)
        if eps > best["epsilon_lower"] or best["guesses"] == 0:
            best = {"epsilon_lower": eps, "guesses": 2 * k, "correct": v}
    return best


def place_canaries(data: SeriesData, m: int, config: TrainingConfig, rng: np.random.Generator):
    """(series, position, spike) of m canaries at distinct (series, position) pairs of the training parts.

    The spike is 10 standard deviations of its series with a random sign: a marked event.
    """
    train_part, _ = data.split(config.forecast_length)
    lengths = np.array(train_part.lengths)
    if m > lengths.sum():
        raise ValueError(f"{m} canaries do not fit into {lengths.sum()} training elements")
    flat = rng.choice(int(lengths.sum()), size=m, replace=False)
    offsets = np.cumsum(lengths) - lengths
    series = np.searchsorted(offsets, flat, side="right") - 1
    position = flat - offsets[series]
    scale = np.array([train_part.series[n].std() + 1e-6 for n in series])
    spike = 10.0 * scale * rng.choice([-1.0, 1.0], size=m)
    return series, position, spike


def _with_canaries(data: SeriesData, series, position, spike, mask) -> SeriesData:
    out = [s.copy() for s in data.series]
    for n, p, a in zip(series[mask], position[mask], spike[mask]):
        out[n][p] += a
    return SeriesData(tuple(out))


def _canary_windows(config: TrainingConfig, series, position, n_starts: torch.Tensor):
    """Windows holding each canary (padded column pos + L_C; starts t with t ≤ col < t + L_C + L_F, t < T_n):
    (m, L_C + L_F) sequence and start tensors plus validity mask."""
    k = config.window_length
    pos = torch.as_tensor(position)[:, None]
    offs = torch.arange(k)[None]
    start = pos + config.context_length - offs
    valid = (start >= 0) & (start < n_starts[torch.as_tensor(series)][:, None])
    seq = torch.as_tensor(series)[:, None].expand(-1, k)
    return seq, torch.where(valid, start, 0), valid


def _scores(model, init_model, padded, n_starts, config, series, position, clip):
    seq, start, valid = _canary_windows(config, series, position, n_starts)
    windows = gather_windows(padded, seq, start, config.window_length)
    context, forecast = split_window(windows, config.context_length)
    with torch.no_grad():
        loss_final = (model(context.reshape(-1, config.context_length), forecast.reshape(-1, config.forecast_length))
                      .reshape(valid.shape) * valid).sum(1)
        loss_init = (init_model(context.reshape(-1, config.context_length),
                                forecast.reshape(-1, config.forecast_length)).reshape(valid.shape) * valid).sum(1)
    black = (loss_init - loss_final).numpy()
    grads = per_sample_gradients(init_model, context, forecast)
    flat = torch.cat([(g * valid.reshape(*valid.shape, *([1] * (g.dim() - 2)))).reshape(*valid.shape, -1).sum(1)
                      for g in grads.values()], dim=1)
    flat = flat / torch.clamp(flat.norm(dim=1, keepdim=True) / clip, min=1.0)
    flat = flat - flat.mean(0, keepdim=True)
    delta_theta = torch.cat([(p0.detach() - p1.detach()).reshape(-1) for (_, p0), (_, p1)
                             in zip(init_model.named_parameters(), model.named_parameters()) if p0.requires_grad])
    white = (flat @ delta_theta).numpy()
    return black, white


def audit_model(model_name: str, config: TrainingConfig, *, data="synthetic", canaries: int, epsilon: float,
                delta: float, epochs: Optional[int] = None, seed: int = 0, device: str = "auto",
                confidence: float = 0.95, progress: bool = False, lr: float = 1e-3) -> dict:
    """One-run canary audit (Steinke et al. 2023) of ``model_name`` trained on ``data`` with ``config``'s batching.

    ``epsilon`` is the training budget (the sound accountant of :mod:`verify.accounting` stops
    the training there); ``epsilon = inf`` trains without clipping or noise for ``epochs``.
    Returns a JSON-ready dict with a lower bound on ε (confidence ``confidence``) per score.
    """
    from verify.accounting import epsilon_of_steps

    rng = np.random.default_rng(seed)
    base = synthetic_for(config, seed=seed) if data == "synthetic" else load(data)
    if base.N != config.N:
        raise ValueError(f"data has {base.N} series but the configuration says N = {config.N} (set --N {base.N})")
    series, position, spike = place_canaries(base, canaries, config, rng)
    included = rng.random(canaries) < 0.5
    private = math.isfinite(epsilon)
    if not private and epochs is None:
        raise ValueError("training without noise (epsilon = inf) needs --epochs")
    trained = train(config, model_name, _with_canaries(base, series, position, spike, included),
                    epsilon=epsilon if private else None, delta=delta, epochs=epochs,
                    epsilon_of_steps=epsilon_of_steps(config, delta) if private else None, private=private,
                    device=device, seed=seed, progress=progress, lr=lr, n_samples=20, return_model=True)
    model = trained.pop("trained_model").cpu()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # train() builds its initial model under this seed
        init_model = make_model(model_name, config.context_length, config.forecast_length)
    full = _with_canaries(base, series, position, spike, np.ones(canaries, dtype=bool))
    train_part, _ = full.split(config.forecast_length)
    padded, lengths = pad_series([torch.as_tensor(s) for s in train_part.series], config.context_length)
    black, white = _scores(model, init_model, padded, lengths - config.forecast_length + 1, config, series,
                           position, clip=1.0)
    significance = (1 - confidence) / 2  # Bonferroni over the two scores
    scores = {name: guess_bound(s, included, delta, significance) for name, s in (("loss", black), ("gradient", white))}
    return {
        "model": model_name, "canaries": canaries, "included": int(included.sum()), "epsilon_budget": epsilon,
        "epsilon_spent": trained["epsilon"], "delta": delta, "confidence": confidence,
        "epsilon_lower": max(s["epsilon_lower"] for s in scores.values()), "scores": scores,
        "steps": trained["steps"], "crps": trained["crps"], "device": str(resolve_device(device)),
        "seconds": trained["seconds"],
    }
