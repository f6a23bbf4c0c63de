"""Planted bugs in a user-style Opacus loop (tsdp.bench.planted_opacus) audited with 1000 white-box
gradient canaries hooked into the DPOptimizer, one run each, seed 0 (so each outcome is fixed).

The claim is the intended training's sound ε at δ = 1e-5 for 40 steps at σ = 8. The slow tests assert that each
bug's certified ε clears a fixed floor below what seed 0 reaches, and is flagged, and that the correct loop is not
(by Steinke et al.'s theorem a correct loop is flagged with probability ≤ 5%); `tsdp bench planted-opacus` prints the
figures themselves.
"""
import numpy as np
import pytest

pytest.importorskip("opacus")

from tsdp.attacks.canary.evidence import certify_evidence  # noqa: E402
from tsdp.bench.planted_opacus import PlantedRun, claimed_epsilon  # noqa: E402

# `bench_planted(canaries=50, runs=1, null_audits=2, bugs=("correct", "noise-off"))` as the code that built it as a dict
# gave it (through the CLI's dumps; each row's wall ``seconds`` left out; the AUCs re-recorded when the samplers moved to
# 53-bit uniform draws, keys and order unchanged)
RELEASED_SMALL = {
    "rows": [{"bug": "correct", "canaries": 50, "runs": 1, "epsilon_claimed": 1.6959926617686145, "epsilon_lower": 0.0,
              "flagged": False, "auc": {"sum": 0.6784, "mixture": 0.552}, "seconds": None},
             {"bug": "noise-off", "canaries": 50, "runs": 1, "epsilon_claimed": 1.6959926617686145,
              "epsilon_lower": 1.7433929443359375, "flagged": True, "auc": {"sum": 0.9474548440065681, "mixture": 1.0},
              "seconds": None}],
    "false_flags": {"audits": 2, "flagged": 0, "rate": 0.0, "designed": 0.050000000000000044}}


def _audit(bug):
    evidence = PlantedRun(bug, 1000)(np.random.SeedSequence(0))
    return certify_evidence(evidence, 1e-5, 0.95, claimed=claimed_epsilon(bug))


def test_dpoptimizer_hook_canaries_are_scored_on_the_stepped_gradient():
    """add_canaries scores the gradient the wrapped SGD stepped on: over the run, Σ_t ⟨g̃_t, u_i⟩ = -⟨θ_T - θ_0, u_i⟩ / η
    (a second method: the parameters' total move, read outside the hooks), for every canary."""
    import torch

    from tsdp.attacks.integrations.dpoptimizer_canaries import add_canaries
    from tsdp.bench.planted_opacus import CONFIG, DATA, LR, opacus_train

    held = {}

    def hook(optimizer):
        held["canaries"] = add_canaries(optimizer, CONFIG, 50, seed=3)
        held["params"] = [p for g in optimizer.param_groups for p in g["params"]]
        held["start"] = torch.cat([p.detach().reshape(-1).clone() for p in held["params"]])

    opacus_train(DATA.split(1)[0].series, CONFIG, sigma=CONFIG.sigma, clip=1.0, steps=12, lr=LR, seed=0, hook=hook)
    c = held["canaries"]
    moved = torch.cat([p.detach().reshape(-1) for p in held["params"]]) - held["start"]
    expected = -(c.directions.double() @ moved.double()).numpy() / LR
    assert c.steps == 12 and c.participations.sum() > 0
    np.testing.assert_allclose(c.evidence().scores["sum"], expected, rtol=1e-4, atol=1e-4)


def test_dpoptimizer_hook_canaries_separate_without_noise():
    """The DPOptimizer hook (canaries added to summed_grad before Opacus's noise, scored on the stepped gradient): with
    noise_multiplier = 0, 300 canaries over 40 steps, the mixture score ranks included canaries first (AUC > 0.95)."""
    from tsdp.attacks.canary.steinke_bound import auc

    evidence = PlantedRun("noise-off", 300)(np.random.SeedSequence(1))
    assert auc(evidence.scores["mixture"], evidence.included) > 0.95


