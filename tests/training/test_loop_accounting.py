"""What the real loop feeds the accountant: the series, the windows and the steps it is charged for are the ones the
loop trains on (the accountant's T, k, N_tot and steps against the loop's own)."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.datasets.series import synthetic_for
from tsdp.theorems.config import ConfigError, Top, TrainingConfig
from tsdp.training.options import Budget, Evaluation
from tsdp.training.samplers import make_sampler
from tsdp.training.train import train

DELTA = 1e-5


def test_a_pooled_run_refuses_series_that_pool_fewer_windows_than_its_configuration():
    """Configuration lengths (20, 30, 30, 30) (N_tot = 106), series trained on of lengths (20, 20, 20, 30) (86): the
    run once reported T13's ε = 9.04 for 20 steps where the series it sampled give 10.15; refused before training."""
    claimed = TrainingConfig(N=4, lengths=(20, 30, 30, 30), context_length=4, forecast_length=2, batch_size=4,
                             top="pooled")
    data = synthetic_for(claimed.with_(lengths=(20, 20, 20, 30)), seed=2)
    with pytest.raises(ConfigError) as err:
        train(claimed, "dlinear", data, budget=Budget(steps=20, delta=DELTA, theorem="T13"),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    assert err.value.parameter == "lengths"


def _split_with_held_out_sentinels(train_lengths, forecast_length, validation_windows, test_windows=1):
    """A benchmark split whose training values are small (< 100) and whose held-out values (validation and test
    windows) are all 1000: a window holding 1000 read a held-out value."""
    from dataclasses import replace

    import numpy as np

    from tsdp.datasets.benchmarks import SHIPPED_SPEC
    from tsdp.datasets.series import SeriesData
    from tsdp.datasets.splits import hold_out, last_windows

    spec = replace(SHIPPED_SPEC, forecast_length=forecast_length, validation_windows=validation_windows)
    held = (validation_windows + test_windows) * forecast_length
    rng = np.random.default_rng(0)
    full = [np.concatenate([rng.uniform(1, 99, n), np.full(held, 1000.0)]) for n in train_lengths]
    train = SeriesData(tuple(s[: len(s) - test_windows * forecast_length] for s in full))
    return hold_out(spec, train, last_windows(full, test_windows, forecast_length))


@pytest.mark.parametrize("top,bottom", [("deterministic", "wr"), ("shuffle", "poisson"), ("wor", "wr"),
                                        ("wor", "poisson"), ("pooled", "wr")])
def test_no_training_window_reads_a_held_out_value_and_t_counts_the_training_part(monkeypatch, top, bottom):
    """Every window the loop trains on (each scheme, variable lengths, L_C > shortest series) holds training values
    only: the split's validation and test values never enter a step. The accountant's T is the training part's:
    L at the series' lengths including their validation windows is refused naming L (it would understate r = k/T)."""
    from tsdp.training import loop

    lengths = (3, 5, 8, 13, 4, 6)
    split = _split_with_held_out_sentinels(lengths, forecast_length=2, validation_windows=2)
    assert split.train.lengths == lengths
    config = TrainingConfig(N=6, lengths=lengths, context_length=4, forecast_length=2, batch_size=4, sigma=2.0,
                            top=top, bottom=bottom)
    seen = []
    gather = loop.gather_windows
    monkeypatch.setattr(loop, "gather_windows", lambda padded, seq, start, length: (
        lambda w: (seen.append(w), w)[1])(gather(padded, seq, start, length)))
    theorem = "T13" if top == "pooled" else None
    r = train(config, "dlinear", split,
              budget=Budget(steps=12, delta=DELTA, theorem=theorem, discretization=1e-3),
              evaluation=Evaluation(n_samples=4),
              device="cpu", progress=False, seed=0)
    assert r.steps == len(seen) == 12
    values = torch.cat([w.flatten() for w in seen])
    assert values.isnan().any()  # the front padding (the model's unobserved value) is read, so the check can fail
    assert float(values[~values.isnan()].max()) < 100
    with pytest.raises(ConfigError) as err:
        train(config.with_(lengths=None, L=min(lengths) + 2 * config.forecast_length), "dlinear", split,
              budget=Budget(steps=1, delta=DELTA, theorem=theorem), device="cpu", progress=False, seed=0)
    assert err.value.parameter == "L"


def test_a_shuffled_warm_up_and_main_phase_each_start_an_epoch_as_the_ledger_charges(monkeypatch):
    """N = 10, Λ = 4: an epoch is 3 steps of 4, 4 and 2 series. 4 warm-up steps then 5 main steps: the ledger charges
    each phase its whole epochs and a partial one (1 and 2 steps run), so the loop must start a fresh permutation at
    each phase: every series at most once in each of the 4 epochs the ledger names, the partial ones of 4 series
    each step, and the steps in each phase as many as its ledger entry says."""
    from tsdp.training import loop

    config = TrainingConfig(N=10, L=20, context_length=4, forecast_length=2, batch_size=4, sigma=2.0, top="shuffle")
    seen = []
    gather = loop.gather_windows
    monkeypatch.setattr(loop, "gather_windows", lambda padded, seq, start, length: (
        seen.append(sorted(seq.tolist())), gather(padded, seq, start, length))[1])
    r = train(config, "dlinear", synthetic_for(config, seed=2),
              budget=Budget(steps=5, delta=DELTA, warmup_steps=4, warmup_sigma=4.0, discretization=1e-3),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    assert r.steps == len(seen) == 9
    assert [(e.count, e.steps_run) for e in r.ledger] == [(1, None), (1, 1), (1, None), (1, 2)]
    epochs = [seen[0:3], seen[3:4], seen[4:7], seen[7:9]]
    assert [[len(s) for s in e] for e in epochs] == [[4, 4, 2], [4], [4, 4, 2], [4, 4]]
    for epoch in epochs:
        held = sum(epoch, [])
        assert len(held) == len(set(held))
    assert sorted(sum(epochs[0], [])) == sorted(sum(epochs[2], [])) == list(range(10))


@pytest.mark.parametrize("top,bottom", [(t, b) for t in ("deterministic", "shuffle", "wor", "pooled")
                                        for b in ("wr", "poisson")])
def test_the_ledger_charges_the_steps_the_loop_ran(monkeypatch, top, bottom):
    """Counted in the loop itself (one crop of windows per step), not taken from the plan: a run of two epochs and
    one step (a partial epoch) runs exactly its steps, and its ε and compositions are the accountant's for that
    many steps (``tsdp epsilon``'s, 1e-12)."""
    from tsdp.training import loop
    from tsdp.verify import accounting

    config = TrainingConfig(N=10, L=12, context_length=3, forecast_length=2, batch_size=4, sigma=2.0, top=top,
                            bottom=bottom)
    theorem = "T13" if top == "pooled" else None
    steps = 2 * config.steps_per_epoch + 1
    crops = []
    gather = loop.gather_windows
    monkeypatch.setattr(loop, "gather_windows", lambda *a: (crops.append(1), gather(*a))[1])
    r = train(config, "dlinear", synthetic_for(config, seed=3),
              budget=Budget(steps=steps, delta=DELTA, theorem=theorem, discretization=1e-3),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    expected = accounting.epsilon(config, DELTA, steps=len(crops), theorem=theorem, discretization=1e-3)
    assert len(crops) == r.steps == steps
    assert r.compositions == expected.compositions
    assert r.epsilon == pytest.approx(expected.epsilon, rel=1e-12)


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 40), st.integers(1, 12), st.integers(1, 3), st.sampled_from(Top.values()), st.booleans(),
       st.lists(st.integers(1, 9), min_size=1, max_size=40), st.integers(0, 2**31))
def test_the_samplers_epoch_is_the_accountants(n, batch, lam, top, drop_last, extra, seed):
    """Over generated N, Λ, λ, lengths and top levels: the sampler's steps per epoch are the configuration's (the
    accountant's compositions per epoch, or the steps of an epoch-scoped one), and two epochs of an epoch-scoped
    sampler each hold every sequence at most once: exactly once, or floor(N λ / Λ) N' of them with drop_last."""
    batch = max(batch, lam)
    if batch // lam > n:
        return
    lengths = tuple(2 + e for e in (extra * n)[:n])
    if top == "pooled" and batch > sum(lengths) - n:  # Λ above the N_tot = Σ (L_n - 1) windows is refused
        return
    config = TrainingConfig(N=n, lengths=lengths, forecast_length=2, context_length=1, batch_size=batch,
                            instances=lam, top=top, drop_last=drop_last and top == "shuffle")
    sampler = make_sampler(config, lengths)
    assert sampler.steps_per_epoch == config.steps_per_epoch
    if not config.top.epoch_scoped:
        return
    index = sampler.top.sample(2 * config.steps_per_epoch, torch.Generator().manual_seed(seed))
    for epoch in (0, 1):
        rows = slice(epoch * config.steps_per_epoch, (epoch + 1) * config.steps_per_epoch)
        held = index.seq[rows][index.mask[rows]].tolist()
        assert len(held) == len(set(held))
        assert len(held) == (config.steps_per_epoch * config.sequences_per_step if config.drop_last else n)
