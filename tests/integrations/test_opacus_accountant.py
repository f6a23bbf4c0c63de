"""tsdp's structured-subsampling accountant inside a real Opacus PrivacyEngine (optional extra tsdp[opacus]).

A small forecaster trains on Grunfeld's investment panel (statsmodels' bundled copy) with
Opacus's DP optimizer, tsdp's BiLevelBatchSampler and tsdp's accountant; the engine's ε must
be the `tsdp epsilon` of the same steps (an independent path: the CLI), σ from
make_private_with_epsilon must re-account to at most the target, and the state must survive
a checkpoint. Deterministic (fixed seeds), no statistical tolerance.
"""
import json
import warnings

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

pytest.importorskip("opacus", reason="the optional extra tsdp[opacus] (opacus) is not installed")

from opacus import PrivacyEngine  # noqa: E402

from tsdp.training.batch_sampler import BiLevelBatchSampler, WindowDataset, fit_lengths  # noqa: E402
from tsdp.attacks.integrations.opacus_accountant import MECHANISM, StructuredSubsamplingAccountant, register  # noqa: E402
from tsdp.cli.main import main  # noqa: E402
from tsdp.theorems.config import ConfigError, TrainingConfig  # noqa: E402
from tsdp.verify.accountant import UnsupportedBoundError  # noqa: E402

DELTA = 1e-5


@pytest.fixture(scope="module")
def setup():
    pytest.importorskip("statsmodels", reason="the test extra (statsmodels' bundled Grunfeld panel) is not installed")
    from tsdp.datasets.formats import grunfeld

    data, _ = grunfeld()
    series = [s / s.std() for s in data.series]  # the user's own scaling
    config = fit_lengths(TrainingConfig(context_length=2, forecast_length=1, batch_size=4, instances=1), series)
    return series, config


def make_loader(series, config, seed=0):
    ds = WindowDataset(series, config)
    return DataLoader(ds, batch_sampler=BiLevelBatchSampler(ds, generator=torch.Generator().manual_seed(seed)),
                      collate_fn=ds.collate)


def forecaster(config):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(config.context_length, 16), nn.ReLU(), nn.Linear(16, config.forecast_length))


def train_steps(model, optimizer, loader, steps):
    done = 0
    while done < steps:
        for context, forecast in loader:
            loss = nn.functional.mse_loss(model(context), forecast)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
            if done == steps:
                return


def cli_epsilon(config, steps, sigma, *extra):
    code = main(["epsilon", "--delta", str(DELTA), "--steps", str(steps), "--json", *extra, "--N", str(config.N),
                 "--L", str(config.L), "--context-length", str(config.context_length), "--forecast-length",
                 str(config.forecast_length), "--batch-size", str(config.batch_size), "--instances",
                 str(config.instances), "--sigma", repr(sigma), "--top", config.top, "--bottom", config.bottom])
    assert code == 0
    return code


def engine_for(config, **options):
    register(config, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's secure-RNG notice
        return PrivacyEngine(accountant=MECHANISM)


def test_opacus_training_spends_the_epsilon_of_tsdp_epsilon(setup, capsys, tmp_path):
    """5 Opacus steps at σ = 2 (WOR top, WR bottom, N = 11, L = 20, Λ = 4): engine.get_epsilon(1e-5) equals
    `tsdp epsilon --steps 5` to 1e-9; the checkpoint round trip keeps it; the model's parameters moved."""
    series, config = setup
    engine = engine_for(config)
    model = forecaster(config)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer,
                                                   data_loader=make_loader(series, config), noise_multiplier=2.0,
                                                   max_grad_norm=1.0, poisson_sampling=False)
    assert isinstance(engine.accountant, StructuredSubsamplingAccountant) and len(loader) == config.steps_per_epoch
    train_steps(model, optimizer, loader, 5)
    assert engine.accountant.history == [(2.0, 1 / config.steps_per_epoch, 5)]
    eps = engine.get_epsilon(DELTA)
    capsys.readouterr()
    cli_epsilon(config, 5, 2.0)
    reference = json.loads(capsys.readouterr().out)["epsilon"]
    assert abs(eps - reference) <= 1e-9, (eps, reference)
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))

    engine.save_checkpoint(path=tmp_path / "ckpt.pt", module=model, optimizer=optimizer)
    restored = engine_for(config)
    model2 = forecaster(config)
    optimizer2 = torch.optim.SGD(model2.parameters(), lr=0.05)
    model2, optimizer2, _ = restored.make_private(module=model2, optimizer=optimizer2,
                                                  data_loader=make_loader(series, config), noise_multiplier=2.0,
                                                  max_grad_norm=1.0, poisson_sampling=False)
    restored.load_checkpoint(path=tmp_path / "ckpt.pt", module=model2, optimizer=optimizer2)
    assert restored.accountant.history == engine.accountant.history
    assert restored.get_epsilon(DELTA) == eps
    other = StructuredSubsamplingAccountant(config.with_(batch_size=5))
    with pytest.raises(ConfigError, match="another configuration"):
        other.load_state_dict(engine.accountant.state_dict())