@pytest.mark.slow
@pytest.mark.parametrize("bug,lower", [("noise-off", 3.0), ("noise-10x-small", 1.8), ("clipping-off", 3.0)])
def test_planted_bug_is_flagged(bug, lower):
    r = _audit(bug)
    assert r.epsilon_lower >= lower and r.violation, r


@pytest.mark.slow
def test_correct_loop_is_not_flagged():
    r = _audit("correct")
    assert 1.6 < r.epsilon_claimed < 1.8 and not r.violation, r


def test_format_names_the_bugs_not_caught_as_findings():
    """The table's rows carry the best AUC; a planted bug that is not flagged is named as a finding, the correct loop
    never is; the false-flag line gives the count, the rate and the designed level."""
    from tsdp.bench.planted_opacus import format_bench

    def row(bug, flagged, auc):
        return {"bug": bug, "canaries": 1000, "runs": 1, "epsilon_claimed": 1.696, "epsilon_lower": 4.3 * flagged,
                "flagged": flagged, "auc": {"sum": auc, "mixture": auc / 2}}

    text = format_bench({"rows": [row("correct", False, 0.5), row("noise-off", True, 1.0),
                                  row("poisson-claim", False, 0.547)],
                         "false_flags": {"audits": 100, "flagged": 3, "rate": 0.03, "designed": 0.05}})
    lines = text.splitlines()
    assert lines[2].split()[-2:] == ["1.000", "yes"] and lines[3].split()[-2:] == ["0.547", "no"]
    assert lines[4].endswith(": poisson-claim")
    assert lines[5] == "correct loop flagged in 3 of 100 audits (rate 0.030; designed at most 0.05)"


def _without_seconds(form):
    return {**form, "rows": [{**row, "seconds": None} for row in form["rows"]]}


def test_the_bench_result_is_a_frozen_record_with_the_json_form_of_the_dict():
    """Built by hand, the record's JSON form has the released keys in their order, and the table renders the same
    from the record and from its JSON form (what the docs' benchmark page passes)."""
    import dataclasses

    from tsdp.bench.planted_opacus import BugAudit, FalseFlags, PlantedOpacusBench, format_bench

    rows = tuple(BugAudit(**{**row, "seconds": 1.0}) for row in RELEASED_SMALL["rows"])
    bench = PlantedOpacusBench(rows, FalseFlags(**RELEASED_SMALL["false_flags"]))
    form = bench.as_dict()
    assert _without_seconds(form) == RELEASED_SMALL
    assert [list(row) for row in form["rows"]] == [list(row) for row in RELEASED_SMALL["rows"]]
    assert list(form) == list(RELEASED_SMALL) and list(form["false_flags"]) == list(RELEASED_SMALL["false_flags"])
    assert format_bench(bench) == format_bench(form)
    with pytest.raises(dataclasses.FrozenInstanceError):
        bench.false_flags.flagged = 1


@pytest.mark.slow  # three short Opacus trainings of 50 canaries (~5 s)
def test_the_bench_gives_the_released_json_on_fixed_seeds():
    import json

    from tsdp.bench.planted_opacus import bench_planted
    from tsdp.cli.output import dumps

    got = _without_seconds(json.loads(dumps(bench_planted(canaries=50, runs=1, null_audits=2,
                                                          bugs=("correct", "noise-off")).as_dict())))
    assert [list(row) for row in got["rows"]] == [list(row) for row in RELEASED_SMALL["rows"]]
    for g, w in zip(got["rows"], RELEASED_SMALL["rows"]):
        assert {k: g[k] for k in ("bug", "canaries", "runs", "flagged")} == \
            {k: w[k] for k in ("bug", "canaries", "runs", "flagged")}
        assert (g["epsilon_claimed"], g["epsilon_lower"]) == pytest.approx((w["epsilon_claimed"], w["epsilon_lower"]),
                                                                           rel=1e-9)
        assert g["auc"] == pytest.approx(w["auc"], rel=1e-9)
    assert got["false_flags"] == RELEASED_SMALL["false_flags"]
