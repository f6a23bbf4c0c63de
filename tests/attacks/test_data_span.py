"""The data's per-window gradients taken off a gradient-canary observation (tsdp.attacks.canary.data_span).

References: the per-window gradients by a second method (one autograd backward per window) and the
projection by numpy's least squares; the module search and the reasons the span is off.
"""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.attacks.canary.data_span import DataSpan, owning_module


def squared_error(model, context, forecast):
    return ((model(context) - forecast) ** 2).sum(-1)


def reference_jacobian(model, params, context, forecast):
    """(n, d) per-window gradients, one backward per window (float64)."""
    rows = []
    for c, f in zip(context, forecast):
        grads = torch.autograd.grad(squared_error(model, c[None], f[None]).sum(), params)
        rows.append(torch.cat([g.reshape(-1) for g in grads]).double())
    return torch.stack(rows)


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 12), hidden=st.integers(8, 24), seed=st.integers(0, 2 ** 16))
def test_the_residual_is_the_least_squares_residual_on_the_per_window_gradients(n, hidden, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 2)).double()
    params = list(model.parameters())
    context, forecast = torch.randn(n, 4, dtype=torch.float64), torch.randn(n, 2, dtype=torch.float64)
    span = DataSpan.of(params, (context, forecast), squared_error)
    assert span.reason is None
    q = span.basis(params)
    jac = reference_jacobian(model, params, context, forecast)
    np.testing.assert_allclose((q.T @ q).numpy(), np.eye(n), atol=1e-10)
    # the data's gradient of any batch, clipped or not, is a combination of the rows: it is taken off exactly
    data = torch.randn(n, dtype=torch.float64) @ jac
    assert float(DataSpan.residual(data, q).norm()) <= 1e-9 * float(data.norm())
    v = torch.randn(jac.shape[1], dtype=torch.float64)
    coef, *_ = np.linalg.lstsq(jac.numpy().T, v.numpy(), rcond=None)
    np.testing.assert_allclose(DataSpan.residual(v, q).numpy(), v.numpy() - jac.numpy().T @ coef, atol=1e-9)


def test_the_module_found_is_the_deepest_that_holds_every_parameter():
    inner = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 1))
    outer = torch.nn.ModuleDict({"model": inner})  # holds the same parameters: the inner one is found
    bigger = torch.nn.ModuleList([inner, torch.nn.Linear(2, 2)])
    assert owning_module(list(inner.parameters())) is inner
    assert owning_module(list(inner[0].parameters())) is inner[0]
    assert owning_module([torch.nn.Parameter(torch.ones(2))]) is None
    del outer, bigger


def test_the_span_is_off_with_its_reason():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))  # d = 19
    params = list(model.parameters())
    few = (torch.randn(4, 4), torch.randn(4, 1))
    assert DataSpan.of(params, few, squared_error).reason is None  # n = 4 ≤ d/4
    many = DataSpan.of(params, (torch.randn(5, 4), torch.randn(5, 1)), squared_error)  # n = 5 > d/4: a pursuit
    assert many.reason is None and many.mode == "sparse" and many.atoms == 4  # at most d / 4 windows
    tiny = torch.nn.Linear(1, 1)  # d = 2: no window fits in d / 4
    assert "too few" in DataSpan.of(list(tiny.parameters()), (torch.randn(5, 1), torch.randn(5, 1)), squared_error).reason
    default = DataSpan.of(params, few, lambda model, c, f: model(c, f))  # a Sequential takes one input
    assert default.reason.startswith("the per-window gradients failed (TypeError") and default.basis(params) is None
    lone = [torch.nn.Parameter(torch.ones(40))]
    assert "no torch module" in DataSpan.of(lone, few, squared_error).reason
    nan = DataSpan.of(params, few, lambda model, c, f: squared_error(model, c, f) * float("nan"))
    assert "non-finite" in nan.reason
    v = torch.randn(19)
    assert torch.equal(DataSpan.residual(v, None), v)


@pytest.mark.slow  # a few seconds: CI's slow stage (the default run stays within its 4 minutes)
def test_the_pursuit_finds_an_unclipped_batch_among_more_windows_than_parameters():
    """320 windows, an MLP of d = 65 parameters (n > d / 4: the span is everything): the data's part of an unclipped
    step (the mean gradient of 5 windows) is found by the whitened pursuit of 10 windows and taken off to ≤ 1e-6 of
    its norm in most draws (measured: 4 of 6 below 4e-8, the others 1.5e-4 and 0.004); the same pursuit without
    whitening leaves 4-16% in every draw (the per-window gradients are far from orthogonal)."""
    from tsdp.datasets.series import synthetic
    from tsdp.training.windows import every_window

    windows = every_window(synthetic(20, 16, seed=0, noise=2.0).series, 6, 1)
    whitened, plain = [], []
    for seed in range(6):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        params = list(model.parameters())
        span = DataSpan.of(params, windows, squared_error_float, atoms=10)
        assert span.mode == "sparse" and span.reason is None and span.atoms == 10
        jac = reference_jacobian_float(model, params, *windows)
        batch = np.random.default_rng(seed).choice(len(jac), 5, replace=False)
        data = jac[batch].sum(0) / 5
        q = span.basis(params, data)
        assert q.shape[1] <= 10
        np.testing.assert_allclose((q.T @ q).numpy(), np.eye(q.shape[1]), atol=1e-10)
        whitened.append(float(DataSpan.residual(data, q).norm() / data.norm()))
        unwhitened = DataSpan.of(params, windows, squared_error_float, atoms=10, max_entries=65 * 65 - 1)
        plain.append(float(DataSpan.residual(data, unwhitened.basis(params, data)).norm() / data.norm()))
    assert np.median(whitened) < 1e-6 and sum(w < 1e-6 for w in whitened) >= 4 and max(whitened) < 0.01, whitened
    assert all(w < p for w, p in zip(whitened, plain)) and min(plain) > 0.01, plain
    assert span.steps == 1 and span.seconds > 0


def squared_error_float(model, context, forecast):
    return ((model(context.float()) - forecast.float()) ** 2).sum(-1)


def reference_jacobian_float(model, params, context, forecast):
    """(n, d) per-window gradients of squared_error_float, one backward per window (float64 result)."""
    rows = []
    for c, f in zip(context, forecast):
        grads = torch.autograd.grad(squared_error_float(model, c[None], f[None]).sum(), params)
        rows.append(torch.cat([g.reshape(-1) for g in grads]).double())
    return torch.stack(rows)
