"""DeepAR's layer-by-layer unrolling against a position-by-position reference, and its Student-t draws.

The reference below is DeepAR's computation written out position by position, as GluonTS's ``nn.LSTM`` defines it:
at each unrolled position p the input [values at p - l for every lag l, the learned constant, log(scale),
covariates at p], then every layer's gates ih(x) + hh(h) (rows i, f, g, o) and its new (h, c). It reads only the
model's parameters; the package computes each layer's ``ih`` once over all positions instead.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from tsdp.training.deepar import DeepAR
from tsdp.training.clipping import clip_margin
from tsdp.training.factored import factored_clipped_sum
from tsdp.training.observations import mean_scale, observed_values
from tsdp.training.student_t import student_t_nll, student_t_quantile, student_t_sample


def reference_step(model, x, state):
    """Every layer of the LSTM at one position, from its parameters (the gates' views, as ``nn.LSTM``)."""
    new_state = []
    for cell, (h, c) in zip(model.rnn.cells, state):
        gates = F.linear(x, cell["ih"].weight, cell["ih"].bias) + F.linear(h, cell["hh"].weight, cell["hh"].bias)
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        new_state.append((h, c))
        x = h
    return x, new_state


def reference_inputs(model, series, covariates, p, log_scale):
    """The input at position p: the lagged values, the learned constant, log(scale), the covariates at p."""
    lagged = torch.stack([series[:, p - lag] for lag in model.lags], dim=-1)
    constant = model.static.weight[0, 0] * torch.ones_like(log_scale)
    return torch.cat([lagged, constant, log_scale, covariates[:, p]], dim=-1)


def reference_scale(model, context):
    values, observed = observed_values(context)
    return values, observed, mean_scale(values[:, model.first - 1:], observed[:, model.first - 1:])


def reference_forward(model, context, forecast, covariates):
    """(per-sample losses, LSTM outputs (B, P, h)) position by position."""
    values, observed, scale = reference_scale(model, context)
    window = torch.cat([values, forecast], dim=-1)
    series, log_scale = window / scale, torch.log(scale)
    zero = context.new_zeros(context.shape[0], model.rnn.hidden)
    state = [(zero, zero) for _ in model.rnn.cells]
    outputs = []
    for p in range(model.first, window.shape[1]):
        h, state = reference_step(model, reference_inputs(model, series, covariates, p, log_scale), state)
        outputs.append(h)
    outputs = torch.stack(outputs, dim=1)
    df, loc, s = model.head(outputs)
    nll = student_t_nll(window[:, model.first:], df, loc * scale, s * scale)
    weights = torch.cat([observed, torch.ones_like(forecast)], dim=-1)[:, model.first:]
    return (nll * weights).mean(dim=-1), outputs


def reference_paths(model, context, n_samples, generator, covariates):
    """Sample paths with each path's context unrolled on its own (as GluonTS's sampler does), position by position."""
    values, _, scale = reference_scale(model, context)
    scale, covariates = scale.repeat_interleave(n_samples, 0), covariates.repeat_interleave(n_samples, 0)
    series, log_scale = values.repeat_interleave(n_samples, 0) / scale, torch.log(scale)
    zero = series.new_zeros(series.shape[0], model.rnn.hidden)
    state = [(zero, zero) for _ in model.rnn.cells]
    for p in range(model.first, model.context_length + model.forecast_length):
        h, state = reference_step(model, reference_inputs(model, series, covariates, p, log_scale), state)
        if p >= model.context_length:
            df, loc, s = model.head(h)
            series = torch.cat([series, student_t_sample(df, loc, s, generator)[:, None]], dim=1)
    paths = series[:, model.context_length:] * scale
    return paths.reshape(context.shape[0], n_samples, model.forecast_length)


def deepar_case(dtype, with_covariates, batch=7, seed=0):
    """A DeepAR with every parameter moved off its init, a batch with a padded context, covariates or None."""
    torch.manual_seed(seed)
    model = DeepAR(30, 6, covariates=3).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    g = torch.Generator().manual_seed(seed + 1)
    context = (5 + 2 * torch.randn(batch, 30, generator=g)).to(dtype)
    context[0, :12] = 0.0  # padded front, as a window at the start of its series
    forecast = (5 + 2 * torch.randn(batch, 6, generator=g)).to(dtype)
    covariates = (torch.rand(batch, 36, 3, generator=g) - 0.5).to(dtype) if with_covariates else None
    return model, context, forecast, covariates


TOLERANCE = {torch.float32: 2e-5, torch.float64: 1e-12}


def assert_close(got, want, dtype):
    tol = TOLERANCE[dtype]
    scale = float(want.detach().abs().max())
    assert torch.allclose(got, want, rtol=tol, atol=tol * scale), float((got - want).abs().max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_covariates", [False, True])
def test_layer_by_layer_forward_equals_the_position_by_position_reference(dtype, with_covariates):
    """The teacher-forced loss, the LSTM's outputs and every parameter's gradient equal the position-by-position
    reference's to float rounding (2e-5 relative in float32, 1e-12 in float64); an odd batch (7) so that the batched
    products do round differently."""
    model, context, forecast, covariates = deepar_case(dtype, with_covariates)
    zeros = context.new_zeros(context.shape[0], 36, 3)
    want_loss, want_outputs = reference_forward(model, context, forecast, zeros if covariates is None else covariates)
    want_grads = torch.autograd.grad(want_loss.sum(), list(model.parameters()))
    loss = model(context, forecast, covariates)
    grads = torch.autograd.grad(loss.sum(), list(model.parameters()))
    assert_close(loss, want_loss, dtype)
    for (name, _), got, want in zip(model.named_parameters(), grads, want_grads):
        assert float(want.abs().max()) > 0, name  # every parameter is reached
        assert_close(got, want, dtype)
    values, observed = observed_values(context)
    scale = model._scale(values, observed)
    window = torch.cat([values, forecast], dim=-1)
    x = model._inputs(window / scale, model._covariates(context, covariates), 36, model._static(torch.log(scale)))
    outputs, _ = model.rnn.unroll(x, model.rnn.initial_state(context.shape[0], context))
    assert outputs.shape == (7, 36 - model.first, model.rnn.hidden)
    assert_close(outputs, want_outputs, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sampler_unrolls_the_context_once_and_draws_the_per_path_reference(dtype):
    """The sampler (context unrolled once per series, layer by layer; state copied to the S paths; forecast steps
    position by position) draws the paths of the reference that unrolls every path on its own, position by
    position, from the same generator (float rounding only: the draws are continuous in the LSTM's outputs)."""
    model, context, _, covariates = deepar_case(dtype, True, batch=4, seed=2)
    with torch.no_grad():
        got = model.sample(context, 5, torch.Generator().manual_seed(3), covariates)
        want = reference_paths(model, context, 5, torch.Generator().manual_seed(3), covariates)
    assert got.shape == (4, 5, 6)
    assert_close(got, want, dtype)
    assert not torch.allclose(got[:, 0], got[:, 1])  # the paths differ: the draws are per path


def test_shortest_context_has_no_context_position():
    """L_C = 1 (W = max lag): no position before the forecast; the sampler starts from the zero state and the loss
    averages the forecast positions, as the reference."""
    torch.manual_seed(4)
    model = DeepAR(7, 3, lags=(1, 7), covariates=0).double()
    context = 3 + torch.rand(2, 7, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    forecast = 3 + torch.rand(2, 3, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    want, _ = reference_forward(model, context, forecast, context.new_zeros(2, 10, 0))
    assert_close(model(context, forecast), want, torch.float64)
    with torch.no_grad():
        got = model.sample(context, 3, torch.Generator().manual_seed(7))
        paths = reference_paths(model, context, 3, torch.Generator().manual_seed(7), context.new_zeros(2, 10, 0))
    assert_close(got, paths, torch.float64)


def per_sample_autograd_norms(model, context, forecast, covariates):
    """||∇ L_i||₂ of each window's reference loss alone, by its own backward pass."""
    norms = []
    for i in range(context.shape[0]):
        loss, _ = reference_forward(model, context[i:i + 1], forecast[i:i + 1], covariates[i:i + 1])
        grads = torch.autograd.grad(loss.sum(), list(model.parameters()))
        norms.append(math.sqrt(sum(float(g.square().sum()) for g in grads)))
    return torch.tensor(norms, dtype=context.dtype)


def test_dp_step_per_sample_norms_equal_the_reference_per_sample_autograd():
    """The factored DP step's per-sample gradient norms (a layer's ``ih`` is one call on the (M, P, ·) inputs of all
    positions: its norm by the ghost or materialised route of t > 1 positions) equal those of each window's
    reference loss by its own backward pass (float64, 1e-10), and its clipped sum the reference's Σ_i c_i g_i."""
    model, context, forecast, covariates = deepar_case(torch.float64, True, batch=6, seed=8)
    want = per_sample_autograd_norms(model, context, forecast, covariates)
    clip = float(want.median())  # about half the windows clipped
    summed, norms = factored_clipped_sum(model, context, forecast, clip, covariates=covariates)
    assert torch.allclose(norms, want, rtol=1e-10, atol=0)
    assert 0 < int((want > clip).sum()) < 6
    ref = {name: torch.zeros_like(p) for name, p in model.named_parameters()}
    bound = clip * (1 - clip_margin(torch.float64, sum(p.numel() for p in model.parameters())))  # the engines' margin
    for i in range(context.shape[0]):
        loss, _ = reference_forward(model, context[i:i + 1], forecast[i:i + 1], covariates[i:i + 1])
        grads = torch.autograd.grad(loss.sum(), list(model.parameters()))
        for (name, _), g in zip(model.named_parameters(), grads):
            ref[name] += g / max(1.0, float(want[i]) / bound)
    for name in ref:
        assert torch.allclose(summed[name], ref[name], rtol=0, atol=1e-10), name


EXTREME_U = np.array([0.0, 5e-324, 1e-310, 1e-300, 1e-100, 1e-17, 2.0 ** -53, 1e-10, 0.01, 0.5 - 2.0 ** -54, 0.5,
                      0.5 + 2.0 ** -53, 0.99, 1 - 1e-10, 1 - 2.0 ** -52, np.nextafter(1.0, 0.0)])
EXTREME_DF = np.array([2.0, np.nextafter(2.0, 3.0), 2.0 + 1e-9, 2.5, 3.0, 7.3, 30.0, 1e3, 1e6, 1e10, 1e15, 1e20, 1e300,
                       np.inf])


def test_student_t_quantile_is_scipy_ppf_bit_for_bit():
    """``student_t_quantile`` (scipy.special.stdtrit) equals ``scipy.stats.t.ppf`` bit for bit (the int64 views
    compared, so -0.0, ±inf and nan count) over every pair of extreme levels u (0, subnormals, 1/2 ± ulp, 1 - ulp)
    and degrees of freedom ν (2, 2 + ulp, up to 1e300 and inf), and over random ones; u = 0 is -inf."""
    u, df = np.meshgrid(EXTREME_U, EXTREME_DF)
    rng = np.random.default_rng(0)
    u = np.concatenate([u.ravel(), rng.random(20000)])
    df = np.concatenate([df.ravel(), 2.0 + rng.exponential(5.0, 20000)])
    got, want = student_t_quantile(df, u), stats.t.ppf(u, df)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.all(got[u == 0] == -np.inf)


def test_student_t_sample_draws_are_scipy_ppf_of_the_same_uniforms():
    """The sampler's draws (loc 0, scale 1, float64) are ``stats.t.ppf`` of the same generator's float64 uniforms,
    exactly, at ν from 2 to inf; with loc and scale, loc + scale · that quantile."""
    df = torch.tensor(np.resize(EXTREME_DF, 4000), dtype=torch.float64)
    draws = student_t_sample(df, torch.zeros_like(df), torch.ones_like(df), torch.Generator().manual_seed(9))
    u = torch.rand(df.shape, generator=torch.Generator().manual_seed(9), dtype=torch.float64).numpy()
    want = stats.t.ppf(u, df.numpy())
    assert np.array_equal(draws.numpy().view(np.int64), (0.0 + 1.0 * want).view(np.int64))
    loc, scale = torch.full_like(df, -3.0), torch.full_like(df, 0.25)
    shifted = student_t_sample(df, loc, scale, torch.Generator().manual_seed(9))
    assert torch.equal(shifted, loc + scale * torch.as_tensor(want))


def test_sampler_blocks_of_paths_change_no_draw(monkeypatch):
    """The forecast steps advance the paths in blocks of ``SAMPLER_ROWS`` rows (here 3, which divides neither the 20
    paths nor the 5 paths of a window): the same paths as one block of all of them (float64, 1e-12), so each
    position's uniforms still go to the same paths."""
    from tsdp.training import deepar

    model, context, _, covariates = deepar_case(torch.float64, True, batch=4, seed=10)
    with torch.no_grad():
        whole = model.sample(context, 5, torch.Generator().manual_seed(11), covariates)
        monkeypatch.setattr(deepar, "SAMPLER_ROWS", 3)
        blocks = model.sample(context, 5, torch.Generator().manual_seed(11), covariates)
    assert torch.allclose(blocks, whole, rtol=1e-12, atol=0)
    assert not torch.allclose(blocks[1:], whole[:-1], rtol=1e-3, atol=0)  # the check sees a shifted draw


def every_path_stepped(model, context, n_samples, generator, covariates):
    """Sample paths with every forecast position, the first included, one ``_LSTM.step`` of all B·S paths at once
    (the context unrolled once per series and its state copied to the paths): the sampler without its one step per
    series at the first forecast position, nor its blocks."""
    width = model.context_length
    values, _, scale = reference_scale(model, context)
    series = values / scale
    x = model._inputs(series, covariates, width, model._static(torch.log(scale)))
    _, state = model.rnn.unroll(x, model.rnn.initial_state(context.shape[0], series), whole=True)
    state = [(h.repeat_interleave(n_samples, 0), c.repeat_interleave(n_samples, 0)) for h, c in state]
    scale, covariates = scale.repeat_interleave(n_samples, 0), covariates.repeat_interleave(n_samples, 0)
    series, log_scale = series.repeat_interleave(n_samples, 0), torch.log(scale)
    for p in range(width, width + model.forecast_length):
        h, state = model.rnn.step(reference_inputs(model, series, covariates, p, log_scale), state, whole=True)
        df, loc, s = model.head(h)
        series = torch.cat([series, student_t_sample(df, loc, s, generator)[:, None]], dim=1)
    return (series[:, width:] * scale).reshape(context.shape[0], n_samples, model.forecast_length)


@pytest.mark.parametrize("batch,n_samples", [(5, 4), (3, 4), (33, 4), (1, 8)])
def test_first_forecast_step_once_per_series_draws_every_paths_bits(batch, n_samples):
    """The sampler's first forecast position, one step per series (padded to whole vectors) with its laws and state
    copied to the paths, draws the paths of every path stepped at every position, bit for bit (float32, the
    grid's dtype) and leaves the generator where they leave it; batches not a multiple of the padding's 32 rows, and
    1 and 3 series, whose rows are not whole vectors unpadded (without the padding their paths differ in the last
    bits on an AVX2 CPU)."""
    model, context, _, covariates = deepar_case(torch.float32, True, batch=batch, seed=12)
    g, ref = torch.Generator().manual_seed(13), torch.Generator().manual_seed(13)
    with torch.no_grad():
        got = model.sample(context, n_samples, g, covariates)
        want = every_path_stepped(model, context, n_samples, ref, covariates)
    assert torch.equal(got, want)
    assert torch.equal(g.get_state(), ref.get_state())
    assert not torch.equal(got[:, 0], got[:, 1])  # the paths of a series differ from the first draw on
