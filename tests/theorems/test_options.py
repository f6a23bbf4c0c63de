"""The options of a configuration are enums inside and strings at the edges (DESIGN.md "Options"): a string is
normalised to its member, a bad one is one ConfigError naming the field and the values allowed, and a member
reads, compares, hashes, pickles and JSON-encodes as its string."""
import json
import pickle

import pytest

from tsdp.theorems.config import Bottom, Choice, ConfigError, Relation, Top, TrainingConfig
from tsdp.verify.accountant import Estimate, PldAccountant

ALLOWED = {  # written out here, not read from the enums: a renamed or dropped value fails
    "top": (Top, "deterministic, shuffle, wor, poisson, pooled"),
    "bottom": (Bottom, "wr, poisson"),
    "relation": (Relation, "event, user"),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_every_allowed_string_becomes_its_member(name):
    enum, allowed = ALLOWED[name]
    for text in allowed.split(", "):
        config = TrainingConfig(**{name: text})
        value = getattr(config, name)
        assert type(value) is enum and value.value == text and value == text and hash(value) == hash(text)
        assert {text: 1}[value] == 1  # a member finds its string's dict entry
        assert f"{value}" == str(value) == "%s" % value == text
        assert type(config.as_dict()[name]) is str and config.as_dict()[name] == text
        assert pickle.loads(pickle.dumps(config)) == config
        assert getattr(TrainingConfig(**{name: value}), name) is value  # a member is accepted as itself


@pytest.mark.parametrize("name", sorted(ALLOWED))
@pytest.mark.parametrize("bad", ["bogus", "WOR", "", 3, None])
def test_a_bad_option_names_the_field_and_the_values_allowed(name, bad):
    with pytest.raises(ConfigError) as info:
        TrainingConfig(**{name: bad})
    assert info.value.parameter == name
    shown = "" if bad is None else f" (got {bad!r})"
    assert str(info.value) == f"invalid {name}: must be one of {ALLOWED[name][1]}{shown}"


def test_a_member_of_another_option_is_taken_by_its_value_only_where_allowed():
    assert TrainingConfig(top=Bottom.POISSON).top is Top.POISSON
    with pytest.raises(ConfigError, match="invalid top: must be one of"):
        TrainingConfig(top=Bottom.WR)


def test_repr_and_json_show_plain_strings():
    config = TrainingConfig(top="shuffle", bottom="poisson", relation="user", w=1)
    assert "top='shuffle', bottom='poisson', relation='user'," in repr(config)
    assert repr(Top.SHUFFLE) == "'shuffle'"
    text = json.dumps(config.as_dict())
    assert '"top": "shuffle", "bottom": "poisson", "relation": "user"' in text
    assert json.dumps({"top": config.top}) == '{"top": "shuffle"}'  # a member in a dict of its own, too


def test_epoch_scope_of_the_top_levels():
    assert [t.value for t in Top if t.epoch_scoped] == ["deterministic", "shuffle"]
    assert TrainingConfig(top="shuffle").compositions_per_epoch == 1
    assert TrainingConfig(top="wor").compositions_per_epoch == 10  # floor(N λ / Λ) = 320 / 32


def test_estimate_is_an_option_too():
    assert issubclass(Estimate, Choice)
    assert Estimate.values() == ("sound", "attained", "attained_upper")
    assert PldAccountant("attained").estimate is Estimate.ATTAINED
    assert PldAccountant().estimate == "sound"
    with pytest.raises(ConfigError) as info:
        PldAccountant("upper")
    assert info.value.parameter == "estimate"
    assert str(info.value) == "invalid estimate: must be one of sound, attained, attained_upper (got 'upper')"
