"""The DataLoader batching of tsdp.training.batch_sampler: the same draws and law as training.samplers (Algorithms 3-6).

Statistical checks are two-sided z tests on binomial counts (normal approximation, counts ≥
10^3) or chi-square tests, each at false-failure rate α = 1e-4, fixed seeds. Window membership
and window contents are computed here from Algorithm 4's index formulas on the raw series,
not from the library's cropping code.
"""
import math

import numpy as np
import pytest
import torch
from scipy import stats
from torch.utils.data import DataLoader

from tsdp.training.batch_sampler import BiLevelBatchSampler, WindowDataset, batches_for_steps, fit_lengths
from tsdp.training.samplers import make_sampler
from tsdp.theorems.config import ConfigError, TrainingConfig

ALPHA = 1e-4
Z = stats.norm.isf(ALPHA / 2)


def assert_binomial(count, n, p):
    """Two-sided z test of count ~ Binomial(n, p) at false-failure rate ALPHA."""
    z = (count - n * p) / math.sqrt(n * p * (1 - p))
    assert abs(z) < Z, f"count {count} of {n}, expected rate {p}, z = {z:.2f}"


def series_of(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=n) + 10 * i for i, n in enumerate(lengths)]


def loader_of(series, config, seed):
    ds = WindowDataset(series, config)
    return DataLoader(ds, batch_sampler=BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(seed)),
                      collate_fn=ds.collate)


def keys_of(sampler, epochs):
    return [batch for _ in range(epochs) for batch in sampler]


@pytest.mark.parametrize("top", ["deterministic", "shuffle", "wor", "poisson", "pooled"])
@pytest.mark.parametrize("bottom", ["wr", "poisson"])
def test_batches_are_the_internal_samplers_draws(top, bottom):
    """Each epoch of the batch sampler is make_sampler(config).sample(steps_per_epoch, g) on the same generator."""
    lengths = (9, 14, 7, 12, 10, 8)
    cfg = fit_lengths(TrainingConfig(context_length=2, forecast_length=2, batch_size=4, instances=2, top=top,
                                     bottom=bottom), series_of(lengths))
    ds = WindowDataset(series_of(lengths), cfg)
    sampler = BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(3))
    internal, g = make_sampler(cfg, lengths), torch.Generator().manual_seed(3)
    assert len(sampler) == internal.steps_per_epoch
    for _ in range(3):
        got = list(sampler)
        idx = internal.sample(internal.steps_per_epoch, g)
        want = [list(zip(idx.seq[i][idx.mask[i]].tolist(), idx.start[i][idx.mask[i]].tolist()))
                for i in range(idx.n_steps)]
        assert got == want


@pytest.mark.parametrize("top", ["deterministic", "shuffle"])
def test_a_pass_that_stops_early_leaves_the_rest_of_its_epoch_to_the_next_pass(top):
    """N = 10, Λ = 4 (3 steps an epoch): a pass broken off after 1 batch, then a pass (the epoch's other 2 steps),
    then two whole passes give the batches of three uninterrupted epochs on the same generator; the first two passes
    cover every series once (one epoch, as the accountant counts 3 steps)."""
    cfg = TrainingConfig(N=10, L=12, context_length=2, forecast_length=2, batch_size=4, top=top)
    ds = WindowDataset(series_of([12] * 10), cfg)
    broken = BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(4))
    got = []
    for batch in broken:
        got.append(batch)
        break
    got += list(broken)
    assert len(got) == 3 and sorted(n for batch in got for n, _ in batch) == list(range(10))
    got += list(broken) + list(broken)
    assert got == keys_of(BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(4)), 3)


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 4, 7])
def test_batches_for_steps_are_the_first_steps_of_the_epochs_and_fetch_no_more(steps):
    """N = 10, Λ = 4 (3 steps an epoch, deterministic order): ``steps`` batches are the first ``steps`` of three
    uninterrupted epochs on the same generator, and the sampler hands out exactly them (none fetched and dropped)."""
    cfg = TrainingConfig(N=10, L=12, context_length=2, forecast_length=2, batch_size=4, top="deterministic")
    ds = WindowDataset(series_of([12] * 10), cfg)
    sampler = BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(4))
    got = list(batches_for_steps(sampler, steps))
    assert got == keys_of(BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(4)), 3)[:steps]
    assert sampler.batches_handed_out == steps


