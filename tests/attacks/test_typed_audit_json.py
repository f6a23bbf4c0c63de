"""The Monte Carlo audit and the one-run certifiers answer with frozen typed results whose JSON form is the JSON the
dict-building code gave.

``data/audit_json_before_typed_results.json`` was recorded from the code that came before the typed results
(``tsdp.audit(...).to_dict()`` and the two certifiers' dicts, through the CLI's ``dumps``, on the fixed seeds below;
``seconds`` left out; its numbers re-recorded, keys and order unchanged, when the samplers moved to 53-bit uniform
draws, which changed every seeded trial, and the theory's numbers (sound profile, sound ε, brackets) again when the
sound profile took its 1e-12 margin against the float pair's rounded weights, a relative change of at most 2.5e-12):
the typed results must give every key, in the same order, with the same
numbers. The numbers
are the audit's own (Clopper-Pearson bounds on counts of seeded trials), so a change in any of them is a change in
what the audit computes, not in its form.
"""
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tsdp.attacks.canary import fdp_bound, steinke_bound
from tsdp.attacks.montecarlo.audit import audit
from tsdp.attacks.montecarlo.options import Confidence, Statistic, TrialPlan
from tsdp.cli.output import dumps
from tsdp.theorems.config import TrainingConfig

BEFORE = json.loads((Path(__file__).parent / "data" / "audit_json_before_typed_results.json").read_text())
SMALL = TrainingConfig(N=16, batch_size=4, L=6, context_length=2, forecast_length=1, sigma=0.8)
AUDIT = TrainingConfig(N=320, batch_size=64, L=4, context_length=1, forecast_length=1, sigma=1.0)
TIMINGS = ("seconds",)

AUDITS = {
    "theory": lambda: audit("T6", SMALL, delta=1e-3, steps=2, trials=TrialPlan(400, seed=1, device="cpu")),
    "split": lambda: audit("T6", SMALL, delta=1e-3, trials=TrialPlan(400, seed=2, device="cpu"),
                           statistic=Statistic(threshold="split")),
    "sequential": lambda: audit("T6", AUDIT, delta=1e-3, trials=TrialPlan(4000, seed=0, shard_size=500, device="cpu"),
                                confidence=Confidence(sequential=True), loop="noise_halved"),
    "shuffled": lambda: audit("T1", SMALL.with_(top="shuffle"), delta=1e-3, steps=8,
                              trials=TrialPlan(200, seed=3, device="cpu")),
    "pooled": lambda: audit("T14", AUDIT.with_(L=1), delta=1e-3, trials=TrialPlan(200, seed=4, device="cpu")),
}
SLOW = {"sequential", "shuffled"}


def _evidence():
    rng = np.random.default_rng(5)
    included = rng.random(200) < 0.5
    return {"a": rng.normal(size=200) + included, "b": rng.normal(size=200)}, included


def _json(result) -> dict:
    d = json.loads(dumps(result.as_dict()))
    for key in TIMINGS:
        d.pop(key, None)
        if isinstance(d.get("run"), dict):
            d["run"].pop(key, None)
    return d


DIFFERENCES = ("rounding", "composition_gap")
"""The bracket's differences of two composed ε (upper - lower, sound - upper): each ε is held to 1e-12 relative, so a
difference is held to that of the ε it is taken of (the bracket's ``upper``), absolute. Relative to itself a small
difference carries the cancellation: numpy 2.3.5 / scipy 1.17.1 round the composed PLDs' FFTs so that ``rounding``
(1e-4, the difference of two ε of 7.67) moves by 6e-13, 6e-9 of itself and 8e-14 of the ε."""


def _same(new, old, where="$"):
    """The same keys in the same order, the same nulls and strings, numbers equal to 1e-12 (relative; a bracket's
    :data:`DIFFERENCES` to 1e-12 of its ε, absolute)."""
    if isinstance(old, dict):
        assert isinstance(new, dict) and list(new) == list(old), (where, list(new), list(old))
        for k in old:
            if k in DIFFERENCES and isinstance(old[k], float):
                assert new[k] == pytest.approx(old[k], rel=0, abs=2e-12 * abs(old["upper"])), f"{where}.{k}"
            else:
                _same(new[k], old[k], f"{where}.{k}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(old, float) and not isinstance(new, bool):
        assert new == pytest.approx(old, rel=1e-12, abs=1e-300), where
    else:
        assert new == old and type(new) is type(old), (where, new, old)


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in AUDITS])
def test_audit_json_is_the_json_before_the_typed_result(case):
    result = AUDITS[case]()
    _same(_json(result), BEFORE[case])
    assert json.loads(dumps(result.to_dict())) == json.loads(dumps(result.as_dict()))


def test_an_audit_result_is_frozen_and_its_attributes_carry_the_json_numbers():
    """Every number of the JSON form is read back through the typed attributes (no dict field underneath)."""
    r = AUDITS["theory"]()
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.epsilon_lower = 0.0
    d = BEFORE["theory"]
    assert r.test.value == r.epsilon_lower == pytest.approx(d["test"]["value"], rel=1e-12)
    assert r.test.true_positives == d["test"]["true_positives"] and r.design.side == d["design"]["side"]
    assert r.gof.pvalue == r.gof_pvalue == pytest.approx(d["gof"]["pvalue"], rel=1e-12)
    assert r.attained_bracket.upper == pytest.approx(d["attained_bracket"]["upper"], rel=1e-12)
    assert r.violation_test.checkpoints[-1].trials == d["violation_test"]["trials"] == r.run.trials_run
    assert [p.h_lower for p in r.profile] == pytest.approx([p["h_lower"] for p in d["profile"]], rel=1e-12)
    assert r.config.as_dict() == d["config"]


def test_certifier_json_is_the_json_before_the_typed_result():
    scores, included = _evidence()
    _same(_json(steinke_bound.certify(scores, included, 1e-5, 0.95)), BEFORE["steinke"])
    _same(_json(steinke_bound.certify({"a": scores["a"]}, np.ones(200, bool), 1e-5, 0.95)), BEFORE["steinke_one_side"])
    fdp = fdp_bound.certify(scores["a"] * 3, included, 1e-5, 0.95)
    _same(_json(fdp), BEFORE["fdp"])
    assert fdp.analyses.dp.epsilon_lower == fdp.epsilon_lower == pytest.approx(BEFORE["fdp"]["epsilon_lower"])
    assert fdp.analyses.gdp.epsilon_if_gaussian == fdp.epsilon_if_gaussian


def test_an_undefined_ratio_and_auc_carry_their_notes():
    """A NaN ratio (attained ε = 0) and a NaN AUC (every canary on one side) are nulls with their notes, declared on
    the field (the one JSON path, :class:`tsdp.verify.json_data.Record`)."""
    one_side = steinke_bound.certify({"a": np.arange(10.0)}, np.ones(10, bool), 1e-5, 0.95)
    d = json.loads(dumps(one_side.as_dict()))
    assert d["scores"]["a"]["auc"] is None and d["scores"]["a"]["auc_note"] == "null: " + steinke_bound.AUC_UNDEFINED
    assert math.isnan(one_side.scores["a"].auc)
    r = dataclasses.replace(AUDITS["theory"](), ratio=float("nan"))
    d = json.loads(dumps(r.as_dict()))
    assert d["ratio"] is None and list(d)[-1] == "ratio_note" and d["ratio_note"].startswith("null: ")
