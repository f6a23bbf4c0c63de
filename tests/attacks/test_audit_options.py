"""The Monte Carlo audit's options (TrialPlan, Statistic, Confidence): checked when made, each bad value one
ConfigError naming the keyword the CLI maps to its flag; values normalised (numpy integers, lists, strings); frozen."""
import dataclasses
import math

import numpy as np
import pytest

from tsdp.attacks.montecarlo.options import (DEFAULT_ALPHAS, DEFAULT_SHARD_SIZE, MAX_SHARDS, Confidence, Statistic,
                                             Threshold, TrialPlan)
from tsdp.theorems.config import SEED_MAX, ConfigError
from tsdp.verify.cpus import available_cpus


@pytest.mark.parametrize("fields,named", [
    ({"trials": 19}, "trials"), ({"trials": 0}, "trials"), ({"trials": 20.0}, "trials"), ({"trials": True}, "trials"),
    ({"trials": "100"}, "trials"),
    ({"shard_size": 0}, "shard_size"), ({"shard_size": 1.5}, "shard_size"),
    ({"trials": MAX_SHARDS * 2 + 1, "shard_size": 2}, "trials"),  # one shard too many
    ({"seed": -1}, "seed"), ({"seed": SEED_MAX + 1}, "seed"), ({"seed": 0.5}, "seed"),
    ({"workers": 0}, "workers"), ({"workers": 4 * available_cpus() + 1}, "workers"), ({"workers": True}, "workers"),
    ({"cluster": " "}, "cluster"), ({"cluster": "host:0"}, "cluster"), ({"cluster": "udp://host:80"}, "cluster"),
    ({"device": 0}, "device"), ({"device": None}, "device"),
])
def test_a_bad_trial_plan_names_its_field(fields, named):
    with pytest.raises(ConfigError) as error:
        TrialPlan(**{"trials": 100, **fields})
    assert error.value.parameter == named


def test_a_trial_plan_keeps_its_values_as_python_integers():
    plan = TrialPlan(np.int64(100), seed=np.int32(3), shard_size=np.int64(50), workers=np.int64(1),
                     cluster="tcp://127.0.0.1:8786", device="cpu")
    assert (plan.trials, plan.seed, plan.shard_size, plan.workers) == (100, 3, 50, 1)
    assert all(type(v) is int for v in (plan.trials, plan.seed, plan.shard_size, plan.workers))
    assert TrialPlan(20).shard_size == DEFAULT_SHARD_SIZE and TrialPlan(MAX_SHARDS * 2, shard_size=2).trials > 0


@pytest.mark.parametrize("fields,named", [
    ({"threshold": "median"}, "threshold"), ({"threshold": None}, "threshold"),
    ({"select_fraction": 0}, "select_fraction"), ({"select_fraction": 1}, "select_fraction"),
    ({"select_fraction": math.nan}, "select_fraction"), ({"select_fraction": "0.5"}, "select_fraction"),
    ({"alphas": [0.5]}, "alphas"), ({"alphas": []}, "alphas"), ({"alphas": [1.0, math.inf]}, "alphas"),
    ({"alphas": [math.nan]}, "alphas"), ({"alphas": "2"}, "alphas"), ({"alphas": 2.0}, "alphas"),
    ({"alphas": [True]}, "alphas"),
])
def test_a_bad_statistic_names_its_field(fields, named):
    with pytest.raises(ConfigError) as error:
        Statistic(**fields)
    assert error.value.parameter == named


def test_a_statistic_normalises_its_threshold_and_grid():
    statistic = Statistic("split", 0.2, [1, np.float64(2.5)])
    assert statistic.threshold is Threshold.SPLIT and statistic.threshold == "split"
    assert statistic.alphas == (1.0, 2.5) and all(type(a) is float for a in statistic.alphas)
    assert Statistic().alphas == DEFAULT_ALPHAS and Statistic().threshold == "theory"


@pytest.mark.parametrize("fields,named", [
    ({"level": 0}, "confidence"), ({"level": 1}, "confidence"), ({"level": math.nan}, "confidence"),
    ({"level": -0.5}, "confidence"), ({"level": "0.95"}, "confidence"), ({"sequential": "yes"}, "sequential"),
    ({"sequential": 1}, "sequential"),
])
def test_a_bad_confidence_names_its_field(fields, named):
    with pytest.raises(ConfigError) as error:
        Confidence(**fields)
    assert error.value.parameter == named


@pytest.mark.parametrize("level", [0.5, 0.2, 0.01])
def test_a_confidence_at_which_the_verdict_holds_at_no_confidence_is_refused(level):
    """The verdict (violation test or estimate above the sound ε) holds at 1 - 2 (1 - level), 0 at level ≤ 0.5: such a
    level is refused. Before, `tsdp audit --confidence 0.2` of the correct T6 loop (N = 16, Λ = 4, L = 6, σ = 1,
    20000 trials, δ = 1e-3) printed PRIVACY VIOLATION (certified 4.11 against the sound 3.40) and exited 1."""
    from tsdp.attacks.montecarlo.verdict import verdict_confidence

    assert verdict_confidence(level) == 0.0
    with pytest.raises(ConfigError) as error:
        Confidence(level)
    assert error.value.parameter == "confidence" and "0.5" in str(error.value)
    assert verdict_confidence(Confidence(0.51).level) > 0


def test_tsdp_audit_refuses_a_confidence_of_no_verdict_in_one_line():
    from tsdp.cli.main import main
    import contextlib, io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["audit", "--trials", "100", "--delta", "1e-5", "--confidence", "0.2"])
    lines = [x for x in err.getvalue().splitlines() if ": error: " in x]
    assert code == 2 and len(lines) == 1 and "invalid --confidence" in lines[0], err.getvalue()


@pytest.mark.parametrize("options,field", [(TrialPlan(100), "trials"), (Statistic(), "threshold"),
                                           (Confidence(0.99), "level")])
def test_options_are_frozen(options, field):
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(options, field, getattr(options, field))
