"""tsdp's forecasters against gluonts.torch's modules (the ``gluonts`` extra, GluonTS 0.17) in the paper's official
configurations (jan-schuchardt/dp_forecasting, seml/configs/<dataset>/dp_train_standard_eval.yaml): GluonTS's weights,
copied into tsdp's model by the parameter-name mapping each test states, give the same Student-t laws and the same
per-sample losses in float64 on random context windows (levels from 1e-8 to 1e4), to rtol 1e-10 (float64 rounding
through a few hundred operations; a wrong column, gate order or missing layer moves them at the first digit).

One module, so gluonts.torch (lightning, about 4 s of CPU) is imported once per xdist worker."""
import pytest
import torch

pytest.importorskip("lightning")
deepar_module = pytest.importorskip("gluonts.torch.model.deepar.module")
d_linear_module = pytest.importorskip("gluonts.torch.model.d_linear.module")
ff_module = pytest.importorskip("gluonts.torch.model.simple_feedforward.module")
it_module = pytest.importorskip("gluonts.torch.model.i_transformer.module")

from tsdp.datasets.benchmarks import LONG_LAGS
from tsdp.datasets.series import SeriesStart
from tsdp.datasets.time_features import window_covariates
from tsdp.training.models import UNOBSERVED, DeepAR, DLinear, ITransformer, SimpleFeedForward

LC, LF = 24, 6
"""The official configs' shape: relative_context_length 8 × prediction length (3 × 8 = 24 here, kept small)."""
TOL = {"rtol": 1e-10, "atol": 0.0}


def _windows(length, seed, zero_row=False):
    """Positive random windows (B = 5) of values in [1, 50] × (1, 1, 1e-4, 1e4, 1e-8): the last row's scale is below
    simple-ff's floor 1e-5 and above MeanScaler's 1e-10, so a model with the other's scaler fails here."""
    g = torch.Generator().manual_seed(seed)
    x = 1 + 49 * torch.rand(5, length, generator=g, dtype=torch.float64)
    x[2] *= 1e-4
    x[3] *= 1e4
    x[4] *= 1e-8
    if zero_row:
        x[0] = 0.0
    return x


def _front_padded(context, pads):
    """Algorithm 4's front padding of row i over its first ``pads[i]`` values, as each side writes it: tsdp's loop
    puts ``UNOBSERVED`` (NaN) there; GluonTS's ``InstanceSplitter`` puts 0 with ``past_observed_values`` 0.
    Returns (tsdp's context, GluonTS's context, GluonTS's observed indicator)."""
    observed = torch.ones_like(context)
    for row, pad in enumerate(pads):
        observed[row, :pad] = 0.0
    zeros = context * observed
    return torch.where(observed > 0, context, torch.full_like(context, UNOBSERVED)), zeros, observed


