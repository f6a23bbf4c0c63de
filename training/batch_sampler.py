"""Bi-level structured subsampling for your own ``DataLoader`` (paper Algorithms 1 and 3-6).

:class:`WindowDataset` holds a user's series with Algorithm 4's front zero padding and crops
windows into (context, forecast) pairs; :class:`BiLevelBatchSampler` yields, per training
step, the window keys ``(sequence, start)`` that :mod:`training.samplers` draws for the
configured scheme (top level deterministic / shuffle / WOR / Poisson / pooled, bottom level
WR / Poisson, λ instances). The draws *are* those of :func:`training.samplers.make_sampler`
(same code, same generator use), so a loop over::

    dataset = WindowDataset(series, config)
    loader = DataLoader(dataset, batch_sampler=BiLevelBatchSampler(dataset, generator=g),
                        collate_fn=dataset.collate)

trains with exactly the batching the accountant of the configuration accounts (T1-T14's
mechanism, with your model, optimizer and DP-SGD step, e.g. Opacus with
``poisson_sampling=False``). One pass over the loader is one epoch: ``len(loader)`` steps
(ceil(N/N') for deterministic / shuffled iteration, the configuration's steps per epoch
otherwise); a pass that stops early (a ``break``) leaves the rest of its epoch to the next pass, so
the batches drawn are always consecutive steps of the scheme's epochs, the steps the accountant
counts (a fresh epoch on every pass would re-use the first batches of a deterministic order, and
start a new permutation the accountant does not know of under shuffling). The sampler cannot tell a batch
that was trained from one that was handed out and dropped (a ``DataLoader`` with ``num_workers > 0`` fetches
ahead; a loop may fetch a batch and then ``break``): a dropped batch is skipped by the next pass, so the trained
steps spread over more of the scheme's epochs than their number says. The sampler therefore counts the batches it
handed out (:attr:`BiLevelBatchSampler.batches_handed_out`, the first steps of its epochs, in order) and an
accountant given the sampler charges at least them
(:class:`tsdp.attacks.integrations.opacus_accountant.StructuredSubsamplingAccountant`'s ``sampler``);
:func:`batches_for_steps` gives a loop its steps' batches over the passes they take and fetches none beyond. Poisson
sampling can give an empty step; :meth:`WindowDataset.collate` returns tensors with zero rows then.

Restarting a process: a run that is stopped and started again must continue its streams, not draw them anew. A
sampler (and a dataset, a noise generator) made again with the same seed draws the first steps' batches (augmentation
noise, DP noise) a second time, steps the accountant counts as fresh independent draws: a privacy bug, not a
reproduction. Save :meth:`BiLevelBatchSampler.state_dict` and :meth:`WindowDataset.state_dict` (and your noise
generator's ``get_state()``, your accountant's steps) with the model's checkpoint, and in the new process call
``load_state_dict`` on the new objects before the first batch: the run then goes on with exactly the batches and noise
of the uninterrupted run's next steps (tests/training/test_sampler_resume.py). The saved state holds the generators'
states: it reveals the batches and noise to come, so keep it as secret as the seed.
"""
from __future__ import annotations

import secrets
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from tsdp.theorems.config import ConfigError, TrainingConfig, window_starts

from .generators import seeded_generator
from .samplers import WindowIndex, make_sampler
from .windows import augment, gather_windows, pad_series, split_window

WindowKey = Tuple[int, int]  # (sequence index, 0-based start in the padded series)


def fit_lengths(config: TrainingConfig, series: Sequence) -> TrainingConfig:
    """``config`` with N and the training lengths taken from ``series`` (the series you train on, as they are).

    The accountant must see the shortest length (THEOREMS.md "variable lengths": it maximises
    r = k/T, the upper-bound direction), so equal lengths set L and unequal ones set ``lengths``.

    Args:
        config: The configuration to fit.
        series: The training series.

    Returns:
        The fitted configuration.

    Raises:
        ConfigError: Naming ``series``: none given.
    """
    lengths = tuple(len(s) for s in series)
    if not lengths:
        raise ConfigError("series", "must hold at least one series")
    if len(set(lengths)) == 1:
        return config.with_(N=len(lengths), L=lengths[0], lengths=None)
    return config.with_(N=len(lengths), lengths=lengths)


