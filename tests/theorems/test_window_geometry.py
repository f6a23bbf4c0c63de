"""The configuration's window counts against a brute-force enumeration of the windows (Algorithm 4's geometry).

Every series of length L_n is front-padded with L_C zeros and has T_n = L_n - L_F + 1 windows; window t covers the
original elements t - L_C + 1, ..., t (context) and t + 1, ..., t + L_F (forecast), 1-based. For every element (or
w consecutive elements, w-event) of every series the enumeration counts the windows that hold it, and as context or
as forecast. A bound is sound only if its parameters dominate every series' own:
* WR bottom level: r ≥ n / T_n for every series (Binom(λ, r) is increasing in r);
* Poisson bottom level: Binom(k, q) dominates Binom(n, q_n), i.e. k ≥ n and q ≥ q_n = min(1, λ / T_n);
* T11 (Thm G.1): ρ r (φ τ_F + (1 - φ) τ_C) ≥ ρ (n_F τ_F + n_C τ_C) / T_n at every corner of τ ∈ [0, 1]² (the weight
  is linear in τ), or T11 refuses the configuration.
"""
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsdp.theorems.bounds.base import TheoremError
from tsdp.theorems.config import TrainingConfig
from tsdp.theorems.registry import get, select_bound


def element_windows(context: int, forecast: int, length: int, first: int, w: int = 1):
    """(windows holding any of elements first..first+w-1, as forecast, as context) of one series, by enumeration."""
    starts = length - forecast + 1
    held = fc = cx = 0
    for t in range(starts):
        in_context = any(t - context + 1 <= j <= t for j in range(first, first + w))
        in_forecast = any(t + 1 <= j <= t + forecast for j in range(first, first + w))
        held += in_context or in_forecast
        fc += in_forecast
        cx += in_context
    return held, fc, cx


def worst_counts(context: int, forecast: int, lengths, w: int = 1):
    """Per series length: (T_n, the most windows holding a w-event)."""
    out = []
    for length in lengths:
        most = max(element_windows(context, forecast, length, j, w)[0] for j in range(1, length - w + 2))
        out.append((length - forecast + 1, most))
    return out


@st.composite
def geometries(draw):
    forecast = draw(st.integers(1, 4))
    context = draw(st.integers(0, 5))
    w = draw(st.integers(1, 3))
    lengths = draw(st.lists(st.integers(max(forecast, w), 14), min_size=1, max_size=4))
    return context, forecast, w, tuple(lengths)


@settings(max_examples=200, deadline=None)
@given(geometries(), st.integers(1, 3))
def test_rates_dominate_every_series_windows(geometry, instances):
    """r (WR) and (k, q) (Poisson) dominate every series' own rates, whichever series holds the changed event."""
    context, forecast, w, lengths = geometry
    config = TrainingConfig(N=len(lengths), lengths=lengths, context_length=context, forecast_length=forecast, w=w,
                            batch_size=instances, instances=instances)
    for starts, held in worst_counts(context, forecast, lengths, w):
        assert config.r >= Fraction(held, starts), (lengths, starts, held, config.r)
        assert config.k >= held, (lengths, starts, held, config.k)
        assert config.q >= min(Fraction(1), Fraction(instances, starts))


def test_poisson_bottom_level_is_accounted_at_the_longest_series_windows():
    """99 series of length 2 and one of length 3 (L_C = 2, L_F = 1): the long series' elements lie in 3 windows, each
    kept with q = 1/3, so Binom(3, 1/3) must be dominated; the shortest series alone gave k = 2, q = 1/2 and T4's
    sound ε(1e-3) of one epoch at σ = 1 was 6.80 where the long series' own T4 gives 8.28."""
    from tsdp.verify.accounting import epsilon

    base = dict(N=100, batch_size=10, context_length=2, forecast_length=1, top="deterministic", bottom="poisson")
    mixed = TrainingConfig(lengths=(2,) * 99 + (3,), **base)
    long_only = TrainingConfig(L=3, **base)
    assert (mixed.k, mixed.q) == (3, Fraction(1, 2))
    sound = epsilon(mixed, 1e-3, epochs=1, estimates=("sound",), discretization=1e-3).epsilon
    reference = epsilon(long_only, 1e-3, epochs=1, estimates=("sound",), discretization=1e-3).epsilon
    assert sound >= reference > 8.0


