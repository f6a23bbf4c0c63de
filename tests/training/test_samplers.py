"""Sampler laws of Algorithms 3-6, shuffling, Poisson and the pooled baseline, tested statistically.

Every statistical check is a two-sided z test on a binomial count (normal approximation,
counts ≥ 10^3) or a chi-square test, with false-failure rate α = 1e-4 per check unless
stated; seeds are fixed, so a run is reproducible. Window membership is computed in the
tests from the index formulas of Algorithm 4 (or by cropping marked series), not from the
sampler code.
"""
import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from scipy import stats

from tsdp.training.samplers import (
    DeterministicTopLevel,
    PoissonBottomLevel,
    PoissonTopLevel,
    ShuffleTopLevel,
    TopBatch,
    WORTopLevel,
    WRBottomLevel,
    make_sampler,
)
from tsdp.training.windows import gather_windows, pad_series
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.theorems.hidden_position import in_run_probability

ALPHA = 1e-4
Z = stats.norm.isf(ALPHA / 2)  # 3.89


def gen(seed):
    return torch.Generator().manual_seed(seed)


def assert_binomial(count, n, p):
    """Two-sided z test of count ~ Binomial(n, p) at false-failure rate ALPHA."""
    z = (count - n * p) / math.sqrt(n * p * (1 - p))
    assert abs(z) < Z, f"count {count} of {n}, expected rate {p}, z = {z:.2f}"


def covering(index, element, context_length, forecast_length):
    """Masks (in window, in forecast part) for windows with 0-based padded start ``index.start``.

    Element j (1-based) sits at padded position L_C + j - 1; a window with start t holds
    positions t .. t + L_C + L_F - 1 and its forecast part is offsets ≥ L_C (Algorithm 4).
    """
    pos = context_length + element - 1
    offset = pos - index.start
    inside = (offset >= 0) & (offset < context_length + forecast_length)
    return inside, inside & (offset >= context_length)


def test_wor_wr_element_inclusion_is_rho_r_split_phi():
    """WOR top + WR bottom, λ = 1: P(element in a step's batch) = ρ r, split φ / (1 - φ) forecast / context.

    N = 20, L = 20, L_C = 2, L_F = 1: T = 20, k = 3, r = 3/20, Λ = 4 so ρ = 1/5, φ = 1/3.
    2·10^5 steps; three z tests at α = 1e-4 each (total false-failure rate ≤ 3e-4).
    """
    cfg = TrainingConfig(N=20, L=20, context_length=2, forecast_length=1, batch_size=4, instances=1, top="wor", bottom="wr")
    n = 200_000
    idx = make_sampler(cfg).sample(n, gen(1))
    inside, forecast = covering(idx, element=10, context_length=2, forecast_length=1)
    hit = (idx.seq == 7) & idx.mask & inside
    hit_f = (idx.seq == 7) & idx.mask & forecast
    per_step = hit.sum(1)
    assert int(per_step.max()) == 1  # λ = 1 and WOR: at most one window of sequence 7 per step
    rho, r, phi = float(cfg.rho), float(cfg.r), float(cfg.phi)
    assert (rho, r, phi) == (0.2, 0.15, 1 / 3)
    assert_binomial(int(per_step.sum()), n, rho * r)
    assert_binomial(int(hit_f.sum()), n, rho * r * phi)
    assert_binomial(int((hit & ~hit_f).sum()), n, rho * r * (1 - phi))


