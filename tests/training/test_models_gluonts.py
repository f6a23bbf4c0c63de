"""The forecasters as GluonTS builds them: GluonTS's init, scale-free scaling, DeepAR keeps every lag and the
accountant sees L_C + max lag - 1 (GluonTS's past_length), the loop's padding unobserved. (Equal outputs for equal weights against gluonts.torch's modules:
tests/integrations/test_gluonts_models.py.)"""
import math

import numpy as np
import pytest
import torch

from tsdp.datasets.benchmarks import LONG_LAGS, PAPER, SHIPPED_SPEC
from tsdp.datasets.series import SeriesData
from tsdp.experiments.cells import cell_config
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.training.models import DeepAR, make_model
from tsdp.training.options import Budget, Evaluation, Loop
from tsdp.theorems.config import ConfigError, TrainingConfig, window_starts


def _ff_linears(model):
    return [m for m in model.mlp if isinstance(m, torch.nn.Linear)]


def _lstm_parameters(model):
    """Every LSTM weight and bias, each on its own (no zero bias to check)."""
    return [(p, p) for cell in model.rnn.cells for lin in cell.values() for p in (lin.weight, lin.bias)]


@pytest.mark.parametrize("name,uniform,bound", [
    ("simple-ff", lambda m: [(l.weight, l.bias) for l in _ff_linears(m)], 0.07),
    ("dlinear", lambda m: [(m.seasonal.weight, m.seasonal.bias), (m.trend.weight, m.trend.bias)], 0.07),
    ("deepar", _lstm_parameters, 1 / math.sqrt(40)),
], ids=["simple-ff", "dlinear", "deepar"])
def test_models_have_the_official_init(name, uniform, bound):
    """simple-ff and DLinear: GluonTS's make_linear_layer, weights uniform on [-0.07, 0.07] and zero biases (simple-ff:
    two linears; a second hidden layer would be a third). DeepAR: nn.LSTM's (and opacus DPLSTM's) init, every weight
    and bias uniform on ±1/√40, the first layer's input weights too (nn.Linear's default would be ±1/√(lags + 1)).
    KS against the uniform CDF, false-failure rate 1e-4 per tensor."""
    from scipy import stats

    torch.manual_seed(0)
    model = make_model(name, 30 if name == "deepar" else 96, 24)
    pairs = uniform(model)
    assert len(pairs) == {"simple-ff": 2, "dlinear": 2, "deepar": 8}[name]
    for weight, bias in pairs:
        w = weight.detach().flatten().numpy()
        assert float(abs(w).max()) <= bound
        assert stats.kstest(w, stats.uniform(-bound, 2 * bound).cdf).pvalue > 1e-4
        if bias is not weight:
            assert float(bias.detach().abs().max()) == 0.0


@pytest.mark.parametrize("name", ["simple-ff", "dlinear"])
def test_models_are_scale_free(name):
    """No learned floor: the data × c (c = 1e-4, 1e4) gives the same ν, the NLL plus log c, loc and scale × c
    (relative 1e-4 in float32). The old e^a floor (1 in data units) broke this at 1e-4. (iTransformer and DeepAR
    feed log(scale) to their networks as GluonTS's do, so they see the data's level by design.)"""
    torch.manual_seed(1)
    model = make_model(name, 30, 6)
    g = torch.Generator().manual_seed(2)
    context, forecast = 20 + 5 * torch.rand(3, 30, generator=g), 20 + 5 * torch.rand(3, 6, generator=g)
    base = model(context, forecast)
    for c in (1e-4, 1e4):
        scaled = model(context * c, forecast * c)
        torch.testing.assert_close(scaled - math.log(c), base, rtol=1e-4, atol=1e-4)
        df, loc, scale = model.distribution(context)
        df_c, loc_c, scale_c = model.distribution(context * c)
        torch.testing.assert_close(df_c, df, rtol=1e-4, atol=0)
        torch.testing.assert_close(loc_c / c, loc, rtol=1e-4, atol=0)
        torch.testing.assert_close(scale_c / c, scale, rtol=1e-4, atol=0)