def test_pooled_windows_are_no_record_level_bound_when_a_longer_series_holds_more_windows():
    """T13 covers one window per element; with a series of one window and one of three (L_C = L_F = 1), an element
    of the longer one lies in two windows: the pooled scheme has no sound bound there (it is refused)."""
    config = TrainingConfig(N=2, lengths=(1, 3), context_length=1, forecast_length=1, batch_size=1, top="pooled")
    assert config.k == 2
    with pytest.raises(TheoremError, match="pooled"):
        select_bound(config)


@pytest.mark.parametrize("context,forecast,length", [(c, f, n) for c in range(0, 6) for f in range(1, 5)
                                                     for n in range(f, 14)])
def test_augmentation_weight_dominates_every_element_or_is_refused(context, forecast, length):
    """T11's weight r (φ τ_F + (1 - φ) τ_C) against every element's (n_F τ_F + n_C τ_C) / T, at the corners of τ.

    Found short: L_C = 1, L_F = 2, L = 3 (T = 2 < L_C + L_F) with σ_C = 0 and σ_F large (label noise) gave the weight
    ρ/3 where the first element (in the forecast of one window and the context of the other) has ρ/2."""
    starts = length - forecast + 1
    counts = [element_windows(context, forecast, length, j)[1:] for j in range(1, length + 1)]
    for sigma_context, sigma_forecast, tau_c, tau_f in ((0.0, 1e6, 1, 0), (1e6, 0.0, 0, 1), (0.5, 0.5, None, None)):
        config = TrainingConfig(N=10, batch_size=1, L=length, context_length=context, forecast_length=forecast,
                                sigma_context=sigma_context, sigma_forecast=sigma_forecast)
        try:
            get("T11").check(config)
        except TheoremError:
            assert sigma_context != sigma_forecast and starts < context + forecast
            assert select_bound(config)[0].id == "T6"
            continue
        if tau_c is None:  # σ_C = σ_F: one τ for every window holding the element
            assert all(f + c <= config.k for f, c in counts)
            continue
        weight = config.r * (config.phi * tau_f + (1 - config.phi) * tau_c)
        worst = max(Fraction(f * tau_f + c * tau_c, starts) for f, c in counts)
        assert weight >= worst, (context, forecast, length, float(weight), float(worst))


def test_a_configuration_refuses_series_whose_elements_lie_in_more_windows_than_it_accounts():
    """A configuration of one length L = 2 (L_C = 2, L_F = 1: k = 2) with a series of length 3 (k = 3): refused for a
    Poisson bottom level (it reads k) naming ``lengths``; accepted for WR (r is largest at the shortest series), and
    with the series' lengths given."""
    from tsdp.theorems.config import ConfigError

    poisson = TrainingConfig(N=2, L=2, context_length=2, forecast_length=1, batch_size=1, bottom="poisson")
    with pytest.raises(ConfigError) as err:
        poisson.check_covers((2, 3))
    assert err.value.parameter == "lengths"
    poisson.with_(lengths=(2, 3)).check_covers((2, 3))
    poisson.with_(bottom="wr").check_covers((2, 3))
    with pytest.raises(ConfigError) as err:
        poisson.check_covers((1, 3))
    assert err.value.parameter == "L"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(2, 12), min_size=1, max_size=5), st.lists(st.integers(2, 12), min_size=1, max_size=5))