@pytest.mark.parametrize("context_length,forecast_length,L", [(1, 1, 20), (3, 1, 12), (4, 2, 20), (2, 3, 9), (5, 5, 8)])
def test_padding_window_counts(context_length, forecast_length, L):
    """Cropping all T windows of a marked series (Algorithm 4's padding): exact membership counts.

    Element 1 lies in min(T, L_C + 1) windows — that is L_C + L_F for L_F = 1, as the paper
    states; for L_F > 1 the paper's "first element is in L_C + L_F windows" does not hold,
    but the worst case over elements is still k = min(L_C + L_F, T) = config.k (attained by
    element L_F). Element j is in the forecast part of exactly min(j, L_F) windows while
    j ≤ T.
    """
    cfg = TrainingConfig(N=1, L=L, context_length=context_length, forecast_length=forecast_length, batch_size=1)
    values = torch.arange(1, L + 1, dtype=torch.float32)
    padded, _ = pad_series([values], context_length)
    starts = torch.arange(cfg.T)
    windows = gather_windows(padded, torch.zeros_like(starts), starts, cfg.window_length)
    assert windows.shape == (cfg.T, cfg.window_length)
    assert torch.equal(windows[0, :context_length], torch.zeros(context_length))  # front padding
    assert torch.equal(windows[-1, -1], values[-1])  # the last window ends at the series' end
    counts = [int((windows == j).any(1).sum()) for j in range(1, L + 1)]
    forecast_counts = [int((windows[:, context_length:] == j).any(1).sum()) for j in range(1, L + 1)]
    assert counts[0] == min(cfg.T, context_length + 1)
    if forecast_length == 1:
        assert counts[0] == min(cfg.T, context_length + forecast_length)
    assert max(counts) == cfg.k
    for j in range(1, cfg.T + 1):
        assert forecast_counts[j - 1] == min(j, forecast_length)
    assert all(int((w != 0).sum()) == len(set(w[w != 0].tolist())) for w in windows)  # no duplicate element


def test_wr_bottom_starts_uniform_variable_lengths():
    """Algorithm 4 with variable lengths: starts uniform on {0, ..., T_n - 1} (chi-square test at α = 1e-4 per series)."""
    n_starts = torch.tensor([5, 17, 1])
    top = TopBatch(torch.tensor([[0, 1, 2]]).expand(60_000, 3), torch.ones(60_000, 3, dtype=torch.bool))
    idx = WRBottomLevel(n_starts, instances=2).sample(top, gen(2))
    assert idx.seq.shape == (60_000, 6)
    for n, t in enumerate(n_starts.tolist()):
        starts = idx.start[idx.seq == n]
        assert int(starts.min()) == 0 and int(starts.max()) == t - 1
        if t > 1:
            counts = torch.bincount(starts, minlength=t).numpy()
            assert stats.chisquare(counts).pvalue > ALPHA


def test_poisson_bottom_rate_is_min_one_lambda_over_t():
    """Algorithm 6: start t of sequence n is included with rate q_n = min(1, λ/T_n), never beyond T_n.

    T = (20, 3, 8), λ = 4: q = (0.2, 1, 0.5). One z test per sequence at α = 1e-4 on 10^5 steps.
    """
    n_starts = torch.tensor([20, 3, 8])
    n = 100_000
    top = TopBatch(torch.tensor([[0, 1, 2]]).expand(n, 3), torch.ones(n, 3, dtype=torch.bool))
    idx = PoissonBottomLevel(n_starts, instances=4).sample(top, gen(3))
    assert bool((idx.start[idx.mask] < n_starts[idx.seq[idx.mask]]).all())
    assert int(((idx.seq == 1) & idx.mask).sum()) == 3 * n  # q = 1: every start, every step
    for seq, start, q in [(0, 7, 0.2), (2, 5, 0.5)]:
        assert_binomial(int(((idx.seq == seq) & (idx.start == start) & idx.mask).sum()), n, q)


def test_poisson_top_rate_rho():
    """Top-level Poisson: each sequence enters with rate ρ = N'/N (z test at α = 1e-4 on 10^5 × N draws)."""
    n = 100_000
    top = PoissonTopLevel(n_sequences=50, per_step=5, steps_per_epoch=10).sample(n, gen(4))
    assert_binomial(int(top.mask.sum()), n * 50, 0.1)
    assert_binomial(int(top.mask[:, 17].sum()), n, 0.1)