class WindowDataset(torch.utils.data.Dataset):
    """The windows of a user's series (Algorithm 4: prepend L_C zeros, crop L_C + L_F values, split).

    Items are keyed by ``(sequence, start)`` pairs, as :class:`BiLevelBatchSampler` yields
    them; ``dataset[(n, t)]`` is (context x'_n[t : t + L_C], forecast x'_n[t + L_C : t + L_C + L_F])
    of the padded series x'_n. ``len(dataset)`` is the number of windows Σ_n T_n. An integer
    key is refused: a plain sampler over range(len) (for instance Opacus's Poisson
    ``DPDataLoader``) would not draw the accounted batches.

    Args:
        series: The N training series, each a 1-D array of finite values, none shorter than L (the
            accountant's r = k/T uses L; a shorter series would be understated).
        config: The configuration the series must match; use :func:`fit_lengths` to fit a configuration to
            your series.
        generator: With augmentation (σ_C or σ_F > 0, Section 4 / Theorem G.1) every cropped window gets
            fresh Gaussian noise from it (in a ``DataLoader`` worker, from a generator of the worker's own seeded from
            it, :meth:`_augmentation_generator`; default: one seeded with 63 bits of the operating system's entropy, all of
            them used, :func:`~tsdp.training.generators.seeded_generator`; the accountant credits the noise only
            while it is secret, so give a seeded one only to reproduce a run; ``torch.Generator().manual_seed``
            keeps 32 bits of a seed on the CPU).
        padding: The value of Algorithm 4's front padding (default 0, its zeros). For tsdp's forecasters give
            ``tsdp.training.windows.padding_of(model)``: their unobserved value, as tsdp's loop pads for them
            (they leave it out of their scale and loss, as GluonTS's models leave their padding out).

    Raises:
        ConfigError: The number of series is not N, a series is shorter than L, or a series is not a 1-D array
            of finite values.

    Attributes:
        config: The configuration.
        lengths: The series' lengths.
        generator: The augmentation noise's generator.
    """

    def __init__(self, series: Sequence, config: TrainingConfig, *, generator: Optional[torch.Generator] = None,
                 padding: float = 0.0):
        arrays = [np.asarray(s, dtype=np.float64) for s in series]
        if len(arrays) != config.N:
            raise ConfigError("N", f"the data holds {len(arrays)} series (use tsdp.training.batch_sampler.fit_lengths)",
                              config.N)
        lengths = [len(a) for a in arrays]
        shortest = min(lengths)
        if shortest < config.L:
            raise ConfigError("L", f"the shortest series has length {shortest}; the accountant would understate "
                              "r = k/T (use tsdp.training.batch_sampler.fit_lengths)", config.L)
        config.check_covers(lengths)  # a longer series' elements in more windows than the accounted k
        for i, a in enumerate(arrays):
            if a.ndim != 1 or not np.all(np.isfinite(a)):
                raise ConfigError("series", f"series {i} must be a 1-D array of finite values")
        self.config = config
        self.lengths = tuple(lengths)
        self.padded, _ = pad_series([torch.as_tensor(a) for a in arrays], config.context_length, padding)
        self.n_starts = window_starts(torch.as_tensor(lengths), config.forecast_length)
        self.generator = generator if generator is not None else seeded_generator(secrets.randbits(63))
        self._worker: Optional[Tuple[int, torch.Generator]] = None  # (worker seed, its generator) in a worker

    def __len__(self) -> int:
        return int(self.n_starts.sum())

    def state_dict(self) -> Dict[str, torch.Tensor]:
        """Where the augmentation noise's stream stands, for a restarted process to continue it (module docstring:
        a dataset made again with the same seed would draw the first windows' noise again; Theorem G.1 credits
        fresh noise). Secret as the seed.

        Returns:
            ``{"generator": the generator's state}``.
        """
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: Dict[str, torch.Tensor]) -> None:
        """Continue the stream :meth:`state_dict` saved (in a new process, before the first batch).

        Args:
            state: What :meth:`state_dict` returned.
        """
        self.generator.set_state(state["generator"])
        self._worker = None

    def _augmentation_generator(self) -> torch.Generator:
        """The generator this process draws augmentation noise from: ``generator`` in the process that made the
        dataset. A ``DataLoader`` worker holds a copy of the dataset with a copy of ``generator``'s state, the same in
        every worker and in every epoch's new workers: drawing from it there gave every worker, epoch after epoch,
        the same noise, where Theorem G.1 adds fresh noise to every window. A worker draws from a generator of its
        own instead, seeded once from the copy's next 124 bits (secret) and the worker's seed
        (``get_worker_info().seed``: the loader draws a fresh base seed for each epoch's workers and adds the worker's
        id), so workers of one epoch or of two draw different streams."""
        info = torch.utils.data.get_worker_info()
        if info is None:
            return self.generator
        if self._worker is None or self._worker[0] != info.seed:
            secret = torch.randint(0, 2**62, (2,), generator=self.generator).tolist()
            seed = np.random.SeedSequence([*secret, info.seed % 2**64]).generate_state(1, np.uint64)[0] >> np.uint64(1)
            self._worker = (info.seed, seeded_generator(int(seed), self.generator.device))
        return self._worker[1]

    def _keys(self, keys: Sequence[WindowKey]) -> Tuple[torch.Tensor, torch.Tensor]:
        if any(not isinstance(k, (tuple, list)) or len(k) != 2 for k in keys):
            raise TypeError("WindowDataset items are (sequence, start) pairs drawn by BiLevelBatchSampler; "
                            "an integer index means another sampler (e.g. Opacus with poisson_sampling=True) is "
                            "drawing the batches, which the structured-subsampling accountant does not account")
        seq = torch.as_tensor([int(k[0]) for k in keys], dtype=torch.long)
        start = torch.as_tensor([int(k[1]) for k in keys], dtype=torch.long)
        if len(keys) and (bool((start < 0).any()) or bool((start >= self.n_starts[seq]).any())):
            raise IndexError("a window start lies outside {0, ..., T_n - 1} of its series")
        return seq, start

    def __getitems__(self, keys: Sequence[WindowKey]) -> Tuple[torch.Tensor, torch.Tensor]:
        """The batch of ``keys``: context (B, L_C) and forecast (B, L_F), augmented when configured."""
        seq, start = self._keys(keys)
        windows = gather_windows(self.padded, seq, start, self.config.window_length)
        context, forecast = split_window(windows, self.config.context_length)
        if self.config.augmented:
            context, forecast = augment(context, forecast, sigma_context=self.config.sigma_context,
                                        sigma_forecast=self.config.sigma_forecast, v=self.config.v,
                                        generator=self._augmentation_generator())
        return context, forecast

    def __getitem__(self, key: WindowKey) -> Tuple[torch.Tensor, torch.Tensor]:
        context, forecast = self.__getitems__([key])
        return context[0], forecast[0]

    @staticmethod
    def collate(batch: Union[Tuple[torch.Tensor, torch.Tensor], List[Tuple[torch.Tensor, torch.Tensor]]]
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        """``collate_fn`` for a DataLoader, also for an empty (Poisson) step.

        Args:
            batch: What the DataLoader fetched: (context, forecast) from :meth:`__getitems__`, or a list of
                windows.

        Returns:
            The batch as (context, forecast).
        """
        if isinstance(batch, tuple):  # already batched by __getitems__
            return batch
        return torch.utils.data.default_collate(batch)


class BiLevelBatchSampler(torch.utils.data.Sampler):
    """Batches of window keys drawn as Algorithm 1 does (top level Algorithm 3 / 5 / shuffle / Poisson, bottom 4 / 6).

    Every iteration is one epoch of ``len(self)`` steps, or the rest of the epoch an earlier iteration left
    unfinished (module docstring); each yielded batch is the list of
    ``(sequence, start)`` keys of one step, in the order of :mod:`tsdp.training.samplers`.
    The law is that of ``make_sampler(dataset.config, dataset.lengths)`` driven by
    ``generator`` (a fresh permutation per epoch for shuffling; independent steps for WOR /
    Poisson / pooled).

    Args:
        dataset: The windows to draw from; its configuration fixes the batching.
        generator: The batches' randomness (default: one seeded with 63 bits of the operating system's entropy, all of
            them used, :func:`~tsdp.training.generators.seeded_generator`, not torch's global generator, which
            scripts seed for a reproducible model; the accountant credits the subsampling only while the batches are
            secret, so give a seeded one only to reproduce a run; ``torch.Generator().manual_seed`` keeps 32 bits of
            a seed on the CPU).

    Attributes:
        config: The dataset's configuration.
        sampler: The configuration's sampler (:func:`make_sampler`).
        generator: The batches' generator.
        batches_handed_out: The batches handed out since the sampler was made, trained or not (they are the first
            ``batches_handed_out`` steps of its epochs, consecutive: the steps an accountant must charge at least),
            those of the process it continues included (:meth:`load_state_dict`).

    Restarting a process: do not make the sampler again with the same seed and go on, which draws the first steps'
    batches a second time (module docstring); save :meth:`state_dict` with the checkpoint and call
    :meth:`load_state_dict` on the new process's sampler before its first batch.

    Example:
        Draw the accounted batches through a DataLoader::

            import torch
            from tsdp import BiLevelBatchSampler, WindowDataset

            dataset = WindowDataset(series, config)  # your N series; config fitted by fit_lengths
            loader = torch.utils.data.DataLoader(dataset, batch_sampler=BiLevelBatchSampler(dataset),
                                                 collate_fn=WindowDataset.collate)
    """

    def __init__(self, dataset: WindowDataset, *, generator: Optional[torch.Generator] = None):
        self.config = dataset.config
        self.sampler = make_sampler(dataset.config, dataset.lengths)
        self.generator = generator if generator is not None else seeded_generator(secrets.randbits(63))
        self._epoch, self._next = None, 0  # the epoch being drawn and its next step (None: start a new one)
        self.batches_handed_out = 0

    def __len__(self) -> int:
        return self.sampler.steps_per_epoch

    def state_dict(self) -> Dict[str, Any]:
        """Where the sampler stands, for a restarted process to continue its steps (class docstring): the generator's
        state, the epoch being handed out and its next step, and ``batches_handed_out``. Secret as the seed (it
        holds the batches to come).

        Returns:
            ``{"generator", "epoch" (None, or {"seq", "start", "mask"} tensors), "next", "batches_handed_out"}``.
        """
        epoch = None if self._epoch is None else {"seq": self._epoch.seq, "start": self._epoch.start,
                                                  "mask": self._epoch.mask}
        return {"generator": self.generator.get_state(), "epoch": epoch, "next": self._next,
                "batches_handed_out": self.batches_handed_out}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continue the steps :meth:`state_dict` saved: the next batch is the one the saved sampler would have
        handed out next, and the generator goes on from the saved state (in a new process, before the first batch).

        Args:
            state: What :meth:`state_dict` returned (for this dataset's configuration).

        Raises:
            ValueError: The saved epoch has another number of steps than this sampler's epochs.
        """
        epoch = state["epoch"]
        if epoch is not None and epoch["seq"].shape[0] != len(self):
            raise ValueError(f"the saved epoch has {epoch['seq'].shape[0]} steps, this sampler's {len(self)}: "
                             "a state of another configuration")
        self.generator.set_state(state["generator"])
        self._epoch = None if epoch is None else WindowIndex(epoch["seq"], epoch["start"], epoch["mask"])
        self._next, self.batches_handed_out = int(state["next"]), int(state["batches_handed_out"])

    def __iter__(self) -> Iterator[List[WindowKey]]:
        if self._epoch is None:
            self._epoch, self._next = self.sampler.sample(len(self), self.generator), 0
        index = self._epoch
        while self._next < index.n_steps:
            i = self._next
            self._next += 1
            if self._next == index.n_steps:  # handed out whole: the next iteration starts a new epoch
                self._epoch = None
            keep = index.mask[i]
            self.batches_handed_out += 1  # counted as it leaves: a batch fetched and dropped still moved the epoch
            yield list(zip(index.seq[i][keep].tolist(), index.start[i][keep].tolist()))


def batches_for_steps(loader: Iterable, steps: int) -> Iterator:
    """The first ``steps`` batches of ``loader`` over as many passes (epochs) as they take: a training loop's
    ``for context, forecast in batches_for_steps(loader, steps)``. It fetches no batch past the last step, so a
    :class:`BiLevelBatchSampler` hands out exactly the steps trained (none dropped, module docstring).

    Args:
        loader: A ``DataLoader`` over a :class:`WindowDataset` (any iterable that can be passed over again).
        steps: The training steps.

    Yields:
        The batches, one per step.

    Raises:
        ValueError: A pass over ``loader`` yields no batch (more passes would never reach ``steps``).
    """
    done = 0
    while done < steps:
        passed = done
        for batch in loader:
            yield batch
            done += 1
            if done == steps:
                return
        if done == passed:
            raise ValueError("the loader yields no batch: it cannot give the steps asked for")
