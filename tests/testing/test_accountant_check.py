"""tsdp.testing: verdicts on accountants against tsdp's attained (lower) and sound (upper) ε, like with like."""
import json
import math

import pytest
from hypothesis import given, settings
from scipy.optimize import brentq
from scipy.stats import norm

from tsdp import TrainingConfig, epsilon
from tsdp.verify.rounded import rounded_down
from tsdp.testing import (AccountantError, Cell, Substitution, UnsoundAccountantError, accountant, assert_not_unsound,
                          assert_sound_for_all, cells, check_accountant, configs, opacus_accountant, poisson_pld,
                          dp_accounting_accountant, reported_epsilon, sample_rate, tsdp_accountant)

SECTION5 = TrainingConfig()
DELTA = 1e-5


def t6_one_step_epsilon(config: TrainingConfig, delta: float) -> float:
    """Independent reference: ε(δ) of T6's pair after one step, P = (1-p) N(0,σ) + p N(2,σ), Q = N(0,σ), p = ρr,
    in closed form (the privacy loss is increasing in x: the region where dP > α dQ is x > x*)."""
    p, s = float(config.rho * config.r), config.sigma

    def delta_of(eps):
        alpha = math.exp(eps)
        x = 1 + s * s * math.log((alpha - (1 - p)) / p) / 2  # (1-p) + p exp((2x - 2)/σ²) = α
        return (1 - p) * norm.sf(x / s) + p * norm.sf((x - 2) / s) - alpha * norm.sf(x / s)

    return brentq(lambda e: delta_of(e) - delta, 1e-9, 50, xtol=1e-12)


def t6_halved(config, steps, delta):
    """A deliberately wrong accountant: T6 with ρ r halved (the configuration's N doubled)."""
    return epsilon(config.with_(N=2 * config.N), delta, steps=steps, estimates=("sound",)).epsilon


def test_the_threshold_is_the_attained_epsilon_of_an_independent_reference():
    """One step of Section 5 (T6, tight): 3% under the closed-form ε is unsound, 3% over is not; tsdp's bracket
    holds the closed form (attained ≤ ε ≤ sound)."""
    truth = t6_one_step_epsilon(SECTION5, DELTA)
    low = check_accountant(accountant(lambda c, s, d: 0.97 * truth, "low"), SECTION5, steps=1, delta=DELTA)
    high = check_accountant(accountant(lambda c, s, d: 1.03 * truth, "high"), SECTION5, steps=1, delta=DELTA)
    (v,), (w,) = low.verdicts, high.verdicts
    assert v.epsilon_attained <= truth <= v.epsilon_sound
    assert v.verdict == "unsound" and w.verdict == "sound"
    assert v.construction == "T6" and v.theorem == "T6"
    assert v.pair == "P = MoG(means [0, 2], weights [0.99, 0.01], σ) vs Q = N(0, σ), σ = 1 (units of C)"
    assert v.audit_command.startswith("tsdp audit --theorem T6 --trials 1000000 --steps 1 --delta 1e-05 --N 320 --L 20")


def test_a_deliberately_wrong_accountant_is_flagged_and_tsdps_own_is_not():
    """T6 with ρ r halved is below the attained ε at 1 and 100 steps; the assertion raises with the form
    'reports ε = a where an attack attains b' and the audit command; tsdp's own accountant passes."""
    wrong = accountant(t6_halved, "T6 with ρr halved")
    report = check_accountant(wrong, SECTION5, steps=(1, 100), delta=DELTA)
    assert report.counts["unsound"] == 2 and not report.passed
    for v in report.verdicts:
        assert v.epsilon_reported < v.epsilon_attained
    with pytest.raises(UnsoundAccountantError) as err:
        assert_not_unsound(wrong, SECTION5, 1, DELTA)
    text = str(err.value)
    assert text.startswith(f"UNSOUND: T6 with ρr halved reports ε = {report.verdicts[0].epsilon_reported:.4g} where an "
                           f"attack attains {rounded_down(report.verdicts[0].epsilon_attained, 4)}")
    assert "tsdp audit --theorem T6" in text
    own = check_accountant(tsdp_accountant(), SECTION5, steps=(1, 100), delta=DELTA)
    assert own.passed and [v.verdict for v in own.verdicts] == ["sound", "sound"]  # its exact sound ε is sound