def test_batches_for_steps_refuse_a_loader_without_batches():
    with pytest.raises(ValueError, match="no batch"):
        list(batches_for_steps([], 1))


def test_wor_wr_element_inclusion_through_the_batch_sampler():
    """WOR top + WR bottom, λ = 1 (N = 20, L = 20, L_C = 2, L_F = 1, Λ = 4): element 10 of series 7 is in a step's
    batch w.p. ρ r = 0.2 · 0.15, in the forecast part w.p. ρ r φ (φ = 1/3); 10^5 steps, three z tests at
    α = 1e-4."""
    cfg = TrainingConfig(N=20, L=20, context_length=2, forecast_length=1, batch_size=4, instances=1)
    sampler = BiLevelBatchSampler(WindowDataset(series_of([20] * 20), cfg), generator=torch.Generator().manual_seed(1))
    pos = cfg.context_length + 10 - 1  # padded position of element 10 (1-based)
    n_steps, hit, hit_f = 0, 0, 0
    while n_steps < 100_000:
        for batch in sampler:
            offsets = [pos - t for n, t in batch if n == 7]
            inside = [o for o in offsets if 0 <= o < cfg.window_length]
            assert len(offsets) <= 1
            hit += len(inside)
            hit_f += sum(o >= cfg.context_length for o in inside)
            n_steps += 1
    rho, r, phi = float(cfg.rho), float(cfg.r), float(cfg.phi)
    assert_binomial(hit, n_steps, rho * r)
    assert_binomial(hit_f, n_steps, rho * r * phi)
    assert_binomial(hit - hit_f, n_steps, rho * r * (1 - phi))


def test_poisson_poisson_window_rate_through_the_batch_sampler():
    """Top and bottom Poisson (N = 10, L = 12, L_C = 2, L_F = 3, Λ = 6, λ = 2): window (4, 6) in a step w.p.
    ρ q = 0.3 · 0.2 (z test at α = 1e-4 on 6·10^4 steps); starts stay below T = 10."""
    cfg = TrainingConfig(N=10, L=12, context_length=2, forecast_length=3, batch_size=6, instances=2,
                         top="poisson", bottom="poisson")
    sampler = BiLevelBatchSampler(WindowDataset(series_of([12] * 10), cfg), generator=torch.Generator().manual_seed(5))
    n_steps, count, max_start = 0, 0, 0
    while n_steps < 60_000:
        for batch in sampler:
            count += (4, 6) in batch
            max_start = max([max_start] + [t for _, t in batch])
            n_steps += 1
    assert max_start == cfg.T - 1
    assert_binomial(count, n_steps, float(cfg.rho) * float(cfg.q))


def test_wr_starts_uniform_with_variable_lengths_through_the_loader_keys():
    """Algorithm 4 with lengths 6, 18, 3 (L_F = 2, T_n = 5, 17, 2), deterministic top level: starts uniform on
    {0, ..., T_n - 1} (chi-square at α = 1e-4 per series, 20 000 epochs)."""
    lengths = (6, 18, 3)
    cfg = fit_lengths(TrainingConfig(context_length=1, forecast_length=2, batch_size=3, instances=3,
                                     top="deterministic"), series_of(lengths))
    sampler = BiLevelBatchSampler(WindowDataset(series_of(lengths), cfg), generator=torch.Generator().manual_seed(2))
    starts = {n: [] for n in range(3)}
    for batch in keys_of(sampler, 20_000):
        for n, t in batch:
            starts[n].append(t)
    for n, length in enumerate(lengths):
        t_n = length - 2 + 1
        counts = np.bincount(starts[n], minlength=t_n)
        assert len(counts) == t_n and stats.chisquare(counts).pvalue > ALPHA


