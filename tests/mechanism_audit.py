"""The tests' Monte Carlo audit of the inference mechanism (paper Appendix H) through its real torch path.

The worst case of T15's proof: x = 0 (L_C steps), x' = v on the first m = min(w, L_C) steps.
Both series go through :func:`tsdp.attacks.inference.mechanism.private_context` (subsample, noise,
impute) ``trials`` times each; the adversary sees only the released context. From it the
adversary reads the drop pattern (imputed steps all equal the mean of the others; kept
steps are a.s. distinct) except when every step shows one value (at most one kept step:
the value is 0 when none is kept, else the kept position is hidden), and computes the
exact log-likelihood ratio of the release (:func:`log_likelihood_ratio`), the most powerful
statistic. :func:`epsilon_lower_bound` turns the two samples into
a certified **lower** bound on ε (held-out split, the Clopper-Pearson union test at its exact
level); it can never exceed the mechanism's true ε, hence T15's sound ε, except with
probability 1 - confidence.

:func:`goodness_of_fit` checks the output law against the mechanism T15 is proved for
(kept count ~ Binom(L_C, r); kept values N(x_t, σ²); imputed value = mean of the kept ones);
an imputation that leaks (e.g. the true value) fails it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Dict, Tuple

import numpy as np
import torch
from scipy import special, stats

from tsdp.verify.json_data import Record
from tsdp.theorems.bounds.inference import InferenceConfig

from tsdp.attacks.montecarlo.statistics import EQUAL_SPLIT, TestBound, counts_bound, epsilon_at_levels, error_split

from tsdp.attacks.inference.mechanism import Imputation, mean_impute, private_context

_TOL = 1e-11  # relative tolerance of "equals the mean of the other steps" (float64 rounding is ~1e-15)


def _split(x: np.ndarray, select_fraction: float) -> Tuple[np.ndarray, np.ndarray]:
    """(selection, held-out) halves of a sample, by position (trials are i.i.d.)."""
    m = int(round(len(x) * select_fraction))
    return x[:m], x[m:]


def _candidates(sel_p: np.ndarray, sel_q: np.ndarray, n_grid: int = 4000) -> np.ndarray:
    """Thresholds: quantiles of the pooled selection sample plus geometric order statistics of both tails."""
    pooled = np.concatenate([sel_p, sel_q])
    qs = np.quantile(pooled, np.linspace(0, 1, n_grid))
    tails = []
    for x in (np.sort(sel_p), np.sort(sel_q)):
        ranks = np.unique(np.geomspace(1, len(x), 400).astype(int)) - 1
        tails += [x[ranks], x[::-1][ranks]]
    return np.unique(np.concatenate([qs, *tails]))


def _rates(pos: np.ndarray, neg: np.ndarray, t: np.ndarray, upper_side: bool):
    """Counts of S = {s > t} (upper_side) or {s ≤ t} in the 'positive' and 'negative' samples."""
    sp, sn = np.sort(pos), np.sort(neg)
    if upper_side:
        return len(sp) - np.searchsorted(sp, t, "right"), len(sn) - np.searchsorted(sn, t, "right")
    return np.searchsorted(sp, t, "right"), np.searchsorted(sn, t, "right")



def epsilon_lower_bound(stat_p: np.ndarray, stat_q: np.ndarray, delta: float, confidence: float = 0.95,
                        select_fraction: float = 0.5) -> TestBound:
    """ε lower bound at δ, holding with probability ≥ ``confidence`` (lower-bound direction).

    Both adjacency directions: S = {stat > t} with P positive (ε ≥ log((P(S) - δ)/Q(S))) and
    S = {stat ≤ t} with Q positive. The side and threshold maximise the union bound on the
    selection split; the held-out split then gives the reported value
    (:func:`tsdp.attacks.montecarlo.statistics.certified_test_epsilon`).
    ``stat`` is the log-likelihood ratio log p/q (or any statistic larger under P).

    Args:
        stat_p: The statistic in world P.
        stat_q: The statistic in world Q.
        delta: The δ of the bound.
        confidence: The probability with which it holds.
        select_fraction: The selection share.

    Returns:
        The chosen test and its held-out bound.
    """
    a = error_split(confidence)
    sel_p, out_p = _split(stat_p, select_fraction)
    sel_q, out_q = _split(stat_q, select_fraction)
    t = _candidates(sel_p, sel_q)
    best = (-1.0, None, None)
    for side, pos, neg in (("upper", sel_p, sel_q), ("lower", sel_q, sel_p)):
        tp, fp = _rates(pos, neg, t, side == "upper")
        eps = epsilon_at_levels(tp, fp, len(pos), len(neg), delta, *a)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(t[i]), side)
    _, thr, side = best
    pos, neg = (out_p, out_q) if side == "upper" else (out_q, out_p)
    tp, fp = _rates(pos, neg, np.array([thr]), side == "upper")
    return counts_bound(int(tp[0]), int(fp[0]), len(pos), len(neg), thr, side, delta, confidence, EQUAL_SPLIT)


def worst_case_pair(config: InferenceConfig, device="cpu"):
    """(x, x') of T15's construction as float64 tensors (L_C,): 0 and v on the first m steps.

    Args:
        config: The inference mechanism's configuration.
        device: The torch device.

    Returns:
        (x, x').
    """
    x = torch.zeros(config.context_length, dtype=torch.float64, device=device)
    x_prime = x.clone()
    x_prime[: config.m] = float(config.v)
    return x, x_prime


def observed_pattern(y: torch.Tensor):
    """The adversary's reading of released contexts y (n, L): (kept mask, constant-row flag).

    Dropped steps: those whose value equals the mean of the steps with a different value
    (to 1e-11 relative). Rows with one value throughout are flagged ``constant`` (at most one
    step kept; the kept mask is then all False if the value is exactly 0, else unknown and
    returned all False too).

    Args:
        y: (n, L) released contexts.

    Returns:
        (kept mask, constant-row flag).
    """
    n, L = y.shape
    eq = y[:, :, None] == y[:, None, :]
    same = eq.sum(-1)  # steps sharing y_t's value
    others = L - same
    total = y.sum(-1, keepdim=True)
    mean_others = (total - same * y) / others.clamp(min=1)
    scale = 1 + y.abs().amax(-1, keepdim=True)
    dropped = (others > 0) & ((mean_others - y).abs() <= _TOL * scale)
    constant = same[:, 0] == L
    kept = ~dropped & ~constant[:, None]
    return kept, constant


def log_likelihood_ratio(y: torch.Tensor, config: InferenceConfig) -> torch.Tensor:
    """log dP/dQ of the released contexts y (n, L) for P = release of x', Q = release of x (worst-case pair).

    Pattern read off: Σ over kept changed steps of (v y_t - v²/2)/σ². One value c ≠ 0 throughout
    (one kept step, position hidden, uniform): log((L-m)/L + (m/L) exp((v c - v²/2)/σ²)).
    All zeros (nothing kept): 0.

    Args:
        y: (n, L) released contexts.
        config: The inference mechanism's configuration.

    Returns:
        (n,) log dP/dQ.
    """
    L, m, v, s2 = config.context_length, config.m, float(config.v), float(config.sigma) ** 2
    kept, constant = observed_pattern(y)
    changed = torch.zeros(L, dtype=torch.bool, device=y.device)
    changed[:m] = True
    per_step = (v * y - v * v / 2) / s2
    identified = torch.where(kept & changed, per_step, torch.zeros_like(y)).sum(-1)
    c = y[:, 0]
    hidden = torch.logaddexp(torch.full_like(c, np.log((L - m) / L) if L > m else -np.inf),
                             np.log(m / L) + (v * c - v * v / 2) / s2)
    return torch.where(constant, torch.where(c == 0, torch.zeros_like(c), hidden), identified)


def _runs(config: InferenceConfig, trials: int, seed: int, device: str, impute: Imputation, chunk: int, consume):
    """Run both worlds ``trials`` times in chunks; ``consume(world, x, y)`` sees every chunk (world 'P' or 'Q')."""
    x, x_prime = worst_case_pair(config, device)
    gen = torch.Generator(device=device).manual_seed(seed)
    for world, base in (("P", x_prime), ("Q", x)):
        done = 0
        while done < trials:
            n = min(chunk, trials - done)
            y, _ = private_context(base.expand(n, -1), float(config.r), float(config.sigma), gen, impute)
            consume(world, base, y)
            done += n


@dataclass(frozen=True)
class InferenceAudit(Record):
    """A certified ε lower bound through the real mechanism, and the run's size and speed.

    Attributes:
        epsilon_lower: The certified ε lower bound at ``delta`` (a **lower** bound).
        delta: The δ.
        confidence: The probability with which the bound holds.
        trials: The trials per world.
        seconds: The wall seconds.
        trials_per_minute: The trials per minute.
        threshold: The test's threshold.
        side: The test's side.
        config: The inference configuration audited (its ``as_dict()`` in the JSON form).
    """

    epsilon_lower: float
    delta: float
    confidence: float
    trials: int
    seconds: float
    trials_per_minute: float
    threshold: float
    side: str
    config: InferenceConfig


def audit(config: InferenceConfig, trials: int, delta: float, *, seed: int = 0, confidence: float = 0.95,
          device: str = "cpu", impute: Imputation = mean_impute, chunk: int = 500_000) -> InferenceAudit:
    """ε lower bound at ``delta`` (holds with probability ≥ ``confidence``) for one release of ``config``.

    ``trials`` releases per world through :func:`tsdp.attacks.inference.mechanism.private_context`, the LLR
    statistic of the release, :func:`epsilon_lower_bound`.

    Args:
        config: The inference mechanism's configuration.
        trials: Releases per world.
        delta: The δ of the bound.
        seed: The seed.
        confidence: The probability with which the bound holds.
        device: The torch device.
        impute: The imputation.
        chunk: Releases per batch.

    Returns:
        The :class:`InferenceAudit` (``epsilon_lower`` a **lower** bound on the mechanism's ε).
    """
    stats_ = {"P": [], "Q": []}
    t0 = time.perf_counter()
    _runs(config, trials, seed, device, impute, chunk,
          lambda world, _x, y: stats_[world].append(log_likelihood_ratio(y, config).cpu().numpy()))
    seconds = time.perf_counter() - t0
    p, q = np.concatenate(stats_["P"]), np.concatenate(stats_["Q"])
    tb = epsilon_lower_bound(p, q, delta, confidence)
    return InferenceAudit(epsilon_lower=tb.value, delta=delta, confidence=confidence, trials=trials,
                          seconds=seconds, trials_per_minute=2 * trials / seconds * 60, threshold=tb.threshold,
                          side=tb.side, config=config)


@dataclass(frozen=True)
class WorldFit(Record):
    """The three p-values of one world's released contexts (:func:`goodness_of_fit`; each uniform under T15's law).

    Attributes:
        count: The kept count against Binom(L_C, r) (G-test).
        residuals: The kept residuals against N(0, 1) (KS).
        imputed: The imputed values against the kept mean (KS).
    """

    count: float
    residuals: float
    imputed: float


@dataclass(frozen=True)
class MechanismFit(Record):
    """Whether the released contexts follow the law T15 is proved for (:func:`goodness_of_fit`).

    Attributes:
        pvalue: The Bonferroni p-value over the six tests (small: the mechanism is not T15's).
        tests: Per world ("P", "Q"), its three p-values.
        trials: Trials per world.
    """

    pvalue: float
    tests: Dict[str, WorldFit]
    trials: int


def goodness_of_fit(config: InferenceConfig, trials: int, *, seed: int = 0, device: str = "cpu",
                    impute: Imputation = mean_impute, chunk: int = 200_000) -> MechanismFit:
    """p-value that the released contexts follow the law T15 is proved for, in both worlds.

    Per world, three tests on the adversary's reading (:func:`observed_pattern`):
    kept count (a constant row counts 0 if its value is 0, else 1) against Binom(L_C, r),
    G-test over counts with expected ≥ 5 (the rest pooled); kept residuals (y_t - x_t)/σ against
    N(0, 1), KS; imputed value against the kept mean, (y_d - mean_K x) √|K| / σ ~ N(0, 1) for
    rows with dropped steps and |K| ≥ 1, KS. Bonferroni over the 6 p-values. Under the real
    mechanism each p-value is uniform (false-failure rate of ``pvalue < a`` at most a).

    Args:
        config: The inference mechanism's configuration.
        trials: Trials per world.
        seed: The seed.
        device: The torch device.
        impute: The imputation under test.
        chunk: Trials per batch.

    Returns:
        The :class:`MechanismFit`.
    """
    L, r, sigma = config.context_length, float(config.r), float(config.sigma)
    acc = {w: {"counts": np.zeros(L + 1), "resid": [], "imputed": []} for w in ("P", "Q")}

    def consume(world, x, y):
        kept, constant = observed_pattern(y)
        n_kept = torch.where(constant, (y[:, 0] != 0).long(), kept.sum(-1))
        acc[world]["counts"] += np.bincount(n_kept.cpu().numpy(), minlength=L + 1)
        acc[world]["resid"].append(((y - x)[kept] / sigma).cpu().numpy())
        k = kept.sum(-1)
        rows = (~constant) & (k >= 1) & (k < L)
        if rows.any():
            yk, kk = y[rows], kept[rows]
            first_dropped = (~kk).long().argmax(-1)
            imputed = yk.gather(1, first_dropped[:, None])[:, 0]
            mean_x = (x.expand_as(yk) * kk).sum(-1) / kk.sum(-1)
            acc[world]["imputed"].append(((imputed - mean_x) * kk.sum(-1).sqrt() / sigma).cpu().numpy())

    _runs(config, trials, seed, device, impute, chunk, consume)
    expected = stats.binom.pmf(np.arange(L + 1), L, r) * trials
    out = {}
    for world, a in acc.items():
        big = expected >= 5
        obs = np.append(a["counts"][big], a["counts"][~big].sum())
        exp = np.append(expected[big], expected[~big].sum())
        keep = exp > 0
        g = 2 * np.sum(special.xlogy(obs[keep], obs[keep] / exp[keep]))
        p_count = float(stats.chi2.sf(g, max(1, keep.sum() - 1)))
        resid = np.concatenate(a["resid"]) if a["resid"] else np.zeros(0)
        imp = np.concatenate(a["imputed"]) if a["imputed"] else np.zeros(0)
        p_resid = float(stats.kstest(resid, "norm").pvalue) if resid.size else 0.0
        p_imp = float(stats.kstest(imp, "norm").pvalue) if imp.size else 1.0
        out[world] = WorldFit(count=p_count, residuals=p_resid, imputed=p_imp)
    smallest = min(min(w.count, w.residuals, w.imputed) for w in out.values())
    return MechanismFit(min(1.0, 6 * smallest), out, trials)