def test_like_with_like_a_guessed_rate_is_a_relation_mismatch_where_another_relation_is_sound():
    """Opacus RDP at the series rate Λ/N, one step of Section 5: below the 1-event attained ε (add/remove at
    rate 0.1 against substitution at ρr = 0.01), but at or above tsdp's sound ε for one window: a relation
    mismatch, said so; claimed for the window relation it is not unsound."""
    rdp = opacus_accountant("rdp", "series")
    (v,) = check_accountant(rdp, SECTION5, steps=1, delta=DELTA).verdicts
    assert v.unsound and v.relation_mismatch and v.sound_under == ("window",)
    assert v.message().startswith("RELATION MISMATCH: Opacus RDP at rate Λ/N reports ε")
    (bound,) = v.sound_under_bounds
    window = t6_one_step_epsilon(Substitution("window").config(SECTION5), DELTA)
    assert window <= bound.epsilon_sound <= v.epsilon_reported and bound.theorem == "T6"
    assert (f"window (tsdp's sound ε = {bound.epsilon_sound:.4g}, T6): the accountant answers for a different "
            "neighbouring relation") in v.message()
    assert "not a broken computation" in v.message()
    (w,) = check_accountant(rdp, SECTION5, steps=1, delta=DELTA, relation="window").verdicts
    assert w.verdict in ("sound", "between") and w.relation == {"record": "window", "w": 1}
    assert w.config["context_length"] == 0 and w.config["derived"]["k"] == 1 and w.config["derived"]["T"] == 20


def test_relations_name_the_windows_a_change_touches():
    """k per relation on Section 5 (T = 20, L_C + L_F = 2): window 1, 1-event 2, 3-user 6, series 20 = T."""
    ks = {r.name: r.config(SECTION5).k for r in (Substitution("window"), Substitution("event"),
                                                  Substitution("user", 3), Substitution("series"))}
    assert ks == {"window": 1, "1-event": 2, "3-user": 6, "series": 20}
    assert all(r.config(SECTION5).T == 20 for r in (Substitution("window"), Substitution("series")))
    with pytest.raises(ValueError, match="relation"):
        Substitution("element")
    with pytest.raises(ValueError, match="must be 1 for the series relation"):
        Substitution("series", 2)


def test_a_substitution_reads_as_its_strings_and_the_former_name_still_loads_it():
    """The record is a :class:`RecordUnit` inside, its string in the JSON form; a record name given to
    ``check_accountant`` takes w from the configuration only where the record counts elements."""
    import json

    import tsdp.testing
    from tsdp.testing.relations import RecordUnit

    three_user = SECTION5.with_(relation="user", w=3)
    assert Substitution.parse("user", three_user) == Substitution(RecordUnit.USER, 3)
    assert Substitution.parse("window", three_user) == Substitution("window", 1)
    assert Substitution.parse(None, three_user).name == "3-user"
    assert json.loads(json.dumps(Substitution("user", 3).as_dict())) == {"record": "user", "w": 3}
    assert tsdp.testing.Relation is Substitution


def test_guessed_rates_and_the_poisson_pld_adapter_against_the_gaussian_mechanism():
    """Λ/N and Λ/(N·T) on Section 5; at rate 1 (Λ = N) the Poisson PLD is the Gaussian mechanism composed S
    times, whose ε(δ) has the closed form δ = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2), μ = √S / σ."""
    assert sample_rate(SECTION5, "series") == 0.1 and sample_rate(SECTION5, "window") == 32 / 6400
    full = SECTION5.with_(N=32, sigma=2.0)
    mu = math.sqrt(10) / 2.0
    truth = brentq(lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - DELTA, 0, 50)
    assert poisson_pld("series")(full, 10, DELTA) == pytest.approx(truth, abs=2e-3)


