"""The factored engine (training.factored): exact per-sample clipping from layer factors.

References are independent of the engine: a per-example autograd loop (one backward per
window) and torch.func vmap(grad) per-sample gradients. All in float64, so agreement is
to rounding (1e-10 and tighter), not to a loose tolerance.
"""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from tsdp.training import clipping
from tsdp.training.clipping import clip_margin, clipped_sum, gradient_norms
from tsdp.training import factored
from tsdp.training.factored import (PER_SAMPLE_RULES, FactoredGradientError, factored_clipped_sum,
                                        factored_noisy_gradient)
from tsdp.training.layer_factors import WORKSPACE
from tsdp.training.linear_factors import NormRoute, norm_route
from tsdp.training.stacked import StackedModel
from tsdp.training.models import MODELS, make_model
from tsdp.training.step import noisy_mean, per_sample_gradients, private_gradient
from tsdp.attacks.montecarlo.constructions import GradientFunctionModel


def windows(n, lc, lf, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    c = 5 + 2 * torch.randn(n, lc, generator=g, dtype=dtype)
    f = 5 + 2 * torch.randn(n, lf, generator=g, dtype=dtype)
    if n:
        c[0, : lc // 3] = 0.0  # a partly padded context, as at the start of a series
    return c, f


def trained_like(name, lc, lf, seed):
    """A float64 model with every parameter moved off its initial value (e.g. the zero biases of GluonTS's init)."""
    torch.manual_seed(seed)
    model = make_model(name, lc, lf).double()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def loop_reference(model, context, forecast, clip, covariates=None):
    """Per-example backward loop: per-sample norms and Σ_i g_i / max(1, ||g_i|| / (C (1 - κ))), κ the engines' rounding
    margin (:func:`tsdp.training.clipping.clip_margin`)."""
    params = {k: p for k, p in model.named_parameters() if p.requires_grad}
    bound = clip * (1 - clip_margin(context.dtype, sum(p.numel() for p in params.values())))
    summed = {k: torch.zeros_like(p) for k, p in params.items()}
    norms = []
    for i in range(context.shape[0]):
        model.zero_grad(set_to_none=True)
        extra = () if covariates is None else (covariates[i : i + 1],)
        model(context[i : i + 1], forecast[i : i + 1], *extra).sum().backward()
        g = {k: torch.zeros_like(p) if p.grad is None else p.grad.clone() for k, p in params.items()}
        norm = math.sqrt(sum(float(v.square().sum()) for v in g.values()))
        norms.append(norm)
        for k in g:
            summed[k] += g[k] / max(1.0, norm / bound)
    model.zero_grad(set_to_none=True)
    return summed, torch.tensor(norms, dtype=context.dtype)


def assert_grads_close(got, ref, atol):
    assert set(got) == set(ref)
    for k in ref:
        assert torch.allclose(got[k], ref[k], atol=atol, rtol=0), (k, float((got[k] - ref[k]).abs().max()))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_matches_per_example_loop(name):
    """Every model: norms equal the loop's to 1e-10 relative; the clipped sum to 1e-10, with some samples clipped."""
    model = trained_like(name, 30, 6, seed=0)
    c, f = windows(7, 30, 6, seed=1)
    _, loop_norms = loop_reference(model, c, f, clip=1.0)
    clip = float(loop_norms.median())  # about half the samples are clipped
    ref, loop_norms = loop_reference(model, c, f, clip)
    got, norms = factored_clipped_sum(model, c, f, clip)
    assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=0)
    assert 0 < int((loop_norms > clip).sum()) < 7
    assert_grads_close(got, ref, atol=1e-10)


def test_deepar_covariates_in_both_engines():
    """DeepAR with hourly data's 5 covariates per position (the loop passes them as the model's third argument):
    the factored engine's norms and clipped sum equal a per-example loop's and the vmap engine's to 1e-10, and the
    covariates enter the gradients (without them the norms differ)."""
    torch.manual_seed(5)
    model = make_model("deepar", 26, 4, covariates=5).double()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    c, f = windows(6, 26, 4, seed=6)
    z = torch.rand(6, 30, 5, generator=torch.Generator().manual_seed(7), dtype=torch.float64) - 0.5
    _, loop_norms = loop_reference(model, c, f, 1.0, z)
    clip = float(loop_norms.median())
    ref, loop_norms = loop_reference(model, c, f, clip, z)
    got, norms = factored_clipped_sum(model, c, f, clip, covariates=z)
    assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=0)
    assert_grads_close(got, ref, atol=1e-10)
    grads = per_sample_gradients(model, c, f, covariates=z)
    assert torch.allclose(gradient_norms(grads, 1), loop_norms, rtol=1e-10, atol=0)
    assert_grads_close(clipped_sum(grads, clip, 1), ref, atol=1e-10)
    _, without = factored_clipped_sum(model, c, f, clip)
    assert float((without - norms).abs().min()) > 1e-8


