"""A restarted process continues a seeded run's streams; it does not draw the first steps again.

A user's loop over a :class:`BiLevelBatchSampler` that is stopped after k steps and restarted in a new process with
the same seed drew steps 1, 2, ... again: the batches (and, with augmentation, the window noise; with a noise
generator re-seeded alike, the DP noise) of the first steps, which the accountant counts as fresh independent draws.
The sampler's and the dataset's ``state_dict`` / ``load_state_dict`` (saved with the model, as the noise generator's
``get_state``) let the new process continue instead. Reference: the uninterrupted run itself. Resumed after k steps
(mid-epoch and at an epoch's end, through a ``torch.save`` round trip into objects made with another seed), the
run's steps k+1..S have exactly the uninterrupted run's batch keys, window values (augmented) and noise draws; the
restart without the saved state is shown to repeat the first batch, the hazard the state prevents.
"""
import io

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tsdp.theorems.config import TrainingConfig
from tsdp.training.batch_sampler import BiLevelBatchSampler, WindowDataset, batches_for_steps
from tsdp.training.generators import seeded_generator

STEPS = 11
LENGTHS = [12, 15, 11, 13, 12, 14, 12, 16, 11, 13]


def _config(top):
    return TrainingConfig(N=len(LENGTHS), L=min(LENGTHS), lengths=tuple(LENGTHS), context_length=2,
                          forecast_length=2, batch_size=4, top=top, sigma_forecast=1.0)


def _process(top, seed):
    """What a fresh process builds: the dataset (augmented), its sampler and a DP-noise generator, from ``seed``."""
    rng = np.random.default_rng(0)
    series = [rng.normal(size=n) for n in LENGTHS]
    dataset = WindowDataset(series, _config(top), generator=seeded_generator(seed, stream=2))
    sampler = BiLevelBatchSampler(dataset, generator=seeded_generator(seed))
    return dataset, sampler, seeded_generator(seed, stream=3)


def _steps(dataset, sampler, noise, steps):
    """``steps`` steps of a user's loop: (keys, context, forecast, the step's DP noise) per step."""
    keys = []
    loader = DataLoader(dataset, batch_sampler=_Recording(sampler, keys), collate_fn=dataset.collate)
    out = []
    for context, forecast in batches_for_steps(loader, steps):
        out.append((keys[len(out)], context, forecast, torch.randn(5, generator=noise)))
    return out


class _Recording:
    """The sampler, recording the keys of every batch it hands out."""

    def __init__(self, sampler, keys):
        self.sampler, self.keys = sampler, keys

    def __len__(self):
        return len(self.sampler)

    def __iter__(self):
        for batch in self.sampler:
            self.keys.append(batch)
            yield batch


def _assert_same(got, want):
    assert len(got) == len(want)
    for (k1, c1, f1, n1), (k2, c2, f2, n2) in zip(got, want):
        assert k1 == k2
        assert torch.equal(c1, c2) and torch.equal(f1, f2) and torch.equal(n1, n2)


@pytest.mark.parametrize("top", ["shuffle", "wor", "poisson"])
@pytest.mark.parametrize("k", [2, 3, 7])  # shuffle: 3 steps an epoch, so 2 and 7 stop mid-epoch, 3 at its end
def test_a_restarted_process_continues_the_uninterrupted_run(top, k):
    whole = _steps(*_process(top, 5), STEPS)
    dataset, sampler, noise = _process(top, 5)
    first = _steps(dataset, sampler, noise, k)
    buffer = io.BytesIO()
    torch.save({"sampler": sampler.state_dict(), "dataset": dataset.state_dict(), "noise": noise.get_state()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer)
    dataset, sampler, noise = _process(top, 6)  # the new process: any generators, the saved state decides
    sampler.load_state_dict(saved["sampler"])
    dataset.load_state_dict(saved["dataset"])
    noise.set_state(saved["noise"])
    assert sampler.batches_handed_out == k
    _assert_same(first + _steps(dataset, sampler, noise, STEPS - k), whole)


def test_a_restart_without_the_state_repeats_the_first_batches():
    """The hazard: the same seed in a new process, no saved state, draws step 1's batch and noise again."""
    first = _steps(*_process("wor", 5), 3)
    again = _steps(*_process("wor", 5), 1)
    _assert_same(again, first[:1])
