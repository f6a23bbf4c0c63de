"""End to end: Algorithm 1 on synthetic data, to an ε budget (the real accountant) or for epochs; CLI glue.

Budget truth: for every top level with a proven sound bound × bottom level × λ,
training to a budget with the real accountant reports exactly `tsdp epsilon`'s sound ε for
the steps it ran, stays within the budget, and one more step (epoch, for epoch-scoped
iteration) would exceed it. No stand-in accountant: the numbers come from
tsdp.verify.accountant through the loop's own events.
"""
import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from tsdp.datasets.series import synthetic_for
from tsdp.training.options import Budget, Checkpoints, Evaluation, Loop
from tsdp.training.train import train
from tsdp.theorems.bounds.base import TheoremError
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.verify import accounting

BASE = TrainingConfig(N=64, L=120, context_length=48, forecast_length=24, batch_size=32, instances=1, sigma=1.0,
                      top="wor", bottom="wr")
DELTA = 1e-5
TINY = TrainingConfig(N=8, L=20, context_length=4, forecast_length=2, batch_size=4, instances=1, sigma=2.0)
D = 1e-3  # the accountant's grid in the budget tests (the loop and `tsdp epsilon` both take it)


@pytest.fixture(autouse=True)
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def sound(cfg, steps, theorem=None, discretization=D):
    """`tsdp epsilon`'s sound ε after ``steps`` training steps (the public accounting function)."""
    return accounting.epsilon(cfg, DELTA, steps=steps, theorem=theorem, discretization=discretization).epsilon


@pytest.mark.parametrize("name,epochs", [("simple-ff", 150), pytest.param("deepar", 300, marks=pytest.mark.slow)])
def test_nonprivate_training_beats_seasonal_naive(name, epochs):
    """ε = ∞ (no clipping, no noise): test CRPS below seasonal naive's and far below the untrained model's."""
    data = synthetic_for(BASE, seed=1)
    r = train(BASE, name, data, budget=Budget(epochs=epochs, private=False), loop=Loop(lr=1e-2), device="cpu",
              progress=False, seed=0)
    assert r.steps == epochs * BASE.compositions_per_epoch == epochs * 2
    assert r.crps < r.seasonal_naive_crps
    assert r.crps < 0.2 * r.untrained_crps
    assert r.epsilon is None


SCHEMES = [(top, bottom, lam) for top in ("deterministic", "shuffle", "wor", "pooled")
           for bottom in ("wr", "poisson") for lam in (1, 2)]


@pytest.mark.parametrize("top,bottom,lam", [(t, b, lam) if lam == 1 else pytest.param(t, b, lam, marks=pytest.mark.slow)
                                           for t, b, lam in SCHEMES])  # λ = 1 for every scheme in the fast suite
