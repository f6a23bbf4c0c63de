"""The forecasters as GluonTS builds them: simple-ff equals gluonts.torch's SimpleFeedForwardModel for equal weights,
GluonTS's init, scale-free scaling, DeepAR keeps every lag and the accountant sees L_C + max lag."""
import importlib
import math
import sys
import types
from pathlib import Path

import pytest
import torch

from tsdp.datasets.benchmarks import LONG_LAGS, PAPER, SHIPPED_SPEC
from tsdp.experiments.cells import cell_config
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.training.models import DeepAR, SimpleFeedForward, make_model
from tsdp.theorems.config import ConfigError


def _gluonts_simple_feedforward(monkeypatch):
    """gluonts.torch.model.simple_feedforward.module without gluonts.torch's package imports (they need lightning,
    which the estimator uses and the module does not): the packages on the path stand in as bare namespaces."""
    gluonts = pytest.importorskip("gluonts")
    root = Path(gluonts.__file__).parent / "torch"
    for name, folder in (("gluonts.torch", root), ("gluonts.torch.model", root / "model"),
                         ("gluonts.torch.model.simple_feedforward", root / "model" / "simple_feedforward")):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]
            monkeypatch.setitem(sys.modules, name, package)
    return importlib.import_module("gluonts.torch.model.simple_feedforward.module")


def test_simple_ff_equals_gluonts_for_equal_weights(monkeypatch):
    """GluonTS's SimpleFeedForwardModel(hidden_dimensions=[64, 64]) has tsdp's layers (L_C → 64 → L_F·64, one hidden
    layer); with its weights copied, the same contexts (one all zero, one at 1e-4, one at 1e4) give the same Student-t
    laws in data units (ν, loc·scale, scale·scale) to float32 rounding."""
    module = _gluonts_simple_feedforward(monkeypatch)
    torch.manual_seed(3)
    theirs = module.SimpleFeedForwardModel(prediction_length=5, context_length=12, hidden_dimensions=[64, 64])
    ours = SimpleFeedForward(12, 5)
    linears = [m for m in theirs.nn if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(12, 64), (64, 5 * 64)]
    with torch.no_grad():
        for mine, their in zip([m for m in ours.mlp if isinstance(m, torch.nn.Linear)], linears):
            mine.weight.copy_(their.weight)
            mine.bias.copy_(their.bias)
        ours.head.proj.weight.copy_(torch.cat([p.weight for p in theirs.args_proj.proj]))
        ours.head.proj.bias.copy_(torch.cat([p.bias for p in theirs.args_proj.proj]))
    g = torch.Generator().manual_seed(4)
    context = torch.rand(4, 12, generator=g) * 50
    context[0] = 0.0
    context[2] *= 1e-4
    context[3] *= 1e4
    (df, loc, scale), zero, data_scale = theirs(context)
    mine_df, mine_loc, mine_scale = ours.distribution(context)
    assert float(zero.abs().max()) == 0.0
    torch.testing.assert_close(mine_df, df, rtol=1e-5, atol=0)
    torch.testing.assert_close(mine_loc, loc * data_scale, rtol=1e-5, atol=0)
    torch.testing.assert_close(mine_scale, scale * data_scale, rtol=1e-5, atol=0)


def test_simple_ff_has_gluonts_init():
    """make_linear_layer: weights uniform on [-0.07, 0.07] (KS against the uniform CDF, false-failure rate 1e-4), zero
    biases; a second hidden layer would be a third linear."""
    from scipy import stats

    torch.manual_seed(0)
    model = SimpleFeedForward(96, 24)
    linears = [m for m in model.mlp if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 2
    for m in linears:
        w = m.weight.detach().flatten().numpy()
        assert float(abs(w).max()) <= 0.07 and float(m.bias.detach().abs().max()) == 0.0
        assert stats.kstest(w, stats.uniform(-0.07, 0.14).cdf).pvalue > 1e-4


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer"])
def test_models_are_scale_free(name):
    """No learned floor: the data × c (c = 1e-4, 1e4) gives the same ν, the NLL plus log c, loc and scale × c
    (relative 1e-4 in float32). The old e^a floor (1 in data units) broke this at 1e-4. (DeepAR feeds log(scale) to
    its LSTM as GluonTS's does, so it sees the data's level by design.)"""
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
    """DeepAR with traffic's 28 lags on a context of L_C + max lag = 192 + 169 keeps all 28; the oldest value (read
    only by lag 169 at the first unrolled position) has a non-zero gradient of the loss and a value before it would be
    out of reach; a lag that does not fit is refused."""
    lc = PAPER["traffic"].context_length
    assert lc == 192
    torch.manual_seed(0)
    model = DeepAR(lc + max(LONG_LAGS), 4, lags=LONG_LAGS).double()
    assert model.lags == LONG_LAGS and len(model.lags) == 28
    g = torch.Generator().manual_seed(1)
    context = (10 + torch.rand(2, lc + 169, generator=g, dtype=torch.float64)).requires_grad_(True)
    forecast = 10 + torch.rand(2, 4, generator=g, dtype=torch.float64)
    model(context, forecast).sum().backward()
    assert bool((context.grad[:, 0] != 0).all())
    with pytest.raises(ValueError, match="lags must be in"):
        DeepAR(169, 4, lags=LONG_LAGS)


def test_the_accountant_sees_deepars_whole_window():
    """A DeepAR cell's configuration has context length L_C + max lag (the shipped data: 6 + 6), the other models L_C;
    k = L_C + max lag + L_F windows hold a changed element (event level, long series)."""
    settings = GridSettings(epochs=1, n_samples=10, device="cpu")
    deepar = cell_config(Cell("deepar", 1.0, 0, "1-event", "wor"), settings)
    ff = cell_config(Cell("simple-ff", 1.0, 0, "1-event", "wor"), settings)
    assert ff.context_length == SHIPPED_SPEC.context_length == 6
    assert deepar.context_length == 6 + max(SHIPPED_SPEC.lags) == 12
    assert deepar.k == min(12 + 6, deepar.T) and ff.k == min(6 + 6, ff.T)


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
