"""The audits' lower confidence bounds and verdicts against independent references: exact binomial coverage of the
one-sided Clopper-Pearson bounds (every outcome enumerated), Steinke et al.'s δ > 0 p-value against the exact tail of
the tight (ε, δ) mechanism, and the Monte Carlo audit's verdict when its certified estimate exceeds the sound ε."""
import numpy as np
import pytest
from scipy import special, stats

import tsdp.attacks.montecarlo.audit as audit_module
from tsdp.attacks.canary import steinke_bound
from tsdp.attacks.montecarlo.options import TrialPlan
from tsdp.attacks.montecarlo.statistics import cp_lower, cp_upper
from tsdp.cli.main import main
from tsdp.theorems.config import TrainingConfig
from tsdp.verify.rounded import rounded_down


@pytest.mark.parametrize("n", [1, 7, 30])
@pytest.mark.parametrize("a", [0.025, 0.1])
def test_clopper_pearson_bounds_have_exact_one_sided_coverage(n, a):
    """For every rate p on a fine grid, P_p(CP_upper(K) < p) ≤ a and P_p(CP_lower(K) > p) ≤ a, summed exactly over
    K ~ Bin(n, p): each bound sits on its own side at level 1 - a. The worst case reaches at least a / 2 for n = 30
    (a bound on the wrong side, or at level 1 - a/2, would not), and the bounds equal the exact two-sided interval
    at 1 - 2a (scipy's binomtest)."""
    k = np.arange(n + 1)
    upper, lower = cp_upper(k, n, a), cp_lower(k, n, a)
    ps = np.linspace(1e-4, 1 - 1e-4, 4001)
    pmf = stats.binom.pmf(k[None, :], n, ps[:, None])
    miss_up = (pmf * (upper[None, :] < ps[:, None])).sum(axis=1)
    miss_lo = (pmf * (lower[None, :] > ps[:, None])).sum(axis=1)
    assert miss_up.max() <= a + 1e-12 and miss_lo.max() <= a + 1e-12, (miss_up.max(), miss_lo.max())
    if n == 30:
        assert miss_up.max() >= a / 2 and miss_lo.max() >= a / 2
    for kk in k:
        ci = stats.binomtest(int(kk), n).proportion_ci(confidence_level=1 - 2 * a, method="exact")
        assert lower[kk] == pytest.approx(ci.low, abs=1e-10) and upper[kk] == pytest.approx(ci.high, abs=1e-10)


def _reveal_tail(m, k, c, eps, delta):
    """P[W ≥ c] of the tight (ε, δ) mechanism (each canary revealed w.p. δ, else randomized response at ε) guessing
    the revealed canaries first: W = min(R, k) + Binom(k - min(R, k), e^ε/(1+e^ε)), R ~ Binom(m, δ)."""
    r = np.arange(m + 1)
    sure = np.minimum(r[None, :], k[:, None])
    tails = stats.binom.sf(c[:, None] - 1 - sure, k[:, None] - sure, special.expit(eps))
    return (stats.binom.pmf(r, m, delta)[None, :] * tails).sum(axis=1)


@pytest.mark.parametrize("eps,delta", [(0.5, 0.002), (1.0, 0.01), (1.5, 0.005), (1.0, 0.05)])
def test_steinke_p_value_with_delta_bounds_the_exact_tail_of_the_tight_mechanism(eps, delta):
    """Steinke et al.'s (ε, δ) p-value is an upper bound on P[W ≥ c] for every (ε, δ)-DP training: for the tight
    mechanism, whose tail is computed exactly, it is ≥ that tail at every (k, c) of m = 40 canaries (the δ term
    2 m δ max_i P[c > Binom ≥ c - i] / i is what covers the revealed canaries; without it the bound fails), so
    no ε at or below the mechanism's is rejected at any level."""
    m = 40
    pairs = np.array([(k, c) for k in range(1, m + 1) for c in range(k + 1)])
    k, c = pairs[:, 0], pairs[:, 1]
    tail = _reveal_tail(m, k, c, eps, delta)
    assert np.all(steinke_bound.p_value(m, k, c, eps, delta) >= tail * (1 - 1e-12))
    assert np.any(steinke_bound.p_value(m, k, c, eps, 0.0) < tail)  # the δ term is needed: the test can fail


SMALL_T6 = TrainingConfig(N=16, batch_size=4, L=6, context_length=1, forecast_length=1, sigma=1.0)


def _audit_with_sound_epsilon(monkeypatch, epsilon_sound):
    """The correct loop's T6 audit (2000 trials per world, seed 0) against an accountant whose ε at δ is
    ``epsilon_sound`` (a function of the certified estimate: the estimate's own value is passed as None), its
    H_α reads left as they are: a bound that claims less than the loop leaks, at δ only."""
    real = audit_module.theory
    def claimed(*args, **kwargs):
        th = real(*args, **kwargs)
        return audit_module.Theory(epsilon_sound, th.epsilon_attained, th.h_theory)
    monkeypatch.setattr(audit_module, "theory", claimed)
    return audit_module.audit("T6", SMALL_T6, delta=1e-3, trials=TrialPlan(2000, seed=0, device="cpu"))


