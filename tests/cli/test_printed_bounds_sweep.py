"""Every command that prints an ε bound prints it on its safe side: a sound ε (an upper bound) rounded up, so the
text reads back as at least the computed number; an attained, audited or certified ε (a lower bound) rounded down,
so it reads back as at most it (the rule's one home: tsdp.verify.rounded). Swept over hypothesis-generated values
through each command's own path, its computation replaced at the seam by a result carrying those values: `tsdp
epsilon`, `tsdp forecast epsilon`, `tsdp audit`, `tsdp audit-model`, `tsdp audit-fn` (and its --plan), `tsdp
check-accountant`, `tsdp calibrate` and `tsdp experiment`'s table (`tsdp report`:
tests/reports/test_report_rounding.py); and `tsdp profile`'s H_α column (a δ, on its bound's side), on real bounds at
hypothesis-generated ε."""
import dataclasses
import re
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cli_run import run_cli

VALUES = st.floats(min_value=1e-7, max_value=1e4, allow_nan=False, allow_infinity=False)
SWEEP = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def on_its_side(text: str, value: float, side: str) -> None:
    printed = float(text)
    assert (printed >= value if side == "upper" else printed <= value), (side, text, value)


@pytest.fixture(scope="module")
def accounted():
    """A real `tsdp epsilon` answer (one step of the default configuration), whose ε values the sweep replaces."""
    from tsdp.theorems.config import TrainingConfig
    from tsdp.verify.accounting import epsilon

    return epsilon(TrainingConfig(), 1e-5, steps=1)


@SWEEP
@given(up=VALUES, low=VALUES)
def test_tsdp_epsilon(monkeypatch, accounted, up, low):
    import tsdp.verify.accounting as accounting

    monkeypatch.setattr(accounting, "epsilon", lambda *a, **k: dataclasses.replace(
        accounted, epsilon=up, epsilon_attained=low))
    code, out, err = run_cli(["epsilon", "--delta", "1e-5", "--steps", "1"])
    assert code == 0, err
    sound, attained = re.search(r"sound (\S+) \(upper bound\), attained (\S+) \(lower bound\)", out).groups()
    on_its_side(sound, up, "upper")
    on_its_side(attained, low, "lower")


def audit_dict(up: float, low: float, violation: bool) -> dict:
    """`tsdp audit --json`'s shape, every upper bound ``up`` and every lower bound ``low``."""
    return {"theorem": "T6", "sound_theorem": "T6", "attained_pair": "T6 construction pair", "trials": 200,
            "steps": 1, "compositions": 1, "device": "cpu", "confidence": 0.95, "delta": 1e-3,
            "epsilon_lower": low, "epsilon_attained": low, "epsilon_sound": up, "ratio": 0.5, "gof_pvalue": 0.5,
            "test": {"value": low, "union_value": low},
            "profile": [{"alpha": 2.0, "h_lower": low, "h_theory": up}],
            "design": None, "run": None,
            "violation_test": {"violation": violation, "sequential": False, "trials": 200, "epsilon_lower": low,
                               "profile_excess": 0.1, "profile": [], "tests": 2, "checkpoints": []},
            "attained_bracket": {"lower": low, "upper": up, "composition_gap": 0.0, "discretization": 1e-4},
            "relation_note": None, "sound_exceeded": violation, "violation": violation}


@SWEEP
@given(up=VALUES, low=VALUES, violation=st.booleans())
def test_tsdp_audit(monkeypatch, up, low, violation):
    import tsdp.attacks.montecarlo.audit as audit_mod

    monkeypatch.setattr(audit_mod, "audit", lambda *a, **k: SimpleNamespace(to_dict=lambda: audit_dict(
        up, low, violation)))
    code, out, err = run_cli(["audit", "--theorem", "T6", "--delta", "1e-3", "--trials", "200"])
    assert code == (1 if violation else 0), err
    lows = (re.findall(r"at δ = \S+: (\S+) \(exact level", out) + re.findall(r"union bound alone: ([\d.]+)\)", out)
            + re.findall(r"ε attained by the construction: (\S+)", out) + re.findall(r"certified ε ≥ (\S+)", out)
            + re.findall(r"attained ε bracket \[(\S+),", out) + re.findall(r"^  2 +(\S+) ", out, re.M))
    ups = (re.findall(r"ε sound \(T6\): (\S+)", out) + re.findall(r"against the sound ε = (\S+),", out)
           + re.findall(r"attained ε bracket \[\S+, (\S+)\]", out) + re.findall(r"^  2 +\S+ +(\S+)$", out, re.M))
    assert len(lows) == 6 + violation and len(ups) == 3 + violation, out
    for text in lows:
        on_its_side(text, low, "lower")
    for text in ups:
        on_its_side(text, up, "upper")


