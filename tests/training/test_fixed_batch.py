"""Fixed-shape batches (training.fixed_batch): the capacity's overflow bound, the compaction, and the DP step on a
padded, masked batch against the same windows as a variable-size batch, and the training loop on both paths.

References: scipy's exact binomial tail for the Chernoff bound, ``WindowIndex.step``'s compaction for the
batches, the variable-size step (both engines, float64) for the masked one.
"""
import copy
import importlib
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from tsdp.datasets.series import synthetic_for
from tsdp.theorems.config import TrainingConfig
from tsdp.training.captured import StepPath, resolve_step_path
from tsdp.training.fixed_batch import (batch_capacity, chernoff_log_tail, fixed_capacity, mixture_capacity,
                                       poisson_capacity)
from tsdp.training.models import MODELS, make_model
from tsdp.training.samplers import WindowIndex, make_sampler, n_starts_of
from tsdp.training.step import apply_gradient, private_gradient
from tsdp.training.options import Budget, Evaluation, Loop
from tsdp.training.train import train
from tsdp.training.windows import gather_windows, pad_series, split_window

POISSON = TrainingConfig(N=12, L=40, context_length=8, forecast_length=4, batch_size=6, instances=2, sigma=1.0,
                         top="wor", bottom="poisson")


@settings(max_examples=60)
@given(n=st.integers(1, 400), p=st.floats(0.001, 0.9), k=st.integers(0, 400))
def test_chernoff_bound_is_above_the_exact_binomial_tail(n, p, k):
    """exp(chernoff_log_tail(np, a)) ≥ P(Binomial(n, p) ≥ a): an upper bound, as the capacity needs."""
    exact = stats.binom.sf(k - 1, n, p)  # P(S ≥ k)
    assert math.exp(chernoff_log_tail(n * p, k)) >= exact * (1 - 1e-9)


@pytest.mark.parametrize("mean,slots,tail", [(6, 100, 1e-12), (256, 10_000, 1e-12), (40, 45, 1e-12),
                                             (3.5, 1000, 1e-6), (0, 10, 1e-12)])
def test_capacity_overflows_at_most_tail_and_is_the_least_certified(mean, slots, tail):
    """P(S > K) ≤ tail for the binomial of that mean over the slots (exact, scipy), K ≤ slots, and K - 1 is not
    certified by the bound (the least K it gives), unless K is the whole batch."""
    k = poisson_capacity(mean, slots, tail)
    assert k <= slots
    if mean > 0:
        assert stats.binom.sf(k, slots, mean / slots) <= tail
    if 0 < k < slots:
        assert chernoff_log_tail(mean, k) > math.log(tail)


def _exact_size_tails(config, n_starts):
    """P(a step holds more than k windows) for every k, under ``config``'s Poisson top and Poisson bottom levels,
    exactly: the step's size is Σ_n B_n X_n, B_n ~ Bernoulli(N'/N) (the sequence sampled) and X_n ~ Binomial(T_n,
    min(λ/T_n, 1)) (its windows), each term's law convolved in float64 (scipy's binomial pmf)."""
    q = config.sequences_per_step / config.N
    pmf = np.ones(1)
    for t in n_starts:
        term = q * stats.binom.pmf(np.arange(t + 1), t, min(config.instances / t, 1.0))
        term[0] += 1 - q
        pmf = np.convolve(pmf, term)
    return pmf[::-1].cumsum()[::-1][1:]  # [k]: P(size > k)


