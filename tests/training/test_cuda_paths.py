"""The fast paths on CUDA against the eager reference: the step compiled and captured in a CUDA graph
(``reduce-overhead``), the fixed-capacity Poisson batch, and the training loop's ``captured`` path.

Skipped where torch sees no CUDA device (CI, this project's CPU machines); the same comparisons run on CPU in
tests/training/test_captured.py (compiled with ``aot_eager``) and tests/training/test_fixed_batch.py. Under TF32
(``torch.set_float32_matmul_precision("high")``) and bf16 autocast, the clip stage's full precision
(:mod:`tsdp.training.full_precision`), as tests/training/test_full_precision.py checks it on CPU under bf16.
"""
import contextlib
import copy
import math

import pytest
import torch

from tsdp.training.captured import CapturedStep
from tsdp.training.clipping import clipped_sum, gradient_norms
from tsdp.training.factored import factored_clipped_sum
from tsdp.training.models import MLP, make_model
from tsdp.training.step import apply_gradient, per_sample_gradients, private_gradient

from float32_precision import reset_float32_precision

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device: the CUDA-graph "
                                 "paths cannot run here (their CPU twins are test_captured.py, test_fixed_batch.py)")]

LC, LF, M = 24, 6, 64
NAMES = ["mlp", "simple-ff", "dlinear", "itransformer", "deepar"]


def cuda_model(name):
    torch.manual_seed(0)
    model = MLP(LC, LF, hidden=64) if name == "mlp" else make_model(name, LC, LF)
    return model.cuda()


def cuda_batch(name, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    c = 5 + 2 * torch.randn(M, LC, generator=g, device="cuda")
    f = 5 + 2 * torch.randn(M, LF, generator=g, device="cuda")
    mask = torch.arange(M, device="cuda") % 5 != 0  # every fifth slot padding
    cov = torch.randn(M, LC + LF, 1, generator=g, device="cuda") if name == "deepar" else None
    return c, f, mask, cov


@pytest.mark.parametrize("name", NAMES)
def test_captured_step_equals_eager_on_cuda(name):
    """The CUDA-graph step's g̃ and SGD update against both eager engines at the same generator state (float32:
    rtol 1e-4), over three replays (the graph's buffers reused)."""
    model = cuda_model(name)
    eager = copy.deepcopy(model)
    kw = dict(clip=1.0, sigma=0.5, batch_size=M)
    captured = CapturedStep(model, **kw)  # reduce-overhead on CUDA
    opt, eager_opt = torch.optim.SGD(model.parameters(), lr=1e-2), torch.optim.SGD(eager.parameters(), lr=1e-2)
    gen, eager_gen = (torch.Generator(device="cuda").manual_seed(3) for _ in range(2))
    for seed in range(3):
        c, f, mask, cov = cuda_batch(name, seed)
        want = private_gradient(eager, c, f, mask=mask, generator=torch.Generator(device="cuda").manual_seed(9),
                                engine="factored", covariates=cov, **kw)
        got = captured.gradient(c, f, mask, generator=torch.Generator(device="cuda").manual_seed(9), covariates=cov)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-6)
        captured.step(opt, c, f, mask, generator=gen, covariates=cov)
        apply_gradient(eager, eager_opt, private_gradient(eager, c, f, mask=mask, generator=eager_gen,
                                                          engine="vmap", covariates=cov, **kw))
    for p, q in zip(eager.parameters(), model.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_masked_batch_equals_compacted_batch_on_cuda(name):
    """Padding slots weigh 0: the masked batch gives the compacted batch's g̃ on CUDA (float32, rtol 1e-5)."""
    model = cuda_model(name)
    c, f, mask, cov = cuda_batch(name)
    kw = dict(clip=1.0, sigma=1.0, batch_size=M, engine="factored")
    want = private_gradient(model, c[mask], f[mask], generator=torch.Generator(device="cuda").manual_seed(1),
                            covariates=None if cov is None else cov[mask], **kw)
    got = private_gradient(model, c, f, mask=mask, generator=torch.Generator(device="cuda").manual_seed(1),
                           covariates=cov, **kw)
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-5, atol=1e-6)