@SWEEP
@given(spent=VALUES, low=VALUES, ceiling=VALUES)
def test_tsdp_audit_model(monkeypatch, spent, low, ceiling):
    import tsdp.attacks.canary.trained_model as trained

    score = SimpleNamespace(epsilon_lower=low, correct=3, guesses=4, side="upper", auc=0.7, ceiling=ceiling,
                            limited_by="canaries")
    result = SimpleNamespace(model="dlinear", canaries=10, included=5, epsilon_budget=spent * 2, epsilon_spent=spent,
                             delta=1e-5, steps=10, violation=low > spent, epsilon_lower=low, confidence=0.95,
                             scores={"loss": score}, as_dict=lambda: {})
    monkeypatch.setattr(trained, "audit_model", lambda *a, **k: result)
    code, out, err = run_cli(["audit-model", "--model", "dlinear", "--canaries", "10", "--epsilon", "1",
                              "--delta", "1e-5"])
    assert code == (1 if low > spent else 0), err
    (budget_spent,) = re.findall(r"\(spent (\S+)\)", out)
    on_its_side(budget_spent, spent, "upper")
    for text in re.findall(r"ε lower bound \(95%\): (\S+)", out) + re.findall(r"certified lower bound ε ≥ (\S+)", out):
        on_its_side(text, low, "lower")
    for text in re.findall(r"sound ε spent = (\S+)", out):
        on_its_side(text, spent, "upper")
    (ceiling_text,) = re.findall(r"at most (\S+) with every guess right", out)
    on_its_side(ceiling_text, ceiling, "upper")


@SWEEP
@given(up=VALUES, low=VALUES, reported=VALUES)
def test_tsdp_check_accountant(monkeypatch, up, low, reported):
    import tsdp.testing as testing
    from tsdp.testing.verdicts import CheckReport, Verdict

    verdict = "unsound" if reported < low else "sound" if reported >= up else "between"
    v = Verdict(verdict, "acc", {"top": "wor", "bottom": "wr", "N": 320, "L": 20, "context_length": 1,
                                 "forecast_length": 1, "batch_size": 32, "instances": 1, "sigma": 1.0,
                                 "sigma_context": 0.0, "sigma_forecast": 0.0},
                1, 1e-5, {"record": "element", "w": 1}, "1-event", reported, low, up, "T6", "T6", pair="the pair")
    monkeypatch.setattr(testing, "check_accountant", lambda *a, **k: CheckReport("acc", None, (v,)))
    code, out, err = run_cli(["check-accountant", "--tsdp", "--delta", "1e-5"])
    assert code in (0, 1), err
    row = next(line for line in out.splitlines() if line.startswith(("unsound", "sound", "between")))
    attained, sound = row.split()[2:4]
    on_its_side(attained, low, "lower")
    on_its_side(sound, up, "upper")
    for text in re.findall(r"(?:an attack attains|\[attained) (\S+)", out):
        on_its_side(text, low, "lower")
    for text in re.findall(r"(?:tsdp's sound ε =|, sound) (\S+) \(", out):
        on_its_side(text, up, "upper")


@SWEEP
@given(spent=VALUES)
def test_tsdp_experiment_table(spent):
    from tsdp.cli.cmd_experiment import render_table
    from tsdp.experiments.table import Row

    row = Row("dlinear", 1.0, "1-event", "wor", "last", 0.1, 0.0, 1, (5,), (spent,), True, (False,))
    split = SimpleNamespace(spec=SimpleNamespace(name="d", forecast_length=1, context_length=4),
                            train=SimpleNamespace(N=3), test=SimpleNamespace(count=2))
    text = render_table([row], {}, [], [], split, SimpleNamespace(delta=1e-7, models=["dlinear"]))
    (printed,) = re.findall(r"5 steps, ε (\S+)", text)
    on_its_side(printed, spent, "upper")


