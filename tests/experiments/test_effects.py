"""The two-way analysis of variance and its power (tsdp.experiments.effects): F and p against statsmodels' OLS ANOVA,
power against the rejection rate of the test itself on simulated designs with the effect it is computed for."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tsdp.experiments.effects import POWER, power_of, two_way_anova


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(st.integers(2, 4), st.integers(2, 5), st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_f_and_p_match_statsmodels(a, b, n, seed):
    """F and p of both factors equal statsmodels' type-II ANOVA of the model with interaction (balanced designs)."""
    pytest.importorskip("statsmodels")
    import pandas as pd
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(a, b, n)) + rng.normal(size=(a, 1, 1))
    ta, tb = two_way_anova(x, ("A", "B"), (range(a), range(b)), alpha=0.05, effect=0.5)
    i, j, _ = np.indices(x.shape)
    frame = pd.DataFrame({"y": x.ravel(), "A": i.ravel(), "B": j.ravel()})
    table = sm.stats.anova_lm(ols("y ~ C(A) * C(B)", frame).fit(), typ=2)
    for t, row in ((ta, "C(A)"), (tb, "C(B)")):
        assert t.f == pytest.approx(table.loc[row, "F"], rel=1e-9)
        assert t.p_value == pytest.approx(table.loc[row, "PR(>F)"], rel=1e-7, abs=1e-14)
        assert t.df == table.loc[row, "df"] and t.df_error == table.loc["Residual", "df"]


@pytest.mark.slow
def test_power_is_the_tests_rejection_rate():
    """On 2000 simulated 3 x 4 x 3 designs (σ = 1) where two levels of factor A differ by Δ = 1.2, the F-test of A at
    α = 0.05 rejects at the rate power_of predicts with σ known (noncentrality n·b·Δ²/2): a binomial 99.99% band
    (false-failure rate 1e-4, seed fixed)."""
    from scipy.stats import binom

    rng = np.random.default_rng(7)
    a, b, n, delta, trials = 3, 4, 3, 1.2, 2000
    shift = np.array([-delta / 2, 0.0, delta / 2])[:, None, None]
    rejected = sum(two_way_anova(rng.normal(size=(a, b, n)) + shift, ("A", "B"), (range(a), range(b)), alpha=0.05,
                                 effect=delta)[0].significant for _ in range(trials))
    expected = power_of(a - 1, a * b * (n - 1), n * b * delta ** 2 / 2, 0.05)
    lo, hi = binom.ppf(5e-5, trials, expected), binom.isf(5e-5, trials, expected)
    assert 0.3 < expected < 0.95 and lo <= rejected <= hi


def test_detectable_effect_has_the_stated_power():
    """The detectable Δ of a test is the effect at which its own power (σ = the design's error mean square) is POWER,
    and the power against the stated effect grows with it."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(3, 4, 2))
    ta, _ = two_way_anova(x, ("A", "B"), (range(3), range(4)), alpha=0.025, effect=0.1)
    ms_error = ((x - x.mean(axis=2, keepdims=True)) ** 2).sum() / (3 * 4 * 1)
    assert power_of(2, 12, 2 * 4 * ta.detectable ** 2 / (2 * ms_error), 0.025) == pytest.approx(POWER, abs=1e-9)
    tb, _ = two_way_anova(x, ("A", "B"), (range(3), range(4)), alpha=0.025, effect=ta.detectable)
    assert tb.power == pytest.approx(POWER, abs=1e-9) and ta.power < POWER


@pytest.mark.parametrize("shape", [(3, 4, 1), (1, 4, 3), (3, 1, 3)])
def test_refuses_designs_it_cannot_test(shape):
    with pytest.raises(ValueError, match="replicates"):
        two_way_anova(np.ones(shape), ("A", "B"), (range(shape[0]), range(shape[1])), alpha=0.05, effect=1.0)
    with pytest.raises(ValueError, match="no error variance"):
        two_way_anova(np.ones((2, 2, 2)), ("A", "B"), (range(2), range(2)), alpha=0.05, effect=1.0)