@pytest.mark.parametrize("returned,words", [
    (float("nan"), "returned NaN"), (-1.0, "returned a negative ε = -1"), ("3.0", "returned '3.0' (str)"),
    (True, "returned True (bool)"), (10 ** 400, "returned a number too large for a float (int, 401 digits)"),
    (object(), "(object) at wor/wr"),
])
def test_a_bad_answer_is_one_line(returned, words):
    with pytest.raises(AccountantError) as err:
        reported_epsilon(accountant(lambda c, s, d: returned, "bad"), SECTION5, 10, DELTA)
    assert words in str(err.value) and "\n" not in str(err.value) and "at wor/wr N=320" in str(err.value)


def test_an_accountant_that_raises_or_hangs_is_one_line():
    def raises(config, steps, delta):
        raise ZeroDivisionError("division\nby zero")

    def hangs(config, steps, delta):
        import time

        time.sleep(30)

    with pytest.raises(AccountantError, match="raised ZeroDivisionError at .*: division by zero"):
        reported_epsilon(raises, SECTION5, 1, DELTA)
    with pytest.raises(AccountantError, match=r"hung at .*: no answer within 0.2 s \(its worker process was ended\)"):
        reported_epsilon(hangs, SECTION5, 1, DELTA, timeout=0.2)
    assert reported_epsilon(accountant(lambda c, s, d: math.inf), SECTION5, 1, DELTA) == math.inf  # vacuous, allowed


def test_the_report_has_a_json_form_with_counts():
    report = check_accountant(accountant(t6_halved, "halved"), [Cell(SECTION5, 1), Cell(SECTION5.with_(sigma=4.0), 1)],
                              delta=DELTA)
    d = json.loads(report.to_json())
    assert d["counts"]["unsound"] + d["counts"]["between"] + d["counts"]["sound"] == 2
    assert d["passed"] is False and d["verdicts"][0]["message"].startswith("UNSOUND")
    assert d["verdicts"][0]["relation"] == {"record": "event", "w": 1}


@pytest.mark.slow  # 15 accountings, ~8 s: CI's slow stage (the default run stays within its 4 minutes)
@settings(max_examples=15)
@given(cell=cells(configs(max_N=200, max_L=30, max_instances=2, relations=("event", "user"), max_w=2,
                          augmentation=None, sigma=(0.7, 4.0)), steps=(1, 3)))
def test_tsdps_own_accountant_is_never_unsound(cell):
    """Property: over every scheme tsdp bounds, relation and augmentation, tsdp's sound ε (grid 1e-4) is not below
    its own attained ε (grid 1e-3); where no sound bound exists it answers inf."""
    assert_not_unsound(tsdp_accountant(), cell.config, cell.steps, DELTA)


@pytest.mark.slow
def test_tsdps_own_accountant_on_300_hypothesis_cells():
    assert_sound_for_all(tsdp_accountant(), cells(configs(max_instances=3, relations=("event", "user"), max_w=3,
                                                          augmentation=None), steps=(1, 10, 100)),
                         max_examples=300, seed=1)


@pytest.mark.slow
def test_hypothesis_shrinks_a_counterexample_of_the_wrong_accountant():
    """The property over cells fails on the ρr-halved accountant and raises the unsound verdict (shrunk by
    hypothesis: its cell is the smallest the search reached, and the message carries the attack)."""
    halved = accountant(lambda c, s, d: t6_one_step_epsilon(c.with_(N=2 * c.N), d), "halved")  # closed form: cheap
    with pytest.raises(UnsoundAccountantError) as err:
        assert_sound_for_all(halved, cells(configs(schemes=(("wor", "wr"),), max_N=40,
                                                                             max_L=8, max_window=3, sigma=(2.0, 2.0)),
                                                                steps=(1,)), max_examples=10)
    assert "UNSOUND: halved reports" in str(err.value) and "the T6 construction" in str(err.value)
    assert "N=1 L=1 L_C=0 L_F=1 Λ=1" in str(err.value)  # shrunk to the smallest configuration: one series, one window
    assert "the loop has no construction for this configuration" in str(err.value)  # `tsdp audit` refuses L_C = 0