def test_pooled_windows_are_accounted_only_for_the_pool_the_sampler_draws_from(configured, data):
    """Pooled windows (L_F = 1, T_n = L_n): the configuration of ``configured`` lengths covers training series of
    ``data`` lengths (same count) exactly when its pool Σ T_n is theirs and none is shorter than its L; otherwise
    refused naming ``L`` (equal lengths with no ``lengths`` given) or ``lengths``."""
    from tsdp.theorems.config import ConfigError

    data = (data * len(configured))[:len(configured)]
    base = TrainingConfig(N=len(configured), L=min(configured), context_length=1, forecast_length=1, batch_size=1,
                          top="pooled")
    config = base if len(set(configured)) == 1 else base.with_(lengths=tuple(configured))
    covered = min(data) >= min(configured) and sum(data) == sum(configured)
    try:
        config.check_covers(data)
    except ConfigError as err:
        assert not covered, (configured, data, str(err))
        if min(data) < config.L:
            assert err.parameter == "L", str(err)
        else:
            plain = config.lengths is None and len(set(data)) == 1
            assert f"all {sum(data)} windows" in str(err) and err.parameter == ("L" if plain else "lengths"), str(err)
    else:
        assert covered, (configured, data)


def test_the_window_dataset_refuses_series_the_configuration_understates():
    """The Opacus adapter's dataset checks the same: a length-3 series under a configuration of length 2."""
    pytest.importorskip("torch")
    import numpy as np

    from tsdp.theorems.config import ConfigError
    from tsdp.training.batch_sampler import WindowDataset, fit_lengths

    config = TrainingConfig(N=2, L=2, context_length=2, forecast_length=1, batch_size=1, bottom="poisson")
    series = [np.ones(2), np.ones(3)]
    with pytest.raises(ConfigError, match="lengths"):
        WindowDataset(series, config)
    assert WindowDataset(series, fit_lengths(config, series)).config.k == 3


def test_the_attained_value_of_mixed_lengths_is_one_series_construction():
    """The attained (lower) estimate must be reached by a construction on one real series: with lengths 2 and 3 the
    tight T4 of each length alone bounds what any attack on the mixed data attains, so the mixed data's attained ε
    is at most the larger of the two (the sound pair Binom(3, 1/2) belongs to no series)."""
    from tsdp.verify.accounting import epsilon

    base = dict(N=100, batch_size=10, context_length=2, forecast_length=1, top="deterministic", bottom="poisson")
    mixed = TrainingConfig(lengths=(2,) * 99 + (3,), **base)
    alone = [epsilon(TrainingConfig(L=n, **base), 1e-3, epochs=1, discretization=1e-3).epsilon for n in (2, 3)]
    attained = epsilon(mixed, 1e-3, epochs=1, estimates=("attained",), discretization=1e-3).epsilon_attained
    assert attained <= max(alone), (attained, alone)


def test_pooled_windows_refuse_training_series_whose_pool_is_not_the_configuration_s():
    """T13 charges each step the pooled rate Λ / N_tot; the sampler draws Λ of the training series' own windows. A
    configuration whose lengths (20, 30, 30, 30) pool N_tot = 106 windows, trained on series of lengths (20, 20, 20,
    30) (86 windows, same shortest and longest series, so the same L and k), reported ε = 9.04 after 20 steps at
    σ = 1, δ = 1e-5 where the series' own pool gives 10.15: refused naming ``lengths``. A larger pool of the series
    (one length L counted as N T against longer series) is refused too: the accountant counts the sampler's pool
    exactly (steps per epoch floor(N_tot / Λ)); the same pool in another order, and other top levels, pass."""
    from tsdp.theorems.config import ConfigError

    claimed = TrainingConfig(N=4, lengths=(20, 30, 30, 30), context_length=4, forecast_length=2, batch_size=4,
                             top="pooled")
    assert (claimed.n_windows_total, claimed.with_(lengths=(20, 20, 20, 30)).n_windows_total) == (106, 86)
    with pytest.raises(ConfigError, match="106") as err:
        claimed.check_covers((20, 20, 20, 30))
    assert err.value.parameter == "lengths"
    claimed.check_covers((30, 30, 20, 30))  # the same pool, in another order
    claimed.with_(top="wor").check_covers((20, 20, 20, 30))
    one_length = TrainingConfig(N=4, L=20, context_length=4, forecast_length=2, batch_size=4, top="pooled")
    with pytest.raises(ConfigError, match="give --lengths 20 20 20 30") as err:
        one_length.check_covers((20, 20, 20, 30))
    assert err.value.parameter == "lengths"
    one_length.check_covers((20,) * 4)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 4), st.integers(1, 3), st.integers(1, 3), st.integers(1, 12), st.data())