def test_make_private_with_epsilon_sigma_re_accounts_to_at_most_the_target(setup, capsys):
    """make_private_with_epsilon(ε = 4, δ = 1e-5, 3 epochs) searches σ through the registry (discretisation 1e-3
    for speed); `tsdp epsilon --discretization 1e-3` of 3 epochs' steps at that σ is ≤ 4 and within Opacus's
    tolerance 0.01 of it."""
    series, config = setup
    engine = engine_for(config, discretization=1e-3)
    model = forecaster(config)
    _, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05), data_loader=make_loader(series, config),
        target_epsilon=4.0, target_delta=DELTA, epochs=3, max_grad_norm=1.0, poisson_sampling=False)
    sigma = optimizer.noise_multiplier
    steps = 3 * len(loader)
    capsys.readouterr()
    cli_epsilon(config, steps, sigma, "--discretization", "1e-3")
    eps = json.loads(capsys.readouterr().out)["epsilon"]
    assert 4.0 - 0.01 <= eps <= 4.0, (sigma, eps)


def test_heterogeneous_sigma_is_a_composed_event_between_its_extremes(setup):
    """Steps at σ = 2, 2, 4: a ComposedDpEvent whose ε lies strictly between 3 steps at σ = 4 and 3 at σ = 2
    (discretisation 1e-3)."""
    _, config = setup
    rate = 1 / config.steps_per_epoch
    mixed = StructuredSubsamplingAccountant(config, discretization=1e-3)
    for sigma in (2.0, 2.0, 4.0):
        mixed.step(noise_multiplier=sigma, sample_rate=rate)
    assert mixed.history == [(2.0, rate, 2), (4.0, rate, 1)] and len(mixed) == 3
    ends = []
    for sigma in (4.0, 2.0):
        acc = StructuredSubsamplingAccountant(config, discretization=1e-3)
        acc.history = [(sigma, rate, 3)]
        ends.append(acc.get_epsilon(DELTA))
    assert ends[0] < mixed.get_epsilon(DELTA) < ends[1]


def test_contradicting_configurations_are_refused(setup):
    """A sample rate other than 1/steps-per-epoch, σ changing inside a deterministic epoch, Opacus's Poisson loader
    over the window dataset, an accountant without a configuration, and a scheme without a sound bound are refused
    with the reason."""
    series, config = setup
    acc = StructuredSubsamplingAccountant(config)
    with pytest.raises(ConfigError, match="sample_rate"):
        acc.step(noise_multiplier=1.0, sample_rate=0.01)
    det = config.with_(top="deterministic")
    acc = StructuredSubsamplingAccountant(det)
    acc.step(noise_multiplier=1.0, sample_rate=1 / det.steps_per_epoch)
    with pytest.raises(ConfigError, match="inside an epoch"):
        acc.step(noise_multiplier=2.0, sample_rate=1 / det.steps_per_epoch)
    with pytest.raises(ConfigError, match="TrainingConfig"):
        StructuredSubsamplingAccountant()
    with pytest.raises(UnsupportedBoundError, match="poisson"):  # no sound bound for a Poisson top level
        register(config.with_(top="poisson"))
    engine = engine_for(config)
    model = forecaster(config)
    with pytest.raises(TypeError, match="poisson_sampling"):  # Opacus probes dataset[0] when it builds its loader
        engine.make_private(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                            data_loader=make_loader(series, config), noise_multiplier=1.0, max_grad_norm=1.0,
                            poisson_sampling=True)


