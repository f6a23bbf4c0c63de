"""A run's random streams (training/generators.py): the whole seed counts, and the initial model, the batches and the
noise are not drawn from one stream.

References: numpy's ``MT19937`` bit generator over ``SeedSequence`` (an independent implementation of the stream a
CPU generator must draw), and the raw random numbers of the streams themselves (a block of the noise's uniforms found
among the initial model's is one stream drawn twice). No statistical test: every check is exact.
"""
import importlib

import numpy as np
import pytest
import torch

from tsdp.datasets.series import synthetic_for
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.training import noise, stacked
from tsdp.training.batch_sampler import BiLevelBatchSampler, WindowDataset
from tsdp.training.generators import INIT_STREAM, RUN_STREAM, seeded_generator
from tsdp.training.options import Budget, Checkpoints, Evaluation, Loop
from tsdp.training.together import GroupSettings, Run, train_together
from tsdp.training.train import train

train_module = importlib.import_module("tsdp.training.train")  # the module (the package exports the function)
TINY = TrainingConfig(N=8, L=20, context_length=4, forecast_length=2, batch_size=4, instances=1, sigma=2.0)
HIGH = 2**32  # torch's CPU manual_seed keeps the bits below this one


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _uniforms(state: torch.Tensor, n: int) -> np.ndarray:
    """The next ``n`` raw MT19937 outputs of a CPU generator state, as float32 uniforms (24 of their bits each)."""
    g = torch.Generator()
    g.set_state(state)
    return torch.rand(n, generator=g).numpy()


@pytest.mark.parametrize("seed", [0, 5, HIGH + 5, 2**63 - 1])
@pytest.mark.parametrize("stream", [RUN_STREAM, INIT_STREAM])
def test_a_seeded_cpu_generator_draws_numpys_mt19937_of_the_seeds_seed_sequence(seed, stream):
    drawn = torch.rand(3000, generator=seeded_generator(seed, stream=stream)).numpy().astype(np.float64)
    raw = np.random.MT19937(np.random.SeedSequence(seed, spawn_key=(stream,))).random_raw(3000)
    assert np.array_equal(drawn, (raw & (2**24 - 1)) * 2.0**-24)  # torch's float32 uniform: the low 24 bits


def test_seeds_differing_above_bit_31_and_streams_of_one_seed_draw_differently():
    draws = [torch.rand(64, generator=seeded_generator(seed, stream=stream))
             for seed in (5, HIGH + 5) for stream in (RUN_STREAM, INIT_STREAM)]
    assert all(not torch.equal(a, b) for i, a in enumerate(draws) for b in draws[i + 1:])


@pytest.mark.parametrize("seed", [-1, 2**63, 0.5])
def test_a_seed_outside_its_range_is_refused(seed):
    with pytest.raises(ConfigError, match="seed"):
        seeded_generator(seed)


def _trained(seed):
    data = synthetic_for(TINY, seed=1)
    result = train(TINY, "simple-ff", data, budget=Budget(steps=2, delta=1e-5), evaluation=Evaluation(n_samples=4),
                   checkpoints=Checkpoints(return_model=True), device="cpu", progress=False, seed=seed)
    return [p.detach().clone() for p in result.trained_model.parameters()]


def test_seeds_that_differ_above_bit_31_train_different_models():
    """torch's CPU ``manual_seed`` keeps 32 bits: seeds 3 and 3 + 2^32 trained the same model bit for bit, so a
    secret 63-bit seed was 32 bits of secret."""
    low, high = _trained(3), _trained(HIGH + 3)
    assert not all(torch.equal(a, b) for a, b in zip(low, high))