def test_poisson_top_and_bottom_end_to_end():
    """make_sampler(top=poisson, bottom=poisson): a given window is in a step w.p. ρ q (z test at α = 1e-4)."""
    cfg = TrainingConfig(N=10, L=12, context_length=2, forecast_length=3, batch_size=6, instances=2,
                         top="poisson", bottom="poisson")
    n = 200_000
    idx = make_sampler(cfg).sample(n, gen(5))
    p = float(cfg.rho) * float(cfg.q)
    assert (float(cfg.rho), float(cfg.q)) == (0.3, 0.2)
    assert_binomial(int(((idx.seq == 4) & (idx.start == 6) & idx.mask).sum()), n, p)


def test_wor_top_no_repeats_and_rate():
    """Algorithm 5: N' distinct sequences per step; a given sequence w.p. ρ = N'/N (z test at α = 1e-4)."""
    n = 100_000
    top = WORTopLevel(n_sequences=30, per_step=7, steps_per_epoch=4).sample(n, gen(6))
    assert top.seq.shape == (n, 7) and bool(top.mask.all())
    s = top.seq.sort(dim=1).values
    assert bool((s[:, 1:] != s[:, :-1]).all())
    assert_binomial(int((top.seq == 29).sum()), n, 7 / 30)


def test_wor_chunking_keeps_rows_independent(monkeypatch):
    """Drawing in chunks (peak-memory bound) gives the same law: first slot uniform (chi-square, α = 1e-4)."""
    import tsdp.training.samplers as samplers

    monkeypatch.setattr(samplers, "_KEYS_PER_CHUNK", 64)
    top = WORTopLevel(n_sequences=16, per_step=3, steps_per_epoch=5).sample(40_000, gen(7))
    assert stats.chisquare(torch.bincount(top.seq[:, 0], minlength=16).numpy()).pvalue > ALPHA


