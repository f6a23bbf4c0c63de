"""One-run canary audits of trained forecasters (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training run").

m event canaries (a marked spike of ±``spike`` standard deviations added to one element at
a random position of a random series) are each inserted independently with probability
1/2; the model is trained once with the real loop (:func:`attacks.loop.train.train`). The
canaries lie at distinct positions at least L_C + L_F apart, so no window holds two of
them, and each is scored on its *canary windows* (the windows holding its element) in the
data with every canary present:

* black box ("loss"): the drop of the model's loss on the canary windows from the initial
  model to the trained one;
* white box ("gradient"): minus the norm of the trained model's gradient on the canary
  windows (a memorised canary sits near a stationary point of its own loss; an unseen
  spike leaves a large gradient).

The spike's sign is random, so no rule learnt from other canaries predicts it: only
memorisation (the influence of the canary itself) separates inserted from left-out
canaries. Contexts must be distinctive for that (e.g. noisy series; on smooth series the
forecaster cannot tell canary contexts apart and the scores are at chance).

The auditor guesses on the extreme scores and abstains on the rest; the guess sets (both
ends, the top only "in", the bottom only "out", each at the fixed fractions
:data:`GUESS_FRACTIONS` of m) and the two scores are fixed in advance and
Bonferroni-corrected. With v correct of r guesses, Steinke et al.'s Theorem (one-run audit
with abstention, (ε, δ) version: P[W ≥ v] ≤ P[Binom(r, e^ε/(1+e^ε)) ≥ v] + 2 m δ
max_i P[v > Binom ≥ v-i]/i) holds for any guessing rule, so the reported ε is a **lower**
bound on the ε of the training at element (event) level with probability ≥ confidence.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import torch
from scipy import stats

from tsdp.theorems.config import TrainingConfig

from .loop.data import SeriesData, load, synthetic_for
from .loop.models import make_model
from .loop.step import per_sample_gradients
from .loop.train import resolve_device, train
from .loop.windows import gather_windows, pad_series, split_window

GUESS_FRACTIONS = (0.02, 0.05, 0.1, 0.2)  # k / m for the fixed guess sets
GUESS_SIDES = ("both", "in", "out")  # guess on both ends (2k guesses), only "in" on the top k, only "out" on the bottom k


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
                fractions: Sequence[float] = GUESS_FRACTIONS, sides: Sequence[str] = GUESS_SIDES) -> dict:
    """ε lower bound from fixed guess sets on the extreme scores, Bonferroni over them (lower-bound direction).

    For every fraction f (k = f m, at least 1) and side: "both" guesses "in" on the k highest
    and "out" on the k lowest scores, "in" / "out" only one of the two; the best bound over
    the len(fractions) · len(sides) sets is valid at ``significance`` (each tested at
    significance / their number).
    """
    m = len(scores)
    order = np.argsort(-scores, kind="stable")
    best = {"epsilon_lower": 0.0, "guesses": 0, "correct": 0, "side": None}
    per = significance / (len(fractions) * len(sides))
    for side in sides:
        for f in fractions:
            k = max(1, int(round(f * m / (2 if side == "both" else 1))))
            top, bottom = order[:k], order[-k:]
            v = {"both": int(included[top].sum() + (~included[bottom]).sum()),
                 "in": int(included[top].sum()), "out": int((~included[bottom]).sum())}[side]
            r = 2 * k if side == "both" else k
            eps = epsilon_lower_bound(m, r, v, delta, per)
            if eps > best["epsilon_lower"] or best["guesses"] == 0:
                best = {"epsilon_lower": eps, "guesses": r, "correct": v, "side": side}
    return best


def auc(scores: np.ndarray, included: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for "inserted" (Mann-Whitney, ties averaged): 0.5 is chance."""
    ranks = stats.rankdata(scores)
    n_in = int(included.sum())
    n_out = len(scores) - n_in
    if n_in == 0 or n_out == 0:
        return float("nan")
    return float((ranks[included].sum() - n_in * (n_in + 1) / 2) / (n_in * n_out))


