"""`train`'s options: each refuses a bad value when built, naming the field, and keeps a good one in its checked form;
the grouped runs plan with the options `train` gets, refused as `train` refuses them; no public function of the loop's modules takes more than
10 parameters."""
import importlib
import inspect
import math

import pytest

from tsdp.datasets.series import synthetic_for
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.training.captured import StepPath
from tsdp.training.options import LR_MAX, Budget, Checkpoints, Evaluation, Loop, Optimizer
from tsdp.training.plan import plan_training
from tsdp.training.together import GroupSettings, _Budget

TINY = TrainingConfig(N=8, L=20, context_length=4, forecast_length=2, batch_size=4, instances=1, sigma=2.0)


@pytest.mark.parametrize("kwargs,field", [
    ({}, "epsilon"),
    ({"epochs": 1, "steps": 2, "delta": 1e-5}, "steps"),
    ({"steps": 0, "delta": 1e-5}, "steps"),
    ({"steps": -3, "delta": 1e-5}, "steps"),
    ({"steps": 1.5, "delta": 1e-5}, "steps"),
    ({"steps": True, "delta": 1e-5}, "steps"),
    ({"steps": 2**60, "delta": 1e-5}, "steps"),
    # epochs were unchecked: 0 trained no step, ε budget with -3 epochs trained 1 step, True one epoch
    ({"epochs": 0, "delta": 1e-5}, "epochs"),
    ({"epsilon": 5.0, "epochs": -3, "delta": 1e-5}, "epochs"),
    ({"epochs": 2.5, "delta": 1e-5}, "epochs"),
    ({"epochs": True, "delta": 1e-5}, "epochs"),
    ({"epsilon": 1.0, "private": False}, "epsilon"),
    ({"epochs": 1}, "delta"),
    ({"epochs": 1, "delta": 0.0}, "delta"),
    ({"epochs": 1, "delta": 1.0}, "delta"),
    ({"epochs": 1, "delta": math.nan}, "delta"),
    ({"epochs": 1, "delta": -1e-5}, "delta"),
    ({"epochs": 1, "delta": 1e-5, "warmup_steps": -1}, "warmup_steps"),
    ({"epochs": 1, "delta": 1e-5, "warmup_steps": 2.5}, "warmup_steps"),
    ({"epochs": 1, "delta": 1e-5, "warmup_steps": 3}, "warmup_sigma"),
    ({"epochs": 1, "private": False, "warmup_steps": 3, "warmup_sigma": 4.0}, "warmup_sigma"),
])
def test_a_budget_refuses_bad_values_naming_them(kwargs, field):
    with pytest.raises(ConfigError) as err:
        Budget(**kwargs)
    assert err.value.parameter == field


@pytest.mark.parametrize("kwargs,field", [
    ({"clip": 0.0}, "clip"), ({"clip": -1.0}, "clip"), ({"clip": math.nan}, "clip"), ({"clip": math.inf}, "clip"),
    ({"lr": 0.0}, "lr"), ({"lr": -1e-3}, "lr"), ({"lr": 2 * LR_MAX}, "lr"), ({"lr": math.nan}, "lr"),
    ({"weight_decay": -1e-9}, "weight_decay"), ({"weight_decay": math.inf}, "weight_decay"),
    ({"weight_decay": 2 * LR_MAX}, "weight_decay"),
    ({"optimizer": "adamw"}, "optimizer"), ({"optimizer": None}, "optimizer"),
    ({"step_path": "fast"}, "step_path"), ({"step_path": None}, "step_path"),
])
def test_a_loop_refuses_bad_values_naming_them(kwargs, field):
    with pytest.raises(ConfigError) as err:
        Loop(**kwargs)
    assert err.value.parameter == field


@pytest.mark.parametrize("option,kwargs,field", [
    (Evaluation, {"season": 0}, "season"), (Evaluation, {"season": 2.5}, "season"),
    (Evaluation, {"n_samples": 0}, "n_samples"), (Evaluation, {"n_samples": -4}, "n_samples"),
    (Checkpoints, {"validate_every": 0}, "validate_every"), (Checkpoints, {"validate_every": 1.5}, "validate_every"),
])
def test_evaluation_and_checkpoints_refuse_bad_counts(option, kwargs, field):
    with pytest.raises(ConfigError) as err:
        option(**kwargs)
    assert err.value.parameter == field


def test_options_keep_their_checked_form():
    """Strings at the edges, enums inside; extremes of the ranges accepted; lags a tuple (the options are frozen)."""
    loop = Loop(optimizer="sgd", step_path="fixed", lr=LR_MAX, weight_decay=0, lags=[1, 2])
    assert loop.optimizer is Optimizer.SGD and loop.optimizer == "sgd" and loop.step_path is StepPath.FIXED
    assert loop.lr == LR_MAX and loop.weight_decay == 0 and loop.lags == (1, 2)
    budget = Budget(steps=2**53, delta=1e-300)
    assert budget.steps == 2**53 and budget.delta == 1e-300
    assert Budget(epochs=1, private=False).delta is None  # no δ without privacy
    with pytest.raises(AttributeError):
        loop.lr = 1.0


@pytest.mark.parametrize("fields,parameter", [
    ({"optimizer": "adamw", "epochs": 1, "delta": 1e-5}, "optimizer"),
    ({"lr": 0.0, "epochs": 1, "delta": 1e-5}, "lr"),
    ({"epochs": 1}, "delta"),
])
def test_the_runs_trained_together_are_refused_what_train_refuses(fields, parameter):
    """The runs trained together plan with the `Budget` and `Loop` their settings give `train`: refused as they are."""
    with pytest.raises(ConfigError) as err:
        _Budget(TINY, None, GroupSettings("dlinear", synthetic_for(TINY, seed=0), **fields))
    assert err.value.parameter == parameter


def test_the_runs_trained_together_plan_as_train_plans():
    data = synthetic_for(TINY, seed=0)
    settings = GroupSettings("dlinear", data, delta=1e-5, epochs=3, clip=0.5, lr=1e-2, discretization=1e-3)
    a = _Budget(TINY, 4.0, settings).plan
    b = plan_training(TINY, data, Budget(epsilon=4.0, delta=1e-5, epochs=3, discretization=1e-3),
                      Loop(clip=0.5, lr=1e-2))
    assert (a.total_steps, a.bound_id, a.clip, a.lr, a.delta) == (b.total_steps, b.bound_id, 0.5, 1e-2, 1e-5)
    assert 0 < a.total_steps <= 3 * a.sampler.steps_per_epoch


LOOP_MODULES = ("train", "options", "plan", "loop", "evaluation", "checkpoints", "run_checks", "result", "samplers",
                "windows", "metrics", "batch_sampler")
"""train and the modules it is made of, and the samplers and windows it draws with."""


def _public_functions():
    for name in LOOP_MODULES:
        module = importlib.import_module(f"tsdp.training.{name}")
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj) and not hasattr(obj, "__dataclass_fields__"):  # a record's fields are data
                for method_name, method in vars(obj).items():
                    if inspect.isfunction(method) and (not method_name.startswith("_") or method_name == "__init__"):
                        yield f"{module.__name__}.{name}.{method_name}", method


def test_no_public_function_of_the_loop_takes_more_than_10_parameters():
    counts = {name: len([p for p in inspect.signature(fn).parameters if p not in ("self", "cls")])
              for name, fn in _public_functions()}
    assert "tsdp.training.train.train" in counts and counts["tsdp.training.train.train"] <= 10
    over = {name: n for name, n in counts.items() if n > 10}
    assert over == {}