@pytest.mark.slow
def test_example_audits_the_planted_bench_loop():
    """examples/opacus_audit.py: the planted bench's Opacus loop, 1000 gradient canaries, one run. The claim is
    tsdp's sound ε of the bench configuration after its steps; the correct loop is not flagged (false-failure
    rate ≤ 5% if it is (ε, δ)-DP; fixed seeds), the loop without noise is. Measured: claim 1.696, correct 0.012
    (AUC 0.557), noise-off 4.322 (AUC 1.000), ~10 s each."""
    import runpy
    from pathlib import Path

    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    example = runpy.run_path(str(Path(__file__).parents[2] / "examples" / "opacus_audit.py"))
    reference = PldAccountant().compose(training_event(example["CONFIG"], steps=example["STEPS"])).get_epsilon(DELTA)
    correct = example["main"]("correct")
    assert abs(correct.epsilon_claimed - reference) <= 1e-9
    assert correct.epsilon_lower <= correct.epsilon_claimed and not correct.violation, correct
    noise_off = example["main"]("noise-off")
    assert noise_off.violation and noise_off.epsilon_lower > 2 * reference, noise_off


def test_a_shuffled_run_is_charged_the_deterministic_orders_epochs_and_its_partial_epoch():
    """Shuffled iteration, N = 11, N' = 4 (3 steps an epoch, the last of 3 series): 3 steps at σ = 2, then 4 at σ = 3
    (one epoch and one step of the next). The sound ε is the deterministic order's T1 over 1 epoch at σ = 2 and 1 at
    σ = 3, then the partial epoch of 1 step (ρ = 4/11), below the 2 whole epochs at σ = 3 it used to be charged, and
    never the hidden-position value; σ changing after the partial epoch's step is refused."""
    from dp_accounting import dp_event

    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import TrainingEpochDpEvent, training_event

    config = TrainingConfig(N=11, L=20, context_length=2, forecast_length=1, batch_size=4, top="shuffle")
    rate = 1 / config.steps_per_epoch
    acc = StructuredSubsamplingAccountant(config, discretization=1e-3)
    for sigma in (2.0,) * 3 + (3.0,) * 4:
        acc.step(noise_multiplier=sigma, sample_rate=rate)
    det = config.with_(top="deterministic")
    ran = dp_event.ComposedDpEvent([training_event(det.with_(sigma=2.0), epochs=1),
                                    training_event(det.with_(sigma=3.0), epochs=1),
                                    TrainingEpochDpEvent(config.with_(sigma=3.0), steps_run=1)])
    expected = PldAccountant("sound", discretization=1e-3).compose(ran).get_epsilon(DELTA)
    assert acc.get_epsilon(DELTA) == expected
    whole = dp_event.ComposedDpEvent([training_event(det.with_(sigma=2.0), epochs=1),
                                      training_event(det.with_(sigma=3.0), epochs=2)])
    assert expected < PldAccountant("sound", discretization=1e-3).compose(whole).get_epsilon(DELTA) - 1e-3
    attained = StructuredSubsamplingAccountant(config, estimate="attained", discretization=1e-3)
    attained.history = list(acc.history)
    assert attained.get_epsilon(DELTA) < expected
    with pytest.raises(ConfigError, match="inside an epoch"):
        acc.step(noise_multiplier=2.0, sample_rate=rate)


def _sound(config, steps, sigma, discretization=1e-3):
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    return PldAccountant("sound", discretization=discretization).compose(
        training_event(config.with_(sigma=sigma), steps=steps)).get_epsilon(DELTA)


def _private(config, series, *, num_workers=0, linked=True):
    """A deterministic-order Opacus run over ``series`` at σ = 2 whose accountant follows its batch sampler."""
    dataset = WindowDataset(series, config)
    sampler = BiLevelBatchSampler(dataset, generator=torch.Generator().manual_seed(0))
    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=dataset.collate, num_workers=num_workers)
    engine = engine_for(config, discretization=1e-3, **({"sampler": sampler} if linked else {}))
    model = forecaster(config)
    model, optimizer, loader = engine.make_private(module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05),
                                                   data_loader=loader, noise_multiplier=2.0, max_grad_norm=1.0,
                                                   poisson_sampling=False)
    return engine, model, optimizer, loader, sampler


def _train(model, optimizer, batch):
    context, forecast = batch
    optimizer.zero_grad()
    nn.functional.mse_loss(model(context), forecast).backward()
    optimizer.step()