@pytest.mark.slow  # two small audits, ~10 s with torch's start: CI's slow stage
def test_a_sound_epsilon_below_the_certified_estimate_is_a_violation_and_equality_is_not(monkeypatch, capsys):
    """The estimate (the union test at its exact level, 95%) certifies more than the violation test (its family at
    α/(2G) per rate, its rates read off the claimed profile; seed 0: 0.84 against 0.38 to 0.49): against a sound ε
    between the two, the audit certified more than the sound ε, which is a violation (`tsdp audit` exits 1). The
    sound ε equal to the estimate is not exceeded (the comparison is strict). `tsdp audit`'s human output cites the
    estimate it exceeded with."""
    probe = _audit_with_sound_epsilon(monkeypatch, 100.0)
    between = (probe.epsilon_lower + probe.violation_test.epsilon_lower) / 2
    below = _audit_with_sound_epsilon(monkeypatch, between)
    assert below.epsilon_lower == probe.epsilon_lower  # the estimate does not read the sound ε
    assert below.epsilon_lower > between > below.violation_test.epsilon_lower, below.epsilon_lower
    assert not below.violation_test.violation  # the violation test alone misses it
    assert below.violation and below.sound_exceeded and below.relation_note is None
    with monkeypatch.context() as m:  # `tsdp audit`'s own path, its audit answering ``below``
        m.setattr(audit_module, "audit", lambda *a, **k: below)
        code = main(["audit", "--theorem", "T6", "--delta", "1e-3", "--trials", "2000"])
    out = capsys.readouterr().out
    headline = out.splitlines()[0]
    assert code == 1 and headline.startswith("PRIVACY VIOLATION")
    assert f"certified ε ≥ {rounded_down(below.epsilon_lower, 4, fixed=True)}" in headline
    # the violation test did not flag: its H_α stay within the sound profile, which the line must not say it exceeded
    assert below.violation_test.profile_excess <= 0 and "H_α above the sound profile" not in headline, headline
    equal = _audit_with_sound_epsilon(monkeypatch, below.epsilon_lower)
    assert equal.epsilon_lower == below.epsilon_lower and not equal.violation and not equal.sound_exceeded


@pytest.mark.slow  # one small audit, ~5 s with torch's start: CI's slow stage
def test_the_violation_headline_states_the_confidence_of_the_largest_of_two_bounds(monkeypatch, capsys):
    """`tsdp audit`'s PRIVACY VIOLATION line cites the larger of two certified ε lower bounds (the estimate's and the
    violation test's), each at the audit's confidence, and the verdict is either test's: both hold together, and the
    verdict errs, at the union bound's 1 - 2 (1 - confidence) only (audit()'s docstring). At --confidence 0.95 the
    line must not say 95%: the cited bound and the verdict hold at 90%."""
    result = _audit_with_sound_epsilon(monkeypatch, 0.01)
    assert result.violation and result.confidence == 0.95
    monkeypatch.setattr(audit_module, "audit", lambda *a, **k: result)
    code = main(["audit", "--theorem", "T6", "--delta", "1e-3", "--trials", "2000"])
    headline = capsys.readouterr().out.splitlines()[0]
    assert code == 1 and headline.startswith("PRIVACY VIOLATION (confidence 90%"), headline


@pytest.mark.slow  # one small audit, ~5 s with torch's start: CI's slow stage
def test_a_sequential_audits_estimate_line_states_the_confidence_it_holds_at():
    """With --sequential the audit's ε lower bound is the violation test's value where it stops and the estimate's
    otherwise, so it holds at 1 - 2 (1 - confidence) only (audit()'s docstring): the human line must say 90% at 0.95,
    and 95% for the fixed-sample audit."""
    from tsdp.attacks.montecarlo.options import Confidence
    from tsdp.cli.cmd_audit import _human_audit

    for sequential, said in ((True, "90%"), (False, "95%")):
        r = audit_module.audit("T6", SMALL_T6, delta=1e-3, trials=TrialPlan(2000, seed=0, device="cpu"),
                               confidence=Confidence(0.95, sequential=sequential))
        line = next(x for x in _human_audit(r.to_dict()).splitlines() if x.lstrip().startswith("estimate:"))
        assert f"certified ε lower bound (confidence {said})" in line, line


@pytest.mark.parametrize("level, verdict_words", [
    (0.95, "confidence 90%: two tests at 95% each, union bound"),
    (0.999, "confidence 99.8%: two tests at 99.9% each, union bound"),
    (0.9999999, "confidence 99.99%: two tests at 99.99% each, union bound")])
def test_a_verdicts_confidence_is_never_printed_above_what_holds(level, verdict_words):
    """A confidence is a lower bound on the probability of being right: printed rounded down (4 digits, float noise
    of 1 - 2 (1 - c) aside), never to nearest (0.998 read '100%', 0.999 '100%' before)."""
    from tsdp.attacks.montecarlo.verdict import percent_text, verdict_confidence_text

    assert verdict_confidence_text(level) == verdict_words
    assert percent_text(0.995) == "99.5%" and percent_text(0.99999) == "99.99%" and percent_text(0.5) == "50%"
