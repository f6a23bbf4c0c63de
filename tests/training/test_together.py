"""Runs trained together equal the runs trained alone.

The stacked engine's clipped sums equal the factored engine's per model (every model, with padded slots), and
:func:`train_together` gives every run the result :func:`train` gives it alone at the same seed: the same steps,
sound ε and ledger (exactly: the same accountant on the same events), the same untrained CRPS (exactly: the same
model and draws), and to float rounding the same trained parameters (the updates), validation losses, checkpoint and
test CRPS. Runs without DP train the same batched stack; there every run's numbers in a group are those of its run
trained as a group of one bit for bit (each block of the batched products, every other operation and Adam's step
per row, the validation forward: nothing a row computes depends on the rows around it), and the stack of one agrees
with :func:`train`'s plain model to float rounding over its first steps. Float tolerance: float32
parameters after at most 63 Adam steps agree to rtol 1e-4 (with atol 1e-6 of
the tensor's largest value); CRPS and validation losses to rtol 1e-5 (measured: 1e-8 to 1e-7). The groups mix
seeds (two runs share one), budgets (different stopping steps: 7, 42, 46, 63) and σ.
"""
import math
from dataclasses import replace

import pytest
import torch

from tsdp.datasets.benchmarks import CLIP, LR, WEIGHT_DECAY
from tsdp.experiments.cells import cell_config, split_of
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.theorems.config import ConfigError
from tsdp.training.factored import factored_clipped_sum
from tsdp.training.models import make_model
from tsdp.training.stacked import StackedModel, StackError
from tsdp.training import together
from tsdp.training.together import GroupSettings, Run, train_each_together, train_together
from tsdp.training.train import initial_model, train

EPOCHS = 3  # 63 steps of the shipped M1 data's WOR and shuffled epochs


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_stacked_clipped_sums_equal_each_model_alone(name):
    k, m, lc, lf = 3, 5, 11, 4
    models = []
    for i in range(k):
        torch.manual_seed(i)
        models.append(make_model(name, lc, lf, **({"covariates": 2} if name == "deepar" else {})))
    g = torch.Generator().manual_seed(7)
    context = torch.randn(k, m, lc, generator=g).abs() + 0.5
    forecast = torch.randn(k, m, lf, generator=g).abs() + 0.5
    cov = torch.randn(k, m, lc + lf, 2, generator=g) if name == "deepar" else None
    mask = torch.ones(k, m, dtype=torch.bool)
    mask[1, 3:] = False  # run 1 has 3 windows, padded to 5
    stack = StackedModel(models)
    out = {n: torch.zeros_like(p) for n, p in stack.parameters.items()}
    inputs = [context.reshape(k * m, lc), forecast.reshape(k * m, lf)]
    if cov is not None:
        inputs.append(cov.reshape(k * m, lc + lf, 2))
    clip = 1e-2  # below every window's norm here: every factor clips
    stack.clipped_sums(inputs, clip, mask.reshape(-1).float() * 0.5, out)
    for i in range(k):
        keep = mask[i]
        ref, norms = factored_clipped_sum(models[i], context[i][keep], forecast[i][keep], clip,
                                          covariates=None if cov is None else cov[i][keep])
        assert bool((norms > clip).all())
        for n, r in ref.items():
            torch.testing.assert_close(out[n][i], 0.5 * r, rtol=1e-4, atol=1e-6 * float(r.abs().max()))