@pytest.mark.parametrize("top", ["deterministic", "shuffle"])
def test_one_epoch_touches_every_series_once_with_lambda_windows(top):
    """Deterministic / shuffled iteration: one DataLoader epoch holds every series in exactly one step, with λ = 2
    windows each (WR), ceil(N / N') = ceil(7 / 3) = 3 steps; deterministic in order 0..N-1; contents equal the
    front-padded series cropped by hand."""
    lengths = (9, 14, 7, 12, 10, 8, 11)
    series = series_of(lengths)
    cfg = fit_lengths(TrainingConfig(context_length=3, forecast_length=2, batch_size=6, instances=2, top=top), series)
    ds = WindowDataset(series, cfg)
    sampler = BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(4))
    loader = DataLoader(ds, batch_sampler=sampler, collate_fn=ds.collate)
    for _ in range(2):
        batches = list(sampler)
        assert len(batches) == len(loader) == 3
        owners = [sorted({n for n, _ in b}) for b in batches]
        touched = sorted(n for o in owners for n in o)
        assert touched == list(range(7))
        assert all(sum(n == m for n, _ in b) == 2 for b in batches for m in {n for n, _ in b})
        if top == "deterministic":
            assert owners == [[0, 1, 2], [3, 4, 5], [6]]
    loader_keys = BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(4))
    for keys, (context, forecast) in zip(loader_keys, DataLoader(ds, batch_sampler=BiLevelBatchSampler(
            ds, generator=torch.Generator().manual_seed(4)), collate_fn=ds.collate)):
        assert context.shape == (len(keys), 3) and forecast.shape == (len(keys), 2)
        for (n, t), c, f in zip(keys, context, forecast):
            padded = np.concatenate([np.zeros(3), series[n]])
            assert np.allclose(c.numpy(), padded[t : t + 3], atol=1e-5)
            assert np.allclose(f.numpy(), padded[t + 3 : t + 5], atol=1e-5)
            assert t + 5 <= len(padded)


def test_wor_and_pooled_steps_touch_the_scheme_s_units():
    """WOR: every step N' = 3 distinct series with λ = 2 windows each, floor(N λ / Λ) steps; pooled: Λ distinct
    windows per step."""
    series = series_of([12] * 8)
    cfg = TrainingConfig(N=8, L=12, context_length=2, forecast_length=1, batch_size=6, instances=2)
    batches = keys_of(BiLevelBatchSampler(WindowDataset(series, cfg), generator=torch.Generator().manual_seed(6)), 50)
    assert len(batches) == 50 * cfg.compositions_per_epoch
    for b in batches:
        owners = [n for n, _ in b]
        assert len(set(owners)) == 3 and all(owners.count(n) == 2 for n in set(owners))
    pooled = cfg.with_(top="pooled")
    for b in keys_of(BiLevelBatchSampler(WindowDataset(series, pooled), generator=torch.Generator().manual_seed(6)), 5):
        assert len(b) == 6 and len(set(b)) == 6


def test_empty_poisson_step_collates_to_zero_rows():
    """Poisson top level with ρ = 1/50: most steps are empty; the loader yields (0, L_C), (0, L_F) tensors then."""
    cfg = TrainingConfig(N=50, L=5, context_length=2, forecast_length=1, batch_size=1, top="poisson")
    shapes = [tuple(c.shape) for c, _ in loader_of(series_of([5] * 50), cfg, seed=0)]
    assert (0, 2) in shapes and any(s[0] > 0 for s in shapes)


