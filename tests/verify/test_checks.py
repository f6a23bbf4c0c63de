"""`verify.checks` and `tsdp verify`: each check on the real catalogue, on
deliberately broken bounds (the suite must catch real mistakes), the plan, the runner and
the CLI. Numbers asserted are the measured ones at the paper's default configuration
(N = 320, Λ = 32, σ = 1, L_C = L_F = 1, L = 20: r = ρ = 0.1).
"""
import json
from dataclasses import dataclass, fields, replace

import mpmath as mp
import numpy as np
import pytest
import sympy as sp

from tsdp.theorems.bounds.base import PairBound, WorMixtureBound
from tsdp.theorems.bounds.bilevel import T10_PRINTED
from tsdp.theorems.bounds.shapes import against_gaussian
from tsdp.theorems.mixture import GaussianMixture, MixturePair
from tsdp.theorems.registry import REGISTRY
from tsdp.verify.checks import axioms, composition, errata, lemmas, ordering, paths, symbolic
from tsdp.verify.checks.common import evaluated_ids, raw_profile
from tsdp.verify.checks.grid import PAPER, fixed_grid, for_bound, random_cases
from tsdp.verify.checks.result import FAIL, CheckResult, VerifyReport
from tsdp.verify.checks.runner import Task, plan, run, run_task, verify
from tsdp.cli.main import main

T = REGISTRY
WOR2 = PAPER.with_(instances=2)


# ----------------------------------------------------------------------------- broken bounds

TRAINING_IDS = evaluated_ids()
HALF_T6 = replace(T["T6"], build=lambda p: against_gaussian([0, 2], [1 - p.rho * p.r / 2, p.rho * p.r / 2], p.sigma))
"""T6 with its weight ρ r halved."""


@dataclass(frozen=True)
class _NoSwap(PairBound):
    """A PairBound that uses the α ≥ 1 pair for α < 1 too (drops the swapped branch)."""

    def pairs(self, config, *, check=True, numeric=False):
        p = self.pair(config, check=check, numeric=numeric)
        return p, p


NOSWAP_T6 = _NoSwap(**{f.name: getattr(T["T6"], f.name) for f in fields(T["T6"])})


@dataclass(frozen=True)
class _NoFloor(WorMixtureBound):
    """T7 without its (1-ρ) max(0, 1-α) term."""

    def profile(self, config, alpha, *, check=True):
        return float(config.rho) * self.base.profile(config, alpha, check=False)

    def profile_mp(self, config, alpha, dps=40, *, check=True):
        with mp.workdps(dps):
            return mp.mpf(config.rho.numerator) / config.rho.denominator * self.base.profile_mp(config, alpha, dps,
                                                                                                 check=False)


NOFLOOR_T7 = _NoFloor(**{f.name: getattr(T["T7"], f.name) for f in fields(T["T7"])})


def _one_based_t3(p):
    lam = p.instances
    weights = [sp.binomial(lam, i) * p.r**i * (1 - p.r) ** (lam - i) for i in range(1, lam + 2)]
    return against_gaussian([2 * (i - 1) for i in range(1, lam + 2)], weights, p.sigma)


HALF_REFERENCE_T6 = replace(T["T6"], build=lambda p: MixturePair.of(
    GaussianMixture.of([0, 2], [1 - p.rho * p.r, p.rho * p.r]), GaussianMixture.point(0).scaled(sp.Rational(1, 2)),
    p.sigma))
"""T6 whose reference Gaussian N(0, σ) lost half its mass."""

ONE_BASED_T3 = replace(T["T3"], build=_one_based_t3)
"""T3 read with the printed 1-based index (erratum 1)."""

PRINTED_AS_T10 = replace(T["T10"], build=T10_PRINTED.build)
"""T10 encoded with the printed pair instead of the proof's construction (erratum 8)."""


# ----------------------------------------------------------------------------- real catalogue