def test_between_says_where_in_the_bracket():
    """A value in tsdp's bracket after 1000 Section 5 steps is 'between', with its position (reported - attained) /
    (sound - attained) in the message and the table."""
    (v,) = check_accountant(accountant(lambda c, s, d: 13.5, "c"), SECTION5, steps=1000, delta=DELTA).verdicts
    assert v.verdict == "between" and v.epsilon_attained < 13.5 < v.epsilon_sound
    position = (13.5 - v.epsilon_attained) / (v.epsilon_sound - v.epsilon_attained)
    assert v.bracket_position == pytest.approx(position, rel=1e-12)
    assert f"{position:.0%} of the way from the attained to the sound ε" in v.message()


@pytest.mark.parametrize("config", [SECTION5, SECTION5.with_(top="deterministic", bottom="poisson"),
                                    SECTION5.with_(instances=2), SECTION5.with_(sigma_context=1.0, sigma_forecast=1.0)],
                         ids=["T6", "T4", "T7", "T11"])
def test_a_coarser_relation_is_never_sound_for_a_value_below_the_claims_attained_epsilon(config):
    """Why a value unsound for a claim is checked against the finer relations only: on one batching, after 10
    steps, every relation whose change touches as many windows or more (k = 2, 4, 20 of T = 20) has a sound ε at
    or above the attained ε of each finer claim (1-event, 2-user). (The window relation, k = 1, drops the
    augmentation, so with T11 its sound ε exceeds the 1-event one: it is always checked.)"""
    from tsdp.testing import reference

    chain = [Substitution("event", 1), Substitution("user", 2), Substitution("series")]
    assert [r.config(config).k for r in chain] == [2, 4, 20]
    refs = [reference(config, 10, DELTA, r) for r in chain]
    for i, claim in enumerate(refs[:-1]):
        for coarser in refs[i + 1:]:
            assert coarser.epsilon_sound >= claim.epsilon_attained, (claim, coarser)


@pytest.mark.parametrize("factor,verdict,mismatch", [
    (1.01, "unsound", True),   # just above the window relation's ε: the accountant meant one window
    (0.85, "unsound", False),  # nearer the 1-event attained ε than the window's sound ε: a plain under-estimate
    (0.98, "unsound", False),
    (1.02, "sound", False),
])
def test_a_relation_mismatch_is_a_value_nearer_another_relations_sound_epsilon(factor, verdict, mismatch):
    """Section 5, one step, against the closed forms of T6's pair for 1-event (ε_e) and one window (ε_w < ε_e):
    1.01 ε_w is sound for a window and far below ε_e (a mismatch); 0.85 ε_e and 0.98 ε_e sit above
    √(ε_w ε_e), nearer the claim's attained ε: plainly unsound; 1.02 ε_e is sound."""
    event, window = t6_one_step_epsilon(SECTION5, DELTA), t6_one_step_epsilon(Substitution("window").config(SECTION5), DELTA)
    assert window < math.sqrt(window * event) < 0.85 * event
    value = factor * (window if mismatch else event)
    (v,) = check_accountant(accountant(lambda c, s, d: value, "fixed"), SECTION5, steps=1, delta=DELTA).verdicts
    assert (v.verdict, v.relation_mismatch) == (verdict, mismatch)
    assert v.message().startswith({(True, "unsound"): "RELATION MISMATCH", (False, "unsound"): "UNSOUND",
                                   (False, "sound"): "sound"}[(mismatch, verdict)])


