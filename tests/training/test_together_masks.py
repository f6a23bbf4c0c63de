"""The runs trained together where their batches hold masked slots, unit and odd batches, or augmentation.

Two independent references. The stacked engine's clipped sum of every model (:meth:`StackedModel.clipped_sums`)
equals Σ_j w_j · g_j / max(1, ||g_j|| / C) of the model's own per-window gradients by torch.func vmap, in float64
(rtol 1e-9), for every model at batch sizes 1, 7 (odd) and 8 (the grid's Λ), half the windows clipped and half not,
each row weighted by its own w_j (0 for a padded slot), so every window's clipped gradient, of norm ≤ C, enters its
own run's sum once and a padded slot not at all. And :func:`train_together` gives every run what
:func:`tsdp.training.train.train` gives it alone (steps, sound ε and ledger exactly; parameters rtol 1e-4, as
tests/training/test_together.py) under the schemes whose steps hold masked slots (Poisson bottom level over series
of different lengths, whose padded slots reach past a series' end; a deterministic or unshuffled-remainder epoch's
short last step) and under augmentation (label noise σ_F on a run's sampled windows only, drawn from its generator
before its noise, as alone), with
runs of different σ, seeds and stopping steps.
"""
import math

import pytest
import torch

from tsdp.datasets.series import synthetic_for
from tsdp.theorems.config import TrainingConfig
from tsdp.training.clipping import clip_factors, gradient_norms, sample_values
from tsdp.training.models import make_model
from tsdp.training.stacked import StackedModel
from tsdp.training.step import per_sample_gradients
from tsdp.training.together import GroupSettings, Run, train_together
from tsdp.training.train import train


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _moved(name, lc, lf, seed):
    """A float64 model with every parameter moved off its initial value."""
    torch.manual_seed(seed)
    model = make_model(name, lc, lf, **({"covariates": 2, "lags": (1, 2, 3, 6)} if name == "deepar" else {}))
    model = model.double()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_stacked_clipped_sums_equal_vmap_per_window_clipping(name):
    k, lc, lf = 3, 11, 6
    for m in (1, 7, 8):
        models = [_moved(name, lc, lf, 30 + i) for i in range(k)]
        g = torch.Generator().manual_seed(m)
        context = 5 + 2 * torch.randn(k, m, lc, generator=g, dtype=torch.float64)
        forecast = 5 + 2 * torch.randn(k, m, lf, generator=g, dtype=torch.float64)
        cov = torch.randn(k, m, lc + lf, 2, generator=g, dtype=torch.float64) if name == "deepar" else None
        weight = torch.rand(k, m, generator=g, dtype=torch.float64) + 0.5
        if m > 1:
            weight[0, -1] = weight[2, 0] = 0.0  # padded slots
        per = [per_sample_gradients(models[i], context[i], forecast[i], covariates=None if cov is None else cov[i])
               for i in range(k)]
        norms = torch.stack([gradient_norms(p, 1) for p in per])  # (k, m)
        clip = float(norms.flatten().median())
        assert bool((norms > clip).any()) and bool((norms < clip).any())
        stack = StackedModel(models)
        out = {n: torch.zeros_like(p) for n, p in stack.parameters.items()}
        inputs = [context.reshape(k * m, lc), forecast.reshape(k * m, lf)]
        if cov is not None:
            inputs.append(cov.reshape(k * m, lc + lf, 2))
        stack.clipped_sums(inputs, clip, weight.reshape(-1), out)
        for i in range(k):
            factor = clip_factors(norms[i], clip, context.dtype, sample_values(per[i], 1))
            assert float((norms[i] * factor).max()) <= clip * (1 + 1e-12)
            for n, g_n in per[i].items():
                want = torch.einsum("m,m...->...", weight[i] * factor, g_n)
                torch.testing.assert_close(out[n][i], want, rtol=1e-9, atol=1e-12 * float(g_n.abs().max()), msg=n)


LENGTHS = (20, 14, 17, 12, 20, 16, 13, 18)


def _assert_together_is_alone(config, model, runs, steps):
    data = synthetic_for(config, seed=3)
    settings = GroupSettings(model, data=data, delta=1e-5, epochs=4, discretization=1e-2, clip=0.5, lr=1e-2,
                             device="cpu", season=4, n_samples=10, return_model=True)
    together = train_together(config, runs, settings)
    assert [r.steps for r in together] == steps
    for run, got in zip(runs, together):
        alone = train(config.with_(sigma=run.sigma), model, seed=run.seed, **settings.keywords(run.epsilon))
        assert (got.steps, got.epsilon, got.compositions, got.ledger, got.untrained_crps) == (
            alone.steps, alone.epsilon, alone.compositions, alone.ledger, alone.untrained_crps)
        mine = dict(got.trained_model.named_parameters())
        for name, p in alone.trained_model.named_parameters():
            torch.testing.assert_close(mine[name], p, rtol=1e-4, atol=1e-6 * float(p.detach().abs().max()))
        assert math.isclose(got.crps, alone.crps, rel_tol=1e-5)


RUNS = [Run(1, 1.6, 4.0), Run(2, None, 4.0), Run(1, 0.9, 8.0), Run(5, 2.0, 4.0)]
"""Two seeds shared, σ 4 and 8, three budgets and the cap: different stopping steps under every scheme below."""


@pytest.mark.parametrize("model", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_poisson_bottom_level_runs_together_equal_alone(model):
    config = TrainingConfig(N=8, L=12, lengths=LENGTHS, context_length=4, forecast_length=2, batch_size=3,
                            instances=1, sigma=4.0, top="wor", bottom="poisson")
    _assert_together_is_alone(config, model, RUNS, [3, 8, 5, 5])


@pytest.mark.parametrize("top,bottom,steps", [("deterministic", "wr", [3, 12, 6, 6]),
                                              ("shuffle", "poisson", [6, 12, 9, 9])])
def test_short_last_steps_of_an_epoch_together_equal_alone(top, bottom, steps):
    config = TrainingConfig(N=8, L=12, lengths=LENGTHS, context_length=4, forecast_length=2, batch_size=3,
                            instances=1, sigma=4.0, top=top, bottom=bottom)
    assert config.sequences_per_step * config.steps_per_epoch > config.N  # the epoch's last step is short
    _assert_together_is_alone(config, "simple-ff", RUNS, steps)


@pytest.mark.parametrize("model", ["simple-ff", "deepar"])
def test_augmented_runs_together_equal_alone(model):
    config = TrainingConfig(N=8, L=12, lengths=LENGTHS, context_length=4, forecast_length=2, batch_size=3,
                            instances=1, sigma=4.0, top="wor", bottom="poisson", relation="user", v=0.5,
                            sigma_forecast=1.0)
    assert config.augmented
    _assert_together_is_alone(config, model, [Run(1, None, 1.0), Run(2, None, 2.0), Run(1, None, 4.0)], [8, 8, 8])
