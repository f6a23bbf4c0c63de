"""The capture check on CPU: the DP step (per-sample gradients, exact clipping, noise, update) compiles with
``torch.compile(fullgraph=True)`` for the MLP and the four forecasters, and the compiled step equals the eager
engines at the same generator state.

The compiler here is ``backend="aot_eager"``: dynamo's full graph (the check that nothing breaks it: no
``.item()``, no branch on a tensor's value, no data-dependent shape) traced through AOT autograd, without
inductor's C++ compile, which takes minutes per model on this CPU. Each model still compiles for 10-60 s, so the
module is ``slow``. The CUDA-graph mode runs in tests/training/test_cuda_paths.py where CUDA is.
"""
import copy

import pytest
import torch
from torch import nn

from tsdp.training.captured import CapturedStep
from tsdp.training.clipping import clip_margin
from tsdp.training.models import MLP, make_model
from tsdp.training.step import apply_gradient, private_gradient

pytestmark = pytest.mark.slow

LC, LF, M = 9, 3, 6
AOT = lambda fn: torch.compile(fn, fullgraph=True, backend="aot_eager")  # noqa: E731


def bench_model(name):
    torch.manual_seed(0)
    if name == "mlp":
        return MLP(LC, LF, hidden=16).double()
    extra = {"lags": (1, 2, 4), "covariates": 2} if name == "deepar" else {}
    model = make_model(name, LC, LF, **extra).double()
    with torch.no_grad():  # off GluonTS's zero-bias init, so every parameter's gradient is generic
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


def batch(name, seed=0):
    g = torch.Generator().manual_seed(seed)
    c = 5 + 2 * torch.randn(M, LC, generator=g, dtype=torch.float64)
    f = 5 + 2 * torch.randn(M, LF, generator=g, dtype=torch.float64)
    mask = torch.tensor([True, True, False, True, True, False])  # two padding slots
    cov = torch.randn(M, LC + LF, 2, generator=g, dtype=torch.float64) if name == "deepar" else None
    return c, f, mask, cov


NAMES = ["mlp", "simple-ff", "dlinear", "itransformer", "deepar"]


@pytest.mark.parametrize("name", NAMES)
def test_compiled_step_equals_the_eager_engines(name):
    """fullgraph compile succeeds; g̃ equals both eager engines' (1e-10, float64) at the same generator state, and
    the compiled SGD update (θ - η g̃ inside the graph) equals the eager update."""
    model = bench_model(name)
    c, f, mask, cov = batch(name)
    kw = dict(clip=0.3, sigma=0.7, batch_size=4)
    captured = CapturedStep(model, compiler=AOT, **kw)
    got = captured.gradient(c, f, mask, generator=torch.Generator().manual_seed(11), covariates=cov)
    for engine in ("vmap", "factored"):
        want = private_gradient(model, c, f, mask=mask, generator=torch.Generator().manual_seed(11), engine=engine,
                                covariates=cov, **kw)
        assert list(got) == list(want)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-10, atol=1e-12)
    eager = copy.deepcopy(model)
    apply_gradient(eager, torch.optim.SGD(eager.parameters(), lr=0.05), want)
    captured.step(torch.optim.SGD(model.parameters(), lr=0.05), c, f, mask, generator=torch.Generator().manual_seed(11),
                  covariates=cov)
    for p, q in zip(eager.parameters(), model.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-10, atol=1e-12)


def test_a_seed_determines_the_compiled_run_and_other_optimizers_take_the_gradient():
    """Two runs from one seed are equal to the bit, another seed differs; Adam gets g̃ as its gradient (as the eager
    step's ``apply_gradient``)."""
    c, f, mask, _ = batch("mlp")
    runs = []
    for seed in (3, 3, 4):
        model = bench_model("mlp")
        step = CapturedStep(model, clip=1.0, sigma=1.0, batch_size=4, compiler=AOT)
        opt, gen = torch.optim.SGD(model.parameters(), lr=0.1), torch.Generator().manual_seed(seed)
        for _ in range(3):
            step.step(opt, c, f, mask, generator=gen)
        runs.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])
    model, reference = bench_model("mlp"), bench_model("mlp")
    step = CapturedStep(model, clip=1.0, sigma=1.0, batch_size=4, compiler=AOT)
    step.step(torch.optim.Adam(model.parameters(), lr=0.1), c, f, mask, generator=torch.Generator().manual_seed(5))
    gradient = private_gradient(reference, c, f, mask=mask, clip=1.0, sigma=1.0, batch_size=4,
                                generator=torch.Generator().manual_seed(5), engine="vmap")
    apply_gradient(reference, torch.optim.Adam(reference.parameters(), lr=0.1), gradient)
    for p, q in zip(reference.parameters(), model.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-10, atol=1e-12)