def test_deepar_keeps_every_lag_and_reads_its_whole_window():
    """DeepAR with traffic's 28 lags on a context of L_C + max lag - 1 = 192 + 168 (GluonTS's past_length) keeps all
    28; the oldest value (read only by lag 169 at the first unrolled position, which predicts the second of the L_C
    context values) has a non-zero gradient of the loss, so the window holds nothing unread; a lag longer than the
    window is refused."""
    lc = PAPER["traffic"].context_length
    assert lc == 192
    torch.manual_seed(0)
    model = DeepAR(lc + max(LONG_LAGS) - 1, 4, lags=LONG_LAGS).double()
    assert model.lags == LONG_LAGS and len(model.lags) == 28
    g = torch.Generator().manual_seed(1)
    context = (10 + torch.rand(2, lc + 168, generator=g, dtype=torch.float64)).requires_grad_(True)
    forecast = 10 + torch.rand(2, 4, generator=g, dtype=torch.float64)
    model(context, forecast).sum().backward()
    assert bool((context.grad[:, 0] != 0).all())
    with pytest.raises(ValueError, match="lags must be in"):
        DeepAR(168, 4, lags=LONG_LAGS)


def test_the_accountant_sees_deepars_whole_window():
    """A DeepAR cell's configuration has context length L_C + max lag - 1 (the shipped data: 6 + 6 - 1), the other
    models L_C; k = L_C + max lag - 1 + L_F windows hold a changed element (event level), counted at the longest
    series (THEOREMS.md, variable lengths: a Poisson bottom level's Binom(k, q) dominates every series only so)."""
    settings = GridSettings(epochs=1, n_samples=10, device="cpu")
    deepar = cell_config(Cell("deepar", 1.0, 0, "1-event", "wor"), settings)
    ff = cell_config(Cell("simple-ff", 1.0, 0, "1-event", "wor"), settings)
    assert ff.context_length == SHIPPED_SPEC.context_length == 6
    assert deepar.context_length == 6 + max(SHIPPED_SPEC.lags) - 1 == 11
    longest = {c: window_starts(max(c.lengths), c.forecast_length) for c in (deepar, ff)}
    assert deepar.k == min(11 + 6, longest[deepar]) == 17 and ff.k == min(6 + 6, longest[ff]) == 12


def test_shuffled_epochs_are_the_official_codes_and_the_accountant_counts_them():
    """Shuffle cells drop the last partial step: floor(N λ / Λ) steps per epoch (170 series, Λ = 8: 21, not 22);
    the sampler runs that many full steps of distinct series per epoch and the accountant counts an epoch per 21
    steps (22 steps touch 2 epochs: with ceil's 22 per epoch it would count 1)."""
    from tsdp.training.samplers import make_sampler
    from tsdp.verify.events import compositions

    settings = GridSettings(epochs=1, n_samples=10, device="cpu")
    config = cell_config(Cell("simple-ff", 1.0, 0, "1-event", "shuffle"), settings)
    assert config.drop_last and config.steps_per_epoch == 170 // 8 == 21
    sampler = make_sampler(config)
    index = sampler.sample(42, torch.Generator().manual_seed(0))
    assert sampler.steps_per_epoch == 21 and bool(index.mask.all())
    for epoch in (index.seq[:21], index.seq[21:]):  # each epoch: 21 full steps of distinct series
        assert len(set(epoch.flatten().tolist())) == 21 * 8
    assert compositions(config, steps=22) == 2 and compositions(config, steps=21) == 1
    assert config.with_(drop_last=False).steps_per_epoch == 22
    with pytest.raises(ConfigError, match="top must be shuffle"):
        config.with_(top="wor")


