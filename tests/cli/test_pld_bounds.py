"""The PLD layer's size guards (verify/pld/) keep every estimate's direction.

* a grid too large for the memory ceiling is built at a coarser gap d·2^j: the sound
  (connect-the-dots) ε can only grow (a coarser chord of a convex profile lies above), the
  attained (privacy buckets) ε can only shrink;
* repeated squaring with coarsened operands, forced by a small ceiling, stays above the
  library's own ``self_compose`` for a pessimistic PLD and below it for an optimistic one;
* a profile that cannot be gridded at any gap is refused with the number of points needed;
* the vectorised ε reader agrees with the library's Python loop.
"""
import math
import warnings

import pytest

from tsdp.theorems.config import DEFAULT_CONFIG, ConfigError
from tsdp.theorems.registry import resolve
from tsdp.verify import pld
from tsdp.verify.pld import adapter

D = 2e-3  # coarse enough for the fast suite


@pytest.fixture(scope="module")
def t6():
    bound, _ = resolve(DEFAULT_CONFIG, None)
    return bound, DEFAULT_CONFIG


def test_coarser_grid_keeps_directions(t6):
    bound, config = t6
    fine_sound = pld.sound_pld(bound, config, pld.PldSettings(D))
    fine_att = pld.pair_pld(bound.pair(config), pld.PldSettings(D))
    small = 600 * 512  # bytes: at most 600 grid points, forces d = D * 2^j
    with pytest.warns(pld.PldCoarsenedWarning):
        coarse_sound = pld.sound_pld(bound, config, pld.PldSettings(D), memory_limit=small)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pld.PldCoarsenedWarning)
        coarse_att = pld.pair_pld(bound.pair(config), pld.PldSettings(D), memory_limit=small)
    assert pld.discretization_of(coarse_sound) > D and pld.discretization_of(coarse_att) > D
    for n in (1, 20):
        for delta in (1e-3, 1e-5, 1e-8):
            fs = pld.compose(fine_sound, n).get_epsilon_for_delta(delta)
            cs = pld.compose(coarse_sound, n).get_epsilon_for_delta(delta)
            fa = pld.compose(fine_att, n).get_epsilon_for_delta(delta)
            ca = pld.compose(coarse_att, n).get_epsilon_for_delta(delta)
            assert cs >= fs - 1e-9 and ca <= fa + 1e-9 and ca <= cs
            assert cs - fs < 0.5 * fs  # coarser, not meaningless


@pytest.mark.parametrize("n", [37, 1000])
def test_squaring_path_brackets_the_library(t6, n):
    bound, config = t6
    sound = pld.sound_pld(bound, config, pld.PldSettings(D))
    att = pld.pair_pld(bound.pair(config), pld.PldSettings(D))
    limit = 4000 * 96  # at most 4000-point convolutions: self_compose does not fit, squaring coarsens
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pld.PldCoarsenedWarning)
        sq_sound = pld.compose(sound, n, memory_limit=limit)
        sq_att = pld.compose(att, n, memory_limit=limit)
    assert max(p.size for p in adapter.pmfs(sq_sound) if p is not None) <= 4000
    lib_sound, lib_att = sound.self_compose(n), att.self_compose(n)
    for delta in (1e-3, 1e-5, 1e-8):
        ls, ss = lib_sound.get_epsilon_for_delta(delta), sq_sound.get_epsilon_for_delta(delta)
        la, sa = lib_att.get_epsilon_for_delta(delta), sq_att.get_epsilon_for_delta(delta)
        assert ss >= ls - 1e-6 * ls and sa <= la + 1e-6 * la
        assert ss <= 1.5 * ls


def test_huge_step_count_is_bounded_and_monotone(t6):
    """10^9 compositions: about 60 bounded convolutions, a finite ε above 10^6 compositions'."""
    bound, config = t6
    sound = pld.sound_pld(bound, config, pld.PldSettings(1e-2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pld.PldCoarsenedWarning)
        big = pld.compose(sound, 10**9)
        mid = pld.compose(sound, 10**6)
    assert max(p.size for p in adapter.pmfs(big) if p is not None) <= pld.MAX_SQUARING_POINTS
    e_big, e_mid = pld.epsilon_for_delta(big, 1e-5), pld.epsilon_for_delta(mid, 1e-5)
    assert math.isfinite(e_big) and e_big > e_mid > 0


def test_ungriddable_profile_is_refused_with_the_size(t6):
    bound, config = t6
    tiny = config.with_(sigma=1e-6)
    with pytest.raises(pld.PldTooLargeError) as info:
        pld.sound_pld(bound, tiny, pld.PldSettings(1e-4))
    assert info.value.parameter == "sigma" and info.value.points > info.value.max_points
    assert isinstance(info.value, ConfigError)


@pytest.mark.parametrize("text, expect", [("4G", 4 * 2**30), ("512MiB", 512 * 2**20), ("1000", 1000),
                                          (" 2g ", 2 * 2**30), ("abc", None), ("-1G", None), ("0", None)])
def test_memory_limit_environment(monkeypatch, text, expect):
    monkeypatch.setenv(pld.MEMORY_LIMIT_ENV, text)
    if expect is None:
        with pytest.raises(ConfigError, match=pld.MEMORY_LIMIT_ENV):
            pld.resolve_memory_limit()
    else:
        assert pld.resolve_memory_limit() == expect
    assert pld.resolve_memory_limit(123) == 123


def test_vectorised_epsilon_reader_matches_the_library(t6):
    bound, config = t6
    for sigma, n in ((1.0, 1), (1.0, 50), (0.5, 7), (3.0, 20)):
        c = config.with_(sigma=sigma)
        for one in (pld.sound_pld(bound, c, pld.PldSettings(D)), pld.pair_pld(bound.pair(c), pld.PldSettings(D))):
            composed = pld.compose(one, n)
            for delta in (0.5, 1e-2, 1e-5, 1e-10, 1e-14, 1e-16):
                lib = composed.get_epsilon_for_delta(delta)
                ours = pld.epsilon_for_delta(composed, delta)
                assert ours == lib or abs(ours - lib) <= 1e-12 * abs(lib), (sigma, n, delta, lib, ours)


def test_answers_name_the_grid_they_were_read_at(t6, monkeypatch, capsys):
    """A ceiling that forces coarsening: the accountant's answer carries the coarser gap it was read at (the gap of
    the PLD built directly at that ceiling), and `tsdp epsilon` says so; without the ceiling the gap asked for."""
    from tsdp.cli.main import main
    from tsdp.verify import accounting

    bound, config = t6
    small = 600 * 512
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pld.PldCoarsenedWarning)
        expected = pld.discretization_of(pld.sound_pld(bound, config, pld.PldSettings(D), memory_limit=small))
        monkeypatch.setenv("TSDP_MEMORY_LIMIT", str(small))
        coarse = accounting.epsilon(config, 1e-5, steps=1, discretization=D)
        assert main(["epsilon", "--delta", "1e-5", "--steps", "1", "--discretization", str(D)]) == 0
    assert coarse.discretization == D and coarse.discretization_used >= expected > D
    assert f"discretisation {coarse.discretization_used:g} (coarsened from {D:g}" in capsys.readouterr().out
    monkeypatch.delenv("TSDP_MEMORY_LIMIT")
    fine = accounting.epsilon(config, 1e-5, steps=1, discretization=D)
    assert fine.discretization_used == D and fine.epsilon <= coarse.epsilon
