"""Thresholds from theory (attacks.montecarlo.design) and the histogram statistics of the sharded auditor
(attacks.montecarlo.statistics): the statistic's law against closed forms and quadrature, the designed threshold against
the simulated ceiling, coverage of the fixed-threshold bound, counts against direct counting."""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from tsdp.attacks.montecarlo.design import design_test, histogram_edges
from tsdp.attacks.montecarlo.laws import statistic_law
from tsdp.attacks.montecarlo.statistics import (binned_goodness_of_fit, bin_counts, certified_test_epsilon, cp_lower, cp_upper,
                                        error_split,
                                        fixed_test_bound, log_likelihood_ratio, side_counts)

from update_trials import goodness_of_fit

W, SIGMA = 0.1, 1.0
T6 = (np.array([0.0, 2.0]), np.array([1 - W, W]), np.array([0.0]), np.array([1.0]), SIGMA)  # audit configuration
EPS_T6 = 3.71737  # its ε at δ = 1e-3 (the accountant's attained value, one step)


def _exact_tails(t):
    """P(L ≥ t), Q(L ≥ t) for the T6 pair: L = log(1 - w + w e^{(2y - 2)/σ²}) is increasing in y."""
    y = 1 + SIGMA ** 2 / 2 * np.log((np.exp(t) - (1 - W)) / W)
    return (1 - W) * stats.norm.sf(y / SIGMA) + W * stats.norm.sf((y - 2) / SIGMA), stats.norm.sf(y / SIGMA)


def test_one_step_law_matches_the_closed_form_tails():
    law = statistic_law(T6, 1, h=1e-3)
    tail_p, tail_q = law.tails()
    for t in (0.0, 1.0, 2.5, 4.0, 6.0):
        j = int(np.argmin(np.abs(law.thresholds - t)))
        tj = law.thresholds[j]
        exact_p, exact_q = _exact_tails(tj)
        # binning moves mass by at most h/2: the error is at most the exact mass within h of the threshold
        slack_p = np.subtract(*_exact_tails(tj - law.h)[:1], *_exact_tails(tj + law.h)[:1])
        slack_q = _exact_tails(tj - law.h)[1] - _exact_tails(tj + law.h)[1]
        assert abs(tail_p[j] - exact_p) <= slack_p + 1e-12
        assert abs(tail_q[j] - exact_q) <= slack_q + 1e-12


def test_composed_law_has_mean_steps_times_kl_and_is_a_likelihood_ratio():
    """After S steps E_P[L] = S KL(P||Q) (quadrature) and E_P[e^{-L}] = 1 (L is a log likelihood ratio)."""
    a, p, b, q, s = T6
    dens = lambda y, m, w: float(np.sum(w * stats.norm.pdf(y, m, s)))
    kl = integrate.quad(lambda y: dens(y, a, p) * math.log(dens(y, a, p) / dens(y, b, q)), -15, 17, limit=200)[0]
    for steps in (1, 10):
        law = statistic_law(T6, steps)
        assert np.sum(law.p * law.grid) == pytest.approx(steps * kl, rel=1e-3)
        assert np.sum(law.p * np.exp(-law.grid)) == pytest.approx(1.0, abs=5e-3 * steps)
        assert law.p.sum() == pytest.approx(1.0) and law.q.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("trials,ceiling", [(1_000_000, 0.903), pytest.param(10_000_000, 0.966, marks=pytest.mark.slow)])
def test_designed_threshold_reaches_the_simulated_ceiling(trials, ceiling):
    """A simulation of the optimal threshold test (T6, w = 0.1, σ = 1, δ = 1e-3) gives ratios 0.903 at
    1e6 and 0.966 at 1e7 trials per world; the design's expected union bound reaches them (±0.01)."""
    d = design_test(statistic_law(T6, 1), trials, 1e-3, 0.95)
    assert d.side == "upper"
    assert d.expected_union / EPS_T6 == pytest.approx(ceiling, abs=0.01)


def test_design_expectation_matches_simulated_audits_and_the_split_helps():
    """The design's expected union bound at 1e6 trials (its share of the error probability for the false-positive
    rate included) against the mean over 4000 simulated audits (TP, FP binomial at the law's rates; seed 11):
    within 4 standard errors plus 0.01 (the design takes TP at its mean). Giving the rare false-positive count
    more than half of the error probability raises the expectation above the equal split's."""
    law = statistic_law(T6, 1)
    n = 1_000_000
    d = design_test(law, n, 1e-3, 0.95)
    half = design_test(law, n, 1e-3, 0.95, shares=(0.5,))
    assert d.fp_share > 0.5 and d.expected_union > half.expected_union
    rng = np.random.default_rng(11)
    tp, fp = rng.binomial(n, d.tp_rate, 4000), rng.binomial(n, d.fp_rate, 4000)
    a_pos, a_neg = error_split(0.95, d.fp_share)
    with np.errstate(invalid="ignore"):
        eps = np.log((cp_lower(tp, n, a_pos) - 1e-3) / cp_upper(fp, n, a_neg))
    eps = np.where(np.isfinite(eps), np.maximum(eps, 0.0), 0.0)
    assert abs(eps.mean() - d.expected_union) <= 4 * eps.std() / np.sqrt(len(eps)) + 0.01