@pytest.fixture(scope="module")
def released():
    """A real `tsdp forecast epsilon` answer (T15, one release), whose ε values the sweep replaces."""
    from tsdp.theorems.bounds.inference import InferenceConfig
    from tsdp.verify.inference_accounting import account

    return account(InferenceConfig(r=0.5, sigma=1.5, w=1, v=1.0, context_length=1, releases=1), delta=1e-5)


@SWEEP
@given(up=VALUES, low=VALUES)
def test_tsdp_forecast_epsilon(monkeypatch, released, up, low):
    import tsdp.verify.inference_accounting as inference

    monkeypatch.setattr(inference, "account", lambda *a, **k: dataclasses.replace(
        released, epsilon=up, epsilon_attained=low))
    code, out, err = run_cli(["forecast", "epsilon", "--r", "0.5", "--sigma", "1.5", "--w", "1", "--v", "1",
                              "--context-length", "1", "--delta", "1e-5"])
    assert code == 0, err
    sound, attained = re.search(r"sound (\S+) \(upper bound\), attained (\S+)", out).groups()
    on_its_side(sound, up, "upper")
    on_its_side(attained, low, "lower")


@pytest.fixture(scope="module")
def calibrated():
    """A real `tsdp calibrate` answer (one step of the default configuration), whose ε values the sweep replaces."""
    from tsdp.theorems.config import TrainingConfig
    from tsdp.verify.calibration import calibrate_sigma

    return calibrate_sigma(TrainingConfig(), 4.0, 1e-5, steps=1)


@SWEEP
@given(up=VALUES)
def test_tsdp_calibrate(monkeypatch, calibrated, up):
    import tsdp.verify.calibration as calibration

    monkeypatch.setattr(calibration, "calibrate_sigma", lambda *a, **k: dataclasses.replace(
        calibrated, epsilon=up, target_epsilon=max(up, 1e-7), sigma_rejected=0.5, epsilon_rejected=up * 1.5))
    code, out, err = run_cli(["calibrate", "--epsilon", "4", "--delta", "1e-5", "--steps", "1"])
    assert code == 0, err
    sound, rejected = re.search(r"gives sound ε = (\S+) ≤ .* gives ε = (\S+)\)", out, re.S).groups()
    on_its_side(sound, up, "upper")
    on_its_side(rejected, up * 1.5, "upper")


@settings(max_examples=6, deadline=None)
@given(eps=st.lists(st.floats(min_value=0.01, max_value=8.0), min_size=1, max_size=4))
@pytest.mark.parametrize("theorem, side", [("T6", "upper"), ("T7", "upper"), ("T9", "lower")])
def test_tsdp_profile(theorem, side, eps):
    """`tsdp profile`'s H_α column: a tight or upper bound's δ reads back as at least the JSON's, a lower bound's
    as at most it."""
    import json

    argv = ["profile", "--theorem", theorem, "--epsilon", *eps]
    code, out, err = run_cli(argv)
    assert code == 0, err
    computed = json.loads(run_cli(argv + ["--json"])[1])["delta"]
    printed = [line.split()[-1] for line in out.splitlines()[2:]]
    assert len(printed) == len(computed)
    for text, value in zip(printed, computed):
        on_its_side(text, value, side)


