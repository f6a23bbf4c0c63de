"""Algorithm 2 (noisy training step): per-sample gradients, clipping, masking, noise, update, augmentation."""
import copy
import math

import pytest
import torch
from scipy import stats
from torch import nn

from tsdp.training.models import MODELS, make_model
from tsdp.training.clipping import clip_gradients, clip_margin, clipped_sum, gradient_norms, sample_values
from tsdp.training.step import dp_step, noisy_mean, per_sample_gradients, private_gradient
from tsdp.training.windows import augment

ALPHA = 1e-6


def loop_gradients(model, context, forecast):
    """Reference: one ordinary backward pass per window."""
    out = []
    for i in range(context.shape[0]):
        model.zero_grad(set_to_none=True)
        model(context[i : i + 1], forecast[i : i + 1]).sum().backward()
        out.append({k: p.grad.clone() for k, p in model.named_parameters()})
    return out


def batch(n, lc=30, lf=6, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    c = 5 + 2 * torch.randn(n, lc, generator=g, dtype=dtype)
    f = 5 + 2 * torch.randn(n, lf, generator=g, dtype=dtype)
    c[0, :10] = 0.0  # a partly padded context, as at the start of a series
    return c, f


@pytest.mark.parametrize("name", sorted(MODELS))
def test_per_sample_gradients_match_autograd_loop(name):
    """vmap(grad) per-sample gradients equal a per-example backward loop to 1e-6 (float64), with trial dims."""
    torch.manual_seed(0)
    model = make_model(name, 30, 6).double()
    c, f = batch(6)
    ref = loop_gradients(model, c, f)
    got = per_sample_gradients(model, c, f)
    got_trials = per_sample_gradients(model, c.view(2, 3, 30), f.view(2, 3, 6))
    for i in range(6):
        for k, g in ref[i].items():
            assert torch.allclose(got[k][i], g, atol=1e-6, rtol=0), (name, k)
            assert torch.allclose(got_trials[k][i // 3, i % 3], g, atol=1e-6, rtol=0), (name, k)


def test_clipping_bounds_norms_and_keeps_small_gradients():
    """Clipped per-sample norms are ≤ C; gradients already within C are unchanged; big ones are rescaled to C."""
    torch.manual_seed(1)
    model = make_model("simple-ff", 30, 6).double()
    c, f = batch(8)
    grads = per_sample_gradients(model, c, f)
    norms = gradient_norms(grads, 1)
    clip = float(norms.median())
    clipped, before = clip_gradients(grads, clip, 1)
    after = gradient_norms(clipped, 1)
    assert torch.equal(before, norms)
    assert bool((after <= clip * (1 + 1e-12)).all())
    small = norms <= clip * (1 - clip_margin(torch.float64, sample_values(grads, 1)))  # within C less the margin
    assert 0 < int(small.sum()) < 8
    for k in grads:
        assert torch.equal(clipped[k][small], grads[k][small])
    assert torch.allclose(after[~small], torch.full_like(after[~small], clip))
    # the fused clipped sum equals summing the clipped copies
    fused = clipped_sum(grads, clip, 1)
    for k in grads:
        assert torch.allclose(fused[k], clipped[k].sum(0), atol=1e-12)


def test_noise_free_private_gradient_is_clipped_mean_over_lambda():
    """σ = 0: g̃ = (Σ_i clip(g_i)) / Λ with Λ the expected batch size, computed here from the autograd loop."""
    torch.manual_seed(2)
    model = make_model("dlinear", 30, 6).double()
    c, f = batch(5)
    clip, lam = 0.05, 8
    expected = {k: torch.zeros_like(p) for k, p in model.named_parameters()}
    bound = clip * (1 - clip_margin(torch.float64, sum(p.numel() for p in model.parameters())))  # the engines' margin
    for g in loop_gradients(model, c, f):
        norm = math.sqrt(sum(float(v.pow(2).sum()) for v in g.values()))
        for k in g:
            expected[k] += g[k] / max(1.0, norm / bound)
    got = private_gradient(model, c, f, clip=clip, sigma=0.0, batch_size=lam, generator=torch.Generator())
    for k in expected:
        assert torch.allclose(got[k], expected[k] / lam, atol=1e-12)


def test_mask_drops_slots():
    """Masked-out slots contribute nothing: masked full batch == the compacted batch (σ = 0)."""
    torch.manual_seed(3)
    model = make_model("itransformer", 30, 6).double()
    c, f = batch(6)
    mask = torch.tensor([True, False, True, True, False, True])
    kw = dict(clip=0.1, sigma=0.0, batch_size=4, generator=torch.Generator())
    a = private_gradient(model, c, f, mask=mask, **kw)
    b = private_gradient(model, c[mask], f[mask], **kw)
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-12)


class ZeroGradient(nn.Module):
    """A model whose loss does not depend on its parameters: every per-sample gradient is exactly 0."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(50))

    def forward(self, context, forecast):
        return (self.w * 0.0).sum() + context.sum(-1) * 0.0


def test_noise_has_std_sigma_c():
    """On zero gradients Λ g̃ is pure noise N(0, σ² C² I): variance and mean tests.

    σ = 1.7, C = 0.3, Λ = 16; 4000 trials × 50 coordinates = 2·10^5 draws (trial dims of
    private_gradient). Two-sided chi-square test of the variance and z test of the mean,
    each at false-failure rate 1e-6; trials and coordinates are independent (correlation
    between the first two coordinates tested too, at 1e-6).
    """
    model = ZeroGradient()
    sigma, clip, lam, trials = 1.7, 0.3, 16, 4000
    c = torch.randn(trials, 5, 3)
    f = torch.randn(trials, 5, 2)
    g = private_gradient(model, c, f, clip=clip, sigma=sigma, batch_size=lam, generator=torch.Generator().manual_seed(4))
    x = (g["w"] * lam).double()
    assert x.shape == (trials, 50)
    n = x.numel()
    s = float((x ** 2).sum()) / (sigma * clip) ** 2
    assert stats.chi2.ppf(ALPHA / 2, n) < s < stats.chi2.isf(ALPHA / 2, n)
    assert abs(float(x.mean())) * math.sqrt(n) / (sigma * clip) < stats.norm.isf(ALPHA / 2)
    r = float(torch.corrcoef(x[:, :2].T)[0, 1])
    assert abs(r) * math.sqrt(trials) < stats.norm.isf(ALPHA / 2)


def test_sgd_dp_step_update_and_reproducibility():
    """dp_step with SGD moves θ by exactly -η g̃; the same seed from the same state gives the same step bit for bit;
    vmap per-sample gradients at the old parameters, clipped and noised from the same seed, give the same g̃ as the
    factored engine to float64 rounding."""
    torch.manual_seed(5)
    model = make_model("simple-ff", 30, 6).double()
    twin = copy.deepcopy(model)
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    c, f = batch(4)
    kw = dict(clip=1.0, sigma=2.0, batch_size=4)
    g = dp_step(model, torch.optim.SGD(model.parameters(), lr=0.5), c, f, generator=torch.Generator().manual_seed(6), **kw)
    for k, p in model.named_parameters():
        assert torch.allclose(p.detach(), before[k] - 0.5 * g[k], atol=1e-12)
    g_twin = dp_step(twin, torch.optim.SGD(twin.parameters(), lr=0.5), c, f, generator=torch.Generator().manual_seed(6), **kw)
    at_before = clipped_sum(per_sample_gradients(model, c, f, before), kw["clip"], 1)
    again = noisy_mean(at_before, generator=torch.Generator().manual_seed(6), **kw)
    for k in g:
        assert torch.equal(g_twin[k], g[k])
        assert torch.allclose(again[k], g[k], atol=1e-12, rtol=0)


def test_empty_batch_releases_pure_noise():
    """A Poisson step with no windows releases N(0, σ² C² I) / Λ (no gradient term), and does not fail."""
    model = make_model("simple-ff", 8, 2)
    gen_a = torch.Generator().manual_seed(7)
    g = private_gradient(model, torch.zeros(0, 8), torch.zeros(0, 2), clip=2.0, sigma=3.0, batch_size=4, generator=gen_a)
    noise = torch.randn(sum(p.numel() for p in model.parameters()), generator=torch.Generator().manual_seed(7))
    offset = 0  # one draw fills the parameters in named_parameters order (noisy_mean's documented layout)
    for k, p in model.named_parameters():
        assert torch.allclose(g[k], 6.0 * noise[offset : offset + p.numel()].view(p.shape) / 4)
        offset += p.numel()


def test_augmentation_std():
    """Online augmentation adds N(0, σ_C² v²) to contexts and N(0, σ_F² v²) to forecasts (chi-square, 1e-6 each)."""
    c = torch.zeros(2000, 20, dtype=torch.float64)
    f = torch.zeros(2000, 5, dtype=torch.float64)
    ac, af = augment(c, f, sigma_context=0.5, sigma_forecast=2.0, v=3.0, generator=torch.Generator().manual_seed(8))
    for x, std in [(ac, 1.5), (af, 6.0)]:
        s = float((x ** 2).sum()) / std ** 2
        assert stats.chi2.ppf(ALPHA / 2, x.numel()) < s < stats.chi2.isf(ALPHA / 2, x.numel())
    same_c, _ = augment(c, f, sigma_context=0.0, sigma_forecast=1.0, v=3.0, generator=torch.Generator())
    assert torch.equal(same_c, c)


def test_plain_sgd_update_equals_optimizer_step():
    """apply_gradient's own update for plain SGD equals SGD.step bit for bit (the twin's optimizer has a step hook,
    which sends it through SGD.step); momentum goes through SGD.step (its buffer is kept); a stray .grad on a
    parameter g̃ does not name is stepped as SGD.step would; no .grad is left behind."""
    from tsdp.training.step import apply_gradient

    torch.manual_seed(9)
    model = make_model("simple-ff", 30, 6).double()
    twin = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    twin_opt = torch.optim.SGD(twin.parameters(), lr=0.3)
    twin_opt.register_step_pre_hook(lambda *args: None)
    c, f = batch(4)
    for seed in (1, 2):
        g = private_gradient(model, c, f, clip=1.0, sigma=1.0, batch_size=4, generator=torch.Generator().manual_seed(seed))
        apply_gradient(model, opt, g)
        apply_gradient(twin, twin_opt, {k: v.clone() for k, v in g.items()})
        for (k, p), q in zip(model.named_parameters(), twin.parameters()):
            assert torch.equal(p, q), k
            assert p.grad is None and q.grad is None
    momentum = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    apply_gradient(model, momentum, g)
    assert all("momentum_buffer" in momentum.state[p] for p in model.parameters())
    names = [k for k, _ in model.named_parameters()]
    partial = {k: v for k, v in g.items() if k != names[0]}
    first = next(model.parameters())
    first.grad = torch.ones_like(first)
    before = first.detach().clone()
    apply_gradient(model, opt, partial)
    assert torch.equal(first.detach(), before - 0.3 * torch.ones_like(first))
    assert all(p.grad is None for p in model.parameters())