def certify(scores: dict, included: np.ndarray, delta: float, confidence: float) -> dict:
    """ε lower bounds (Steinke et al. 2023, lower-bound direction) for several named canary scores at once.

    Each score is tested at significance (1 - confidence) / len(scores) (Bonferroni), so the
    returned ``epsilon_lower`` (the best over the scores) holds with probability ≥ ``confidence``.
    Returns {"scores": {name: guess_bound(...) + auc}, "epsilon_lower": max}.
    """
    significance = (1 - confidence) / len(scores)
    out = {name: dict(guess_bound(np.asarray(s), included, delta, significance), auc=auc(np.asarray(s), included))
           for name, s in scores.items()}
    return {"scores": out, "epsilon_lower": max(s["epsilon_lower"] for s in out.values())}


def place_canaries(data: SeriesData, m: int, config: TrainingConfig, rng: np.random.Generator,
                   spike: float = 10.0):
    """(series, position, spike) of m canaries at random distinct slots of the training parts.

    Slots are every k = L_C + L_F elements from a random offset per series, so no window holds
    two canaries. The spike is ``spike`` standard deviations of its series with a random sign.
    """
    train_part, _ = data.split(config.forecast_length)
    k = config.window_length
    offsets = rng.integers(0, k, size=train_part.N)
    slots = [np.arange(o, len(s), k) for o, s in zip(offsets, train_part.series)]
    counts = np.array([len(x) for x in slots])
    if m > counts.sum():
        raise ValueError(f"{m} canaries do not fit into {counts.sum()} slots (one per L_C + L_F = {k} elements)")
    flat = rng.choice(int(counts.sum()), size=m, replace=False)
    first = np.cumsum(counts) - counts
    series = np.searchsorted(first, flat, side="right") - 1
    position = np.array([slots[n][i] for n, i in zip(series, flat - first[series])], dtype=np.int64)
    scale = np.array([train_part.series[n].std() + 1e-6 for n in series])
    values = spike * scale * rng.choice([-1.0, 1.0], size=m)
    return series, position, values


def with_canaries(data: SeriesData, series, position, spike, mask) -> SeriesData:
    """``data`` with canary i (series[i], position[i], spike[i]) added where ``mask[i]`` (positions 0-based)."""
    out = [s.copy() for s in data.series]
    for n, p, a in zip(series[mask], position[mask], spike[mask]):
        out[n][p] += a
    return SeriesData(tuple(out))


def canary_windows(config: TrainingConfig, series, position, n_starts: torch.Tensor):
    """Windows holding each canary (padded column pos + L_C; starts t with t ≤ col < t + L_C + L_F, t < T_n):
    (m, L_C + L_F) sequence and start tensors plus validity mask."""
    k = config.window_length
    pos = torch.as_tensor(position)[:, None]
    offs = torch.arange(k)[None]
    start = pos + config.context_length - offs
    valid = (start >= 0) & (start < n_starts[torch.as_tensor(series)][:, None])
    seq = torch.as_tensor(series)[:, None].expand(-1, k)
    return seq, torch.where(valid, start, 0), valid


def _scores(model, init_model, padded, n_starts, config, series, position):
    """(black-box loss drop, white-box minus gradient norm) per canary on its canary windows (module docstring)."""
    seq, start, valid = canary_windows(config, series, position, n_starts)
    windows = gather_windows(padded, seq, start, config.window_length)
    context, forecast = split_window(windows, config.context_length)
    flat_c = context.reshape(-1, config.context_length)
    flat_f = forecast.reshape(-1, config.forecast_length)
    with torch.no_grad():
        loss_final = (model(flat_c, flat_f).reshape(valid.shape) * valid).sum(1)
        loss_init = (init_model(flat_c, flat_f).reshape(valid.shape) * valid).sum(1)
    black = (loss_init - loss_final).numpy()
    grads = per_sample_gradients(model, context, forecast)
    summed = torch.cat([(g * valid.reshape(*valid.shape, *([1] * (g.dim() - 2)))).reshape(*valid.shape, -1).sum(1)
                        for g in grads.values()], dim=1)
    white = (-summed.norm(dim=1)).numpy()
    return black, white


