"""The accountant's three settings are one object (PldSettings) with the library's defaults, and an accounting
resolves its run once: the same answers as an accountant that resolves on its own."""
import inspect
import math

import pytest
from dp_accounting.pld import privacy_loss_distribution as library

import tsdp.theorems.registry as registry
from tsdp.theorems.config import ConfigError, TrainingConfig
from tsdp.verify.accountant import PldAccountant
from tsdp.verify.accounting import epsilon
from tsdp.verify.events import training_event
from tsdp.verify.pld import PldSettings


def _default(function, name):
    return inspect.signature(function).parameters[name].default


def test_the_defaults_are_the_library_defaults():
    settings = PldSettings()
    assert settings.discretization == _default(library.from_gaussian_mechanism, "value_discretization_interval")
    assert settings.log_mass_truncation_bound == _default(library.from_gaussian_mechanism, "log_mass_truncation_bound")
    assert settings.tail_mass_truncation == _default(library.PrivacyLossDistribution.compose, "tail_mass_truncation")
    assert PldAccountant().settings == settings


@pytest.mark.parametrize("changes,name", [
    ({"discretization": 0.0}, "discretization"), ({"discretization": 1.5}, "discretization"),
    ({"discretization": math.nan}, "discretization"), ({"discretization": "0.1"}, "discretization"),
    ({"tail_mass_truncation": -1e-9}, "tail_mass_truncation"), ({"tail_mass_truncation": 1.0}, "tail_mass_truncation"),
])
def test_a_setting_out_of_range_is_named(changes, name):
    with pytest.raises(ConfigError) as info:
        PldSettings(**changes)
    assert info.value.parameter == name
    with pytest.raises(ConfigError) as info:  # the accountant's keywords are the same settings
        PldAccountant(**changes)
    assert info.value.parameter == name


def test_an_accountant_with_settings_equals_one_with_keywords():
    settings = PldSettings(discretization=1e-2, tail_mass_truncation=1e-12, log_mass_truncation_bound=-40)
    assert settings.log_mass_truncation_bound == -40.0 and type(settings.log_mass_truncation_bound) is float
    event = training_event(TrainingConfig(), steps=50)
    by_object = PldAccountant.with_settings("sound", settings).compose(event)
    by_keywords = PldAccountant("sound", **settings.as_dict()).compose(event)
    assert by_object.settings == by_keywords.settings == settings
    assert by_object.discretization == 1e-2 and by_object.tail_mass_truncation == 1e-12
    assert by_object.get_epsilon(1e-5) == by_keywords.get_epsilon(1e-5)


@pytest.mark.parametrize("top,steps", [("wor", 100), ("shuffle", 15)])  # shuffle: one epoch and a partial one
def test_an_accounting_resolves_its_run_once(monkeypatch, top, steps):
    config = TrainingConfig(top=top)
    calls = []
    original = registry.resolve

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(registry, "resolve", counted)
    result = epsilon(config, 1e-5, steps=steps, discretization=1e-2)
    assert len(calls) == 1
    for estimate, value in (("sound", result.epsilon), ("attained", result.epsilon_attained)):
        alone = PldAccountant(estimate, discretization=1e-2).compose(training_event(config, steps=steps))
        assert alone.get_epsilon(1e-5) == value  # the accountant that resolved on its own agrees
    assert len(calls) > 1
