"""A user's sampler in an audit draws from a CPU generator on every device (a sampler written as users write them,
``torch.randint(..., generator=g)``, needs no device argument), on a stream of its own; the comparisons on a CUDA
device are in tests/test_cuda.py."""
import numpy as np
import torch

from tsdp.attacks.montecarlo.audit import _sampler_replaced, audit
from tsdp.attacks.montecarlo.options import TrialPlan
from tsdp.attacks.montecarlo.shards import torch_seed
from tsdp.theorems.config import TrainingConfig
from tsdp.training.samplers import WindowIndex, make_sampler

CFG = TrainingConfig(N=8, batch_size=4, L=4, context_length=1, forecast_length=1, sigma=1.0)


class Recording:
    """The scheme's own sampler, recording the device of every generator it is handed and what it drew."""

    def __init__(self, config):
        self.inner, self.devices, self.drawn = make_sampler(config), [], []

    def sample(self, n_steps, generator):
        self.devices.append(generator.device.type)
        index = self.inner.sample(n_steps, generator)
        self.drawn.append(index.seq.clone())
        return index


def test_a_users_sampler_gets_a_cpu_generator_and_the_same_draws_per_seed():
    """Every draw of a user's sampler comes from a CPU generator; the same seed gives the same draws and the same
    audit (its windows were moved to the loop's device, here the CPU)."""
    runs = [Recording(CFG) for _ in range(2)]
    results = []
    for s in runs:
        with _sampler_replaced(s):
            results.append(audit("T6", CFG, delta=1e-3, trials=TrialPlan(3000, seed=4, device="auto")))
    assert runs[0].devices and set(runs[0].devices + runs[1].devices) == {"cpu"}
    assert all(torch.equal(a, b) for a, b in zip(runs[0].drawn, runs[1].drawn))
    assert results[0].epsilon_lower == results[1].epsilon_lower and results[0].gof_pvalue == results[1].gof_pvalue


def test_the_samplers_stream_is_not_the_loops():
    """A user's sampler draws from word 1 of the shard's seed state, the loop from word 0 (unchanged: the audits'
    numbers of tsdp's own samplers are those of before): two different torch seeds for every shard seed."""
    for entropy in range(50):
        seed = np.random.SeedSequence(entropy)
        assert torch_seed(seed) == int(seed.generate_state(1, np.uint64)[0] >> np.uint64(1))
        assert torch_seed(seed, stream=1) != torch_seed(seed) and 0 <= torch_seed(seed, stream=1) < 2 ** 63


def test_window_index_moves_to_a_device():
    index = make_sampler(CFG).sample(3, torch.Generator().manual_seed(0))
    assert index.to("cpu") is index
    moved = index.to(torch.device("cpu"))
    assert isinstance(moved, WindowIndex) and torch.equal(moved.seq, index.seq)