@pytest.mark.parametrize("n,lam,length", [(200, 16, 100), (100, 8, 200), (40, 4, 60), (12, 2, 40), (6, 3, 30)])
def test_poisson_top_and_bottom_capacity_overflows_at_most_its_tail(n, lam, length):
    """Under a Poisson top level with a Poisson bottom level a step's windows are no sum of independent Bernoulli
    variables (a sampled sequence brings all its windows' draws at once), so the capacity must bound the tail of the
    true law: P(size > K) ≤ 1e-12 against the exact law (:func:`_exact_size_tails`), and K within 10% of the least
    K that holds (measured: 2-8% above it). N' = N / 20 sequences per step (1 for N = 12; every sequence, rate 1,
    for N = 6), λ up to 16: the mixture's tail is far heavier than a binomial's of the same mean (the bound of the
    mean alone gave K with P(size > K) up to 0.99)."""
    n_prime = n if n < 12 else max(1, n // 20)
    config = TrainingConfig(N=n, L=length, context_length=4, forecast_length=2, batch_size=lam * n_prime,
                            instances=lam, sigma=1.0, top="poisson", bottom="poisson")
    n_starts = n_starts_of(config).tolist()
    k = batch_capacity(config, n_starts)
    tails = _exact_size_tails(config, n_starts)
    assert k <= sum(n_starts) and tails[k] <= 1e-12
    assert k <= 1.1 * int(np.argmax(tails <= 1e-12))


def test_capacity_refuses_bad_input():
    for kw in ({"tail": 0.0}, {"tail": 1.0}, {"mean": -1.0}, {"slots": 0}):
        args = {"mean": 2.0, "slots": 10, "tail": 1e-12, **kw}
        with pytest.raises(ValueError, match="tail"):
            poisson_capacity(**args)
    for rate, tail in ((0.0, 1e-12), (1.5, 1e-12), (0.5, 1.0)):
        with pytest.raises(ValueError, match="rate"):
            mixture_capacity(rate, [10, 12], 2, tail)
    with pytest.raises(ValueError, match="capacity"):
        fixed_capacity(WindowIndex(*(torch.zeros(1, 2, dtype=torch.long),) * 2, torch.ones(1, 2, dtype=torch.bool)), 0)


def test_capacity_of_each_scheme():
    """Fixed-size schemes: their slots; Poisson: the certified capacity of the step's mean N'·λ."""
    n_starts = [37] * POISSON.N
    for top in ("deterministic", "shuffle", "wor"):
        assert batch_capacity(POISSON.with_(top=top, bottom="wr"), n_starts) == 3 * 2
    assert batch_capacity(POISSON.with_(top="pooled", bottom="wr"), n_starts) == 6
    assert batch_capacity(POISSON, n_starts) == poisson_capacity(6, 3 * 37)
    assert batch_capacity(POISSON.with_(top="poisson", bottom="wr"), n_starts) == 2 * poisson_capacity(3, 12)


@settings(max_examples=40)
@given(steps=st.integers(1, 5), slots=st.integers(1, 30), capacity=st.integers(1, 35), seed=st.integers(0, 10**6))
def test_fixed_capacity_keeps_each_steps_windows_in_order(steps, slots, capacity, seed):
    """The first min(size, K) slots are the step's compacted windows (WindowIndex.step), the rest masked out;
    the sizes and the overflow flag are the step's own."""
    g = torch.Generator().manual_seed(seed)
    index = WindowIndex(torch.randint(0, 9, (steps, slots), generator=g), torch.randint(0, 9, (steps, slots), generator=g),
                        torch.rand(steps, slots, generator=g) < 0.5)
    fixed = fixed_capacity(index, capacity)
    assert fixed.seq.shape == fixed.start.shape == fixed.mask.shape == (steps, capacity)
    for i in range(steps):
        one = index.step(i)
        size = one.seq.shape[1]
        kept = min(size, capacity)
        assert int(fixed.sizes[i]) == size and bool(fixed.overflow[i]) == (size > capacity)
        assert torch.equal(fixed.seq[i, :kept], one.seq[0, :kept]) and torch.equal(fixed.start[i, :kept], one.start[0, :kept])
        assert fixed.mask[i, :kept].all() and not fixed.mask[i, kept:].any()


def _batches(config, seed, dtype=torch.float64):
    """The variable-size and the fixed-capacity batches of a Poisson step at the same draws."""
    data = synthetic_for(config, seed=1)
    padded, _ = pad_series([torch.as_tensor(s) for s in data.series], config.context_length, 0.0)
    padded = padded.to(dtype)
    sampler = make_sampler(config, data.lengths)
    index = sampler.sample(4, torch.Generator().manual_seed(seed))
    capacity = batch_capacity(config, n_starts_of(config, data.lengths).tolist())
    fixed = fixed_capacity(index, capacity)
    assert not fixed.overflow.any()
    out = []
    for i in range(4):
        one = index.step(i)
        small = split_window(gather_windows(padded, one.seq[0], one.start[0], config.window_length),
                             config.context_length)
        large = split_window(gather_windows(padded, fixed.seq[i], fixed.start[i], config.window_length),
                             config.context_length)
        out.append((small, large, fixed.mask[i]))
    return out


SLOW_STEPS = {("deepar", "factored"), ("deepar", "vmap"), ("itransformer", "vmap")}


@pytest.mark.parametrize("name,engine", [pytest.param(n, e, marks=pytest.mark.slow) if (n, e) in SLOW_STEPS else (n, e)
                                         for n in sorted(MODELS) for e in ("factored", "vmap")])
def test_masked_fixed_batch_gives_the_variable_size_step(name, engine):
    """A Poisson step's padded, masked batch of the capacity gives the same noisy gradient and SGD update as the
    variable-size batch of its sampled windows, at the same generator state (float64, 1e-12)."""
    steps = _batches(POISSON, seed=3)
    torch.manual_seed(0)
    model = make_model(name, POISSON.context_length, POISSON.forecast_length).double()
    for (small_c, small_f), (large_c, large_f), mask in steps[:2]:
        assert large_c.shape[0] > small_c.shape[0] == int(mask.sum())
        kw = dict(clip=0.5, sigma=1.0, batch_size=POISSON.batch_size, engine=engine)
        want = private_gradient(model, small_c, small_f, generator=torch.Generator().manual_seed(7), **kw)
        got = private_gradient(model, large_c, large_f, mask=mask, generator=torch.Generator().manual_seed(7), **kw)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-12, atol=1e-12)
        a, b = copy.deepcopy(model), copy.deepcopy(model)
        apply_gradient(a, torch.optim.SGD(a.parameters(), lr=0.1), want)
        apply_gradient(b, torch.optim.SGD(b.parameters(), lr=0.1), got)
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(q, p, rtol=1e-12, atol=1e-12)