def test_axioms_pass_for_every_bound_and_report_numbers():
    for i in TRAINING_IDS:
        b = T[i]
        r = axioms.profile_axioms(b, for_bound(b, PAPER, instances=None if b.scheme.single_instance else 2), "paper")
        assert r.status == "pass", (i, r.explanation)
        assert r.measured["H(0)"] == 1.0
        assert r.measured["grid_points"] == 5001
        assert r.measured["max_chord_excess_minus_tol"]["max"] <= 0


def test_raw_profile_is_unclamped_and_equals_engine_where_valid():
    alphas = np.array([0.5, 1.0, 2.0, 10.0])
    raw = raw_profile(T["T6"], PAPER, alphas)
    assert np.allclose(raw, T["T6"].profile(PAPER, alphas), atol=1e-15, rtol=1e-12)
    # a reference Gaussian of mass 1/2: the engine's clamp shows 1 - α near 0, the raw tails show the defect
    assert HALF_REFERENCE_T6.profile(PAPER, np.array([0.01]))[0] == pytest.approx(0.99)
    assert raw_profile(HALF_REFERENCE_T6, PAPER, np.array([0.01]))[0] == pytest.approx(0.5 - 0.01, abs=1e-3)
    r = axioms.profile_axioms(HALF_REFERENCE_T6, PAPER, "broken")
    assert r.status == "fail" and r.measured["max_floor_violation_minus_tol"]["max"] > 0.4


def test_closed_form_matches_hand_value_and_engine():
    # T6 at the paper default: w = ρ r = 0.01; at α = 1, H = TV = 0.01 (2Φ(1/σ) - 1) = 0.01 * 0.682689...
    (w, s, a), upper, _ = paths.closed_form()
    val = paths.closed_form_value(mp.mpf("0.01"), mp.mpf(1), mp.mpf(1))
    assert float(val) == pytest.approx(0.01 * float(mp.erf(1 / mp.sqrt(2))), rel=1e-14)
    assert float(T["T6"].profile(PAPER, np.array([1.0]))[0]) == pytest.approx(0.006826894921370841, rel=1e-12)
    for i in ("T1", "T6", "T11", "T12", "T13"):
        b = T[i]
        r = paths.closed_form_paths(b, for_bound(b, PAPER), "paper")
        assert r.status == "pass", (i, r.explanation)
        assert float(r.measured["max_mp_gap"]) < 1e-30


def test_pld_pessimism_at_paper_default():
    r = paths.pld_pessimism(T["T6"], PAPER, "paper")
    assert r.status == "pass", r.explanation
    rows = r.measured["rows"]
    # exact one-step ε of T6 at δ = 1e-5 is 3.0253...; the PLD overshoots by less than one cell (1e-3)
    assert rows[1]["eps_exact"] == pytest.approx(3.02535, abs=1e-4)
    assert 0 <= rows[1]["eps_pld_minus_exact"] <= 1e-3


def test_t5_and_sweeps_pass():
    assert ordering.t5_monotonicity(T["T1"], T["T2"], T["T3"], T["T4"], PAPER, "paper").status == "pass"
    for par, inc, vals, cfgs in ordering.parameter_sweeps(T["T11"], for_bound(T["T11"], PAPER)):
        r = ordering.monotone_in(T["T11"], cfgs, par, inc, "paper", vals)
        assert r.status == "pass", (par, r.explanation)


def test_sweep_catches_reversed_order():
    # the σ sweep read as if the profile had to grow with σ must fail: it shrinks
    _, _, vals, cfgs = [s for s in ordering.parameter_sweeps(T["T6"], PAPER) if s[0] == "sigma"][0]
    r = ordering.monotone_in(T["T6"], cfgs, "sigma", True, "paper", vals)
    assert r.status == "fail"
    assert r.measured["worst_step"]["max"] > 1e-3