def audit_model(model_name: str, config: TrainingConfig, *, data="synthetic", canaries: int, epsilon: float,
                delta: float, epochs: Optional[int] = None, seed: int = 0, device: str = "auto",
                confidence: float = 0.95, progress: bool = False, lr: float = 1e-3, spike: float = 10.0) -> dict:
    """One-run canary audit (Steinke et al. 2023) of ``model_name`` trained on ``data`` with ``config``'s batching.

    ``data``: "synthetic", a CSV / JSON-lines path, or a :class:`SeriesData`. ``epsilon`` is the
    training budget at ``delta`` under the sound accountant of :mod:`tsdp.verify.accountant`
    (event level, the canaries' relation), which the training loop feeds one event per step.
    With ``epochs`` the training runs exactly that many epochs: σ is calibrated
    (:func:`tsdp.verify.calibration.calibrate_sigma`) so that they spend at most ``epsilon``;
    without, it runs at ``config.sigma`` until the budget is spent (a budget that buys no step
    is refused, as by ``tsdp train``).
    ``epsilon = inf`` trains without clipping or noise for ``epochs``. Returns a JSON-ready
    dict with a lower bound on ε (confidence ``confidence``) per score and their AUCs.
    """
    from tsdp.verify.calibration import calibrate_sigma

    rng = np.random.default_rng(seed)
    if isinstance(data, SeriesData):
        base = data
    else:
        base = synthetic_for(config, seed=seed) if data == "synthetic" else load(data)
    if base.N != config.N:
        raise ValueError(f"data has {base.N} series but the configuration says N = {config.N} (set --N {base.N})")
    series, position, values = place_canaries(base, canaries, config, rng, spike)
    included = rng.random(canaries) < 0.5
    private = math.isfinite(epsilon)
    if not private and epochs is None:
        raise ValueError("training without noise (epsilon = inf) needs --epochs")
    if config.relation != "event" or config.w != 1:
        config = config.with_(relation="event", w=1)  # a canary changes one element
    if private and epochs is not None:
        config = config.with_(sigma=calibrate_sigma(config, epsilon, delta, epochs=epochs).sigma)
    trained = train(config, model_name, with_canaries(base, series, position, values, included),
                    epsilon=epsilon if private else None, delta=delta if private else None, epochs=epochs,
                    private=private,
                    device=device, seed=seed, progress=progress, lr=lr, n_samples=20, return_model=True)
    model = trained.pop("trained_model").cpu()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # train() builds its initial model under this seed
        init_model = make_model(model_name, config.context_length, config.forecast_length)
    full = with_canaries(base, series, position, values, np.ones(canaries, dtype=bool))
    train_part, _ = full.split(config.forecast_length)
    padded, lengths = pad_series([torch.as_tensor(s) for s in train_part.series], config.context_length)
    black, white = _scores(model, init_model, padded, lengths - config.forecast_length + 1, config, series, position)
    bounds = certify({"loss": black, "gradient": white}, included, delta, confidence)
    scores, lower = bounds["scores"], bounds["epsilon_lower"]
    return {
        "model": model_name, "canaries": canaries, "included": int(included.sum()), "epsilon_budget": epsilon,
        "epsilon_spent": trained["epsilon"], "sigma": config.sigma if private else 0.0, "delta": delta,
        "confidence": confidence, "epsilon_lower": lower,
        "violation": trained["epsilon"] is not None and lower > trained["epsilon"],
        "scores": scores, "steps": trained["steps"], "crps": trained["crps"],
        "device": str(resolve_device(device)), "seconds": trained["seconds"],
    }