def test_an_under_estimate_by_two_percent_is_unsound_not_a_mismatch_on_the_section5_cells():
    """0.98 × tsdp's attained ε on every Section 5 cell (one step): all unsound, none a relation mismatch."""
    from tsdp.testing import reference
    from tsdp.testing.grid import section5_cells

    def low(config, steps, delta):
        return 0.98 * reference(config, steps, delta, Substitution.of(config)).epsilon_attained

    report = check_accountant(accountant(low, "0.98x"), [c for c in section5_cells() if c.config.top != "pooled"],
                              steps=1, delta=DELTA)
    assert report.counts["unsound"] == len(report.verdicts) == 5 and report.counts["relation_mismatch"] == 0


def test_without_an_attained_epsilon_a_cell_is_judged_on_the_sound_side_only():
    """Where tsdp knows a sound ε but no attained one (attained ε None), a value at or above the sound ε is sound,
    one below it is 'between', never unsound, and the message says it is judged on the sound side only."""
    from tsdp.testing import reference
    from tsdp.testing.brackets import Reference
    from tsdp.testing.check import judge_reference

    full = reference(SECTION5, 1, DELTA, Substitution())
    ref = Reference(full.theorem, None, full.epsilon_sound, None, refused="no attained ε for this scheme")
    above = judge_reference(full.epsilon_sound, ref, SECTION5, 1, DELTA, Substitution())
    below = judge_reference(0.01, ref, SECTION5, 1, DELTA, Substitution())
    assert above.verdict == "sound" and below.verdict == "between"
    assert below.epsilon_attained is None and below.bracket_position is None and below.ratio is None
    assert below.epsilon_sound > 3.025  # the sound ε printed rounded up reads back as at least the computed one
    assert ("below tsdp's sound ε = 3.026 (T6); tsdp knows no attained ε here (no attained ε for this scheme), so "
            "the value is judged on the sound side only and cannot be shown unsound") in below.message()
    assert json.loads(below.to_json())["epsilon_attained"] is None


def test_declined_cells_are_not_judged_and_a_report_of_declines_only_does_not_pass():
    from tsdp.testing import assert_sound

    def only_wor(config, steps, delta):
        if config.top != "wor":
            raise NotImplementedError(f"{config.top} is not covered")
        return math.inf

    grid = [Cell(SECTION5, 1), Cell(SECTION5.with_(top="deterministic"), 1)]
    report = check_accountant(accountant(only_wor, "wor only"), grid, delta=DELTA)
    assert [v.verdict for v in report.verdicts] == ["sound", "declined"] and report.passed
    assert report.verdicts[1].message().startswith("declined: wor only declines this cell (raised "
                                                   "NotImplementedError: deterministic is not covered); not judged")
    assert reported_epsilon(only_wor, SECTION5.with_(top="deterministic"), 1, DELTA) is None
    with pytest.raises(AccountantError, match=r"no cell was judged \(1 declined, 0 unchecked of 1\)"):
        assert_sound(accountant(only_wor, "wor only"), Cell(SECTION5.with_(top="deterministic"), 1), delta=DELTA)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """ε(δ) of the Gaussian mechanism with μ = sensitivity / σ, in closed form (Balle and Wang 2018)."""
    return brentq(lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0, 100)


@pytest.mark.slow
def test_what_the_shrinker_shows_for_the_tutorials_window_rate_guess():
    """The tutorial's claim: hypothesis shrinks the window-rate guess Λ/(N·T) to one series of one window (N = 1,
    T = 1), where that rate is 1 and right, so the counterexample shows the guess's other defect: add/remove of a
    record (a Gaussian with μ = 1/σ) against substitution of one element (T6's pair at rate 1: μ = 2/σ)."""
    window_rate = poisson_pld("window")
    with pytest.raises(UnsoundAccountantError) as err:
        assert_sound_for_all(window_rate, cells(configs(schemes=[("wor", "wr")], max_N=8, max_L=4, sigma=(2.0, 2.0)),
                                                steps=(1,)),
                             max_examples=5)
    (v,) = err.value.verdicts
    assert (v.config["N"], v.config["derived"]["T"], v.config["batch_size"]) == (1, 1, 1)
    sigma = v.config["sigma"]
    assert v.epsilon_reported == pytest.approx(gaussian_epsilon(1 / sigma, DELTA), abs=2e-3)
    assert v.epsilon_attained == pytest.approx(gaussian_epsilon(2 / sigma, DELTA), abs=2e-3)
    assert v.epsilon_attained <= gaussian_epsilon(2 / sigma, DELTA)