def test_budget_truth_for_every_scheme(top, bottom, lam):
    """The reported ε equals `tsdp epsilon` for the steps that ran (1e-9), is ≤ the budget, and one more
    step would exceed it (a deterministic epoch is spent as it starts: whole epochs; a shuffled run may end inside
    one, charged by the probability that its steps hold the changed sequence). Pooled windows are accounted
    with T13 (record level; the catalogue has no element-level upper bound there)."""
    cfg = TINY.with_(top=top, bottom=bottom, instances=lam, batch_size=4 * lam)
    theorem = "T13" if top == "pooled" else None
    budget = 1.2 * sound(cfg, 3 * cfg.steps_per_epoch + 1, theorem)  # a few epochs' worth, never on a boundary
    r = train(cfg, "dlinear", synthetic_for(cfg, seed=2),
              budget=Budget(epsilon=budget, delta=DELTA, theorem=theorem, discretization=D),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    steps = r.steps
    assert steps > 0
    assert r.epsilon == pytest.approx(sound(cfg, steps, theorem), rel=1e-9)
    assert r.epsilon <= budget
    assert r.compositions == accounting.epsilon(cfg, DELTA, steps=steps, theorem=theorem, discretization=D).compositions
    if top == "deterministic":
        assert steps % cfg.steps_per_epoch == 0  # whole epochs: ε only grows when an epoch starts
    assert sound(cfg, steps + 1, theorem) > budget


def test_poisson_top_level_is_refused():
    """No proven sound bound exists for top-level Poisson sampling: training refuses, naming why."""
    cfg = TINY.with_(top="poisson")
    with pytest.raises(TheoremError, match="no proven sound bound"):
        train(cfg, "dlinear", synthetic_for(cfg, seed=2), budget=Budget(epsilon=5.0, delta=DELTA), device="cpu",
              progress=False, seed=0)
    r = train(cfg, "dlinear", synthetic_for(cfg, seed=2), budget=Budget(epochs=1, private=False), device="cpu",
              progress=False, seed=0)
    assert r.steps == cfg.steps_per_epoch


@pytest.mark.parametrize("theorem", ["T9", "T3"])
def test_a_lower_bound_is_refused_as_the_accountant(theorem):
    """`tsdp train ... --theorem T9` once ran 103 steps instead of 25; a lower bound never stands in for a budget."""
    cfg = TINY.with_(instances=2, batch_size=8, **({"top": "deterministic"} if theorem == "T3" else {}))
    with pytest.raises(TheoremError, match="lower bound"):
        train(cfg, "dlinear", synthetic_for(cfg, seed=2), budget=Budget(epsilon=5.0, delta=DELTA, theorem=theorem),
              device="cpu", progress=False, seed=0)


def test_heterogeneous_run_is_accounted_as_composed():
    """A warm-up of 5 steps at σ = 4, then σ = 2 to the budget: the reported ε is the accountant's
    composition of both phases, equal to dp-accounting's composition of the two PLDs (1e-9)."""
    from dp_accounting import dp_event

    from tsdp.verify.accountant import PldAccountant, one_step_pld
    from tsdp.verify.events import TrainingStepDpEvent, training_event
    from tsdp.verify.pld import PldSettings

    warm = TINY.with_(sigma=4.0)
    budget = 6.0
    r = train(TINY, "dlinear", synthetic_for(TINY, seed=2),
              budget=Budget(epsilon=budget, delta=DELTA, warmup_steps=5, warmup_sigma=4.0, discretization=D),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    main = r.steps - 5
    run = dp_event.ComposedDpEvent([training_event(warm, steps=5), training_event(TINY, steps=main)])
    assert r.epsilon == PldAccountant("sound", discretization=D).compose(run).get_epsilon(DELTA)
    library = one_step_pld(TrainingStepDpEvent(warm), "sound", PldSettings(D)).self_compose(5).compose(
        one_step_pld(TrainingStepDpEvent(TINY), "sound", PldSettings(D)).self_compose(main))
    assert r.epsilon == pytest.approx(library.get_epsilon_for_delta(DELTA), rel=1e-9)
    more = dp_event.ComposedDpEvent([training_event(warm, steps=5), training_event(TINY, steps=main + 1)])
    assert r.epsilon <= budget < PldAccountant("sound", discretization=D).compose(more).get_epsilon(DELTA)
    assert [e.count for e in r.ledger] == [5, main] and r.ledger[1].config == {"sigma": 2.0}


def test_calibration_with_a_warm_up_spends_the_budget_over_the_whole_schedule():
    """σ calibrated for a warm-up (5 steps at σ = 4) and then 3 epochs (`tsdp train --epsilon --warmup-steps` without
    --sigma): the warm-up is composed ahead of the calibrated steps, so the run at that σ trains every step of its
    schedule and spends at most the budget, and the σ just below it (the calibration's rejected end) exceeds the
    budget over the same schedule. Calibrated for the 3 epochs alone, σ was too small and the budget stopped the run
    before its last epoch (12 of 17 steps)."""
    from dp_accounting import dp_event

    from tsdp.training.plan import fit_budget
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    budget = Budget(epsilon=4.0, delta=DELTA, epochs=3, warmup_steps=5, warmup_sigma=4.0, discretization=D)
    fit = fit_budget(TINY, budget)
    cfg = TINY.with_(sigma=fit.sigma)
    r = train(cfg, "dlinear", synthetic_for(cfg, seed=2), budget=budget, evaluation=Evaluation(n_samples=4),
              device="cpu", progress=False, seed=0)
    assert r.steps == 5 + 3 * TINY.compositions_per_epoch and r.epsilon <= 4.0

    def spent(sigma):
        run = dp_event.ComposedDpEvent([training_event(TINY.with_(sigma=4.0), steps=5),
                                        training_event(TINY.with_(sigma=sigma), epochs=3)])
        return PldAccountant("sound", discretization=D).compose(run).get_epsilon(DELTA)

    assert spent(fit.sigma) == pytest.approx(r.epsilon, rel=1e-9)
    assert fit.sigma_rejected is not None and spent(fit.sigma_rejected) > 4.0


def test_a_warm_up_that_spends_the_budget_alone_is_refused_before_calibration():
    """A warm-up whose own sound ε reaches the budget leaves no σ to calibrate: refused naming warmup_steps."""
    from tsdp.training.plan import fit_budget

    with pytest.raises(ConfigError) as err:
        fit_budget(TINY, Budget(epsilon=1.0, delta=DELTA, epochs=1, warmup_steps=200, warmup_sigma=0.7,
                                discretization=D))
    assert err.value.parameter == "warmup_steps" and "leaving no training step" in str(err.value)


def test_private_training_still_learns():
    """ε = 8, δ = 1e-5 with the real accountant (σ = 8, Λ = 64, T6): the CRPS falls well below the untrained model's."""
    cfg = BASE.with_(batch_size=64, sigma=8.0)
    r = train(cfg, "simple-ff", synthetic_for(cfg, seed=1),
              budget=Budget(epsilon=8.0, delta=DELTA, epochs=150, discretization=D), loop=Loop(lr=1e-2), device="cpu",
              progress=False, seed=0)
    assert r.epsilon == pytest.approx(sound(cfg, r.steps), rel=1e-9) and r.epsilon <= 8.0
    assert r.crps < 0.6 * r.untrained_crps


@pytest.mark.parametrize("top,bottom", [("poisson", "poisson"), ("pooled", "wr"), ("shuffle", "poisson")])
def test_other_schemes_run_with_augmentation(top, bottom):
    """Every top/bottom combination trains (with augmentation σ_C = σ_F = 0.5) for the scheduled number of steps."""
    cfg = BASE.with_(top=top, bottom=bottom, L=60, instances=2, sigma_context=0.5, sigma_forecast=0.5)
    r = train(cfg, "itransformer", synthetic_for(cfg, seed=3), budget=Budget(epochs=1, private=False),
              loop=Loop(lr=1e-2), device="cpu", progress=False, seed=0)
    expected = {"poisson": cfg.compositions_per_epoch, "pooled": 64 * 37 // 32, "shuffle": math.ceil(64 / 16)}[top]
    assert r.steps == expected
    assert np.isfinite(r.crps) and r.epsilon is None


def test_training_is_reproducible():
    cfg = BASE.with_(L=60)
    data = synthetic_for(cfg, seed=4)
    budget = Budget(epochs=2, delta=DELTA)
    a = train(cfg, "simple-ff", data, budget=budget, device="cpu", progress=False, seed=5)
    b = train(cfg, "simple-ff", data, budget=budget, device="cpu", progress=False, seed=5)
    c = train(cfg, "simple-ff", data, budget=budget, device="cpu", progress=False, seed=6)
    assert a.crps == b.crps and a.crps != c.crps


def test_train_rejects_inconsistent_input():
    data = synthetic_for(BASE, seed=0)
    with pytest.raises(ConfigError, match="budget"):
        Budget()
    with pytest.raises(ConfigError, match="delta"):
        Budget(epsilon=1.0)
    with pytest.raises(ConfigError, match="--N 64"):
        train(BASE.with_(N=65), "simple-ff", data, budget=Budget(epochs=1, delta=DELTA), progress=False, seed=0)
    with pytest.raises(ConfigError, match="--L 120"):
        train(BASE.with_(L=121), "simple-ff", data, budget=Budget(epochs=1, delta=DELTA), progress=False, seed=0)
    with pytest.raises(ConfigError, match="spent before the first step"):
        train(BASE, "simple-ff", data, budget=Budget(epsilon=0.01, delta=DELTA), progress=False, seed=0)


SMALL = ["--N", "8", "--L", "40", "--batch-size", "4", "--context-length", "48", "--forecast-length", "24",
         "--device", "cpu"]


def tsdp(capsys, *argv):
    from tsdp.cli.main import main

    code = main(["train", *SMALL, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_train_command_json_and_human(capsys, tmp_path):
    code, out, _ = tsdp(capsys, "--epochs", "1", "--delta", "1e-5", "--json", "--model", "dlinear")
    out = json.loads(out)
    assert code == 0 and out["model"] == "dlinear" and out["steps"] == 2
    assert out["epsilon"] == accounting.epsilon(TrainingConfig(N=8, L=40, batch_size=4, context_length=48,
                                                               forecast_length=24), DELTA, steps=2).epsilon
    code, out, _ = tsdp(capsys, "--epochs", "1", "--delta", "1e-5")
    assert code == 0 and "seasonal naive" in out and "sound ε spent" in out
    code, _, err = tsdp(capsys, "--epsilon", "1")
    assert code == 2 and "--delta" in err


def test_train_command_refuses_a_csv_too_short_for_the_batch(capsys, tmp_path):
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    csv = tmp_path / "d.csv"
    csv.write_text("a,b\n" + "\n".join(f"{i},{i}" for i in range(70)) + "\n")
    code, out, err = tsdp(capsys, "--data", str(csv), "--epochs", "1", "--delta", "1e-5", "--json")
    assert code == 2 and "--N 2" in err and "Traceback" not in err


def test_train_draws_its_batches_and_noise_from_a_fresh_seed_unless_one_is_given(capsys):
    """A trained model is (ε, δ)-DP only while its batches and noise are secret: with a fixed default seed anyone
    could redraw them (tsdp is public), re-train on each candidate dataset and match the released model (ε = ∞).
    Two runs without --seed differ (fresh 63-bit seeds collide with probability 2^-63) and differ from the run at
    seed 0; with --seed the run is reproducible. The synthetic data are the same in all four (drawn from seed 0)."""
    outs = []
    for extra in ([], [], ["--seed", "0"], ["--seed", "0"]):
        code, out, err = tsdp(capsys, "--epochs", "1", "--delta", "1e-5", "--json", "--model", "dlinear", *extra)
        assert code == 0, err
        result = json.loads(out)
        outs.append((result["crps"], result["seasonal_naive_crps"]))
    assert len({naive for _, naive in outs}) == 1  # the same (public, synthetic) data
    crps = [c for c, _ in outs]
    assert crps[0] != crps[1] and crps[2] not in crps[:2] and crps[2] == crps[3]


def test_the_train_function_draws_from_a_fresh_seed_unless_one_is_given():
    """As the command (above): ``train`` without ``seed`` is a run whose initialisation, batches and noise others
    cannot redraw. Two calls without a seed give other trained parameters (fresh 63-bit seeds collide with
    probability 2^-63); two calls at seed 0 give the same ones."""
    data = synthetic_for(TINY, seed=2)

    def parameters(**seed):
        r = train(TINY, "dlinear", data, budget=Budget(steps=2, delta=DELTA, discretization=D),
                  evaluation=Evaluation(n_samples=2), checkpoints=Checkpoints(return_model=True), device="cpu",
                  progress=False, **seed)
        return torch.cat([p.detach().flatten() for p in r.trained_model.parameters()])

    assert not torch.equal(parameters(), parameters())
    assert torch.equal(parameters(seed=0), parameters(seed=0))


def test_train_command_with_the_real_accountant(capsys):
    """`tsdp train --epsilon 8 --delta 1e-5`: the budget, not the 3 epochs, stops the run at the last step
    whose sound ε ≤ 8, and the reported ε is `tsdp epsilon`'s for those steps."""
    code, out, _ = tsdp(capsys, "--epsilon", "8", "--delta", "1e-5", "--epochs", "3", "--sigma", "2", "--json",
                        "--model", "dlinear", "--discretization", "1e-3")
    out = json.loads(out)
    cfg = BASE.with_(N=8, L=40, batch_size=4, sigma=2.0)
    assert code == 0 and 0 < out["steps"] < 6 and sound(cfg, out["steps"]) <= 8 < sound(cfg, out["steps"] + 1)
    assert out["epsilon"] == pytest.approx(sound(cfg, out["steps"]), rel=1e-9)
    code, _, err = tsdp(capsys, "--epsilon", "1", "--delta", "1e-5", "--sigma", "2")
    assert code == 2 and "spent before the first step" in err
    code, _, err = tsdp(capsys, "--epochs", "1", "--delta", "1e-5", "--theorem", "T99")
    assert code == 2 and "T99" in err


def test_a_deterministic_run_to_a_budget_reports_the_steps_it_spent(capsys):
    """The run that reported ε = 3.94 after 176 epochs (spent 10.8): it now trains 176 steps = 22 epochs,
    and its reported ε is `tsdp epsilon --steps` of those steps; one more epoch would exceed the budget."""
    from tsdp.cli.main import main

    argv = ["--top", "deterministic", "--N", "64", "--L", "60", "--context-length", "4", "--forecast-length", "2",
            "--batch-size", "8", "--sigma", "2", "--delta", "1e-5"]
    assert main(["train", *argv, "--epsilon", "4", "--json", "--device", "cpu", "--model", "dlinear",
                 "--discretization", "1e-3"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert main(["epsilon", *argv, "--steps", str(run["steps"]), "--json", "--discretization", "1e-3"]) == 0
    spent = json.loads(capsys.readouterr().out)
    assert run["epsilon"] == spent["epsilon"] <= 4.0
    assert run["steps"] == 176 and run["compositions"] == spent["compositions"] == 22
    assert main(["epsilon", *argv, "--steps", str(run["steps"] + 1), "--json", "--discretization", "1e-3"]) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"] > 4.0


@pytest.mark.parametrize("schedule", [["--steps", "7"], ["--epochs", "2"]])
def test_a_budget_without_sigma_is_spent_by_the_schedule(capsys, schedule):
    """--epsilon with --steps/--epochs and no --sigma calibrates σ: the run takes the whole schedule, its ε is
    `tsdp epsilon` of that σ and those steps (the sound accountant), at most the budget and within the
    calibration's tolerance of it (σ 0.1 % smaller would exceed it)."""
    from tsdp.cli.main import main

    code, out, _ = tsdp(capsys, "--epsilon", "1", "--delta", "1e-5", *schedule, "--json", "--model", "dlinear")
    out = json.loads(out)
    steps = 7 if schedule[0] == "--steps" else 2 * 2
    assert code == 0 and out["sigma_calibrated"] and out["steps"] == steps
    argv = [*SMALL[:-2], "--sigma", repr(out["sigma"]), "--delta", "1e-5", "--steps", str(steps), "--json"]
    assert main(["epsilon", *argv]) == 0
    spent = json.loads(capsys.readouterr().out)["epsilon"]
    assert out["epsilon"] == spent <= 1.0
    cfg = BASE.with_(N=8, L=40, batch_size=4, sigma=out["sigma"] * (1 - 1e-3))
    assert sound(cfg, steps) > 1.0


def test_the_default_budgeted_run_trains():
    """`tsdp train --epsilon 2 --delta 1e-7` (paper Section 5 defaults) no longer stops before the first step:
    σ is calibrated so the default epochs spend the budget."""
    import contextlib
    import io

    from tsdp.cli.cmd_train import FIT_EPOCHS
    from tsdp.cli.main import main
    from tsdp.theorems.config import DEFAULT_CONFIG

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["train", "--epsilon", "2", "--delta", "1e-7", "--json", "--device", "cpu",
                     "--discretization", "1e-3"]) == 0
    out = json.loads(buf.getvalue())
    assert out["steps"] == FIT_EPOCHS * DEFAULT_CONFIG.steps_per_epoch and out["epsilon"] <= 2.0


@pytest.mark.parametrize("argv,flag", [
    (["--epochs", "1", "--steps", "2"], "not both"),
    (["--steps", "0"], "--steps"),
    (["--epochs", "1", "--weight-decay", "-1"], "--weight-decay"),
    (["--epochs", "1", "--weight-decay", "nan"], "--weight-decay"),
    (["--epochs", "1", "--sigma", "0"], "--sigma"),
    (["--epsilon", "1e-9", "--steps", "3"], "epsilon"),
])
def test_train_schedule_flags_refuse_bad_input(capsys, argv, flag):
    code, _, err = tsdp(capsys, "--delta", "1e-5", *argv)
    last = err.strip().split("\n")[-1].split("\r")[-1]  # after any progress bar's carriage returns
    assert code == 2 and flag in last and "tsdp train: error:" in last and "Traceback" not in err


def test_a_shuffled_run_to_its_budget_trains_whole_epochs_of_the_samplers_batches(monkeypatch):
    """N = 10, Λ = 4 (N' = 4, λ = 1): an epoch is ceil(10/4) = 3 steps of 4, 4 and 2 series. Trained to a budget that
    three epochs meet, the loop runs exactly the planned steps, 3 whole epochs, each step's batch of the sampler's size
    and every series once per epoch, and the ledger holds one epoch event per epoch (its ε the accountant's)."""
    from tsdp.training import loop

    cfg = TINY.with_(N=10, top="shuffle")
    seen = []
    gather = loop.gather_windows
    monkeypatch.setattr(loop, "gather_windows", lambda padded, seq, start, length: (
        seen.append(seq.tolist()), gather(padded, seq, start, length))[1])
    budget = sound(cfg, 3 * cfg.steps_per_epoch)
    r = train(cfg, "dlinear", synthetic_for(cfg, seed=2), budget=Budget(epsilon=budget, delta=DELTA, discretization=D),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    assert (cfg.steps_per_epoch, r.steps, len(seen), r.compositions) == (3, 9, 9, 3)
    assert [len(s) for s in seen] == [4, 4, 2] * 3
    assert all(sorted(sum(seen[e:e + 3], [])) == list(range(10)) for e in (0, 3, 6))
    assert [(e.event, e.count) for e in r.ledger] == [("TrainingEpochDpEvent", 3)]
    assert r.epsilon == budget and sound(cfg, 10) > budget


def test_the_warm_up_refusal_prints_its_spent_epsilon_rounded_up():
    """The refusal states the warm-up's sound ε (an upper bound) as at least the budget it spent: rounded up. At a
    warm-up σ whose ε at 4 digits rounds to nearest below it, the budget set to exactly that ε is refused, and the
    ε in the message reads back as at least the budget (the old text, to nearest, read below it: 'spend ε = 173 of
    the budget ε = 173.042')."""
    import re

    from tsdp.training.plan import _planned_epsilon, fit_budget

    def refusal(sigma):
        probe = Budget(epsilon=1.0, delta=DELTA, epochs=1, warmup_steps=200, warmup_sigma=sigma, discretization=D)
        spent = _planned_epsilon(TINY, TINY.with_(sigma=sigma), 0, probe)
        return spent, dataclasses.replace(probe, epsilon=spent)

    spent, budget = next((s, b) for s, b in map(refusal, (0.7, 0.71, 0.72, 0.73, 0.74, 0.75))
                         if float(format(s, ".4g")) < s)
    with pytest.raises(ConfigError) as err:
        fit_budget(TINY, budget)
    printed = float(re.search(r"spend ε = ([0-9.e+-]+) of the budget", str(err.value)).group(1))
    assert printed >= spent, (printed, spent, str(err.value))