@pytest.mark.parametrize("name", sorted(MODELS))
def test_sensitivity_is_clip(name):
    """Removing window i moves ĝ by c_i g_i, of norm min(||g_i||, C) ≤ C: the sensitivity Algorithm 2 promises."""
    model = trained_like(name, 24, 4, seed=2)
    c, f = windows(5, 24, 4, seed=3)
    _, norms = factored_clipped_sum(model, c, f, 1.0)
    clip = 0.5 * float(norms.max())
    full, norms = factored_clipped_sum(model, c, f, clip)
    for i in range(5):
        keep = torch.arange(5) != i
        without, _ = factored_clipped_sum(model, c[keep], f[keep], clip)
        moved = math.sqrt(sum(float((full[k] - without[k]).square().sum()) for k in full))
        assert moved <= clip * (1 + 1e-9)
        assert moved == pytest.approx(min(float(norms[i]), clip), rel=1e-9)


@settings(max_examples=12)
@given(name=st.sampled_from(sorted(MODELS)), m=st.integers(1, 6), lc=st.integers(2, 30), lf=st.integers(1, 8),
       clip_scale=st.floats(0.05, 3.0), seed=st.integers(0, 2**16))
def test_agrees_with_vmap_engine(name, m, lc, lf, clip_scale, seed):
    """Property over models, batch sizes, window lengths and clip levels: factored == vmap(grad) + clipping (1e-10)."""
    model = trained_like(name, lc, lf, seed)
    c, f = windows(m, lc, lf, seed)
    grads = per_sample_gradients(model, c, f)
    ref_norms = gradient_norms(grads, 1)
    clip = clip_scale * float(ref_norms.mean())
    got, norms = factored_clipped_sum(model, c, f, clip)
    assert torch.allclose(norms, ref_norms, rtol=1e-10, atol=1e-300)
    assert_grads_close(got, clipped_sum(grads, clip, 1), atol=1e-10 * max(1.0, clip))


class PositionwiseLinear(nn.Module):
    """A Linear over (B, t, d) positions, a second one called several times, LayerNorm over positions, a free scale.

    Covers the Linear rule's three norm branches (one position, ghost norm, materialised G_i),
    repeated calls, bias-free and frozen-weight layers, the LayerNorm rule, and the vmap
    fallback for a module owning a parameter it uses directly.
    """

    def __init__(self, d_in, width, t_steps, frozen=False):
        super().__init__()
        self.t_steps = t_steps
        self.embed = nn.Linear(1, d_in)  # one position per context value: t = L_C, narrow (materialised)
        self.wide = nn.Linear(d_in, width)  # t = L_C, wide: ghost norm
        self.norm = nn.LayerNorm(width)
        self.cell = nn.Linear(width, width, bias=False)  # called t_steps times on (B, width)
        self.out = nn.Linear(width, 1)
        self.log_temp = nn.Parameter(torch.tensor(0.3))
        if frozen:
            self.wide.weight.requires_grad_(False)

    def forward(self, context, forecast):
        h = self.norm(torch.tanh(self.wide(self.embed(context[..., None]))))  # (B, L_C, width)
        state = h.mean(1)
        for _ in range(self.t_steps):
            state = torch.tanh(self.cell(state))
        pred = self.out(state) * torch.exp(self.log_temp)
        return (pred - forecast.mean(-1, keepdim=True)).square()[:, 0]