def test_top_levels_draw_53_bit_uniforms():
    """WOR, shuffled and pooled subsets are the top keys of float64 uniforms, Poisson masks a float64 uniform below
    the rate: the textbook constructions with 53 random bits, drawn from the same generator. With float32 keys (24
    bits) two of 2^16 keys tie almost surely and the top-k cut favours an index (about N / 2^24 relative excess
    inclusion), and a rate below 2^-24 is drawn as 2^-24."""
    n, size, steps = 4096, 5, 3
    ref = torch.rand(steps, n, generator=gen(11), dtype=torch.float64)
    assert bool((ref * 2**24 != torch.floor(ref * 2**24)).any())  # finer than float32's grid
    wor = WORTopLevel(n_sequences=n, per_step=size, steps_per_epoch=1).sample(steps, gen(11))
    assert torch.equal(wor.seq, ref.topk(size, dim=1).indices)
    shuffled = ShuffleTopLevel(n_sequences=n, per_step=n // 4).sample(4, gen(11))
    assert torch.equal(shuffled.seq.reshape(-1), ref[0].topk(n).indices)
    rate = 2.0**-25
    poisson = PoissonTopLevel(n_sequences=n, per_step=rate * n, steps_per_epoch=1).sample(steps, gen(11))
    assert torch.equal(poisson.mask, ref < rate)


def test_deterministic_iteration_touches_each_sequence_once_per_epoch():
    """Algorithm 3: N = 10, N' = 3 → ceil(10/3) = 4 steps per epoch, sequences in order, each exactly once."""
    top = DeterministicTopLevel(n_sequences=10, per_step=3)
    assert top.steps_per_epoch == 4
    batch = top.sample(8, gen(0))
    for epoch in range(2):
        rows = slice(4 * epoch, 4 * epoch + 4)
        touched = batch.seq[rows][batch.mask[rows]]
        assert touched.tolist() == list(range(10))
    assert batch.mask.sum(1).tolist() == [3, 3, 3, 1] * 2


def test_shuffle_once_per_epoch_and_uniform():
    """Shuffling: each sequence once per epoch; the first step holds sequence 0 w.p. N'/N (z test at α = 1e-4)."""
    top = ShuffleTopLevel(n_sequences=10, per_step=3)
    n_epochs = 30_000
    batch = top.sample(4 * n_epochs, gen(8))
    per_epoch = batch.seq.view(n_epochs, 12)[batch.mask.view(n_epochs, 12)].view(n_epochs, 10)
    assert bool((per_epoch.sort(1).values == torch.arange(10)).all())
    first_step = batch.seq[::4]
    assert_binomial(int((first_step == 0).sum()), n_epochs, 0.3)
    assert not torch.equal(per_epoch[0], per_epoch[1])


def test_shuffle_batch_of_the_changed_sequence_holds_one_other_fewer():
    """The batch sizes THEOREMS.md's "What the other sequences can signal under fixed-size shuffling" starts from:
    at the default sizes (N = 320, N' = 32) the step that holds sequence 0 holds exactly N' - 1 = 31 other sequences
    in every epoch and every other step 32, so the others' gradients could mark that step (whether a construction
    clipped to C gains from it is open there: none measured beats the silent one); the step itself is uniform over
    the 10 steps (chi-square, α = 1e-4, 20 000 epochs)."""
    top = ShuffleTopLevel(n_sequences=320, per_step=32)
    n_epochs = 20_000
    batch = top.sample(10 * n_epochs, gen(12))
    holds = ((batch.seq == 0) & batch.mask).any(1).view(n_epochs, 10)
    others = (batch.mask & (batch.seq != 0)).sum(1).view(n_epochs, 10)
    assert bool((holds.sum(1) == 1).all())
    assert bool((others == 32 - holds.long()).all())
    counts = holds.sum(0).double()
    assert stats.chisquare(counts.numpy()).pvalue > ALPHA


@pytest.mark.parametrize("config,sizes", [
    (TrainingConfig(N=10, L=5, batch_size=3, top="shuffle"), [3, 3, 3, 1]),
    (TrainingConfig(N=10, L=5, batch_size=3, top="shuffle", drop_last=True), [3, 3, 3]),
    (TrainingConfig(N=11, L=5, batch_size=6, instances=2, top="shuffle", drop_last=True), [3, 3, 3]),
], ids=["short-last-step", "drop-last", "drop-last-lambda-2"])
def test_shuffled_batch_sizes_give_the_hidden_position_laws_in_run_probability(config, sizes):
    """The shuffled sampler the loop uses (make_sampler) cuts each epoch into ``config.steps_per_epoch`` steps of the
    sizes written here by hand (N' each, a short last step of N mod N' without drop_last; floor(N λ / Λ) full steps
    with it). Every sequence is in at most one step and the permutation is uniform (tested above), so the chance that
    a given sequence ran within the first s steps is exactly Σ_{t<s} |batch t| / N: the attained law's ρ
    (theorems.hidden_position.in_run_probability) must equal it for every s, the whole epoch included (below 1 when
    the last step is dropped)."""
    sampler = make_sampler(config)
    m = config.steps_per_epoch
    assert sampler.steps_per_epoch == m == len(sizes)
    n_epochs = 50
    top = sampler.top.sample(m * n_epochs, gen(3))
    per_epoch = top.mask.view(n_epochs, m, -1).sum(-1)
    assert per_epoch.tolist() == [sizes] * n_epochs
    seqs = top.seq[top.mask].view(n_epochs, -1)
    assert bool((seqs.sort(1).values[:, 1:] > seqs.sort(1).values[:, :-1]).all())  # at most once per epoch
    for s in range(1, m + 1):
        assert in_run_probability(config, s) == pytest.approx(sum(sizes[:s]) / config.N, rel=1e-12), s


def test_deterministic_steps_per_epoch_in_make_sampler():
    """Deterministic/shuffled top level: ceil(N/N') steps per epoch; WOR/Poisson: compositions_per_epoch."""
    cfg = TrainingConfig(N=10, L=20, batch_size=6, instances=2, top="deterministic")
    assert make_sampler(cfg).steps_per_epoch == 4
    assert make_sampler(cfg.with_(top="shuffle")).steps_per_epoch == 4
    assert make_sampler(cfg.with_(top="wor")).steps_per_epoch == cfg.with_(top="wor").compositions_per_epoch == 3
    assert make_sampler(cfg.with_(top="poisson")).steps_per_epoch == 3


def test_pooled_distinct_windows_rate_lambda_over_ntot():
    """Pooled baseline: Λ distinct (seq, start) pairs per step, valid starts, each window w.p. Λ/N_tot, N_tot the
    configuration's (the weight T13 and T14 account).

    Variable lengths (T_n = 6, 11, 3, so N_tot = 20), Λ = 5; z test at α = 1e-4 on 10^5 steps.
    """
    cfg = TrainingConfig(N=3, context_length=2, forecast_length=3, batch_size=5, instances=2, top="pooled",
                         lengths=(8, 13, 5))
    sampler = make_sampler(cfg)
    assert sampler.total == 20 == cfg.n_windows_total and sampler.steps_per_epoch == 4  # T13/T14's N_tot is this pool
    n = 100_000
    idx = sampler.sample(n, gen(9))
    t_n = torch.tensor([6, 11, 3])
    assert bool((idx.start >= 0).all()) and bool((idx.start < t_n[idx.seq]).all())
    key = (idx.seq * 100 + idx.start).sort(1).values
    assert bool((key[:, 1:] != key[:, :-1]).all())
    assert_binomial(int(((idx.seq == 1) & (idx.start == 10)).sum()), n, 5 / 20)
    assert_binomial(int(((idx.seq == 2) & (idx.start == 0)).sum()), n, 5 / 20)


def test_samplers_are_reproducible_and_seed_dependent():
    """Same torch.Generator seed → identical draws; another seed → different draws."""
    cfg = TrainingConfig(N=40, L=30, context_length=4, forecast_length=2, batch_size=8, instances=2, bottom="poisson")
    s = make_sampler(cfg)
    a, b, c = s.sample(100, gen(11)), s.sample(100, gen(11)), s.sample(100, gen(12))
    assert torch.equal(a.seq, b.seq) and torch.equal(a.start, b.start) and torch.equal(a.mask, b.mask)
    assert not torch.equal(a.mask, c.mask)


def test_step_compaction():
    """WindowIndex.step(i) keeps exactly the valid windows of step i, in order."""
    cfg = TrainingConfig(N=10, L=30, context_length=4, forecast_length=2, batch_size=4, instances=2, bottom="poisson")
    idx = make_sampler(cfg).sample(5, gen(13))
    for i in range(5):
        one = idx.step(i)
        assert one.seq.shape[1] == int(idx.sizes()[i])
        assert torch.equal(one.start[0], idx.start[i][idx.mask[i]])


def test_mismatched_lengths_rejected():
    """A sampler for N sequences refuses a lengths list of another size, or series shorter than L_F."""
    cfg = TrainingConfig(N=3, L=10, forecast_length=4, batch_size=2)
    with pytest.raises(ValueError, match="3 sequences"):
        make_sampler(cfg, lengths=[10, 10])
    with pytest.raises(ValueError, match="L_F"):
        make_sampler(cfg, lengths=[10, 3, 10])


@st.composite
def _sampler_geometries(draw):
    """A configuration (its own L, or lengths) and the training series' lengths a caller hands make_sampler."""
    forecast = draw(st.integers(1, 3))
    context = draw(st.integers(0, 4))
    n = draw(st.integers(1, 3))
    instances = draw(st.integers(1, 2))
    top, bottom = draw(st.sampled_from([("wor", "wr"), ("wor", "poisson"), ("pooled", "wr")]))
    configured = draw(st.lists(st.integers(forecast, 12), min_size=n, max_size=n))
    given_lengths = draw(st.lists(st.integers(forecast, 12), min_size=n, max_size=n))
    try:
        config = TrainingConfig(N=n, lengths=configured, context_length=context, forecast_length=forecast,
                                batch_size=instances, instances=instances, top=top, bottom=bottom)
    except ConfigError:  # Λ above a pool of fewer windows
        reject()
    return config, given_lengths


@settings(max_examples=200, deadline=None)
@given(_sampler_geometries())
def test_make_sampler_draws_only_windows_its_configuration_accounts(geometry):
    """make_sampler(config, lengths) either refuses the lengths or draws from windows whose parameters the
    configuration's accounting dominates, by enumeration of every start of every series: each start's window ends
    inside its series and the last such start is drawn (T_n = L_n - L_F + 1); WR: every element's share of its
    series' windows is at most r; Poisson: at most k windows hold an element and q_n <= q; pooled: the pool is
    N_tot. Before, a series shorter than L (or, Poisson / pooled, longer than the configuration's) was sampled
    while the accountant charged r = k/T of L: ε understated."""
    config, lengths = geometry
    try:
        sampler = make_sampler(config, lengths)
    except ValueError:
        return
    n_starts = sampler.n_starts if config.top == "pooled" else sampler.bottom.n_starts
    c, f = config.context_length, config.forecast_length
    for n, length in enumerate(lengths):
        starts = [t for t in range(length + c) if t + c + f - 1 <= c + length - 1]  # windows inside the padded series
        assert int(n_starts[n]) == len(starts)  # every in-series start, none past the end
        holding = max(sum(1 for t in starts if t - c <= j <= t + f - 1) for j in range(length))
        if config.top == "pooled":
            continue
        if config.bottom == "wr":
            assert Fraction(holding, len(starts)) <= config.r
        else:
            assert holding <= config.k
            assert min(Fraction(1), Fraction(config.instances, len(starts))) <= config.q
    if config.top == "pooled":
        assert sampler.total == config.n_windows_total


def _drawn_probability(rate: float) -> Fraction:
    """P(u < rate) for u uniform on the float64 grid {0, 2^-53, ..., 1 - 2^-53} that torch.rand draws (asserted in
    test_poisson_rates_drawn_never_exceed_the_accounted_rates): ceil(rate 2^53) / 2^53, exactly."""
    return Fraction(math.ceil(Fraction(rate) * 2**53), 2**53)


def test_poisson_rates_drawn_never_exceed_the_accounted_rates():
    """The inclusion probability a Poisson level realises, P(u < rate) exactly on torch's 53-bit grid, is at most the
    accountant's ρ = N'/N (top) and q_n = min(1, λ / T_n) (bottom), for every N' <= N <= 40 and λ, T_n <= 40. Before,
    the float64 rate N'/N (or λ/T_n) rounded to nearest could land above the fraction, and a rate that is not a
    multiple of 2^-53 is drawn as the next one up: ρ = 1/10 was drawn with probability 1/10 + 8.9e-17, 1/3 with
    1/3 + 3.7e-17 (the accountant charged the fraction: an understatement below any printed digit of ε)."""
    u = torch.rand(1 << 16, generator=gen(21), dtype=torch.float64)
    assert bool((u * 2**53 == torch.floor(u * 2**53)).all())  # the grid _drawn_probability assumes
    over = []
    for n in range(1, 41):
        for per_step in range(1, n + 1):
            top = PoissonTopLevel(n_sequences=n, per_step=per_step, steps_per_epoch=1)
            if _drawn_probability(top.rate) > Fraction(per_step, n):
                over.append(("top", per_step, n))
    n_starts = torch.arange(1, 41)
    for instances in range(1, 41):
        rates = PoissonBottomLevel(n_starts, instances).rates
        for t, rate in zip(n_starts.tolist(), rates.tolist()):
            if _drawn_probability(rate) > min(Fraction(1), Fraction(instances, t)):
                over.append(("bottom", instances, t))
    assert not over, f"{len(over)} rates drawn above the accounted one, e.g. {over[:3]}"
    assert PoissonTopLevel(n_sequences=10, per_step=1, steps_per_epoch=1).rate >= 0.1 - 2**-53  # rounded down by < 1 ulp