def test_training_loop_captured_path_on_cuda():
    """``Loop(step_path="captured")`` on CUDA spends the eager run's ε over the same steps and reaches a CRPS near
    it (float32, a few steps: 1e-2 relative)."""
    from tsdp.datasets.series import synthetic_for
    from tsdp.theorems.config import TrainingConfig
    from tsdp.training.options import Budget, Evaluation, Loop
    from tsdp.training.train import train

    config = TrainingConfig(N=12, L=40, context_length=8, forecast_length=4, batch_size=6, instances=2, sigma=1.0,
                            top="wor", bottom="poisson")
    data = synthetic_for(config, seed=2)
    runs = {path: train(config, "simple-ff", data, budget=Budget(steps=6, delta=1e-5, discretization=1e-3),
                        loop=Loop(step_path=path), evaluation=Evaluation(n_samples=20), device="cuda", progress=False,
                        seed=4) for path in ("eager", "captured")}
    assert runs["captured"].epsilon == runs["eager"].epsilon and runs["captured"].overflow_steps == 0
    assert runs["captured"].crps == pytest.approx(runs["eager"].crps, rel=1e-2)


def _norm(grads):
    return math.sqrt(sum(float(v.double().square().sum()) for v in grads.values()))


@pytest.mark.usefixtures("default_precision")
@pytest.mark.parametrize("name", NAMES)
def test_each_window_is_clipped_to_at_most_c_under_tf32_and_autocast_on_cuda(name):
    """TF32 on ("high") or bf16 autocast: each of 8 windows' clipped contribution (its sum with the others masked out)
    ≤ C with every window clipped, in both eager engines; the vmap engine's clip stage of given per-sample gradients
    equals the one at "highest" without autocast (rtol 1e-5; unguarded, its einsum rounds its inputs to TF32 or bf16);
    the factored clipped sum within the forward's TF32/bf16 error (0.1 of its norm) of the one at "highest"."""
    model = cuda_model(name)
    c, f, _, cov = cuda_batch(name)
    m = 8
    c, f, cov = c[:m], f[:m], None if cov is None else cov[:m]
    grads = per_sample_gradients(model, c, f, None, cov)
    clip = 0.5 * float(gradient_norms(grads, 1).min())
    runs = {"vmap": lambda mask: clipped_sum(grads, clip, 1, mask),
            "factored": lambda mask: factored_clipped_sum(model, c, f, clip, mask, cov)[0]}
    reference = {engine: run(None) for engine, run in runs.items()}
    for user in ("high", "autocast"):
        if user == "high":
            torch.set_float32_matmul_precision("high")
        with torch.autocast("cuda", dtype=torch.bfloat16) if user == "autocast" else contextlib.nullcontext():
            for engine, run in runs.items():
                got = run(None)
                alone = [_norm(run(torch.eye(m, device="cuda")[i])) for i in range(m)]
                assert max(alone) <= clip, (user, engine, max(alone) / clip - 1)
                want = reference[engine]
                if engine == "vmap":  # the same products at IEEE (TF32 would round their inputs at 5e-4)
                    for k in want:
                        torch.testing.assert_close(got[k], want[k], rtol=1e-5, atol=1e-6 * clip)
                else:  # the forward's own rounding (a ReLU near 0 may flip under bf16): 3e-2 on CPU's bf16, MLP
                    assert _norm({k: got[k] - want[k] for k in want}) <= 0.1 * _norm(want), user
        reset_float32_precision()


@pytest.mark.usefixtures("default_precision")
def test_the_captured_step_under_tf32_is_the_full_precision_step_on_cuda():
    """With TF32 on, the CUDA-graph step runs whole at full precision (traced and replayed inside the guard): its g̃
    equals the eager factored engine's at "highest" (float32: rtol 1e-4), and TF32 is still on after it."""
    model = cuda_model("mlp")
    kw = dict(clip=1.0, sigma=0.5, batch_size=M)
    c, f, mask, cov = cuda_batch("mlp")
    want = private_gradient(model, c, f, mask=mask, generator=torch.Generator(device="cuda").manual_seed(9),
                            engine="factored", covariates=cov, **kw)
    torch.set_float32_matmul_precision("high")
    captured = CapturedStep(model, **kw)
    for _ in range(2):  # the first call records the graph, the second replays it
        got = captured.gradient(c, f, mask, generator=torch.Generator(device="cuda").manual_seed(9), covariates=cov)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-6)
    assert torch.backends.cuda.matmul.allow_tf32 and torch.get_float32_matmul_precision() == "high"
