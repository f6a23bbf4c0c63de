"""End to end: Algorithm 1 on synthetic data (N = 64 series), to an ε budget or for epochs; CLI glue.

The ε-budget tests use a stand-in accountant, not verify.accounting: the zCDP bound of the
Gaussian mechanism without any amplification, ε(s) = s ρ₀ + 2 sqrt(s ρ₀ ln(1/δ)) with
ρ₀ = (2C)² / (2 σ² C²) = 2/σ² (one sequence changes at most one clipped gradient per step
at λ = 1, so the sum moves by ≤ 2C). It is a sound but loose bound; its step count is
computed here in closed form.
"""
import json
import math

import numpy as np
import pytest
import torch

from tsdp.attacks.loop.data import synthetic_for
from tsdp.attacks.loop.train import train
from tsdp.theorems.config import TrainingConfig

BASE = TrainingConfig(N=64, L=120, context_length=48, forecast_length=24, batch_size=32, instances=1, sigma=1.0,
                      top="wor", bottom="wr")
DELTA = 1e-5


@pytest.fixture(autouse=True)
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def zcdp_epsilon(sigma):
    rho0 = 2.0 / sigma ** 2
    return lambda s: s * rho0 + 2 * math.sqrt(s * rho0 * math.log(1 / DELTA))


def zcdp_steps(epsilon, sigma):
    """Closed form of max{s : ε(s) ≤ epsilon}: sqrt(s ρ₀) = sqrt(l + ε) - sqrt(l), l = ln(1/δ)."""
    l = math.log(1 / DELTA)
    return math.floor((math.sqrt(l + epsilon) - math.sqrt(l)) ** 2 / (2.0 / sigma ** 2))


@pytest.mark.parametrize("name,epochs", [("simple-ff", 150), ("deepar", 300)])
def test_nonprivate_training_beats_seasonal_naive(name, epochs):
    """ε = ∞ (no clipping, no noise): test CRPS below seasonal naive's and far below the untrained model's."""
    data = synthetic_for(BASE, seed=1)
    r = train(BASE, name, data, epochs=epochs, private=False, lr=1e-2, device="cpu", progress=False)
    assert r["steps"] == epochs * BASE.compositions_per_epoch == epochs * 2
    assert r["crps"] < r["seasonal_naive_crps"]
    assert r["crps"] < 0.2 * r["untrained_crps"]
    assert r["epsilon"] is None


@pytest.mark.parametrize("name", ["simple-ff", "deepar"])
def test_private_training_to_epsilon_8_still_trains(name):
    """ε = 8, δ = 1e-5 under the stand-in accountant (σ = 8, Λ = 64): trains exactly the budget's steps and learns.

    Steps = max{s : ε(s) ≤ 8} from the closed form (33 here); the final CRPS is below the
    untrained model's by a wide margin.
    """
    cfg = BASE.with_(batch_size=64, sigma=8.0)
    eps = zcdp_epsilon(8.0)
    r = train(cfg, name, synthetic_for(cfg, seed=1), epsilon=8.0, delta=DELTA, epsilon_of_steps=eps, lr=1e-2,
              device="cpu", progress=False)
    steps = zcdp_steps(8.0, 8.0)
    assert steps == 33
    assert r["steps"] == r["compositions"] == steps
    assert r["epsilon"] == pytest.approx(eps(steps)) and r["epsilon"] <= 8.0 < eps(steps + 1)
    assert r["crps"] < 0.6 * r["untrained_crps"]


def test_deterministic_top_level_budget_counts_epochs():
    """Deterministic iteration: one composition = one epoch of ceil(N/N') steps; the budget stops at whole epochs."""
    cfg = BASE.with_(top="deterministic", batch_size=30, L=60)
    calls = []

    def eps(epochs):
        calls.append(epochs)
        return 0.5 * epochs

    r = train(cfg, "dlinear", synthetic_for(cfg, seed=2), epsilon=2.2, delta=DELTA, epsilon_of_steps=eps,
              device="cpu", progress=False)
    assert r["compositions"] == 4 and r["steps"] == 4 * math.ceil(64 / 30) == 12
    assert r["epochs"] == 4.0 and r["epsilon"] == 2.0
    assert max(calls) <= 8