def _first_noise_and_init_states(monkeypatch, run):
    """Run ``run()`` and return (the global generator state the initial model was drawn from, the noise generator's
    state before the run's first noise draw), read where the loop draws them."""
    seen = {}
    make_model = train_module.make_model

    def recorded_make_model(*args, **kwargs):
        seen.setdefault("init", torch.random.get_rng_state())
        return make_model(*args, **kwargs)

    def recording(fill):
        def recorded(flat, std, *, generator):
            seen.setdefault("noise", generator.get_state())
            return fill(flat, std, generator=generator)
        return recorded

    monkeypatch.setattr(train_module, "make_model", recorded_make_model)
    monkeypatch.setattr(noise, "fill_flat_noise", recording(noise.fill_flat_noise))  # train's factored engine
    monkeypatch.setattr(stacked, "fill_flat_noise", recording(stacked.fill_flat_noise))  # runs trained together
    run()
    return seen["init"], seen["noise"]


def _train_alone():
    data = synthetic_for(TINY, seed=1)
    train(TINY, "simple-ff", data, budget=Budget(steps=1, delta=1e-5), loop=Loop(step_path="eager"),
          evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=11)


def _train_together():
    data = synthetic_for(TINY, seed=1)
    train_together(TINY, [Run(seed=11)], GroupSettings("simple-ff", data=data, delta=1e-5, steps=1, device="cpu",
                                                       n_samples=4))


@pytest.mark.parametrize("run", [_train_alone, _train_together], ids=["alone", "together"])
def test_the_noise_is_not_drawn_from_the_random_numbers_of_the_initial_model(monkeypatch, run):
    """The initial model θ0 and the first step's noise came from one MT19937 stream (both seeded with the run's seed):
    the noise's uniforms were outputs 3224 on of the stream whose first 8835 outputs drew θ0's 8835 parameters
    (simple-ff here, four forecast paths per window), so θ0 gave away the noise. Exact search: the noise's first 64
    uniforms must not be a block of the first 4 P uniforms of θ0's stream (P parameters, one output each)."""
    init, first_noise = _first_noise_and_init_states(monkeypatch, run)
    params = sum(p.numel() for p in train_module.initial_model("simple-ff", TINY, synthetic_for(TINY, seed=1),
                                                               seed=11).parameters())
    init_uniforms = _uniforms(init, 4 * params)
    block = _uniforms(first_noise, 64)
    windows = np.lib.stride_tricks.sliding_window_view(init_uniforms, 64)
    assert not (windows == block).all(axis=1).any()


def test_default_generators_of_the_batch_sampler_and_the_augmentation_use_the_whole_secret_seed(monkeypatch):
    """Their default generators are seeded from ``secrets.randbits(63)``: two defaults whose secret seeds agree in
    their low 32 bits must draw different batches and augmentation noise."""
    config = TINY.with_(sigma_forecast=1.0, top="shuffle")
    series = [np.arange(1.0, 21.0) + n for n in range(8)]
    draws = []
    for secret in (7, HIGH + 7):
        monkeypatch.setattr("secrets.randbits", lambda bits, secret=secret: secret)
        dataset = WindowDataset(series, config)
        batch = next(iter(BiLevelBatchSampler(dataset)))
        draws.append((batch, dataset[(0, 5)][1]))
    assert draws[0][0] != draws[1][0]
    assert not torch.equal(draws[0][1], draws[1][1])


def test_augmentation_in_dataloader_workers_draws_fresh_noise_for_every_batch_of_every_epoch():
    """A ``DataLoader`` with workers copies the dataset, its augmentation generator's state with it: every worker, and
    every epoch's new workers, drew the same noise (two workers, series of zeros: batches 1 and 2 had the same
    forecast noise, and epoch 2 repeated epoch 1), where Theorem G.1 adds fresh noise to every window."""
    config = TINY.with_(sigma_forecast=1.0, top="deterministic")
    dataset = WindowDataset([np.zeros(20)] * 8, config, generator=seeded_generator(1))
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=BiLevelBatchSampler(dataset,
                                                                                   generator=seeded_generator(2)),
                                         collate_fn=WindowDataset.collate, num_workers=2)
    noise = [forecast.flatten() for _ in range(2) for _, forecast in loader]
    assert len(noise) == 4 and all(len(z) == 8 for z in noise)  # 2 epochs of 2 steps, 4 windows of L_F = 2
    values = torch.cat(noise)
    assert len(set(values.tolist())) == len(values)  # no value drawn twice (continuous noise)