@pytest.fixture(scope="module")
def deterministic(setup):
    """Grunfeld's 11 series in a deterministic order of N' = 2 series a step: 6 steps an epoch."""
    series, config = setup
    return series, config.with_(top="deterministic", batch_size=2)


@pytest.mark.parametrize("loop", ["prefetch", "fetch-then-break"])
def test_batches_handed_out_and_not_trained_are_charged(deterministic, loop):
    """Three passes of two trained steps each: with ``num_workers = 2`` the loader prefetches batches it then drops
    (the loop leaves after ``optimizer.step()``); with ``num_workers = 0`` the loop fetches a third batch and leaves
    before training it. Either way the sampler handed out more batches than Opacus trained (6 trained; measured: 18
    handed out with prefetching, 9 with the early break, 3 and 2 of the deterministic order's 6-step epochs against
    the 1 the trained steps fill), and the engine charges at least the sound ε of the batches handed out, which is
    more than that of the steps trained."""
    series, config = deterministic
    engine, model, optimizer, loader, sampler = _private(config, series, num_workers=2 if loop == "prefetch" else 0)
    for _ in range(3):
        for i, batch in enumerate(loader):
            if loop == "fetch-then-break" and i == 2:
                break
            _train(model, optimizer, batch)
            if loop == "prefetch" and i == 1:
                break
    trained, handed_out = len(engine.accountant), sampler.batches_handed_out
    assert trained == 6 and handed_out > config.steps_per_epoch, handed_out
    charged = engine.get_epsilon(DELTA)
    assert charged >= _sound(config, handed_out, 2.0) > _sound(config, trained, 2.0) + 0.1, (charged, handed_out)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_loop_that_trains_every_batch_is_charged_its_steps(deterministic, num_workers):
    """Two whole passes (12 steps, 2 epochs), with or without worker processes: every batch handed out was trained,
    and the linked engine charges exactly the steps trained, `tsdp epsilon --steps 12`'s ε."""
    series, config = deterministic
    engine, model, optimizer, loader, sampler = _private(config, series, num_workers=num_workers)
    for _ in range(2):
        for batch in loader:
            _train(model, optimizer, batch)
    assert len(engine.accountant) == sampler.batches_handed_out == 2 * config.steps_per_epoch
    assert engine.get_epsilon(DELTA) == _sound(config, 2 * config.steps_per_epoch, 2.0)


def test_handed_out_batches_at_a_changed_sigma_are_charged_at_the_smallest(deterministic):
    """σ = 3 for 6 trained steps then σ = 2 for 1, with 9 batches handed out: the charge is 9 steps (2 epochs) at
    σ = 2, at least what either the trained history or the handed-out count alone would charge; a sampler of another
    configuration is refused, as is something that is not a batch sampler."""
    series, config = deterministic
    dataset = WindowDataset(series, config)
    sampler = BiLevelBatchSampler(dataset, generator=torch.Generator().manual_seed(0))
    acc = StructuredSubsamplingAccountant(config, discretization=1e-3, sampler=sampler)
    rate = 1 / config.steps_per_epoch
    acc.history = [(3.0, rate, 6), (2.0, rate, 1)]
    history_only = acc.get_epsilon(DELTA)
    batches = iter(sampler)
    for _ in range(6):
        next(batches)
    batches = iter(sampler)  # a new pass: the rest of the epoch was left to it
    for _ in range(3):
        next(batches)
    assert sampler.batches_handed_out == 9
    charged = acc.get_epsilon(DELTA)
    assert charged == _sound(config, 9, 2.0) and charged > history_only > _sound(config, 9, 3.0)
    with pytest.raises(ConfigError, match="another configuration"):
        StructuredSubsamplingAccountant(config.with_(batch_size=3), sampler=sampler)
    with pytest.raises(ConfigError, match="BiLevelBatchSampler"):
        StructuredSubsamplingAccountant(config, sampler=object())


