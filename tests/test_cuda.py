"""The comparisons that need a CUDA device, skipped (with the reason) where torch sees none: a user's sampler on a CUDA
audit, `tsdp forecast predict` on CUDA against the library's forecast on the CPU at the same seed, the inference
mechanism's draws, and `tsdp train`'s JSON naming the device a seed's draws were made on."""
import contextlib
import io
import json

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device: torch sees none on this machine (CI has no GPU)")


def run_cli(argv):
    """(code, stdout, stderr) of ``tsdp argv`` in this process."""
    from tsdp.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


FLOAT32_RTOL = 1e-4
"""CUDA's float32 kernels (cuDNN's LSTM, its matmuls) round otherwise than the CPU's: the same draws through the same
weights agree to about 1e-6 relative; quantiles of 200 paths are compared at this tolerance."""


def test_a_users_randint_sampler_runs_on_a_cuda_audit_and_is_caught():
    """A top level written as users write it (torch.randint(..., generator=g), no device) runs in a CUDA audit, and
    its drawing with replacement is rejected by the goodness of fit as on the CPU."""
    from tsdp.attacks.montecarlo.audit import _sampler_replaced, audit
    from tsdp.attacks.montecarlo.options import TrialPlan
    from tsdp.theorems.config import TrainingConfig
    from tsdp.training.samplers import BiLevelSampler, TopBatch, make_sampler

    class WithReplacement:
        def __init__(self, n, per_step):
            self.n, self.per_step, self.steps_per_epoch = n, per_step, 1

        def sample(self, n_steps, generator):
            seq = torch.randint(0, self.n, (n_steps, self.per_step), generator=generator)
            return TopBatch(seq, torch.ones_like(seq, dtype=torch.bool))

    cfg = TrainingConfig(N=8, batch_size=4, L=4, context_length=1, forecast_length=1, sigma=1.0)
    broken = BiLevelSampler(WithReplacement(cfg.N, cfg.sequences_per_step), make_sampler(cfg).bottom)
    with _sampler_replaced(broken):
        result = audit("T6", cfg, delta=1e-3, trials=TrialPlan(50000, seed=0, device="cuda"))
    assert result.device.startswith("cuda") and result.gof_pvalue < 1e-4


def test_private_context_draws_the_same_on_cuda_from_a_cpu_generator():
    from tsdp.attacks.inference.mechanism import private_context

    x = torch.randn(50, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    cpu = private_context(x, 0.6, 0.5, torch.Generator().manual_seed(7))
    cuda = private_context(x.cuda(), 0.6, 0.5, torch.Generator().manual_seed(7))
    assert torch.equal(cpu[1], cuda[1].cpu()) and torch.allclose(cpu[0], cuda[0].cpu(), rtol=1e-12)


def test_forecast_predict_on_cuda_is_the_cpu_forecast_of_the_seed(tmp_path):
    """The same seed: `tsdp forecast predict --device cuda` gives the quantiles of the library's forecast on the CPU
    (the draws are made on a CPU generator), within float32 rounding."""
    from tsdp.attacks.inference.mechanism import private_forecast, save_model
    from tsdp.cli.cmd_forecast import QUANTILES
    from tsdp.training.generators import seeded_generator
    from tsdp.training.models import make_model

    torch.manual_seed(0)
    model = make_model("simple-ff", 4, 2)
    path = tmp_path / "m.pt"
    save_model(path, model, "simple-ff", 4, 2, None)
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]
    common = ["forecast", "predict", "--model-file", path, "--values", *values, "--epsilon", "4", "--delta", "1e-4",
              "--r", "0.5", "--samples", "200", "--seed", "3", "--json"]
    got = {d: json.loads(run_cli([*common, "--device", d])[1]) for d in ("cpu", "cuda")}
    context = torch.tensor(values[-4:], dtype=torch.float32)[None]
    paths = private_forecast(model.eval(), context, 0.5, got["cpu"]["sigma"], 200, seeded_generator(3))
    want = np.quantile(paths[0].numpy(), QUANTILES, axis=0)
    for device in ("cpu", "cuda"):
        for i, q in enumerate(QUANTILES):
            np.testing.assert_allclose(got[device]["quantiles"][str(q)], want[i],
                                       rtol=1e-6 if device == "cpu" else FLOAT32_RTOL)


def test_train_names_the_device_its_seed_drew_on():
    """`tsdp train` draws batches and noise on the device it runs on: the JSON says which, and both devices train a
    model with a finite CRPS from the same seed (other draws: the numbers differ, documented in the manual)."""
    argv = ["train", "--N", "16", "--L", "30", "--batch-size", "4", "--epochs", "2", "--delta", "1e-5", "--seed", "5",
            "--json"]
    runs = {}
    for device in ("cpu", "cuda"):
        code, out, err = run_cli([*argv, "--device", device])
        assert code == 0, err
        runs[device] = json.loads(out)
    assert runs["cpu"]["device"] == "cpu" and runs["cuda"]["device"].startswith("cuda")
    assert all(np.isfinite(r["crps"]) for r in runs.values()) and runs["cpu"]["steps"] == runs["cuda"]["steps"]