class _HostRead(nn.Module):
    """A loss that reads a tensor's value on the host: the kind of step the capture check must refuse."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(LC, LF)

    def forward(self, context, forecast):
        err = (self.lin(context) - forecast).square().mean(-1)
        return err * 2 if float(err.sum()) > 0 else err


def test_the_capture_check_refuses_a_host_read():
    """Negative control: a ``float(tensor)`` in the loss breaks the graph, and fullgraph compile refuses it."""
    model = _HostRead().double()
    c, f, mask, _ = batch("mlp")
    step = CapturedStep(model, clip=1.0, sigma=1.0, batch_size=4, compiler=AOT)
    with pytest.raises(Exception, match="(?i)graph break|data-dependent|item|Unsupported"):
        step.gradient(c, f, mask, generator=torch.Generator().manual_seed(0))



def test_compiled_deepar_recurrence_clips_each_window_exactly():
    """DeepAR's per-sample LSTM loop, compiled: its clipped sum / Λ (σ = 0) equals a per-example backward loop's
    Σ_i g_i / max(1, ||g_i|| / C) over the sampled slots (float64, 1e-10), some windows clipped, some not."""
    model = bench_model("deepar")
    c, f, mask, cov = batch("deepar", seed=2)
    norms, summed = [], {k: torch.zeros_like(p) for k, p in model.named_parameters()}
    grads = []
    for i in range(M):
        model.zero_grad(set_to_none=True)
        model(c[i:i + 1], f[i:i + 1], cov[i:i + 1]).sum().backward()
        grads.append({k: p.grad.clone() for k, p in model.named_parameters()})
        norms.append(float(sum(g.square().sum() for g in grads[-1].values()).sqrt()))
    model.zero_grad(set_to_none=True)
    clip = sorted(n for n, m in zip(norms, mask) if m)[1]  # between the sampled windows' norms
    bound = clip * (1 - clip_margin(c.dtype, sum(p.numel() for p in model.parameters())))  # the engines' margin
    for g, norm, keep in zip(grads, norms, mask.tolist()):
        for k in summed:
            summed[k] += keep * g[k] / max(1.0, norm / bound)
    step = CapturedStep(model, clip=clip, sigma=0.0, batch_size=4, compiler=AOT)
    got = step.gradient(c, f, mask, generator=torch.Generator().manual_seed(0), covariates=cov)
    assert 0 < sum(n > clip for n, m in zip(norms, mask) if m) < int(mask.sum())
    for k in summed:
        torch.testing.assert_close(got[k], summed[k] / 4, rtol=1e-10, atol=1e-13)


class _Float32Linear(nn.Module):
    """One float32 linear with a squared-error loss: what bf16 autocast changes (the engines' models above are
    float64, which autocast and reduced matmul precision leave alone)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(LC, LF)

    def forward(self, context, forecast):
        return (self.lin(context) - forecast).square().mean(-1)


@pytest.mark.usefixtures("default_precision")
def test_the_compiled_step_runs_whole_at_full_precision_whatever_the_user_set():
    """A float32 step compiled and run under the user's "medium" precision and bf16 autocast: traced and run inside
    training.full_precision's guard, its g̃ and SGD update equal, bit for bit, those of the step at full precision
    without autocast (unguarded, dynamo retraces under autocast and the forward runs in bf16), and the user's
    settings hold after it."""
    torch.manual_seed(0)
    model = _Float32Linear()
    c, f, mask, _ = batch("mlp")
    c, f = c.float(), f.float()
    step = CapturedStep(model, clip=0.3, sigma=0.7, batch_size=4, compiler=AOT)
    want = step.gradient(c, f, mask, generator=torch.Generator().manual_seed(11))
    eager = copy.deepcopy(model)
    apply_gradient(eager, torch.optim.SGD(eager.parameters(), lr=0.05), want)
    torch.set_float32_matmul_precision("medium")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = step.gradient(c, f, mask, generator=torch.Generator().manual_seed(11))
        step.step(torch.optim.SGD(model.parameters(), lr=0.05), c, f, mask, generator=torch.Generator().manual_seed(11))
        assert torch.is_autocast_enabled("cpu") and torch.get_float32_matmul_precision() == "medium"
    for k in want:
        assert got[k].dtype == torch.float32 and torch.equal(got[k], want[k])
    for p, q in zip(eager.parameters(), model.parameters()):
        assert torch.equal(q, p)