def test_the_loop_pads_windows_as_unobserved_for_tsdp_models(monkeypatch):
    """tsdp's loop fills Algorithm 4's front padding with each model's ``padding``: UNOBSERVED (NaN) for the four
    forecasters (GluonTS marks its padding unobserved), 0 for a model without one; here in the training windows and
    the test contexts (the validation contexts take the same ``padding_of``). Series of 5-8 training values at
    L_C = 6: windows and test contexts start in the padding."""
    import importlib

    from tsdp.training.batch_sampler import WindowDataset
    from tsdp.training.models import DLinear, MLP
    from tsdp.training.windows import pad_series, padding_of

    training = importlib.import_module("tsdp.training.train")
    assert math.isnan(padding_of(DLinear(6, 2))) and padding_of(MLP(6, 2)) == 0.0
    padded, _ = pad_series([torch.ones(3)], 2, padding_of(DeepAR(6, 2)))
    assert torch.isnan(padded[0, :2]).all() and bool((padded[0, 2:] == 1).all())
    one = TrainingConfig(N=1, L=8, context_length=3, forecast_length=1, batch_size=1)
    for padding in (padding_of(DLinear(3, 1)), 0.0):  # a user's DataLoader, padded for tsdp's model or with zeros
        context, forecast = WindowDataset([np.arange(1.0, 9.0)], one, padding=padding).__getitems__([(0, 0), (0, 3)])
        assert torch.allclose(context[0], torch.full((3,), padding), equal_nan=True)
        assert context[1].tolist() == [1.0, 2.0, 3.0] and forecast[:, 0].tolist() == [1.0, 4.0]
    seen = []

    class Spy(DLinear):
        def forward(self, context, forecast):
            seen.append(("train", bool(torch.isnan(context).any()), bool(torch.isnan(forecast).any())))
            return super().forward(context, forecast)

        def sample(self, context, n_samples, generator):
            seen.append(("test", bool(torch.isnan(context).any()), False))
            return super().sample(context, n_samples, generator)

        def path_quantiles(self, context, n_samples, generator):  # what evaluate asks a direct forecaster for
            seen.append(("test", bool(torch.isnan(context).any()), False))
            return super().path_quantiles(context, n_samples, generator)

    monkeypatch.setattr(training, "make_model", lambda name, lc, lf, **kw: Spy(lc, lf))
    data = SeriesData(tuple(np.arange(1.0, n + 1.0) for n in (7, 8, 9, 10)))
    config = TrainingConfig(N=4, L=5, lengths=(5, 6, 7, 8), context_length=6, forecast_length=2, batch_size=4)
    r = training.train(config, "dlinear", data, budget=Budget(epochs=3, private=False), loop=Loop(lr=1e-2),
                       evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    assert math.isfinite(r.crps)
    assert any(kind == "train" and nan for kind, nan, _ in seen) and any(kind == "test" and nan for kind, nan, _ in seen)
    assert not any(f for *_, f in seen)  # a forecast is never padding


def test_the_loop_gives_deepar_each_windows_covariates(monkeypatch):
    """tsdp's loop gives DeepAR the covariates of every window's own positions (hourly data: 4 calendar features and
    the age; the series start at different hours): in the training steps (a window found by its values, which
    encode series and position) and in the test windows (after each history's last value), padding 0 before a
    series' start. A loop that passes none, or crops them one position off, fails here."""
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    import importlib

    from tsdp.datasets.series import SeriesStart
    from tsdp.datasets.time_features import position_covariates

    training = importlib.import_module("tsdp.training.train")
    seen = []

    class Spy(DeepAR):
        def forward(self, context, forecast, covariates=None):
            seen.append(("train", context.detach().clone(), forecast.detach().clone(), covariates))
            return super().forward(context, forecast, covariates)

        def sample(self, context, n_samples, generator, covariates=None):
            seen.append(("test", context.clone(), None, covariates))
            return super().sample(context, n_samples, generator, covariates)

    monkeypatch.setattr(training, "make_model", lambda name, lc, lf, **kw: Spy(lc, lf, **kw))
    lengths = (9, 12, 10)
    starts = tuple(SeriesStart(f"2021-02-28 {h:02d}:00:00", "h") for h in (3, 22, 23))
    data = SeriesData(tuple(1000.0 * (n + 1) + np.arange(L) for n, L in enumerate(lengths)), starts=starts)
    config = TrainingConfig(N=3, L=7, lengths=(7, 10, 8), context_length=5, forecast_length=2, batch_size=2)
    training.train(config, "deepar", data, budget=Budget(epochs=2, private=False), loop=Loop(lr=1e-3, lags=(1, 2)),
                   evaluation=Evaluation(n_samples=2), device="cpu", progress=False, seed=0)
    width = 5 + 2
    trained = [(c, f, z) for kind, c, f, z in seen if kind == "train"]
    assert trained and all(z is not None and z.shape[1:] == (width, 5) for _, _, z in trained)
    padded_windows = 0
    for context, forecast, z in trained:
        for row in range(context.shape[0]):
            window = torch.cat([context[row], forecast[row]]).double()
            j = int(torch.nonzero(~torch.isnan(window))[0])  # the window's first observed value
            n, position = divmod(int(window[j]), 1000)
            first = position - j
            padded_windows += first < 0
            expected = position_covariates(starts[n - 1], first, width)
            np.testing.assert_array_equal(z[row].numpy(), expected)
    assert padded_windows > 0
    tested = [(c, z) for kind, c, _, z in seen if kind == "test"]
    for _, z in tested:
        for n, L in enumerate(lengths):  # the test window forecasts the last L_F values: it ends at L
            np.testing.assert_array_equal(z[n].numpy(), position_covariates(starts[n], L - width, width))