def test_errata_findings_with_numbers():
    e9 = errata.erratum_9_t3_vs_t2(T["T2"], T["T3"], PAPER, "paper")
    assert e9.status == "finding"
    lo, hi = e9.measured["rel_gap_range"]
    assert 0.11 < lo < 0.13 and 0.27 < hi < 0.29  # T3 is 11.9-27.8 % below T2 at r = 0.1, λ = 2..4
    assert 0.15 < e9.measured["lambda=2"]["rel_gap_eps=0.5"] < 0.16

    e8 = errata.erratum_8_printed_t10(T["T10"], T["T10-printed"], T["T8"], WOR2.with_(bottom="poisson"), "paper")
    assert e8.status == "finding"
    assert e8.measured["max_printed_minus_T8"]["max"] <= 0  # the printed form stays below T8 ...
    assert e8.measured["max_T10_minus_printed"]["max"] == pytest.approx(0.00286, rel=0.01)  # ... and below T10
    assert "stays below T8" in e8.explanation

    e1 = errata.erratum_1_index(T["T3"], T["T9"], T["T14"], PAPER, "paper")
    assert e1.status == "finding"
    assert e1.measured["lambda=2"]["printed_sum_at_r=0.1"] == pytest.approx(0.19)
    assert e1.measured["lambda=4"]["printed_sum_at_r=0.1"] == pytest.approx(1 - 0.9**4)

    pw = lemmas.printed_joint_convexity(np.random.default_rng(0), 3, "s0")
    assert pw.status == "finding" and float(pw.measured["max_abs_gap_mp"]) > 1e-2


def test_symbolic_reductions_and_a_false_one():
    S = symbolic.S
    assert symbolic.reduction(T["T11"], T["T6"], PAPER, {S["sigma_C"]: 0, S["sigma_F"]: 0}, "0").status == "pass"
    assert symbolic.reduction(T["T6"], T["T1"], PAPER, {S["rho"]: 1}, "rho=1").status == "pass"
    wrong = symbolic.reduction(T["T6"], T["T1"], PAPER, {S["rho"]: sp.Rational(1, 2)}, "rho=1/2")
    assert wrong.status == "fail"
    assert wrong.measured["reduced"] == "H_α(MoG([0, 2], [1 - r/2, r/2], σ) ‖ N(0, σ)), σ = sigma"


# ----------------------------------------------------------------------------- broken bounds are caught


def test_halved_t6_weight_is_caught():
    S = symbolic.S
    assert paths.closed_form_paths(HALF_T6, PAPER, "broken").status == "fail"
    eq = ordering.order(T["T9"], HALF_T6, PAPER.with_(instances=1), PAPER, "broken", equal=True)
    assert eq.status == "fail" and eq.measured["max_abs_difference"]["max"] > 1e-3
    assert symbolic.reduction(T["T11"], HALF_T6, PAPER, {S["sigma_C"]: 0, S["sigma_F"]: 0}, "0").status == "fail"
    assert symbolic.reduction(HALF_T6, T["T1"], PAPER, {S["rho"]: 1}, "rho=1").status == "fail"
    assert ordering.order(T["T11"], HALF_T6, for_bound(T["T11"], PAPER), label="broken").status == "fail"
    comp = composition.composition(HALF_T6, PAPER, "broken", schedule=(1, 10))
    assert comp.status == "fail" and comp.measured["min_sound_minus_attained"] < -1


def test_dropped_alpha_below_one_branch_is_caught():
    r = axioms.profile_self_symmetry(NOSWAP_T6, PAPER, "broken")
    assert r.status == "fail" and float(r.measured["max_abs_gap"]) > 1e-4
    assert paths.closed_form_paths(NOSWAP_T6, PAPER, "broken").status == "fail"
    # the axioms alone cannot see it: H_α(P‖Q) on α < 1 is a valid profile of another pair
    assert axioms.profile_axioms(NOSWAP_T6, PAPER, "broken").status == "pass"


def test_t7_without_floor_term_is_caught():
    r = axioms.profile_axioms(NOFLOOR_T7, WOR2, "broken")
    assert r.status == "fail" and r.measured["H(0)"] == pytest.approx(0.05)  # ρ = 16/320
    assert ordering.order(T["T9"], NOFLOOR_T7, WOR2, label="broken").status == "fail"