@pytest.mark.parametrize("top,bottom", [("poisson", "poisson"), ("pooled", "wr"), ("shuffle", "poisson")])
def test_other_schemes_run_with_augmentation(top, bottom):
    """Every top/bottom combination trains (with augmentation σ_C = σ_F = 0.5) for the scheduled number of steps."""
    cfg = BASE.with_(top=top, bottom=bottom, L=60, instances=2, sigma_context=0.5, sigma_forecast=0.5)
    r = train(cfg, "itransformer", synthetic_for(cfg, seed=3), epochs=1, lr=1e-2, device="cpu", progress=False)
    expected = {"poisson": cfg.compositions_per_epoch, "pooled": 64 * 37 // 32, "shuffle": math.ceil(64 / 16)}[top]
    assert r["steps"] == expected
    assert np.isfinite(r["crps"]) and r["epsilon"] is None


def test_training_is_reproducible():
    cfg = BASE.with_(L=60)
    data = synthetic_for(cfg, seed=4)
    a = train(cfg, "simple-ff", data, epochs=2, device="cpu", progress=False, seed=5)
    b = train(cfg, "simple-ff", data, epochs=2, device="cpu", progress=False, seed=5)
    c = train(cfg, "simple-ff", data, epochs=2, device="cpu", progress=False, seed=6)
    assert a["crps"] == b["crps"] and a["crps"] != c["crps"]


def test_train_rejects_inconsistent_input():
    data = synthetic_for(BASE, seed=0)
    with pytest.raises(ValueError, match="budget"):
        train(BASE, "simple-ff", data, progress=False)
    with pytest.raises(ValueError, match="epsilon_of_steps"):
        train(BASE, "simple-ff", data, epsilon=1.0, progress=False)
    with pytest.raises(ValueError, match="--N 64"):
        train(BASE.with_(N=65), "simple-ff", data, epochs=1, progress=False)
    with pytest.raises(ValueError, match="--L 120"):
        train(BASE.with_(L=121), "simple-ff", data, epochs=1, progress=False)


SMALL = ["--N", "8", "--L", "40", "--batch-size", "4", "--context-length", "48", "--forecast-length", "24",
         "--device", "cpu"]


def tsdp(capsys, *argv):
    from tsdp.cli.main import main

    code = main(["train", *SMALL, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_train_command_json_and_human(capsys, tmp_path):
    code, out, _ = tsdp(capsys, "--epochs", "1", "--json", "--model", "dlinear")
    out = json.loads(out)
    assert code == 0 and out["model"] == "dlinear" and out["steps"] == 2 and out["epsilon"] is None
    code, out, _ = tsdp(capsys, "--epochs", "1")
    assert code == 0 and "seasonal naive" in out
    csv = tmp_path / "d.csv"
    csv.write_text("a,b\n" + "\n".join(f"{i},{i}" for i in range(70)) + "\n")
    code, out, err = tsdp(capsys, "--data", str(csv), "--epochs", "1", "--json")
    assert code == 2 and "--N 2" in err and "Traceback" not in err
    code, _, err = tsdp(capsys, "--epsilon", "1")
    assert code == 2 and "--delta" in err


def test_train_command_with_the_real_accountant(capsys):
    """`tsdp train --epsilon 8 --delta 1e-5`: the sound accountant of verify.accounting stops
    the run at the last step whose ε ≤ 8; the reported ε is that accountant's value."""
    from tsdp.verify.accounting import epsilon_of_steps

    code, out, _ = tsdp(capsys, "--epsilon", "8", "--delta", "1e-5", "--epochs", "3", "--sigma", "2", "--json",
                        "--model", "dlinear")
    out = json.loads(out)
    eps = epsilon_of_steps(BASE.with_(N=8, L=40, batch_size=4, sigma=2.0), 1e-5)
    # the budget, not the 3 epochs (6 steps), stops it: the most steps with ε ≤ 8
    assert code == 0 and 0 < out["steps"] < 6 and eps(out["steps"]) <= 8 < eps(out["steps"] + 1)
    assert out["epsilon"] == pytest.approx(eps(out["steps"]), rel=1e-9)  # FFT rounding: composed in another order
    code, _, err = tsdp(capsys, "--epsilon", "1", "--delta", "1e-5", "--sigma", "2")
    assert code == 2 and "spent before the first step" in err