PADS = (0, 3, LC // 2, LC - 1, 1)
"""Padded values per row: none, a few, half, all but one (never all: there GluonTS's MeanScaler without a
default_scale takes the batch's mean, tsdp's the fixed 1.0; models.py's docstring)."""


def _copy_head(head, args_proj):
    """GluonTS's ``StudentTOutput`` projection is three ``nn.Linear(h, 1)`` (df, loc, scale); tsdp's head is their rows
    stacked in one ``nn.Linear(h, 3)``."""
    head.proj.weight.copy_(torch.cat([p.weight for p in args_proj.proj]))
    head.proj.bias.copy_(torch.cat([p.bias for p in args_proj.proj]))


def _copy(mine: torch.nn.Module, theirs: torch.nn.Module):
    mine.weight.copy_(theirs.weight)
    mine.bias.copy_(theirs.bias)


def _assert_same_law(ours, context, forecast, args, loc, scale, their_loss):
    """tsdp's (ν, loc, scale) in data units equal GluonTS's affine-transformed Student-t (ν, loc + scale·μ, scale·σ),
    and tsdp's per-sample loss (mean NLL over the L_F steps) equals GluonTS's."""
    df, mu, sigma = ours.distribution(context)
    torch.testing.assert_close(df, args[0], **TOL)
    torch.testing.assert_close(mu, loc + scale * args[1], **TOL)
    torch.testing.assert_close(sigma, scale * args[2], **TOL)
    torch.testing.assert_close(ours(context, forecast), their_loss, **TOL)


def test_simple_ff_equals_gluonts():
    """SimpleFeedForwardModel(hidden_dimensions=[64, 64]) (official) has tsdp's layers L_C → 64 → L_F·64; mapping:
    ``nn[0]`` → ``mlp[0]``, ``nn[2]`` → ``mlp[2]`` (the Linear layers in order), ``args_proj`` → ``head``. The windows
    include an all-zero context (both floor its scale at 1e-5)."""
    torch.manual_seed(3)
    theirs = ff_module.SimpleFeedForwardModel(prediction_length=LF, context_length=LC,
                                              hidden_dimensions=[64, 64]).double()
    ours = SimpleFeedForward(LC, LF).double()
    linears = [m for m in theirs.nn if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(LC, 64), (64, LF * 64)]
    with torch.no_grad():
        for mine, their in zip([m for m in ours.mlp if isinstance(m, torch.nn.Linear)], linears, strict=True):
            _copy(mine, their)
        _copy_head(ours.head, theirs.args_proj)
    context, forecast = _windows(LC, 4, zero_row=True), _windows(LF, 5)
    args, loc, scale = theirs(context)
    loss = theirs.loss(context, forecast, torch.ones_like(forecast))
    _assert_same_law(ours, context, forecast, args, loc, scale, loss)
    padded, zeros, _ = _front_padded(_windows(LC, 4), PADS)  # GluonTS's model reads no indicator: padding is 0
    args, loc, scale = theirs(zeros)
    _assert_same_law(ours, padded, forecast, args, loc, scale, theirs.loss(zeros, forecast, torch.ones_like(forecast)))


def test_dlinear_equals_gluonts():
    """DLinearModel(hidden_dimension=20, kernel_size=25, scaling="mean") (official); mapping: ``linear_seasonal`` →
    ``seasonal``, ``linear_trend`` → ``trend``, ``args_proj`` → ``head``. No all-zero context: there GluonTS's
    MeanScaler takes the batch's mean scale and tsdp 1.0 (models.py's docstring). Front-padded windows: the scale
    is the mean over the observed values."""
    torch.manual_seed(5)
    theirs = d_linear_module.DLinearModel(prediction_length=LF, context_length=LC, hidden_dimension=20,
                                          kernel_size=25, scaling="mean").double()
    ours = DLinear(LC, LF).double()
    with torch.no_grad():
        _copy(ours.seasonal, theirs.linear_seasonal)
        _copy(ours.trend, theirs.linear_trend)
        _copy_head(ours.head, theirs.args_proj)
    forecast = _windows(LF, 7)
    for pads in ((0,) * 5, PADS):
        context, zeros, observed = _front_padded(_windows(LC, 6), pads)
        args, loc, scale = theirs(zeros, observed)
        loss = theirs.loss(zeros, observed, forecast, torch.ones_like(forecast))
        _assert_same_law(ours, context, forecast, args, loc, scale, loss)


def test_itransformer_equals_gluonts():
    """ITransformerModel(d_model=32, nhead=4, dim_feedforward=128, dropout=0, activation="relu", norm_first=False,
    num_encoder_layers=2, scaling="mean") (official); mapping: ``emebdding`` → ``embed``; per layer
    ``self_attn.in_proj_weight/bias`` → ``qkv`` (rows q, k, v), ``self_attn.out_proj`` → ``out``, ``linear1`` /
    ``linear2`` → ``ff[0]`` / ``ff[2]``, ``norm1`` / ``norm2`` → ``norm1`` / ``norm2``; ``encoder.norm`` → ``norm``;
    ``projection`` → ``project``; ``args_proj`` → ``head``. GluonTS's series axis (B, L_C, 1) is tsdp's one token."""
    torch.manual_seed(7)
    theirs = it_module.ITransformerModel(prediction_length=LF, context_length=LC, d_model=32, nhead=4,
                                         dim_feedforward=128, dropout=0.0, activation="relu", norm_first=False,
                                         num_encoder_layers=2, scaling="mean").double().eval()
    ours = ITransformer(LC, LF).double()
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
    with torch.no_grad():
        _copy(ours.embed, theirs.emebdding)
        for mine, their in zip(ours.layers, theirs.encoder.layers, strict=True):
            mine.qkv.weight.copy_(their.self_attn.in_proj_weight)
            mine.qkv.bias.copy_(their.self_attn.in_proj_bias)
            _copy(mine.out, their.self_attn.out_proj)
            _copy(mine.ff[0], their.linear1)
            _copy(mine.ff[2], their.linear2)
            _copy(mine.norm1, their.norm1)
            _copy(mine.norm2, their.norm2)
        _copy(ours.norm, theirs.encoder.norm)
        _copy(ours.project, theirs.projection)
        _copy_head(ours.head, theirs.args_proj)
    forecast = _windows(LF, 9)
    for pads in ((0,) * 5, PADS):
        context, zeros, observed = _front_padded(_windows(LC, 8), pads)
        zeros, observed = zeros[..., None], observed[..., None]
        args, loc, scale = theirs(zeros, observed)
        args = [a[..., 0] for a in args]
        loss = theirs.loss(zeros, observed, forecast[..., None], torch.ones_like(forecast)[..., None])
        _assert_same_law(ours, context, forecast, args, loc[..., 0], scale[..., 0], loss.mean(dim=-1))


def _gluonts_deepar(context_length, lags, covariates):
    """DeepARModel as the official estimator builds it (num_layers 2, hidden 40, dropout 0, scaling, no
    default_scale, StudentTOutput) with ``covariates`` dynamic features (the estimator's time features and age), one
    static real (the estimator feeds it 0) and the official cardinality-[1] static category (its 1-dimensional
    embedding is tsdp's constant)."""
    theirs = deepar_module.DeepARModel(freq="h", context_length=context_length, prediction_length=LF,
                                       num_feat_dynamic_real=covariates, num_feat_static_real=1, num_feat_static_cat=1,
                                       cardinality=[1], num_layers=2, hidden_size=40, dropout_rate=0.0,
                                       lags_seq=list(lags), scaling=True, default_scale=None).double()
    return theirs


def _deepar_loss(theirs, window, forecast, observed, covariates, future_only=False):
    """GluonTS's per-sample training loss: ``DeepARLightningModule.training_step`` calls ``loss`` with its defaults
    (``future_only=False``, mean over the L_C - 1 + L_F unrolled positions); the window's covariates split into its
    past and future time features."""
    b, w = window.shape
    return theirs.loss(feat_static_cat=torch.zeros(b, 1, dtype=torch.long), feat_static_real=window.new_zeros(b, 1),
                       past_time_feat=covariates[:, :w], past_target=window, past_observed_values=observed,
                       future_time_feat=covariates[:, w:], future_target=forecast,
                       future_observed_values=torch.ones_like(forecast), future_only=future_only,
                       aggregate_by=torch.mean)


def _copy_deepar(ours, theirs):
    """Mapping: ``rnn.weight_ih_l0`` columns of the lags, the static embedding, log(scale) and the time features →
    ``rnn.cells[0].ih`` (the static real's column multiplies GluonTS's 0); ``weight_ih_l1``, ``weight_hh_l{0,1}``,
    ``bias_ih/hh_l{0,1}`` → ``cells[k].ih/hh`` (gate rows i, f, g, o); ``embedder._embedders[0]`` → ``static``;
    ``param_proj`` → ``head``."""
    n, f = len(ours.lags), ours.covariates
    assert theirs.rnn.input_size == n + 3 + f  # lags, embedding, static real, log(scale), time features
    with torch.no_grad():
        for k, cell in enumerate(ours.rnn.cells):
            w_ih = getattr(theirs.rnn, f"weight_ih_l{k}")
            columns = list(range(n)) + [n, n + 2] + list(range(n + 3, n + 3 + f))
            cell["ih"].weight.copy_(w_ih[:, columns] if k == 0 else w_ih)
            cell["ih"].bias.copy_(getattr(theirs.rnn, f"bias_ih_l{k}"))
            cell["hh"].weight.copy_(getattr(theirs.rnn, f"weight_hh_l{k}"))
            cell["hh"].bias.copy_(getattr(theirs.rnn, f"bias_hh_l{k}"))
        ours.static.weight.copy_(theirs.embedder._embedders[0].weight)
        _copy_head(ours.head, theirs.param_proj)


def _hourly_covariates(width, ends):
    """tsdp's covariates of hourly windows of ``width`` positions ending before ``ends`` (a window that starts
    before the series' start included): 4 calendar features and the age, float64."""
    start = SeriesStart("2014-03-30 22:00:00", "h")
    return torch.from_numpy(window_covariates([start] * len(ends), ends, width)).double()


def test_deepar_equals_gluonts():
    """tsdp's DeepAR on a window of L_C + max lag - 1 values with the official 28 lags and hourly data's 5 covariates
    is GluonTS's DeepARModel at context_length L_C (its ``past_length``): the same training loss (NLL over the context
    and forecast positions, ``future_only=False``), also on front-padded windows (padded values out of the scale and
    the loss). A model that averages over the forecast only fails here (GluonTS's forecast-only loss differs), so
    does one that unrolls one step more (it reads a value before the window), and one that drops the covariates or
    reads them one position off."""
    torch.manual_seed(11)
    covariate_count = 5
    theirs = _gluonts_deepar(LC, LONG_LAGS, covariate_count)
    ours = DeepAR(LC + max(LONG_LAGS) - 1, LF, lags=LONG_LAGS, covariates=covariate_count).double()
    assert theirs._past_length == ours.context_length
    _copy_deepar(ours, theirs)
    window, forecast = _windows(ours.context_length, 12), _windows(LF, 13)
    w = ours.context_length
    covariates = _hourly_covariates(w + LF, (w + LF, w + LF + 1000, w + LF + 20000, LF + 3, w + LF + 7))
    assert covariates[3, : w - 3].abs().max() == 0 and covariates[3, w - 3:].abs().min() > 0  # starts in the padding
    observed = torch.ones_like(window)
    expected = _deepar_loss(theirs, window, forecast, observed, covariates)
    torch.testing.assert_close(ours(window, forecast, covariates), expected, **TOL)
    for wrong in (None, torch.roll(covariates, 1, dims=1)):  # no covariates; each position given its neighbour's
        assert float((ours(window, forecast, wrong) - expected).detach().abs().min()) > 1e-9
    forecast_only = _deepar_loss(theirs, window, forecast, observed, covariates, future_only=True)
    assert float((forecast_only - ours(window, forecast, covariates)).detach().abs().min()) > 1e-6
    # front padding: into the lags only, up to the scaled L_C, all but one value
    padded, zeros, observed = _front_padded(window, (0, 5, w - LC + 3, w - 1, 100))
    torch.testing.assert_close(ours(padded, forecast, covariates), _deepar_loss(theirs, zeros, forecast, observed,
                                                                                 covariates), **TOL)