def _models_and_windows(name, k, m, lc, lf, first_seed):
    """K models (model i of seed first_seed + i; DeepAR with covariates and lags), K blocks of M random windows
    (K, M, ...), and the generator that drew them."""
    extra = {"covariates": 2, "lags": (1, 2, 3, 6)} if name == "deepar" else {}
    models = []
    for i in range(k):
        torch.manual_seed(first_seed + i)
        models.append(make_model(name, lc, lf, **extra))
    g = torch.Generator().manual_seed(m)
    windows = [torch.randn(k, m, lc, generator=g).abs() + 0.5, torch.randn(k, m, lf, generator=g).abs() + 0.5]
    if name == "deepar":
        windows.append(torch.randn(k, m, lc + lf, 2, generator=g))
    return models, windows, g


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_each_block_of_a_stacks_clipped_sums_is_its_stack_of_one_bit_for_bit(name):
    """The DP step's clipped sums (every layer's factors; DeepAR's ties joined into their leaders' groups) of a stack
    of K = 6 give every model those of its stack of one, bit for bit (torch.equal), at M = 7 and 8 with padded slots
    and row weights, some windows clipped and some not: a private run's numbers do not depend on the runs it trains
    with."""
    k, lc, lf = 6, 11, 6
    for m in (7, 8):
        models, windows, g = _models_and_windows(name, k, m, lc, lf, 60)
        weight = torch.rand(k, m, generator=g) + 0.5
        weight[2, -2:] = 0.0  # padded slots
        norms = torch.stack([factored_clipped_sum(model, windows[0][i], windows[1][i], 1.0,
                                                  covariates=windows[2][i] if name == "deepar" else None)[1]
                             for i, model in enumerate(models)])
        clip = float(norms.median())  # about half the windows clipped
        stacks = [StackedModel(models)] + [StackedModel([model]) for model in models]
        sums = []
        for j, stack in enumerate(stacks):
            rows = slice(None) if j == 0 else slice(j - 1, j)
            out = {n: torch.zeros_like(p) for n, p in stack.parameters.items()}
            stack.clipped_sums([w[rows].reshape(-1, *w.shape[2:]) for w in windows], clip, weight[rows].reshape(-1),
                               out)
            sums.append(out)
        for i in range(k):
            for n, v in sums[i + 1].items():
                assert torch.equal(sums[0][n][i], v[0]), n


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_each_block_of_a_stack_is_its_stack_of_one_bit_for_bit(name):
    """The batched stack (the engine of every group) gives every model the per-window losses, the autograd gradients
    of the per-run mean losses and, after the groups' Adam steps (with weight decay), the parameters of the model
    stacked alone, bit for bit (torch.equal), over 4 steps, at an odd batch (M = 7) and the grid's (M = 8), and at
    K = 6 models: every (K, 3) head bias then spans more than one 16-float vector loop, so an element computed on
    the vectorised body in the stack and on the scalar tail alone (or the other way) would show."""
    k, lc, lf = 6, 11, 6
    for m in (7, 8):
        models, windows, _ = _models_and_windows(name, k, m, lc, lf, 20)
        stacks = [StackedModel(models)] + [StackedModel([model]) for model in models]
        adam = GroupSettings(name, lr=1e-2, weight_decay=1e-4)
        opts = [together._optimizer(adam, list(s.parameters.values())) for s in stacks]  # the groups' optimizer
        for _ in range(4):
            passes = []
            for j, (stack, opt) in enumerate(zip(stacks, opts)):
                rows = slice(None) if j == 0 else slice(j - 1, j)
                losses = stack.losses([w[rows].reshape(-1, *w.shape[2:]) for w in windows])
                (losses / m).sum().backward()
                passes.append((losses.detach(), {n: p.grad.clone() for n, p in stack.parameters.items()}))
                opt.step()
                opt.zero_grad(set_to_none=True)
            (all_losses, all_grads), params = passes[0], stacks[0].parameters
            for i in range(k):
                losses, grads = passes[i + 1]
                assert torch.equal(all_losses[i * m:(i + 1) * m], losses)
                for n, p in stacks[i + 1].parameters.items():
                    assert torch.equal(all_grads[n][i], grads[n][0]), n
                    assert torch.equal(params[n][i], p[0]), n


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_a_stack_of_one_gives_the_plain_models_losses_and_gradients_to_float_rounding(name):
    """A second implementation of one pass: the stack of one model (batched products, DeepAR's whole-tensor gates)
    and the model itself (``F.linear``, ``F.layer_norm``, per-gate views) give the same per-window losses (rtol 1e-5)
    and gradients (rtol 1e-4) to float rounding."""
    torch.manual_seed(3)
    model = make_model(name, 11, 6, **({"covariates": 2, "lags": (1, 2, 3, 6)} if name == "deepar" else {}))
    g = torch.Generator().manual_seed(4)
    inputs = [torch.randn(7, 11, generator=g).abs() + 0.5, torch.randn(7, 6, generator=g).abs() + 0.5]
    if name == "deepar":
        inputs.append(torch.randn(7, 17, 2, generator=g))
    stack = StackedModel([model])
    stacked = stack.losses(inputs)
    plain = model(*inputs)
    torch.testing.assert_close(stacked, plain, rtol=1e-5, atol=0)
    stacked.mean().backward()
    plain.mean().backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(stack.parameters[n].grad[0], p.grad, rtol=1e-4,
                                   atol=1e-6 * float(p.grad.abs().max()), msg=n)