def test_refusals_name_the_problem():
    """Wrong N, a series shorter than L, NaN values, and an integer index (another sampler) are refused."""
    cfg = TrainingConfig(N=3, L=10, batch_size=2)
    with pytest.raises(ConfigError, match="N"):
        WindowDataset(series_of([10] * 2), cfg)
    with pytest.raises(ConfigError, match="shortest series has length 8"):
        WindowDataset(series_of([10, 8, 10]), cfg)
    with pytest.raises(ConfigError, match="series 1"):
        WindowDataset([np.ones(10), np.r_[np.ones(9), np.nan], np.ones(10)], cfg)
    ds = WindowDataset(series_of([10] * 3), cfg)
    with pytest.raises(TypeError, match="poisson_sampling"):
        ds[4]
    with pytest.raises(IndexError):
        ds[(0, 10)]
    assert len(ds) == 3 * cfg.T


def test_augmentation_adds_fresh_gaussian_noise():
    """σ_C = 0.5, σ_F = 2, v = 1 (Theorem G.1's augmentation): the crop differences are N(0, σ²) (chi-square
    variance tests, two-sided, α = 1e-4 each; 4000 context and 2000 forecast values)."""
    cfg = TrainingConfig(N=1, L=2001, context_length=2, forecast_length=1, batch_size=1, sigma_context=0.5,
                         sigma_forecast=2.0)
    series = series_of([2001])
    ds = WindowDataset(series, cfg, generator=torch.Generator().manual_seed(9))
    keys = [(0, t) for t in range(2000)]
    context, forecast = ds.__getitems__(keys)
    clean = WindowDataset(series, cfg.with_(sigma_context=0.0, sigma_forecast=0.0)).__getitems__(keys)
    for noisy, exact, s in ((context, clean[0], 0.5), (forecast, clean[1], 2.0)):
        d = (noisy - exact).double().flatten().numpy()
        stat = (d ** 2).sum() / s ** 2
        p = stats.chi2.cdf(stat, len(d))
        assert ALPHA / 2 < p < 1 - ALPHA / 2


def test_augmentation_noise_is_drawn_from_a_fresh_seed_unless_a_generator_is_given():
    """The accountant credits the augmentation noise σ_C, σ_F (amplification by augmentation) only while the noise is
    secret: with a fixed default seed anyone could redraw it and subtract it from every window. Two datasets without
    a generator draw other noise (fresh 63-bit seeds collide with probability 2^-63); two with generators of one seed
    draw the same."""
    cfg = TrainingConfig(N=1, L=40, context_length=2, forecast_length=1, batch_size=1, sigma_context=0.5,
                         sigma_forecast=2.0)
    series = series_of([40])
    keys = [(0, t) for t in range(40)]
    first, second = (WindowDataset(series, cfg).__getitems__(keys) for _ in range(2))
    assert not torch.equal(first[0], second[0]) and not torch.equal(first[1], second[1])
    seeded = [WindowDataset(series, cfg, generator=torch.Generator().manual_seed(3)).__getitems__(keys)
              for _ in range(2)]
    assert torch.equal(seeded[0][0], seeded[1][0]) and torch.equal(seeded[0][1], seeded[1][1])


def test_the_sampler_draws_from_a_fresh_seed_even_after_torch_manual_seed():
    """The accountant credits the subsampling only while the batches are secret; scripts seed torch's global generator
    for a reproducible model (``torch.manual_seed(0)``, the README's example), and a sampler seeded from it would
    draw batches anyone can redraw, even when the noise is drawn securely (Opacus's ``secure_mode``). Two samplers
    made after the same ``torch.manual_seed`` draw other batches (two WOR epochs of 5 of 40 series, 8 steps each:
    equal by chance with probability below 1e-40); two with generators of one seed draw the same."""
    cfg = TrainingConfig(N=40, L=10, context_length=2, forecast_length=1, batch_size=5)
    ds = WindowDataset(series_of([10] * 40), cfg)

    def batches(**generator):
        sampler = BiLevelBatchSampler(ds, **generator)
        return [key for _ in range(2) for batch in sampler for key in batch]

    draws = []
    for _ in range(2):
        torch.manual_seed(0)
        draws.append(batches())
    assert draws[0] != draws[1]
    assert batches(generator=torch.Generator().manual_seed(5)) == batches(generator=torch.Generator().manual_seed(5))