def test_user_level_k_covers_the_windows_of_any_w_changed_elements(context, forecast, w, extra, data):
    """w-user level: any w elements of a series (not only consecutive ones) lie together in at most k = min(w (L_C +
    L_F), T) windows, by enumeration of Algorithm 4's windows; and some choice of w elements attains it whenever
    the series is long enough to hold them apart (the accountant's group size is the loop's, not more than needed)."""
    length = forecast + extra
    w = min(w, length)
    config = TrainingConfig(N=1, L=length, context_length=context, forecast_length=forecast, batch_size=1, w=w,
                            relation="user")
    starts = length - forecast + 1
    changed = data.draw(st.sets(st.integers(1, length), min_size=w, max_size=w))
    held = sum(any(t - context + 1 <= j <= t + forecast for j in changed) for t in range(starts))
    assert held <= config.k
    spread = range(forecast, forecast + w * (context + forecast), context + forecast)  # disjoint window ranges
    if spread[-1] + context - 1 <= starts - 1:
        most = sum(any(t - context + 1 <= j <= t + forecast for j in spread) for t in range(starts))
        assert most == config.k == w * (context + forecast)


def pooled_batch_counts(lengths, context: int, forecast: int, batch: int, series: int, first: int):
    """Pr[i windows holding element ``first`` of series ``series`` are in the batch], i = 0.., by enumerating every
    batch of ``batch`` windows drawn without replacement from the pool of all series' windows (Prop. C.1/C.2's
    sampler)."""
    from itertools import combinations

    pool = [(n, t) for n, length in enumerate(lengths) for t in range(length - forecast + 1)]
    marked = {(series, t) for t in range(lengths[series] - forecast + 1)
              if t - context + 1 <= first <= t + forecast}  # window t holds elements t - L_C + 1 .. t + L_F
    counts = {}
    batches = list(combinations(pool, batch))
    for chosen in batches:
        i = sum(window in marked for window in chosen)
        counts[i] = counts.get(i, 0) + 1
    return [Fraction(counts.get(i, 0), len(batches)) for i in range(max(counts) + 1)]


@pytest.mark.parametrize("theorem,context", [("T13", 0), ("T14", 1), ("T14", 2)])
def test_the_attained_pair_of_pooled_windows_draws_from_the_sampler_s_pool(theorem, context):
    """Pooled windows of series of lengths 3 and 5 (L_F = 1): the sampler draws Λ = 2 of all 3 + 5 = 8 windows, so the
    construction's weights are those of a batch of that pool, enumerated here (the element in the longest series,
    whose windows are the most). Built on the shortest series alone (2 series of length 3, a pool of 6), the attained
    pair of T13 charged the weight 1/3 for 2/8 and its attained ε exceeded the sound one (lengths 5 and 50, σ = 1,
    10 steps, δ = 1e-5: 18.15 attained against 7.41 sound)."""
    from tsdp.theorems.registry import attained_pair

    lengths = (3, 5)
    config = TrainingConfig(N=2, lengths=lengths, context_length=context, forecast_length=1, batch_size=2,
                            top="pooled")
    pair = attained_pair(get(theorem), config)
    expected = pooled_batch_counts(lengths, context, 1, 2, series=1, first=2)
    weights = [Fraction(int(w.p), int(w.q)) for _, w in sorted(zip(pair.P.means, pair.P.weights))]
    assert weights == expected, (weights, expected)


def test_the_attained_value_of_pooled_windows_stays_below_the_sound_one():
    """T13 (one window per element, L_C = 0) on pooled series of lengths 5 and 50: the attained (lower) ε is at most
    the sound (upper) ε; with the pair built on the shortest series it was 18.15 against 7.41."""
    from tsdp.verify.accounting import epsilon

    config = TrainingConfig(N=2, lengths=(5, 50), context_length=0, forecast_length=1, batch_size=2, top="pooled")
    result = epsilon(config, 1e-5, steps=10, discretization=1e-3)
    assert result.epsilon_attained <= result.epsilon, (result.epsilon_attained, result.epsilon)