def test_the_property_skips_declined_cells_and_fails_when_every_cell_is_declined():
    """assert_sound_for_all rejects a declined cell (hypothesis draws another): an accountant declining every cell
    checked nothing, and hypothesis says so (its filter health check, or Unsatisfiable) instead of passing."""
    from hypothesis.errors import FailedHealthCheck, Unsatisfiable

    small = cells(configs(schemes=[("wor", "wr"), ("deterministic", "wr")], max_N=4, max_L=3, max_window=2,
                          sigma=(2.0, 2.0)), steps=(1,))
    declines_deterministic = accountant(lambda c, s, d: None if c.top == "deterministic" else math.inf, "wor only")
    assert_sound_for_all(declines_deterministic, small, max_examples=5)
    with pytest.raises((FailedHealthCheck, Unsatisfiable)):
        assert_sound_for_all(accountant(lambda c, s, d: None, "declines all"), small, max_examples=5)


def test_a_shuffled_cells_attack_is_the_hidden_position_epoch_through_the_shuffled_loop():
    """The attack a verdict names for a shuffled cell: the hidden-position epoch of the step pair, and an audit
    command that keeps --top shuffle (the known-position value is not attained under shuffling)."""
    from tsdp.testing.attack import audit_command, describe_pair

    config = TrainingConfig(top="shuffle")
    assert "--top shuffle" in audit_command("T1", config, 10, 1e-5)
    assert "--top" not in audit_command("T1", config.with_(top="deterministic"), 10, 1e-5)
    text = describe_pair("T1", config)
    assert text.startswith("hidden-position epoch") and "max over the epoch's 10 releases" in text


def test_a_shuffled_cells_bracket_names_the_hidden_position_epoch():
    """A constant 5 at shuffle, 10 steps, δ = 1e-5 sits in the bracket of the hidden-position epoch (attained 4.285):
    between, not unsound, and the message names that construction (the known-position 6.575 is not attained)."""
    (v,) = check_accountant(accountant(lambda c, s, d: 5.0, "five"), TrainingConfig(top="shuffle"), steps=10,
                            delta=1e-5).verdicts
    assert v.verdict == "between" and 4.28 < v.epsilon_attained < 4.29
    assert "(T1 construction, hidden-position epoch)" in v.message()


@pytest.mark.parametrize("call,parameter", [
    (lambda: sample_rate(SECTION5, "element"), "sample_rate"),
    (lambda: poisson_pld("element"), "sample_rate"),
    (lambda: poisson_pld("series", accountant="prv"), "dp_accounting"),
    (lambda: dp_accounting_accountant(lambda config, steps: None, accountant="PLD"), "dp_accounting"),
])
def test_an_unknown_guessed_rate_or_dp_accounting_accountant_is_one_error_naming_the_values(call, parameter):
    """The guessed rate and dp-accounting's accountant are read once, at the call: one ConfigError naming the
    parameter and the values allowed, before any accounting."""
    from tsdp.theorems.config import ConfigError

    with pytest.raises(ConfigError) as err:
        call()
    allowed = "series, window" if parameter == "sample_rate" else "pld, rdp"
    assert err.value.parameter == parameter and f"must be one of {allowed}" in str(err.value)


def test_no_audit_command_is_named_where_the_loop_cannot_run_it():
    """A configuration without context (the one-window relation's k = 1 is L_C = 0, L_F = 1) has no audit through the
    loop (its model reads the last L_C values; `tsdp audit` refuses L_C = 0), so none is suggested."""
    from tsdp.cli.main import main
    from tsdp.testing.attack import audit_command

    config = TrainingConfig(context_length=0, forecast_length=1)
    assert audit_command("T6", config, 1, 1e-5) is None
    assert audit_command("T6", config.with_(context_length=1), 1, 1e-5) is not None
    assert main(["audit", "--theorem", "T6", "--context-length", "0", "--trials", "100", "--delta", "1e-3"]) == 2