@pytest.mark.parametrize("name", ["itransformer", "deepar"])
def test_each_pass_reads_the_parameters_as_they_are_now(name):
    """A layer's parameter views are made once per pass (a recurrent layer is called once per position) and afresh at
    the next: after an in-place step and after keep(), a pass's losses and gradients are those of a stack built from
    the models as they are then, bit for bit (a view left from an earlier pass would read replaced parameters)."""
    k, m, lc, lf = 3, 4, 11, 6
    extra = {"covariates": 2, "lags": (1, 2, 3, 6)} if name == "deepar" else {}
    models = []
    for i in range(k):
        torch.manual_seed(40 + i)
        models.append(make_model(name, lc, lf, **extra))
    g = torch.Generator().manual_seed(1)
    context = torch.randn(k * m, lc, generator=g).abs() + 0.5
    forecast = torch.randn(k * m, lf, generator=g).abs() + 0.5
    inputs = [context, forecast] + ([torch.randn(k * m, lc + lf, 2, generator=g)] if name == "deepar" else [])
    stack = StackedModel(models)
    stack.losses(inputs).sum().backward()
    with torch.no_grad():
        for p in stack.parameters.values():
            p.add_(p.grad, alpha=-0.1)
            p.grad = None
    rows = [2, 0]
    stack.keep(rows)
    now = [stack.model(r) for r in range(len(rows))]
    fresh = StackedModel(now)
    kept = torch.cat([torch.arange(r * m, (r + 1) * m) for r in rows])
    kept_inputs = [x[kept] for x in inputs]
    for s in (stack, fresh):
        s.losses(kept_inputs).sum().backward()
    assert torch.equal(stack.losses(kept_inputs), fresh.losses(kept_inputs))
    for n, p in stack.parameters.items():
        assert torch.equal(p.grad, fresh.parameters[n].grad), n


def test_stack_refuses_other_layers_and_architectures():
    with pytest.raises(StackError, match="GRU"):
        StackedModel([torch.nn.Sequential(torch.nn.GRU(2, 2))])
    with pytest.raises(StackError, match="architecture"):
        StackedModel([make_model("simple-ff", 4, 2), make_model("simple-ff", 5, 2)])


def _group(model: str, top: str, private: bool):
    grid = GridSettings(epochs=EPOCHS)
    split = split_of(grid)
    config = cell_config(Cell(model, 1.0, 0, "1-event", top), grid)
    settings = GroupSettings(model, split=split, delta=1e-7 if private else None, epochs=EPOCHS, private=private,
                             discretization=1e-3, clip=CLIP, lr=LR, weight_decay=WEIGHT_DECAY, device="cpu",
                             season=split.spec.season, n_samples=20, lags=split.spec.lags, return_model=True)
    return config, settings


def _assert_same(config, runs, settings, steps, together=None):
    together = train_together(config, runs, settings) if together is None else together
    assert [r.steps for r in together] == steps
    for run, got in zip(runs, together):
        cfg = config if run.sigma is None else config.with_(sigma=run.sigma)
        alone = train(cfg, settings.model_name, seed=run.seed, **settings.keywords(run.epsilon))
        assert (got.steps, got.epsilon, got.compositions, got.ledger, got.theorem, got.sigma) == (
            alone.steps, alone.epsilon, alone.compositions, alone.ledger, alone.theorem, alone.sigma)
        assert got.untrained_crps == alone.untrained_crps
        mine = dict(got.trained_model.named_parameters())
        for name, p in alone.trained_model.named_parameters():
            torch.testing.assert_close(mine[name], p, rtol=1e-4, atol=1e-6 * float(p.detach().abs().max()))
        assert got.selection.selected_step == alone.selection.selected_step
        for field in ("validation_loss", "selected_validation_loss", "selected_crps"):
            assert math.isclose(getattr(got.selection, field), getattr(alone.selection, field), rel_tol=1e-5)
        assert math.isclose(got.crps, alone.crps, rel_tol=1e-5)
        assert got.seconds > 0


@pytest.mark.slow
def test_simple_ff_wor_runs_together_equal_alone():
    config, settings = _group("simple-ff", "wor", True)
    runs = [Run(1, 0.5, 4.0), Run(2, 1.0, 4.0), Run(1, 2.0, 8.0), Run(3, None, 8.0)]
    _assert_same(config, runs, settings, [7, 46, 63, 63])


def test_simple_ff_private_runs_of_one_seed_together_equal_alone():
    config, settings = _group("simple-ff", "wor", True)
    _assert_same(config, [Run(8, 0.5, 4.0), Run(8, 1.0, 4.0)], settings, [7, 46])


def _without_dp(model: str, top: str = "wor", steps=None):
    """A group without DP on the shipped M1 data: the grid's 3 epochs, or ``steps`` with a validation every 4."""
    config, settings = _group(model, top, False)
    return config, (settings if steps is None else replace(settings, epochs=None, steps=steps, validate_every=4))