def _factored_equals_loop_at_the_median_norm(model, c, f):
    """The factored clipped sum and norms equal the per-example loop's (1e-10) at a clip of the median norm (half the
    windows clipped); returns the factored sum."""
    _, norms = loop_reference(model, c, f, 1.0)
    clip = float(norms.median())
    ref, loop_norms = loop_reference(model, c, f, clip)
    got, norms = factored_clipped_sum(model, c, f, clip)
    assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=0)
    assert_grads_close(got, ref, atol=1e-10)
    return got


@pytest.mark.parametrize("frozen", [False, True])
def test_rules_and_branches_match_loop(frozen):
    """The Linear branches, repeated calls, LayerNorm rule and vmap fallback equal the per-example loop (1e-10)."""
    torch.manual_seed(4)
    # L_C = 20 positions: embed (1 -> 32) is materialised (20·33 > 32), wide (32 -> 64) takes the ghost norm
    # (20·96 < 2048), cell (64 -> 64, 3 calls) the ghost norm, out (t = 1) the product of norms
    model = PositionwiseLinear(d_in=32, width=64, t_steps=3, frozen=frozen).double()
    c, f = windows(6, 20, 2, seed=5)
    got = _factored_equals_loop_at_the_median_norm(model, c, f)
    assert ("wide.weight" in got) is not frozen


def test_layer_norm_over_one_vector_per_sample_matches_loop():
    """A LayerNorm whose input is (B, d), one vector per sample and no positions (iTransformer's final norm could be
    one): its rule sums over no dimension (torch's ``sum(())`` would sum over every one) and equals the per-example
    loop (1e-10)."""
    class Pooled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(12, 8)
            self.norm = nn.LayerNorm(8)
            self.out = nn.Linear(8, 1)

        def forward(self, context, forecast):
            pred = self.out(self.norm(torch.tanh(self.lin(context))))
            return (pred - forecast.mean(-1, keepdim=True)).square()[:, 0]

    torch.manual_seed(9)
    model = Pooled().double()
    c, f = windows(5, 12, 2, seed=10)
    _factored_equals_loop_at_the_median_norm(model, c, f)