def _audit_fn_result(low, ceiling, ideal, runs=1, curve_rejected=None):
    """A gradient-canary TrainingAudit's fields as `tsdp audit-fn`'s text reads them (first run: 10 steps)."""
    score = SimpleNamespace(epsilon_lower=low, correct=3, guesses=4, side="upper", auc=0.7, ceiling=ceiling,
                            limited_by="canaries")
    mechanism = SimpleNamespace(tests=(), alpha=0.05)
    gradient = SimpleNamespace(steps=10, optimizer="sgd", clip=1.0, scale=1.0, observed="gradient", data_part=None,
                               data_span=None, epsilon_ideal=ideal, mechanism=mechanism)
    claim = 2 * max(low, ideal, ceiling)  # above every bound: the text says the audit cannot see it
    return SimpleNamespace(canary="gradient", canaries=10, runs=runs, included=5, data_canaries=0, delta=1e-5,
                           confidence=0.95, scores={"loss": score}, gradient=gradient, epsilon_lower=low,
                           epsilon_claimed=claim, curve_rejected=curve_rejected, violation=False, above_claim=False)


@SWEEP
@given(low=VALUES, ceiling=VALUES, ideal=VALUES)
def test_tsdp_audit_fn(low, ceiling, ideal):
    """`tsdp audit-fn`'s text: the certified ε and the claimed mechanism's (lower bounds) rounded down, the ceiling
    (the most every guess right certifies: an upper bound on what the audit can show) rounded up."""
    from tsdp.cli.cmd_audit_fn import _human

    out = _human(_audit_fn_result(low, ceiling, ideal), "train.py:train", sigma=1.0)
    for text in re.findall(r"ε lower bound \(95%\): (\S+)", out):
        on_its_side(text, low, "lower")
    (ideal_text,) = re.findall(r"certifies (\S+): its power at the claim", out)
    on_its_side(ideal_text, ideal, "lower")
    ceilings = re.findall(r"certify at most (\S+) ", out)
    assert len(ceilings) == 2, out
    for text in ceilings:
        on_its_side(text, ceiling, "upper")


def test_tsdp_audit_fn_names_the_steps_its_claimed_curve_covers():
    """The claimed curve is the sound profile over the most steps a run took (claimed_profile): one run's text names
    its steps; several runs' text says the most a run took, never the first run's count (which may be fewer)."""
    from tsdp.cli.cmd_audit_fn import _human

    one = _human(_audit_fn_result(0.5, 3.0, 1.0, runs=1, curve_rejected=False), "train.py:train", sigma=1.0)
    assert "over the 10 steps) is not rejected" in one
    many = _human(_audit_fn_result(0.5, 3.0, 1.0, runs=3, curve_rejected=True), "train.py:train", sigma=1.0)
    assert "over the most steps a run took) is REJECTED" in many and "10 steps)" not in many


@SWEEP
@given(ceiling=VALUES, perfect=VALUES)
def test_tsdp_audit_fn_plan(ceiling, perfect):
    """`tsdp audit-fn --plan`'s text: the ceilings rounded up, a perfect ranking's certified ε rounded down."""
    from tsdp.cli.cmd_audit_fn import _plan_human

    plan = {"canaries_per_run": 10, "canary": "gradient", "runs": 1, "canaries": 10, "delta": 1e-5,
            "confidence": 0.95, "scores": 1, "ceiling": {"dp": ceiling, "steinke": ceiling},
            "perfect_ranking": perfect, "quantile": 0.05}
    out = _plan_human(plan)
    for text in re.findall(r"(?:f-DP test|Steinke et al\.) (\S+?)(?:,|$)", out, re.M):
        on_its_side(text, ceiling, "upper")
    (perfect_text,) = re.findall(r"certifies ≥ (\S+)", out)
    on_its_side(perfect_text, perfect, "lower")


def test_tsdp_profile_dps_prints_its_digits():
    """`tsdp profile --dps 40`'s exact H_α carries the 40 digits it was computed at (not mpmath's default 15): it
    agrees with the bound's own mpmath value at 40 digits to 1e-35, relatively."""
    import json

    import mpmath as mp

    from tsdp.theorems.config import TrainingConfig
    from tsdp.theorems.registry import get

    code, out, err = run_cli(["profile", "--theorem", "T6", "--epsilon", "0.5", "--dps", "40", "--json"])
    assert code == 0, err
    with mp.workdps(40):
        text = json.loads(out)["delta_exact"][0]
        exact = get("T6").profile_mp(TrainingConfig(), mp.exp(mp.mpf("0.5")), 40)
        assert abs(mp.mpf(text) - exact) <= mp.mpf("1e-35") * exact, (text, exact)