def test_one_based_t3_is_caught():
    cfg = PAPER.with_(top="deterministic", instances=2)
    ax = axioms.profile_axioms(ONE_BASED_T3, cfg, "broken")
    # the two branches no longer meet at α = 1 (P has mass 0.19): the profile jumps, so it is not convex
    assert ax.status == "fail" and ax.measured["max_chord_excess_minus_tol"]["max"] > 0.4
    assert errata.erratum_1_index(ONE_BASED_T3, T["T9"], T["T14"], PAPER, "broken").status == "fail"
    eq = ordering.order(ONE_BASED_T3, T["T1"], cfg.with_(instances=1), cfg.with_(instances=1), "broken", equal=True)
    assert eq.status == "fail"


def test_printed_pair_encoded_as_t10_is_caught():
    cfg = WOR2.with_(bottom="poisson")
    r = errata.erratum_8_printed_t10(PRINTED_AS_T10, T["T10-printed"], T["T8"], cfg, "broken")
    assert r.status == "fail" and "not reproduced" in r.explanation


def test_quick_plan_against_broken_t6_fails_the_right_checks():
    report = verify(quick=True, bounds={"T6": HALF_T6}, select="T6")
    failed = {c.name for c in report.with_status(FAIL)}
    assert report.failed >= 5
    for name in ("P6.closed_form[T6]@paper", "P2.order[T9=T6]@paper,lam=1", "P2.order[T11≤T6]@paper",
                 "P7.reduction[T11->T6:sigma_C=sigma_F=0]@paper", "P7.reduction[T6->T1:rho=1]@paper",
                 "P8.composition[T6]@paper"):
        assert name in failed, (name, sorted(failed))
    assert "P1.axioms[T6]@paper" not in failed  # a halved weight is still a valid profile


# ----------------------------------------------------------------------------- plan, runner, CLI


def test_plans_cover_every_theorem_with_enough_distinct_checks():
    quick, full = plan(quick=True, seed=0), plan(quick=False, seed=0)
    for tasks in (quick, full):
        names = [t.name for t in tasks]
        assert len(names) == len(set(names))
        ids = {i for t in tasks for i in t.theorems}
        assert set(TRAINING_IDS) | {"T5"} <= ids
    assert len(quick) >= 60 and len(full) >= 1000
    assert {t.property for t in full} == set(range(1, 10))


def test_fixed_grid_has_paper_default_and_c1_c2_grid():
    grid = {c.label: c.config for c in fixed_grid()}
    p = grid["paper"]
    assert (p.N, p.batch_size, p.sigma, p.instances, p.context_length, p.forecast_length, p.L) == (320, 32, 1.0, 1, 1,
                                                                                                   1, 20)
    pairs = {(float(c.r), c.batch_size / c.N) for c in grid.values()}
    assert pairs == {(0.5, 0.5), (0.5, 0.1), (0.1, 0.5), (0.1, 0.1)}


def test_random_cases_depend_on_seed_only():
    assert [c.config for c in random_cases(3, 4)] == [c.config for c in random_cases(3, 4)]
    assert [c.config for c in random_cases(3, 4)] != [c.config for c in random_cases(4, 4)]


def test_a_crashing_check_is_a_failure():
    def boom():
        raise RuntimeError("kaboom")

    res = run_task(Task("X.boom@none", 1, ("T1",), boom))
    assert res.status == "fail" and "kaboom" in res.explanation


def test_forked_run_matches_serial_run():
    tasks = [t for t in plan(quick=True, seed=0) if t.name.startswith("P7.")]
    serial = [r.as_dict() for r in run(tasks, jobs=1)]
    forked = [r.as_dict() for r in run(tasks, jobs=2)]
    strip = lambda rs: [{k: v for k, v in r.items() if k != "elapsed_s"} for r in rs]  # noqa: E731
    assert strip(serial) == strip(forked)
    assert len(serial) == 8


def test_cli_json(capsys):
    rc = main(["verify", "--quick", "--json", "--select", "P7."])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["summary"] == {"pass": 8, "fail": 0, "finding": 0, "total": 8}
    c = out["checks"][0]
    assert set(c) >= {"name", "theorems", "config", "measured", "tolerance", "status", "explanation"}


