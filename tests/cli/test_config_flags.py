"""The training-configuration flags come from one table (tsdp.cli.config_args.CONFIG_FLAGS): every field of
TrainingConfig has its row, and the flags reproduce any configuration."""
import argparse
from dataclasses import fields

import pytest

from tsdp.cli.config_args import CONFIG_FLAGS, add_config_arguments, config_from_args
from tsdp.theorems.config import DEFAULT_CONFIG, ConfigError, TrainingConfig


def _parser():
    parser = argparse.ArgumentParser(prog="tsdp-test")
    add_config_arguments(parser)
    return parser


def test_every_field_has_a_flag():
    names = [flag.field for flag in CONFIG_FLAGS]
    assert len(names) == len(set(names))
    assert set(names) == {f.name for f in fields(TrainingConfig)}


def test_no_flags_give_the_default_configuration():
    assert config_from_args(_parser().parse_args([])) == DEFAULT_CONFIG


@pytest.mark.parametrize("config", [
    TrainingConfig(N=50, lengths=(12, 15, 12), context_length=2, forecast_length=3, batch_size=8, instances=2,
                   sigma=1.5, top="poisson", bottom="poisson", relation="user", w=2, v=0.5),
    TrainingConfig(N=40, L=30, context_length=0, batch_size=4, sigma=0.75, top="shuffle", relation="event", w=3,
                   sigma_context=0.25, sigma_forecast=0.25),
    TrainingConfig(N=41, batch_size=4, top="shuffle", drop_last=True),
])
def test_the_flags_reproduce_a_configuration(config):
    argv = []
    for flag in CONFIG_FLAGS:
        value = getattr(config, flag.field)
        if flag.field == "L" and config.lengths is not None:
            continue  # derived from --lengths
        if isinstance(value, bool):
            argv += [flag.flag] if value else []
        elif value is not None:
            argv += [flag.flag, *map(str, value if isinstance(value, tuple) else (value,))]
    assert config_from_args(_parser().parse_args(argv)) == config


def test_an_option_flag_offers_the_allowed_values():
    parser = _parser()
    choices = {action.dest: action.choices for action in parser._actions if action.choices}
    assert choices == {"top": ("deterministic", "shuffle", "wor", "poisson", "pooled"), "bottom": ("wr", "poisson"),
                       "relation": ("event", "user")}
    with pytest.raises(ConfigError, match="invalid L: must be the shortest of lengths"):
        config_from_args(parser.parse_args(["--lengths", "12", "15", "--L", "15"]))


def test_drop_last_is_a_switch_for_shuffled_iteration_only():
    """--drop-last takes no value; with a top level other than shuffle it is one error naming it."""
    parser = _parser()
    assert config_from_args(parser.parse_args(["--top", "shuffle", "--N", "41", "--batch-size", "4",
                                               "--drop-last"])).steps_per_epoch == 10
    with pytest.raises(SystemExit):
        parser.parse_args(["--drop-last", "yes"])
    for top in ("deterministic", "wor", "poisson", "pooled"):
        with pytest.raises(ConfigError, match="drop_last"):
            config_from_args(parser.parse_args(["--top", top, "--drop-last"]))