def _assert_groups_of_one(config, settings, seeds):
    """Runs without DP trained together are each run trained as a group of one bit for bit: the same parameters
    after the last step, validation losses, checkpoint and CRPS, exactly."""
    together = train_together(config, [Run(s) for s in seeds], settings)
    alone_of = {seed: train_together(config, [Run(seed)], settings)[0] for seed in set(seeds)}
    for seed, got in zip(seeds, together):
        alone = alone_of[seed]
        assert (got.steps, got.epsilon, got.crps, got.untrained_crps, got.selection) == (
            alone.steps, alone.epsilon, alone.crps, alone.untrained_crps, alone.selection)
        mine = dict(got.trained_model.named_parameters())
        for name, p in alone.trained_model.named_parameters():
            assert torch.equal(mine[name], p), name
    return together


@pytest.mark.parametrize("model", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_runs_without_dp_in_a_group_are_their_groups_of_one_bit_for_bit(model):
    """20 steps (validated every 4: the group's validations are one stacked forward), a seed twice in the group."""
    config, settings = _without_dp(model, steps=20)
    together = _assert_groups_of_one(config, settings, [11, 12, 11])
    assert together[0].selection == together[2].selection and together[0].crps == together[2].crps
    assert together[0].crps != together[1].crps


@pytest.mark.parametrize("model", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_the_stack_without_dp_trains_as_train_over_its_first_steps(model):
    """A second implementation: :func:`train` (the plain model, ``F.linear``, per-gate views, per-tensor Adam) and the
    stacked program of a group of one agree after 5 steps to float rounding: parameters (rtol 1e-5), the validation
    losses of the last and the selected checkpoint and the test CRPS (rel 1e-5); the checkpoint step exactly."""
    config, settings = _without_dp(model, steps=5)
    got, = train_together(config, [Run(7)], settings)
    alone = train(config, model, seed=7, **settings.keywords(None))
    mine = dict(got.trained_model.named_parameters())
    start = dict(initial_model(model, config, settings.split.train, seed=7, lags=settings.lags).named_parameters())
    for name, p in alone.trained_model.named_parameters():
        torch.testing.assert_close(mine[name], p, rtol=1e-5, atol=1e-7 * float(p.detach().abs().max()))
        assert not torch.equal(p, start[name])  # every tensor moved
    assert got.selection.selected_step == alone.selection.selected_step
    for field in ("validation_loss", "selected_validation_loss"):
        assert math.isclose(getattr(got.selection, field), getattr(alone.selection, field), rel_tol=1e-5)
    assert math.isclose(got.crps, alone.crps, rel_tol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("model,top", [("deepar", "wor"), ("itransformer", "shuffle"), ("dlinear", "wor")])
def test_runs_without_dp_in_a_group_of_the_grid_are_their_groups_of_one_bit_for_bit(model, top):
    config, settings = _without_dp(model, top)
    _assert_groups_of_one(config, settings, [11, 12])


@pytest.mark.slow
def test_deepar_shuffled_runs_together_equal_alone():
    config, settings = _group("deepar", "shuffle", True)
    runs = [Run(1, 2.0, 8.0), Run(2, None, 8.0), Run(1, None, 16.0)]
    # ε = 2 buys two epochs of 21 steps and 4 of a third (a partial epoch, charged by ρ = 4 N'/N), the same alone
    _assert_same(config, runs, settings, [46, 63, 63])


@pytest.mark.slow
def test_deepar_wor_runs_together_equal_alone():
    config, settings = _group("deepar", "wor", True)
    _assert_same(config, [Run(6, 0.5, 4.0), Run(7, 2.0, 8.0)], settings, [7, 63])


def test_refusals():
    config, settings = _group("simple-ff", "wor", False)
    with pytest.raises(ConfigError, match="runs"):
        train_together(config, [], settings)
    with pytest.raises(ConfigError, match="Poisson"):
        train_together(config.with_(top="poisson"), [Run(1)], settings)
    config, settings = _group("simple-ff", "wor", True)
    with pytest.raises(ConfigError, match="epsilon"):  # as train: a budget that buys no step
        train_together(config, [Run(1, 0.5, 2.0)], settings)


@pytest.mark.parametrize("name", ["simple-ff", "deepar"])
def test_stacked_noisy_gradient_draws_each_seeds_noise(name):
    """One stacked step's g̃ of model k equals model k's own factored g̃ from a generator of the same seed (the noise
    of a seed, and the clipped sum, as alone), for different σ per model."""
    from tsdp.training.factored import factored_noisy_gradient
    from tsdp.training.stacked import stacked_noisy_gradient

    k, m, lc, lf = 3, 4, 11, 4
    models = []
    for i in range(k):
        torch.manual_seed(10 + i)
        models.append(make_model(name, lc, lf))
    g = torch.Generator().manual_seed(3)
    context = torch.randn(k, m, lc, generator=g).abs() + 0.5
    forecast = torch.randn(k, m, lf, generator=g).abs() + 0.5
    sigmas = [0.5, 1.0, 4.0]
    got = stacked_noisy_gradient(StackedModel(models), [context.reshape(k * m, lc), forecast.reshape(k * m, lf)],
                                 torch.ones(k, m, dtype=torch.bool), clip=0.1, sigmas=sigmas, batch_size=m,
                                 generators=[torch.Generator().manual_seed(20 + i) for i in range(k)])
    for i in range(k):
        want = factored_noisy_gradient(models[i], context[i], forecast[i], clip=0.1, sigma=sigmas[i], batch_size=m,
                                       generator=torch.Generator().manual_seed(20 + i))
        for n, w in want.items():
            torch.testing.assert_close(got[n][i], w, rtol=1e-4, atol=1e-6 * float(w.abs().max()))


def test_every_stack_computes_deepars_gates_over_whole_tensors():
    """The stack (of private runs and of runs without DP alike) switches DeepAR's LSTM to whole-tensor activations
    (equal to float rounding, tests/training/test_models_data_metrics.py); the models themselves, and a model read
    back from the stack, keep the per-row views."""
    models = [make_model("deepar", 11, 4) for _ in range(2)]
    stack = StackedModel(models)
    assert stack.module.rnn.whole_gates and StackedModel(models[:1]).module.rnn.whole_gates
    assert not stack.model(0).rnn.whole_gates and not any(m.rnn.whole_gates for m in models)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the accountant's PLD at σ = 1e30 overflows, harmlessly
def test_a_run_that_diverges_fails_as_alone_and_leaves_every_other_run_its_result_alone():
    """A run whose noise (σ = 1e30, plain SGD) drives its parameters to inf trained among others: it gets the
    ConfigError it gets alone (naming lr, the same text), and the other runs, of other seeds, σ and budgets, their
    results alone (train_together raises that error for the whole group)."""
    config, settings = _group("simple-ff", "wor", True)
    settings = replace(settings, optimizer="sgd", epochs=1)
    runs = [Run(1, None, 4.0), Run(2, None, 1e30), Run(3, 0.5, 4.0)]
    out = train_each_together(config, runs, settings)
    with pytest.raises(ConfigError, match="diverged") as alone:
        train(config.with_(sigma=1e30), "simple-ff", seed=2, **settings.keywords(None))
    assert isinstance(out[1], ConfigError) and str(out[1]) == str(alone.value)
    kept = [0, 2]
    _assert_same(config, [runs[k] for k in kept], settings, [21, 7], together=[out[k] for k in kept])
    with pytest.raises(ConfigError, match="diverged"):
        train_together(config, runs, settings)


@pytest.mark.parametrize("name", ["simple-ff", "dlinear", "itransformer", "deepar"])
def test_a_groups_validation_is_one_stacked_forward_giving_each_run_its_loss(name, monkeypatch):
    """The checkpoints' validation of a group (every model on the validation windows, repeated per block, in one
    stacked forward): each model's mean NLL is that of its stack of one bit for bit, also when the windows are taken
    in chunks of a few rows, and :func:`tsdp.training.evaluation.validation_loss` of the plain model to float
    rounding (rel 1e-5: a private run's checkpoint choice can differ from its run alone only at a tie within it)."""
    from tsdp.training.checkpoints import BestCheckpoint
    from tsdp.training.evaluation import validation_loss

    config, settings = _without_dp(name)
    split = settings.split
    models = [initial_model(name, config, split.train, seed=s, lags=settings.lags) for s in range(4)]
    best = BestCheckpoint(models[0], split, config, split.freq, torch.device("cpu"), 1)
    assert best.contexts.shape[0] > 20
    losses = together._validation_losses(StackedModel(models), best)
    assert len(set(losses)) == len(models)
    monkeypatch.setattr(together, "VALIDATION_ROWS", 4 * 7)  # chunks of 7 windows
    assert together._validation_losses(StackedModel(models), best) == losses
    for model, loss in zip(models, losses):
        assert together._validation_losses(StackedModel([model]), best) == [loss]
        alone = validation_loss(model, best.contexts, best.targets, best.covariates)
        assert math.isclose(loss, alone, rel_tol=1e-5)