def test_error_split_spends_exactly_one_minus_confidence():
    for share in (0.5, 0.7, 0.9):
        a_pos, a_neg = error_split(0.95, share)
        assert a_pos + a_neg == pytest.approx(0.05) and a_neg == pytest.approx(0.05 * share)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="fp_share"):
            error_split(0.95, bad)


@pytest.mark.slow
def test_fixed_threshold_bound_covers_the_true_epsilon():
    """Coverage: 300 audits of 20000 mixture draws per world (numpy, not the loop) with the designed threshold;
    the bound exceeds the true ε = 3.717 in at most the 1 - 1e-3 quantile of Bin(300, 0.05) runs."""
    law = statistic_law(T6, 1)
    d = design_test(law, 20000, 1e-3, 0.95)
    edges = histogram_edges(law, [d.threshold])
    rng = np.random.default_rng(5)
    a, p, b, q, s = T6
    over = 0
    for _ in range(300):
        yp = rng.normal(np.where(rng.random(20000) < W, 2.0, 0.0), s)[:, None]
        yq = rng.normal(0.0, s, 20000)[:, None]
        hp, hq = bin_counts(log_likelihood_ratio(yp, T6), edges), bin_counts(log_likelihood_ratio(yq, T6), edges)
        over += fixed_test_bound(hp, hq, edges, d.threshold, d.side, 1e-3, fp_share=d.fp_share).value > EPS_T6
    assert over <= stats.binom.isf(1e-3, 300, 0.05)


def test_histogram_counts_equal_direct_counting():
    rng = np.random.default_rng(0)
    x, z = rng.normal(size=5000), rng.normal(0.3, size=4000)
    edges = np.sort(rng.normal(size=50))
    hx, hz = bin_counts(x, edges), bin_counts(z, edges)
    assert hx.sum() == 5000 and hz.sum() == 4000
    tp, fp, n_pos, n_neg = side_counts(hx, hz, "upper")
    assert tp.tolist() == [(x >= e).sum() for e in edges] and fp.tolist() == [(z >= e).sum() for e in edges]
    tp, fp, n_pos, n_neg = side_counts(hx, hz, "lower")
    assert (n_pos, n_neg) == (4000, 5000)
    assert tp.tolist() == [(z < e).sum() for e in edges] and fp.tolist() == [(x < e).sum() for e in edges]
    e = float(edges[30])
    b = fixed_test_bound(hz, hx, edges, e, "upper", 1e-3)
    k1, k2 = (z >= e).sum(), (x >= e).sum()
    direct = math.log((cp_lower(k1, 4000, 0.025) - 1e-3) / cp_upper(k2, 5000, 0.025))
    assert b.union_value == pytest.approx(max(0.0, direct), rel=1e-12)
    assert (b.true_positives, b.false_positives, b.n_positive, b.n_negative) == (k1, k2, 4000, 5000)
    assert b.value == certified_test_epsilon(k1, k2, 4000, 5000, 1e-3)  # the certified value: the union test's exact level
    b9 = fixed_test_bound(hz, hx, edges, e, "upper", 1e-3, fp_share=0.9)  # 0.005 to TP's bound, 0.045 to FP's
    direct9 = math.log((cp_lower(k1, 4000, 0.005) - 1e-3) / cp_upper(k2, 5000, 0.045))
    assert b9.union_value == pytest.approx(max(0.0, direct9), rel=1e-12) and b9.fp_share == 0.9
    assert b9.value == certified_test_epsilon(k1, k2, 4000, 5000, 1e-3, fp_share=0.9)
    with pytest.raises(ValueError, match="not a histogram edge"):
        fixed_test_bound(hz, hx, edges, e + 1e-9, "upper", 1e-3)


def test_binned_goodness_of_fit_is_conservative_and_still_rejects():
    rng = np.random.default_rng(1)
    a, p, b, q, s = T6
    yp = rng.normal(np.where(rng.random(50000) < W, 2.0, 0.0), s)
    yq = rng.normal(0.0, s, 50000)
    edges = np.linspace(-8, 10, 4097)
    raw = goodness_of_fit(yp, yq, T6)
    binned = binned_goodness_of_fit(bin_counts(yp, edges), bin_counts(yq, edges), edges, T6)
    assert binned.statistic_p <= raw.statistic_p + 1e-12 and binned.pvalue >= raw.pvalue - 1e-12
    assert binned.pvalue > 0.01
    shifted = binned_goodness_of_fit(bin_counts(yp + 0.05, edges), bin_counts(yq, edges), edges, T6)
    assert shifted.pvalue < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("target", [0.5, 1.2])
def test_trials_to_certify_brackets_the_design_crossing(target):
    """The trials returned reach the target by the design's own expected union bound, and 1/(1 + rel) of them (the
    bracket's other end) do not; a target above the pair's ε (what infinitely many trials tend to) is not reached
    within the cap."""
    from tsdp.attacks.montecarlo.design import trials_to_certify

    law = statistic_law(T6, 1)
    n = trials_to_certify(law, target, 1e-3, 0.95, start=100, cap=10**5, rel=0.1)
    assert n is not None
    assert design_test(law, n, 1e-3, 0.95).expected_union > target
    assert design_test(law, int(n / 1.1) - 1, 1e-3, 0.95).expected_union <= target
    assert trials_to_certify(law, 50.0, 1e-3, 0.95, start=100, cap=10**4) is None