def test_training_after_a_checkpoint_is_a_new_run_of_the_samplers_fresh_epochs(deterministic, tmp_path):
    """3 of the deterministic order's 6 steps, a checkpoint, then 3 steps from a fresh loader: the fresh sampler starts
    its epoch again, so the series of the first 3 steps are trained twice and the charge is 2 epochs (two runs of 3
    steps composed), not the 1 epoch that 6 consecutive steps would be; the batches handed out before the checkpoint
    and not trained (the early break) stay charged; and the restored state alone keeps its ε."""
    from dp_accounting import dp_event

    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    series, config = deterministic
    engine, model, optimizer, loader, _ = _private(config, series)
    for i, batch in enumerate(loader):
        if i == 3:
            break  # the fourth batch was handed out and not trained
        _train(model, optimizer, batch)
    before = engine.get_epsilon(DELTA)
    assert before == _sound(config, 4, 2.0)
    engine.save_checkpoint(path=tmp_path / "ckpt.pt", module=model, optimizer=optimizer)
    restored, model2, optimizer2, loader2, sampler2 = _private(config, series)
    restored.load_checkpoint(path=tmp_path / "ckpt.pt", module=model2, optimizer=optimizer2)
    assert restored.get_epsilon(DELTA) == before
    for i, batch in enumerate(loader2):
        _train(model2, optimizer2, batch)
        if i == 2:
            break
    assert len(restored.accountant) == 6 and sampler2.batches_handed_out == 3
    two_runs = dp_event.ComposedDpEvent([training_event(config.with_(sigma=2.0), steps=4),
                                         training_event(config.with_(sigma=2.0), steps=3)])
    expected = PldAccountant("sound", discretization=1e-3).compose(two_runs).get_epsilon(DELTA)
    assert restored.get_epsilon(DELTA) == expected > _sound(config, 6, 2.0) + 0.1


@pytest.mark.parametrize("top", ["shuffle", "wor"])
def test_opacus_sigma_search_is_charged_the_epochs_the_loader_runs(top):
    """Opacus's σ search (``get_noise_multiplier``, what ``make_private_with_epsilon`` calls) sets the history to
    int(E / sample_rate) steps, which float rounding makes E·m - 1 for m = 75 steps an epoch and E = 3 (224, not 225).
    The loader then runs E whole epochs, so the searched accountant must charge them: its ε is tsdp's ε of 3 epochs
    (an independent path: the event of 3 epochs), and the σ Opacus returns re-accounts over the 3 epochs the
    loader runs to at most the target. Before the fix it charged 224 steps (the shuffled run's last epoch a partial
    one of 74 steps; one WOR step short) and the σ overspent the target."""
    from opacus.accountants.utils import get_noise_multiplier

    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    config = TrainingConfig(N=75, L=20, context_length=1, forecast_length=1, batch_size=1, top=top)
    rate = 1 / config.steps_per_epoch
    assert config.steps_per_epoch == 75 and int(3 / rate) == 224  # Opacus's step count, one short of 3 epochs

    def three_epochs(sigma):
        return PldAccountant("sound", discretization=1e-3).compose(
            training_event(config.with_(sigma=sigma), epochs=3)).get_epsilon(DELTA)

    searched = StructuredSubsamplingAccountant(config, discretization=1e-3)
    searched.history = [(2.0, rate, int(3 / rate))]  # as get_noise_multiplier sets it
    assert searched.get_epsilon(DELTA) == three_epochs(2.0)

    register(config, discretization=1e-3)
    target = 1.0
    sigma = get_noise_multiplier(target_epsilon=target, target_delta=DELTA, sample_rate=rate, epochs=3,
                                 accountant=MECHANISM, epsilon_tolerance=1e-3)
    assert three_epochs(sigma) <= target, sigma


def test_searched_steps_are_the_whole_epochs_opacus_means_and_never_fewer_than_its_count():
    """For every epoch length m in 1..400 and E in 1..30, Opacus's count int(E / (1/m)) (E·m or, by float rounding,
    E·m - 1) is read as E·m steps; any other count is kept, or raised by one only where it is that formula's."""
    from tsdp.attacks.integrations.opacus_accountant import searched_steps

    short = 0
    for m in range(1, 401):
        rate = 1 / m
        for epochs in range(1, 31):
            count = int(epochs / rate)
            short += count != epochs * m
            assert searched_steps(count, rate) == epochs * m, (m, epochs, count)
        for count in range(1, 3 * m + 2):
            assert searched_steps(count, rate) in (count, count + 1)
            assert searched_steps(count, rate) == count or int(((count + 1) // m) / rate) == count
    assert short > 0  # the rounding this reads through does occur
