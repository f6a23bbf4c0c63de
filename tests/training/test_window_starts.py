"""Starts per series, T_n = L_n - L_F + 1: one rule, and every place that counts windows agrees with it."""
import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from tsdp.theorems.config import TrainingConfig, window_starts
from tsdp.training.batch_sampler import WindowDataset
from tsdp.training.samplers import n_starts_of
from tsdp.training.windows import every_window


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(6, 30), min_size=1, max_size=6), context_length=st.integers(1, 4),
       forecast_length=st.integers(1, 5))
def test_every_window_counter_agrees_with_window_starts(lengths, context_length, forecast_length):
    L = min(lengths)
    config = TrainingConfig(N=len(lengths), L=L, context_length=context_length, forecast_length=forecast_length,
                            batch_size=1, lengths=tuple(lengths) if len(set(lengths)) > 1 else None)
    expected = np.array([n - forecast_length + 1 for n in lengths])  # Algorithm 4: starts 0 .. L_n - L_F
    assert np.array_equal(window_starts(np.array(lengths), forecast_length), expected)
    assert config.T == L - forecast_length + 1 == window_starts(L, forecast_length)
    assert torch.equal(n_starts_of(config), torch.as_tensor(expected))
    series = [np.arange(n, dtype=float) for n in lengths]
    context, forecast = every_window(series, context_length, forecast_length)
    assert context.shape[0] == forecast.shape[0] == expected.sum()
    # the last window of each series ends at its last value (no start beyond T_n, none missing)
    assert float(forecast[np.cumsum(expected)[-1] - 1, -1]) == lengths[-1] - 1
    dataset = WindowDataset(series, config.with_(L=L))
    assert len(dataset) == expected.sum() and torch.equal(dataset.n_starts, torch.as_tensor(expected))