@given(st.integers(1, 64), st.integers(1, 512), st.integers(1, 512))
def test_norm_route_takes_one_position_else_the_fewer_multiply_adds(t, i, o):
    """The route both engines take: t = 1 its own; else the ghost norm exactly where its t²(i + o) multiply-adds per
    sample are fewer than materialising G_i's t·i·o (a tie materialises)."""
    route = norm_route(t, i, o)
    if t == 1:
        assert route is NormRoute.ONE_POSITION
    else:
        assert route is (NormRoute.GHOST if t * t * (i + o) < t * i * o else NormRoute.MATERIALISED)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_norm_branches_each_exact(bias):
    """Each branch of the Linear rule (t = 1, ghost norm, G_i materialised as (i, o) or as (o, i)), with and without
    a bias, gives vmap's norms (1e-12 relative) and vmap's clipped sum at the median norm (1e-12)."""
    cases = {"one position": (1, 8, 8, NormRoute.ONE_POSITION), "ghost norm": (3, 32, 32, NormRoute.GHOST),
             "materialised, i <= o": (40, 4, 4, NormRoute.MATERIALISED),
             "materialised, i > o": (16, 12, 3, NormRoute.MATERIALISED)}
    for label, (t, i, o, route) in cases.items():
        assert norm_route(t, i, o) is route, label

        class Positions(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(i, o, bias=bias)

            def forward(self, context, forecast):
                x = context.reshape(context.shape[0], t, i)
                return self.lin(x).sin().sum((1, 2)) + 0 * forecast.sum(-1)

        torch.manual_seed(6)
        model = Positions().double()
        c, f = windows(5, t * i, 1, seed=7)
        per_sample = per_sample_gradients(model, c, f)
        ref_norms = gradient_norms(per_sample, 1)
        clip = float(ref_norms.median())
        got, norms = factored_clipped_sum(model, c, f, clip)
        assert torch.allclose(norms, ref_norms, rtol=1e-12, atol=0), label
        assert_grads_close(got, clipped_sum(per_sample, clip, 1), atol=1e-12)


def test_registered_rules():
    """The registry holds the closed form the models use (LayerNorm; their scalers have no parameter); nn.Linear has
    its own factored rule."""
    assert nn.LayerNorm in PER_SAMPLE_RULES
    assert nn.Linear not in PER_SAMPLE_RULES


def test_gradient_function_model_through_fallback():
    """The auditors' one-parameter model (θ used directly by the root module) goes through the vmap fallback exactly."""
    model = GradientFunctionModel(clip=1.0, plus_above=0.5).double()
    c = torch.tensor([[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
    f = torch.zeros(3, 1, dtype=torch.float64)
    got, norms = factored_clipped_sum(model, c, f, clip=1.0)
    assert torch.equal(norms, torch.ones(3, dtype=torch.float64))
    assert 1 - clip_margin(torch.float64, 1) <= float(got["theta"][0]) <= 1.0  # +C, -C, +C: clipped by κ alone


def test_mask_and_empty_batch():
    """A mask drops its slots (== the compacted batch, 1e-12); an empty batch gives zeros and no norms."""
    model = trained_like("deepar", 26, 4, seed=8)
    c, f = windows(5, 26, 4, seed=9)
    mask = torch.tensor([True, False, True, False, True])
    a, norms_all = factored_clipped_sum(model, c, f, 0.2, mask)
    b, norms_kept = factored_clipped_sum(model, c[mask], f[mask], 0.2)
    assert_grads_close(a, b, atol=1e-12)
    assert torch.allclose(norms_all[mask], norms_kept, rtol=1e-12)
    empty, no_norms = factored_clipped_sum(model, c[:0], f[:0], 0.2)
    assert no_norms.shape == (0,)
    assert all(bool((v == 0).all()) for v in empty.values())
    assert set(empty) == {k for k, _ in model.named_parameters()}


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.b.weight = self.a.weight

    def forward(self, context, forecast):
        return self.b(self.a(context)).sum(-1) + 0 * forecast.sum(-1)


class Flattened(nn.Module):
    """Folds positions into the batch dimension before a Linear: the factors would misattribute rows."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 1)

    def forward(self, context, forecast):
        return self.lin(context.reshape(-1, 2)).reshape(context.shape[0], -1).sum(-1) + 0 * forecast.sum(-1)


class InPlace(nn.Module):
    """Applies relu_ to a Linear's output: autograd re-bases it, so its recorded gradient would be the ReLU's."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, context, forecast):
        return self.lin(context).relu_().sum(-1) + 0 * forecast.sum(-1)


class BatchLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)

    def forward(self, context, forecast):
        return self.lin(context).mean()


@pytest.mark.parametrize("model, match", [(Tied(), "shared"), (Flattened(), "first dim"), (InPlace(), "in place"),
                                          (BatchLoss(), "one loss")])
def test_refuses_what_it_cannot_do_exactly(model, match):
    """Tied parameters, non-sample-major inputs, in-place changes of a recorded tensor and a batch-level loss raise
    FactoredGradientError naming the cause."""
    c, f = torch.randn(3, 4), torch.randn(3, 1)
    with pytest.raises(FactoredGradientError, match=match):
        factored_clipped_sum(model, c, f, 1.0)
    # the vmap engine still serves the tied model (per-sample semantics by construction)
    if isinstance(model, Tied):
        private_gradient(model, c, f, clip=1.0, sigma=0.0, batch_size=3, generator=None, engine="vmap")


def test_engine_choice_errors():
    """engine='factored' refuses trial dims; an unknown engine is refused by name."""
    model = make_model("dlinear", 30, 6)
    c, f = windows(4, 30, 6, seed=0, dtype=torch.float32)
    kw = dict(clip=1.0, sigma=0.0, batch_size=4, generator=None)
    with pytest.raises(ValueError, match="factored engine takes one batch"):
        private_gradient(model, c.view(2, 2, 30), f.view(2, 2, 6), engine="factored", **kw)
    with pytest.raises(ValueError, match="engine must be one of"):
        private_gradient(model, c, f, engine="ghost", **kw)
    auto = private_gradient(model, c.view(2, 2, 30), f.view(2, 2, 6), **kw)  # auto: trial dims go to vmap
    assert auto["seasonal.weight"].shape == (2, *model.seasonal.weight.shape)


class GatedCell(nn.Module):
    """An LSTM-gate pattern: ih(x_t) + hh(h) summed, T steps; both linears receive the SAME output gradients."""

    def __init__(self, d_in, hidden, bias_hh, freeze_ih):
        super().__init__()
        self.d_in = d_in
        self.ih = nn.Linear(d_in, 4 * hidden)
        self.hh = nn.Linear(hidden, 4 * hidden, bias=bias_hh)
        if freeze_ih:
            self.ih.weight.requires_grad_(False)
        self.out = nn.Linear(hidden, 1)

    def forward(self, context, forecast):
        xs = context.reshape(context.shape[0], -1, self.d_in)
        h = context.new_zeros(context.shape[0], self.hh.in_features)
        for t in range(xs.shape[1]):
            i, f, g, o = (self.ih(xs[:, t]) + self.hh(h)).chunk(4, dim=-1)
            h = torch.sigmoid(o) * torch.tanh(torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f))
        return (self.out(h)[:, 0] - forecast.mean(-1)).square()


@settings(max_examples=15, deadline=None)
@given(t=st.integers(1, 12), d_in=st.integers(1, 10), hidden=st.integers(1, 8), m=st.integers(1, 5),
       bias_hh=st.booleans(), freeze_ih=st.booleans(), seed=st.integers(0, 2**16))
def test_shared_output_gradients_match_loop(t, d_in, hidden, m, bias_hh, freeze_ih, seed):
    """Property over gate shapes (all three norm routes: t = 1, ghost, materialised): linears fed the same output
    gradients share one set of factors, and norms and clipped sum still equal the per-example loop (1e-10)."""
    torch.manual_seed(seed)
    model = GatedCell(d_in, hidden, bias_hh, freeze_ih).double()
    c, f = windows(m, t * d_in, 2, seed)
    groups = []
    real = factored.linear_factors
    factored.linear_factors = lambda members, grads: groups.append([n for n, _, _ in members]) or real(members, grads)
    try:
        _, norms = factored_clipped_sum(model, c, f, 1.0)
        clip = float(norms.median())
        got, norms = factored_clipped_sum(model, c, f, clip)
    finally:
        factored.linear_factors = real
    assert ["ih", "hh"] in groups  # the shared-gradient grouping is what ran
    ref, loop_norms = loop_reference(model, c, f, clip)
    assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=1e-300)
    assert_grads_close(got, ref, atol=1e-10)


def test_noisy_gradient_is_noise_plus_clipped_sum():
    """The fused step (noise drawn first, clipped sum added into it) equals noisy_mean of the clipped sum drawn
    from the same generator state (float64, 1e-12), in the parameters' dtype."""
    model = trained_like("deepar", 26, 4, seed=10)
    c, f = windows(5, 26, 4, seed=11)
    kw = dict(clip=0.3, sigma=1.7, batch_size=8)
    fused = factored_noisy_gradient(model, c, f, generator=torch.Generator().manual_seed(3), **kw)
    summed, _ = factored_clipped_sum(model, c, f, kw["clip"])
    ref = noisy_mean(summed, generator=torch.Generator().manual_seed(3), **kw)
    assert all(v.dtype == torch.float64 for v in fused.values())
    assert_grads_close(fused, ref, atol=1e-12)
    model.head.proj.float()
    with pytest.raises(ValueError, match="one dtype"):
        factored_noisy_gradient(model, c, f, generator=None, **kw)


def test_recording_restores_forward_and_ignores_output_hooks():
    """Recording leaves no wrapped forward behind (after success or refusal), and a user hook that rewrites a
    Linear's output does not change the exact clipping (the factors use the forward's own output)."""
    model = trained_like("simple-ff", 12, 3, seed=12)
    model.mlp[2].register_forward_hook(lambda mod, args, out: 2.0 * out)
    c, f = windows(4, 12, 3, seed=13)
    ref, loop_norms = loop_reference(model, c, f, 0.5)
    got, norms = factored_clipped_sum(model, c, f, 0.5)
    assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=0)
    assert_grads_close(got, ref, atol=1e-10)
    flat = Flattened()
    with pytest.raises(FactoredGradientError):
        factored_clipped_sum(flat, torch.randn(3, 4), torch.randn(3, 1), 1.0)
    assert all("forward" not in mod.__dict__ for m in (model, flat) for mod in m.modules())


