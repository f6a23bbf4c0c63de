"""Every thin name that prints a bound goes through the one home of rounding (tsdp.verify.rounded) and keeps its
side: a sound ε, δ or σ (an upper bound) reads back as at least the exact value, an attained or audited ε (a lower
bound) as at most it. Hypothesis over floats of any sign and size; each layer's text must equal the home's at the
layer's own digits, so no layer rounds on its own (the commands' and the report's whole outputs are swept in
tests/cli/test_printed_bounds_sweep.py and tests/reports/test_report_rounding.py)."""
import pytest
from hypothesis import example, given, strategies as st

from tsdp.cli.output import sigma_text
from tsdp.reports.claim_base import fmt4, lower4, upper4
from tsdp.reports.render import fmt, lower, upper
from tsdp.verify.rounded import rounded_down, rounded_nearest, rounded_up

FINITE = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False, allow_infinity=False)

UPPER = [("report table", upper, lambda x: rounded_up(x, 4)), ("report prose", upper4, lambda x: rounded_up(x, 4)),
         ("calibrated σ", sigma_text, lambda x: rounded_up(x, 6))]
LOWER = [("report table", lower, lambda x: rounded_down(x, 4)), ("report prose", lower4, lambda x: rounded_down(x, 4))]


@pytest.mark.parametrize("layer, printed, home", UPPER, ids=[u[0] for u in UPPER])
@given(x=FINITE)
def test_every_printed_sound_value_is_at_least_the_exact_one(layer, printed, home, x):
    text = printed(x)
    assert float(text) >= x, (layer, text, x)
    assert text == home(x), layer


@pytest.mark.parametrize("layer, printed, home", LOWER, ids=[u[0] for u in LOWER])
@given(x=FINITE)
def test_every_printed_attained_value_is_at_most_the_exact_one(layer, printed, home, x):
    text = printed(x)
    assert float(text) <= x, (layer, text, x)
    assert text == home(x), layer


@given(x=FINITE, digits=st.integers(1, 9))
def test_a_table_number_without_a_side_is_the_homes_nearest(x, digits):
    assert fmt(x, digits) == rounded_nearest(x, digits)


@given(x=FINITE)
@example(x=-0.0)
def test_a_prose_number_without_a_side_is_the_homes_nearest(x):
    assert fmt4(x) == rounded_nearest(x, 4)


def test_a_missing_value_is_each_layers_own_word():
    assert upper(None) == lower(None) == "n/a" and upper4(None) == lower4(float("inf")) == "none"


def test_the_c6_figure_prints_each_bar_on_its_bounds_safe_side(monkeypatch, tmp_path):
    """C6's bar labels: T13's sound ε (an upper bound) reads back as at least its value, T14's attained ε and the
    audit's lower confidence bound as at most theirs (to nearest, 1.23449 printed 1.234 below a sound ε and 1.23451
    printed 1.235 above a lower bound)."""
    import matplotlib.pyplot as plt

    from tsdp.reports import figures
    from tsdp.reports.claims import CLAIMS

    texts = []

    def keep(fig, out, name):
        texts.extend(t.get_text().strip() for ax in fig.axes for t in ax.texts)
        plt.close(fig)
        return name

    monkeypatch.setattr(figures, "save", keep)
    numbers = {"epsilon_T13_sound": 1.23449, "epsilon_T14_attained": 2.34551, "delta": 1e-3, "k": 2,
               "why_T13_below": "another relation", "audit": {"trials": 1000, "epsilon_lower": 1.98761}}
    CLAIMS["C6"].figure({"numbers": numbers}, tmp_path)
    assert texts == [upper4(1.23449), lower4(2.34551), lower4(1.98761)] == ["1.235", "2.345", "1.987"]


def test_the_composition_figure_names_the_audits_own_confidence(monkeypatch, tmp_path):
    """The composition figure's audited points say the confidence their rows carry (99% here), not a fixed 95%."""
    import matplotlib.pyplot as plt

    from tsdp.reports import figures

    labels = []

    def keep(fig, out, name):
        labels.extend(t.get_text() for lg in fig.legends for t in lg.get_texts())
        plt.close(fig)
        return name

    monkeypatch.setattr(figures, "save", keep)
    rows = [{"steps": 1, "epsilon_sound": 3.0, "epsilon_attained": 2.9, "epsilon_audited_lower": 2.5,
             "confidence": 0.99},
            {"steps": 10, "epsilon_sound": 8.0, "epsilon_attained": 7.0, "epsilon_audited_lower": 4.0,
             "confidence": 0.99}]
    figures.figure_composition({"composition": rows, "delta": 1e-3}, tmp_path)
    assert "audited (99% lower bound)" in labels and not any("95%" in x for x in labels)


def test_c6_table_prints_the_designed_tests_ideal_as_its_reason_does():
    """The designed test's ideal is the ε lower bound the audit expects to certify: C6's reason prints it rounded down
    (lower4, 'certify ε ≥ 0.008438'); its numbers table printed the same number to nearest (0.008439, above it)."""
    from tsdp.reports.claims import CLAIMS
    from tsdp.reports.render import _claim_table

    reach = {"ideal": 0.0084386, "trials_needed": 58855, "cannot": False, "confidence": 0.95, "search_cap": 10**7}
    numbers = {"epsilon_T13_sound": 0.08, "epsilon_T14_attained": 0.37, "audit": {"epsilon_lower": 0.01,
               "trials": 20000, "confidence": 0.95, "gof_pvalue": 0.5}, "k": 2, "N_tot": 6400, "batch_size": 32,
               "delta": 1e-3, "audit_status": "ran", "why_T13_below": "another relation", "power": reach}
    reason = CLAIMS["C6"].rule(numbers)[1]
    rows = dict((r[0], r[1]) for r in _claim_table({"id": "C6", "numbers": numbers})[0][2])
    printed = rows["ε the designed test expects to certify at these trials (ideal)"]
    assert f"ε ≥ {printed} (its ideal)" in reason and float(printed) <= reach["ideal"]