def test_cli_human_lists_findings(capsys):
    rc = main(["verify", "--quick", "--select", "E.erratum9"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "FINDINGS" in out and "rel_gap_range" in out and "1 finding" in out


def test_cli_exit_code_is_one_when_a_check_fails(monkeypatch, capsys):
    import tsdp.verify.checks.runner as runner

    bad = CheckResult("X.bad@none", 2, ("T6",), "fail", "forced failure", {"gap": 1.0}, {"abs": 0.0})
    monkeypatch.setattr(runner, "plan", lambda *a, **k: [Task("X.bad@none", 2, ("T6",), lambda: bad)])
    assert main(["verify", "--quick"]) == 1
    out = capsys.readouterr().out
    assert "FAILURES (1)" in out and "forced failure" in out and "gap = 1" in out


def test_verify_returns_a_frozen_report_whose_json_is_the_clis(capsys):
    """``verify`` returns a :class:`VerifyReport`; its JSON form is ``tsdp verify --json``'s object, keys in the
    released order, each check as its own JSON form, the counts summing to the total."""
    import dataclasses

    report = verify(quick=True, select="E.erratum9")
    assert isinstance(report, VerifyReport) and [c.name for c in report.with_status("finding")] == \
        ["E.erratum9[T3<T2]@paper"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.seed = 1
    data = json.loads(json.dumps(report.as_dict()))
    assert list(data) == ["mode", "seed", "elapsed_s", "checks", "summary", "theorems_covered"]
    assert data["mode"] == "quick" and data["seed"] == 0 and data["theorems_covered"] == ["T2", "T3"]
    assert data["checks"] == [json.loads(json.dumps(c.as_dict())) for c in report.checks]
    assert data["summary"] == {"pass": 0, "fail": 0, "finding": 1, "total": 1} and report.failed == 0
    assert main(["verify", "--quick", "--select", "E.erratum9", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)

    def timeless(d):
        return {k: [{n: x for n, x in c.items() if n != "elapsed_s"} for c in v] if k == "checks" else v
                for k, v in d.items() if k != "elapsed_s"}

    assert timeless(cli) == timeless(data)


def test_cli_rejects_empty_selection(capsys):
    assert main(["verify", "--quick", "--select", "no-such-check"]) == 2
    assert "no check name contains" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_run_as_a_subprocess_passes():
    """`python -m verify.cli verify --quick --json` end to end (its runtime, ~10 s, is reported, not asserted)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "tsdp.cli", "verify", "--quick", "--json"], capture_output=True,
                          text=True, timeout=600)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    assert report["summary"]["fail"] == 0 and report["summary"]["finding"] == 4
    assert report["summary"]["total"] >= 60


def test_attained_epsilon_is_monotone_in_steps_for_tiny_losses():
    """Found by `tsdp verify --seed 1`: with a per-step loss far below the grid width the
    optimistic PLD composed directly drifts down (ε_att 0.0053, 0.0100, 0.0 after 1, 10, 100
    steps); the accountant's envelope over 1, 2, 4, ..., S compositions keeps it monotone."""
    from tsdp.verify.pld import PldSettings, compose, pair_pld
    from tsdp.theorems.config import TrainingConfig

    cfg = TrainingConfig(N=158, L=74, context_length=1, forecast_length=4, batch_size=28, instances=2, sigma=3.7575,
                         top="pooled", w=2)
    r = composition.composition(T["T13"], cfg, "rand1.3")
    assert r.measured["max_attained_drop"] <= composition.COMPOSITION_TOL, r.explanation
    # the drift the envelope removes is real: composed directly, 100 steps give less than 10
    one = pair_pld(T["T13"].pair(cfg), PldSettings(composition.DISCRETIZATION), pessimistic=False)
    direct = [float(compose(one, n).get_epsilon_for_delta(1e-5)) for n in (10, 100)]
    assert direct[1] < direct[0]
    assert [row["attained"] for row in r.measured["rows"]][2] >= direct[0]