def test_workspace_reuse_changes_nothing():
    """Factor buffers reused from step to step (grown, sliced to the batch, dropped when unused) change no number:
    DeepAR at batches 5, 3, 5 equals the per-example loop each time (1e-10); a step of another model leaves none of
    DeepAR's buffers behind."""
    model = trained_like("deepar", 26, 4, seed=14)
    for m in (5, 3, 5):
        c, f = windows(m, 26, 4, seed=m)
        ref, loop_norms = loop_reference(model, c, f, 0.3)
        got, norms = factored_clipped_sum(model, c, f, 0.3)
        assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=0)
        assert_grads_close(got, ref, atol=1e-10)
    assert any("rnn" in str(k) for k in WORKSPACE.buffers)
    factored_clipped_sum(trained_like("simple-ff", 12, 3, seed=15), *windows(4, 12, 3, seed=16), 0.3)
    assert not any("rnn" in str(k) for k in WORKSPACE.buffers)


class Stack(nn.Module):
    """Linears on 2-D (B, d) inputs (one position each: the product-of-norms route), some bias-free or frozen."""

    def __init__(self, widths, biases, frozen):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(i, o, bias=b) for i, o, b in zip(widths, widths[1:], biases))
        for layer, (freeze_weight, freeze_bias) in zip(self.layers, frozen):
            layer.weight.requires_grad_(not freeze_weight)
            if layer.bias is not None:
                layer.bias.requires_grad_(not freeze_bias)

    def forward(self, context, forecast):
        h = context
        for layer in self.layers[:-1]:
            h = torch.tanh(layer(h))
        return (self.layers[-1](h) - forecast).square().mean(-1)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), depth=st.integers(1, 4), m=st.integers(1, 9), clip_scale=st.floats(0.05, 3.0),
       seed=st.integers(0, 2**16))