def test_the_property_fails_when_tsdp_judges_no_cell_not_only_when_the_accountant_declines():
    """assert_sound_for_all over cells tsdp has no number for (Poisson top level: every verdict 'unchecked') checked
    nothing: hypothesis says so (its filter health check, or Unsatisfiable), as for an accountant that declines every
    cell, instead of passing. Here even an accountant that answers 0 (below any attained ε) would otherwise pass."""
    from hypothesis.errors import FailedHealthCheck, Unsatisfiable

    poisson_top = cells(configs(schemes=[("poisson", "wr")], max_N=4, max_L=3, max_window=2, sigma=(2.0, 2.0)),
                        steps=(1,))
    zero = accountant(lambda c, s, d: 0.0, "always zero")
    assert check_accountant(zero, Cell(TrainingConfig(N=4, L=3, batch_size=1, sigma=2.0, top="poisson"), 1),
                            delta=DELTA).counts["unchecked"] == 1
    with pytest.raises((FailedHealthCheck, Unsatisfiable)):
        assert_sound_for_all(zero, poisson_top, max_examples=5)


@pytest.mark.parametrize("reported, attained", [(3.02451, 3.02459), (3.0244999, 3.0245), (0.99996, 0.99999)])
def test_an_unsound_message_prints_the_reported_value_below_the_attained_one(reported, attained):
    """An unsound verdict's sentence 'reports ε = a where an attack attains b' must read a < b, the reported ε
    rounded up (never understated) and the attained ε down, with the digits that tell them apart: to nearest and
    rounded down at 4 digits it printed 3.025 against 3.024 (the accountant apparently above the attack) or the
    same text twice, for values within the fourth digit."""
    from tsdp.testing.brackets import Reference
    from tsdp.testing.check import judge_reference

    ref = Reference("T6", "T6", 4.0, attained)
    v = judge_reference(reported, ref, SECTION5, 1, DELTA, Substitution.of(SECTION5))
    assert v.verdict == "unsound"
    text = v.message()
    a = float(text.split("reports ε = ")[1].split(" ")[0])
    b = float(text.split("an attack attains ")[1].split(" ")[0])
    assert reported <= a < b <= attained  # the user's value never understated, the attack's never overstated
    assert v.as_dict()["message"] == text and "between" not in text


@pytest.mark.parametrize("kind", ["rdp", "prv", "gdp"])
@pytest.mark.parametrize("rate", ["series", "window"])
def test_the_opacus_adapter_is_what_opacus_records_for_s_steps_at_the_guessed_rate(kind, rate):
    """Independent reference: Opacus's own accountant stepped S times, as PrivacyEngine's optimizer hook does
    (``step(noise_multiplier=σ, sample_rate=q)`` once per step), at the guessed rate computed by hand here (Λ/N, or
    Λ/(N·T) with T = L - L_F + 1), on configurations of every scheme the grid holds, λ = 2 included."""
    pytest.importorskip("opacus")
    import warnings

    from opacus.accountants import GaussianAccountant, PRVAccountant, RDPAccountant

    for config in (SECTION5.with_(instances=2, sigma=1.5), SECTION5.with_(top="pooled", L=12, forecast_length=2),
                   SECTION5.with_(top="deterministic", N=100, batch_size=10)):
        q = config.batch_size / config.N if rate == "series" else (
            config.batch_size / (config.N * (config.L - config.forecast_length + 1)))
        steps = 7
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            acc = {"rdp": RDPAccountant, "prv": PRVAccountant, "gdp": GaussianAccountant}[kind]()
            for _ in range(steps):
                acc.step(noise_multiplier=config.sigma, sample_rate=q)
            truth = acc.get_epsilon(DELTA)
        assert opacus_accountant(kind, rate)(config, steps, DELTA) == pytest.approx(truth, rel=1e-9)
