"""The one table of constructions (tsdp.theorems.constructions) agrees with the bounds' own fields."""
from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.theorems.constructions import CONSTRUCTIONS
from tsdp.theorems.registry import REGISTRY, attained_pair, get


def test_the_table_and_the_bounds_agree():
    for c in CONSTRUCTIONS.values():
        assert c.audited in REGISTRY and c.sound in REGISTRY and c.attained in REGISTRY
        assert get(c.sound).kind in ("tight", "upper")  # the sound claim is never a lower bound
        assert c.top in get(c.sound).scheme.top and c.bottom in get(c.sound).scheme.bottom
        if c.same_relation:
            assert get(c.sound).construction == c.attained, c  # the accountant's attained pair is the audit's
        assert get(c.attained).construction == c.attained  # the attained bound is its own construction


def test_every_sound_bound_with_a_construction_is_audited():
    """Each tight or upper training bound with a construction is the sound claim of an audited row
    (T12 has no construction)."""
    sound_ids = {c.sound for c in CONSTRUCTIONS.values()}
    for b in REGISTRY.values():
        if b.kind in ("tight", "upper") and b.scope in ("step", "epoch") and b.construction is not None:
            assert b.id in sound_ids, b.id
    assert attained_pair(get("T11"), DEFAULT_CONFIG.with_(sigma_context=1.0, sigma_forecast=1.0)) is not None