def test_one_position_linears_match_loop(data, depth, m, clip_scale, seed):
    """Property over 2-D Linear stacks (widths, batch, bias-free and frozen weights or biases, clip level): the
    one-position route's norms equal the per-example loop's (1e-10 relative), and the fused noisy gradient equals
    noisy_mean of the loop's clipped sum from the same generator state (1e-12)."""
    widths = data.draw(st.lists(st.integers(1, 12), min_size=depth + 1, max_size=depth + 1))
    biases = data.draw(st.lists(st.booleans(), min_size=depth, max_size=depth))
    frozen = data.draw(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=depth, max_size=depth))
    torch.manual_seed(seed)
    model = Stack(widths, biases, frozen).double()
    if not any(p.requires_grad for p in model.parameters()):
        model.layers[0].weight.requires_grad_(True)
    c, f = windows(m, widths[0], widths[-1], seed)
    _, loop_norms = loop_reference(model, c, f, 1.0)
    clip = clip_scale * float(loop_norms.mean()) + 1e-12
    ref, loop_norms = loop_reference(model, c, f, clip)
    got, norms = factored_clipped_sum(model, c, f, clip)
    assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=1e-300)
    assert_grads_close(got, ref, atol=1e-10 * max(1.0, clip))
    kw = dict(clip=clip, sigma=0.7, batch_size=m + 2)
    fused = factored_noisy_gradient(model, c, f, generator=torch.Generator().manual_seed(seed), **kw)
    assert_grads_close(fused, noisy_mean(ref, generator=torch.Generator().manual_seed(seed), **kw), atol=1e-12)


def test_cached_plan_follows_the_model():
    """The per-model plan is rebuilt when a parameter is frozen or unfrozen, or a layer replaced: each step after such
    a change equals the per-example loop (1e-10); and the cache does not keep a model alive."""
    import gc
    import weakref

    model = trained_like("simple-ff", 12, 3, seed=17)
    c, f = windows(5, 12, 3, seed=18)

    def check(model):
        ref, loop_norms = loop_reference(model, c, f, 0.4)
        got, norms = factored_clipped_sum(model, c, f, 0.4)
        assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=0)
        assert_grads_close(got, ref, atol=1e-10)
        return got

    assert "mlp.2.weight" in check(model)
    model.mlp[2].weight.requires_grad_(False)
    assert "mlp.2.weight" not in check(model)
    model.mlp[2].weight.requires_grad_(True)
    model.mlp[0] = nn.Linear(12, 64, bias=False).double()
    got = check(model)
    assert "mlp.2.weight" in got and "mlp.0.bias" not in got
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None


