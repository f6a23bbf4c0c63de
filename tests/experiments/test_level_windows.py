"""Every grid cell is accounted for the windows its training loop really crops (every model, every level).

A user's file of three hourly series of different lengths goes through the grid's own split and
:func:`~tsdp.experiments.configuration.cell_config`; every element of the training series is tagged with a distinct
value, front-padded as the loop pads for the cell's model, and cropped into every window the cell's sampler can draw
(Algorithm 4: starts 0..T_n - 1; the sampler's own draws are checked to stay there). For each set of changed elements
the cell's level protects (1-event and label noise: one element; w-event: w consecutive elements; w-user: any w
elements of one series) the windows holding one of them are counted, in all and as context or as forecast. The
accountant's parameters must dominate every series' own (tests/theorems/test_window_geometry.py gives the rules):
k ≥ the windows holding the set, r ≥ that count / T_n, and T11's weight ρ r (φ τ_F + (1 - φ) τ_C) ≥ ρ (n_F τ_F + n_C
τ_C) / T_n at the corners of τ when the label-noise cell is accounted by T11. DeepAR crops its longer context W = L_C +
max lag - 1, and its model reads exactly the W + L_F values of a window.
"""
from fractions import Fraction
from itertools import combinations

import numpy as np
import pytest
import torch

from tsdp.datasets.benchmarks import UserData
from tsdp.experiments.configuration import cell_config, split_of
from tsdp.experiments.grid import MODELS, Cell, GridSettings
from tsdp.theorems.registry import select_bound
from tsdp.training.deepar import deepar_window
from tsdp.training.samplers import make_sampler, n_starts_of
from tsdp.training.train import initial_model
from tsdp.training.windows import gather_windows, pad_series, padding_of, split_window

LEVEL_CELLS = [("1-event", {}), ("w-event", {"w": 2}), ("w-event", {"w": 3}), ("w-user", {"w": 2}),
               ("w-user", {"w": 3}), ("label-noise", {"sigma_forecast": 1.0})]


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    """Three hourly series of 34, 37 and 41 values: L_C = L_F = 2, one validation and one test window (30, 33 and
    37 training values), season 2 (DeepAR's lags 1..7: W = 8)."""
    path = tmp_path_factory.mktemp("levels") / "three.csv"
    rows = []
    for item, n in (("a", 34), ("b", 37), ("c", 41)):
        stamps = np.datetime64("2024-01-01T00") + np.arange(n) * np.timedelta64(1, "h")
        rows += [f"{item},{str(t).replace('T', ' ')}:00:00,{(j * 7) % 5 + 1}" for j, t in enumerate(stamps)]
    path.write_text("item_id,timestamp,target\n" + "\n".join(rows) + "\n")
    user = UserData(str(path), forecast_length=2, context_length=2, batch_size=2, sigma=1.0, season=2, epochs=1,
                    label_noise_v=0.5)
    return GridSettings(user=user, n_samples=2, device="cpu")


def changed_sets(level: str, w: int, length: int):
    """The index sets (0-based, in one series) a cell of ``level`` protects."""
    if level in ("1-event", "label-noise"):
        return [(j,) for j in range(length)]
    if level == "w-event":
        return [tuple(range(j, j + w)) for j in range(length - w + 1)]
    return list(combinations(range(length), w))


def cropped(config, model, series):
    """(windows' original indices (T_n, L_C + L_F) per series, -1 in the padding): the loop's padding and crop."""
    tags = [torch.arange(len(s), dtype=torch.float32) + 1 for s in series]
    padded, _ = pad_series(tags, config.context_length, padding_of(model))
    out = []
    for n, starts in enumerate(n_starts_of(config, [len(s) for s in series]).tolist()):
        windows = gather_windows(padded, torch.full((starts,), n), torch.arange(starts), config.window_length)
        real = windows >= 1  # a tag, not the model's padding (NaN, or Algorithm 4's 0)
        out.append(torch.where(real, windows - 1, torch.full_like(windows, -1)).long().numpy())
    return out


@pytest.mark.parametrize("model", MODELS)
def test_every_level_accounts_the_windows_its_loop_crops(settings, model):
    split = split_of(settings)
    series = split.train.series
    for level, extra in LEVEL_CELLS:
        cell = Cell(model, 4.0, 0, level, "wor", **extra)
        config = cell_config(cell, settings)
        net = initial_model(model, config, split.train, seed=0, lags=split.spec.lags)
        if model == "deepar":
            assert config.context_length == deepar_window(split.spec.context_length, split.spec.lags) == 8
            assert net.context_length == config.context_length  # the model reads the window the accountant sees
        else:
            assert config.context_length == split.spec.context_length
        lengths = [len(s) for s in series]
        index = make_sampler(config, lengths).sample(40, torch.Generator().manual_seed(0))
        drawn, seq = index.start[index.mask], index.seq[index.mask]
        assert drawn.numel() > 0 and bool((drawn < n_starts_of(config, lengths)[seq]).all())
        bound = select_bound(config)[0]
        weights = []
        if bound.id == "T11":
            from tsdp.theorems.bounds.parameters import params

            p = params(config, numeric=True)
            weights = [(float(p.tau_context), float(p.tau_forecast))]
        for n, windows in enumerate(cropped(config, net, series)):
            starts = windows.shape[0]
            context, forecast = split_window(torch.as_tensor(windows), config.context_length)
            in_context = np.zeros((starts, lengths[n]), bool)
            in_forecast = np.zeros((starts, lengths[n]), bool)
            for t in range(starts):
                in_context[t, [j for j in context[t].tolist() if j >= 0]] = True
                in_forecast[t, forecast[t].tolist()] = True
            for changed in changed_sets(level, config.w, lengths[n]):
                c = in_context[:, changed].any(1)
                f = in_forecast[:, changed].any(1)
                held = int((c | f).sum())
                assert held <= config.k, (model, level, n, changed, held, config.k)
                assert Fraction(held, starts) <= config.r, (model, level, n, changed, held, starts, config.r)
                for tau_c, tau_f in weights + [(1.0, 0.0), (0.0, 1.0)] * bool(weights):
                    ours = float(config.r) * (float(config.phi) * tau_f + (1 - float(config.phi)) * tau_c)
                    theirs = (int(f.sum()) * tau_f + int((c & ~f).sum()) * tau_c) / starts
                    assert ours >= theirs * (1 - 1e-12), (model, level, n, changed, ours, theirs)