def test_padding_slots_contribute_exactly_zero():
    """Whatever finite windows the padding slots hold, the clipped sum is the same to the last bit."""
    (_, (c, f), mask), *_ = _batches(POISSON, seed=5)
    torch.manual_seed(0)
    model = make_model("simple-ff", POISSON.context_length, POISSON.forecast_length).double()
    other_c, other_f = c.clone(), f.clone()
    other_c[~mask] = 1e6 * torch.randn_like(other_c[~mask])
    other_f[~mask] = -3e5
    kw = dict(clip=1.0, sigma=0.0, batch_size=6, generator=None, mask=mask)
    a = private_gradient(model, c, f, **kw)
    b = private_gradient(model, other_c, other_f, **kw)
    assert all(torch.equal(a[k], b[k]) for k in a)


def _run(path, config, **kw):
    data = synthetic_for(config, seed=2)
    return train(config, "simple-ff", data, budget=Budget(steps=6, delta=1e-5, discretization=1e-3),
                 loop=Loop(step_path=path), evaluation=Evaluation(n_samples=20), device="cpu", progress=False, seed=4,
                 **kw)


def test_training_on_fixed_batches_is_the_eager_run(one_thread):
    """Without augmentation the fixed-shape path draws what the eager path draws: the same steps, ε and CRPS (to
    float32 rounding); its capacity and its overflow count (0) are reported."""
    eager, fixed = _run("eager", POISSON), _run("fixed", POISSON)
    assert (eager.steps, eager.epsilon, eager.batch_capacity, eager.overflow_steps) == (6, fixed.epsilon, None, 0)
    assert fixed.batch_capacity == batch_capacity(POISSON, [37] * POISSON.N) and fixed.overflow_steps == 0
    assert fixed.crps == pytest.approx(eager.crps, rel=1e-4)
    assert fixed.as_dict()["batch_capacity"] == fixed.batch_capacity


def test_overflowing_steps_run_whole_and_are_counted(one_thread, monkeypatch):
    """A capacity below the steps' sizes: those steps run as variable-size steps (none of their windows dropped),
    the count is reported, and the run is still the eager one."""
    monkeypatch.setattr(importlib.import_module("tsdp.training.loop"), "batch_capacity", lambda config, n_starts: 3)
    eager, fixed = _run("eager", POISSON), _run("fixed", POISSON)
    assert fixed.batch_capacity == 3 and 0 < fixed.overflow_steps <= 6
    assert fixed.crps == pytest.approx(eager.crps, rel=1e-4)


def test_step_path_choice():
    assert resolve_step_path("auto", torch.device("cpu")) == StepPath.EAGER
    assert resolve_step_path("auto", torch.device("cuda")) == StepPath.CAPTURED
    assert resolve_step_path("fixed", torch.device("cuda")) == StepPath.FIXED
    with pytest.raises(Exception, match="step_path"):
        resolve_step_path("graph", torch.device("cpu"))


def test_step_path_is_checked_first():
    with pytest.raises(Exception, match="step_path"):
        _run("fast", POISSON)