LIMIT = clipping.PRODUCT_MAX_VALUES
BLOCKED = clipping.BLOCKED_MIN_VALUES


@pytest.mark.parametrize("shape", [(5, 1), (4, LIMIT // 4), (4, LIMIT // 4 + 1), (1, LIMIT + 1), (5, 3, 7),
                                   (4, 2, LIMIT // 8), (4, 2, LIMIT // 8 + 1), (4, BLOCKED // 4),
                                   (4, BLOCKED // 4 + 1), (3, 5, BLOCKED // 15 + 7)])
def test_squared_row_norms_on_every_route(shape):
    """Inputs at and past the dot-product limit and the blocked route's (every route; a row length that no block
    divides): ||x_i||² over all but the first dim equals the sum of squares taken in float64 (float32 rounding,
    rtol 1e-5), 3-D inputs flattened per sample."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)), dtype=torch.float32)
    got = clipping.squared_row_norms(x, shape[0])
    want = x.double().reshape(shape[0], -1).square().sum(dim=1)
    assert got.shape == (shape[0],)
    assert torch.allclose(got.double(), want, rtol=1e-5, atol=0)


@pytest.mark.parametrize("scale", [1.0, 1e18, 1e-19, 1e-22, 1e-40])
def test_blocked_squared_row_norms_never_fall_below_the_margins_lower_bound(scale):
    """The blocked route (float32 block norms, float64 sum) is a lower estimate by at most the factor (1 - u)^(B + 2)
    that :func:`clip_margin` prices, at every scale: normal values, huge ones, and values whose float32 squares are
    subnormal or 0 (scale 1e-22, 1e-40), where only the route's underflow allowance keeps it (without it the
    estimate fell 2% below at 1e-22); the reference is the float64 sum of squares, exact enough (n v ≪ u)."""
    m, d = 3, BLOCKED // 3 + 5
    x = (torch.rand(m, d, generator=torch.Generator().manual_seed(7), dtype=torch.float64) * scale).float()
    got = clipping.squared_row_norms(x, m)
    exact = x.double().square().sum(dim=1)
    u = torch.finfo(torch.float32).eps / 2
    assert bool((got >= exact * (1 - u) ** (clipping.NORM_BLOCK + 2) * (1 - 4 * d * 2.0**-53)).all())
    assert bool((got <= exact * (1 + u) ** (clipping.NORM_BLOCK + 2) * (1 + 4 * d * 2.0**-53) + 2 * d * 2.0**-149).all())


def test_blocked_squared_row_norms_overflow_to_infinity_and_a_zero_clip_factor():
    """Past √(float32's max) a block's norm overflows: the estimate is +inf, above the true norm (the sound side), and
    the clip factor 0 drops the sample rather than letting it through unclipped."""
    x = torch.full((2, BLOCKED // 2 + 1), 1e30)
    sq = clipping.squared_row_norms(x, 2)
    assert bool(torch.isinf(sq).all())
    assert clipping.clip_factors(sq.sqrt(), 1.0, torch.float32, x.shape[1]).tolist() == [0.0, 0.0]


class TwoPositions(nn.Module):
    """A linear D → D at two positions whose inputs x_1 = b + δ and x_2 = b (every coordinate; b = 1e4·context[0],
    δ = context[1]) are large and nearly equal, and whose output gradients are opposite: the loss is
    f · u·(y_1 - y_2), so the window's gradient is G = f u (x_1 - x_2)ᵀ, of norm |f δ| ||u|| √D in closed form, far
    below the positions' terms ||a_t|| ||g_t|| ≈ |f| ||u|| 1e4 √D that the ghost norm's products add up."""

    D = 512

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(self.D, self.D, bias=False)
        self.register_buffer("u", torch.randn(self.D, generator=torch.Generator().manual_seed(0)))

    def forward(self, context, forecast):
        ones = torch.ones(1, self.D, dtype=context.dtype)
        base = context[:, :1] * 1e4 * ones
        y = self.lin(torch.stack([base + context[:, 1:2] * ones, base], 1))
        return ((y[:, 0] - y[:, 1]) * self.u).sum(-1) * forecast[:, 0]


def test_a_float32_ghost_norm_under_cancellation_is_the_windows_norm_in_both_engines():
    """The ghost route (t = 2 < i o / (i + o)) took ||G_i||² = Σ_{t,t'} (a_t·a_t')(g_t·g_t') in float32, whose rounding
    is relative to (Σ_t ||a_t|| ||g_t||)², not to ||G_i||²: here it came out 0 (clamped) for windows of norm 5 to 518
    C, which then entered the sum unclipped (a window of norm 518 added 518 C). Reference: the closed-form norm
    (rtol 1e-4), and each window's clipped contribution alone at most C (to float32 rounding of the sum, 1e-3)."""
    assert norm_route(2, TwoPositions.D, TwoPositions.D) is NormRoute.GHOST
    torch.manual_seed(1)
    model = TwoPositions()
    m, clip = 8, 1.0
    context = torch.stack([torch.ones(m), torch.linspace(0.01, 1.0, m)], 1)
    forecast = torch.ones(m, 1)
    _, norms = factored_clipped_sum(model, context, forecast, clip)
    base = context[:, 0] * 1e4  # the inputs as the float32 forward rounds them: δ as it survives b + δ
    delta = (base + context[:, 1]).double() - base.double()
    exact = forecast[:, 0].double().abs() * delta.abs() * model.u.double().norm() * math.sqrt(TwoPositions.D)
    assert bool((norms.double() >= exact * (1 - 1e-5)).all())  # never below the window's norm: clipped at least
    assert bool((norms.double() <= 2 * exact).all())  # the rounding bound over-clips these extreme windows modestly
    stack = StackedModel([model])
    for i in range(m):
        alone, _ = factored_clipped_sum(model, context[i:i + 1], forecast[i:i + 1], clip)
        out = {n: torch.zeros_like(p) for n, p in stack.parameters.items()}
        stack.clipped_sums([context[i:i + 1], forecast[i:i + 1]], clip, torch.ones(1), out)
        assert float(alone["lin.weight"].double().norm()) <= clip
        assert float(out["lin.weight"].double().norm()) <= clip


def test_cached_plan_follows_renamed_modules():
    """The plan's qualified names follow the model when its submodules are renamed in place (the same modules and
    parameters, reached in the same order: only the names differ): the clipped sum is keyed as ``named_parameters``
    names them now, with the same values. A cache checked on module and parameter ids alone served the old names."""
    model = trained_like("simple-ff", 12, 3, seed=19)
    c, f = windows(4, 12, 3, seed=20)
    before, _ = factored_clipped_sum(model, c, f, 0.4)
    model.mlp._modules = {f"layer{k}": m for k, m in model.mlp._modules.items()}  # same modules, same order
    got, _ = factored_clipped_sum(model, c, f, 0.4)
    names = [k for k, p in model.named_parameters() if p.requires_grad]
    assert list(got) == names and "mlp.layer2.weight" in names
    renamed = {k.replace("mlp.", "mlp.layer"): v for k, v in before.items()}
    assert all(torch.equal(got[k], renamed[k]) for k in got)


def test_cached_plan_and_workspace_follow_a_dtype_change():
    """``model.double()`` after float32 steps keeps every Parameter object (torch swaps their data), so the plan's
    signature is unchanged: the plan must read the dtype each step, and the workspace must remake its float32 buffers.
    DeepAR (workspace buffers for its recurrent factors) in float32, then float64: the clipped sum comes out float64
    and equals the per-example loop (1e-10)."""
    torch.manual_seed(21)
    model = make_model("deepar", 26, 4)
    c, f = windows(4, 26, 4, seed=22)
    got, _ = factored_clipped_sum(model, c.float(), f.float(), 0.3)
    assert all(v.dtype == torch.float32 for v in got.values())
    model.double()
    ref, loop_norms = loop_reference(model, c, f, 0.3)
    got, norms = factored_clipped_sum(model, c, f, 0.3)
    assert all(v.dtype == torch.float64 for v in got.values())
    assert torch.allclose(norms, loop_norms, rtol=1e-10, atol=0)
    assert_grads_close(got, ref, atol=1e-10)
