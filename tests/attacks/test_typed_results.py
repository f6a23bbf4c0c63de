"""`tsdp.train` and `tsdp.audit_model` answer with frozen dataclasses whose ``as_dict()`` is the JSON the CLI prints.

The key trees below were recorded from the dict-returning code that came before the typed results (a tiny
`tsdp train --json` / `tsdp audit-model --json` run): the JSON of both commands must keep every key and
its nesting. The attribute tests read every JSON number back through the attributes, so the typed result
and its JSON form cannot disagree.
"""
import contextlib
import dataclasses
import io
import json
import math

import numpy as np
import torch

from tsdp.datasets.benchmarks import DatasetSpec, Windows, hold_out
from tsdp.datasets.series import synthetic_for
from tsdp.training.train import train
from tsdp.cli.main import main
from tsdp.cli.output import dumps
from tsdp.theorems.config import TrainingConfig

CONFIG_KEYS = ["L", "N", "batch_size", "bottom", "context_length", "forecast_length", "instances", "lengths",
               "relation", "sigma", "sigma_context", "sigma_forecast", "top", "v", "w"]
TRAIN_KEYS = ["model", "private", "top", "bottom", "sigma", "warmup_steps", "warmup_sigma", "clip", "epsilon_budget",
              "epsilon", "delta", "theorem", "discretization", "steps", "compositions", "epochs", "crps",
              "untrained_crps", "seasonal_naive_crps", "seconds", "device", "ledger"]
LEDGER_ENTRY_KEYS = ["event", "count", "theorem", "config"]
SELECTION_KEYS = ["validation_loss", "selected_validation_loss", "selected_step", "selected_crps"]
SCORE_KEYS = ["epsilon_lower", "guesses", "correct", "side", "ceiling", "limited_by", "auc"]
AUDIT_KEYS = ["model", "canaries", "included", "epsilon_budget", "epsilon_spent", "sigma", "delta", "confidence",
              "epsilon_lower", "violation", "scores", "steps", "crps", "device", "seconds"]
SMALL = ["--N", "16", "--L", "8", "--batch-size", "4", "--device", "cpu", "--seed", "3"]
TINY = TrainingConfig(N=8, L=20, context_length=4, forecast_length=2, batch_size=4, instances=1, sigma=2.0)


def key_tree(x):
    """The keys of ``x``, recursively (lists element by element); leaves are None."""
    if isinstance(x, dict):
        return {k: key_tree(v) for k, v in x.items()}
    if isinstance(x, list):
        return [key_tree(v) for v in x]
    return None


def tree(keys, **nested):
    return {k: nested.get(k) for k in keys}


def ledger_entry(*config_keys):
    return tree(LEDGER_ENTRY_KEYS, config=dict.fromkeys(config_keys))


def cli_json(*argv):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(argv))
    return code, json.loads(buf.getvalue())


def as_json(result):
    """``result.as_dict()`` through the CLI's JSON writer (non-finite numbers to null)."""
    return json.loads(dumps(result.as_dict()))


def test_train_cli_json_keeps_the_old_key_tree():
    """`tsdp train --json` of a tiny private run: the recorded keys, the ledger's one entry with the full config."""
    code, out = cli_json("train", "--epochs", "1", "--delta", "1e-5", "--json", *SMALL)
    assert code == 0
    expected = tree(TRAIN_KEYS + ["sigma_calibrated", "note"], ledger=[ledger_entry(*CONFIG_KEYS)])
    assert key_tree(out) == expected
    assert list(out) == list(expected)  # the order too


def test_train_result_as_dict_and_attributes_agree_with_the_json():
    """A warm-up run (two ledger entries): ``as_dict()`` has the recorded keys, every field is in it under its name,
    and the attributes carry the JSON's numbers (the ledger entry by entry)."""
    r = train(TINY, "dlinear", synthetic_for(TINY, seed=2), steps=6, delta=1e-5, warmup_steps=3, warmup_sigma=4.0,
              discretization=1e-3, device="cpu", progress=False, n_samples=4)
    d = as_json(r)
    assert key_tree(d) == tree(TRAIN_KEYS, ledger=[ledger_entry(*CONFIG_KEYS), ledger_entry("sigma")])
    assert r.selection is None and r.trained_model is None
    for f in dataclasses.fields(r):
        if f.name in ("ledger", "selection", "trained_model"):
            continue
        assert d[f.name] == getattr(r, f.name), f.name
    assert (r.steps, r.warmup_steps, r.warmup_sigma, r.compositions, r.private) == (9, 3, 4.0, 9, True)
    assert [(e.event, e.count, e.theorem, e.config) for e in r.ledger] == [
        (e["event"], e["count"], e["theorem"], e["config"]) for e in d["ledger"]]
    assert [e.count for e in r.ledger] == [3, 6] and r.ledger[1].config == {"sigma": 2.0}
    assert r.epsilon > 0 and math.isfinite(r.crps) and r.epochs == 9 / TINY.steps_per_epoch


def test_a_nonprivate_train_result_has_nulls_where_the_old_dict_had():
    r = train(TINY, "simple-ff", synthetic_for(TINY, seed=2), steps=2, private=False, device="cpu", progress=False,
              n_samples=2, return_model=True)
    d = r.as_dict()
    assert [k for k, v in d.items() if v is None] == ["warmup_sigma", "clip", "epsilon_budget", "epsilon", "delta",
                                                     "theorem", "discretization", "compositions", "ledger"]
    assert "trained_model" not in d and isinstance(r.trained_model, torch.nn.Module)
    assert r.ledger is None and r.epsilon is None and d["sigma"] == r.sigma == 0.0


def _split(config: TrainingConfig, seed: int):
    """A benchmark-style split of synthetic series: 2·L_F validation steps held out of each, the last L_F as test."""
    f = config.forecast_length
    full = synthetic_for(config.with_(L=config.L + 2 * f), seed=seed)
    train_part, targets = full.split(f)
    spec = DatasetSpec(name="tiny", forecast_length=f, context_length=config.context_length,
                       batch_size=config.batch_size, sigma=config.sigma, lags=(1,), season=2, epochs=1,
                       validation_windows=2, label_noise_v=1.0, source="test")
    return hold_out(spec, train_part, Windows(tuple(train_part.series), np.asarray(targets)))


def test_a_train_result_with_a_split_keeps_the_selection_keys_at_the_top():
    """With ``split`` the old dict had four ``selected_*``/validation keys at its top level; so does ``as_dict()``,
    and ``selection`` carries their numbers."""
    r = train(TINY, "simple-ff", None, split=_split(TINY, 4), steps=4, validate_every=2, delta=1e-5,
              discretization=1e-3, device="cpu", progress=False, n_samples=2)
    d = as_json(r)
    assert key_tree(d) == tree(TRAIN_KEYS + SELECTION_KEYS, ledger=[ledger_entry(*CONFIG_KEYS)])
    s = r.selection
    assert [d[k] for k in SELECTION_KEYS] == [s.validation_loss, s.selected_validation_loss, s.selected_step,
                                              s.selected_crps]
    assert s.selected_step in (0, 2, 4) and s.selected_validation_loss <= s.validation_loss


AUDIT = ["audit-model", "--model", "simple-ff", "--canaries", "8", "--delta", "1e-5", "--epochs", "1", "--json",
         *SMALL]


def test_audit_model_cli_json_keeps_the_old_key_tree():
    """`tsdp audit-model --json` without noise (ε = ∞: a null budget and its note) and with a calibrated σ."""
    code, out = cli_json(*AUDIT, "--epsilon", "inf")
    score = tree(SCORE_KEYS)
    assert code == 0
    expected = tree(AUDIT_KEYS + ["epsilon_budget_note"], scores={"loss": score, "gradient": score})
    assert key_tree(out) == expected and list(out) == list(expected)
    assert out["epsilon_budget"] is None and out["epsilon_spent"] is None
    code, out = cli_json(*AUDIT, "--epsilon", "2")
    assert code == 0 and key_tree(out) == tree(AUDIT_KEYS, scores={"loss": score, "gradient": score})


def test_audit_model_attributes_carry_the_json_numbers():
    from tsdp.attacks.canary.trained_model import audit_model

    cfg = TrainingConfig(N=16, L=8, context_length=1, forecast_length=1, batch_size=4)
    for epsilon in (math.inf, 2.0):
        r = audit_model("simple-ff", cfg, canaries=8, epsilon=epsilon, delta=1e-5, epochs=1, device="cpu")
        d = as_json(r)
        for f in dataclasses.fields(r):
            if f.name not in ("scores", "epsilon_budget"):
                assert d[f.name] == getattr(r, f.name), f.name
        assert d["epsilon_budget"] == (None if math.isinf(epsilon) else epsilon) and r.epsilon_budget == epsilon
        assert list(r.scores) == list(d["scores"]) == ["loss", "gradient"]
        for name, s in r.scores.items():
            assert {k: getattr(s, k) for k in SCORE_KEYS} == d["scores"][name]
        assert r.epsilon_lower == max(s.epsilon_lower for s in r.scores.values())
        assert r.violation == (r.epsilon_spent is not None and r.epsilon_lower > r.epsilon_spent)
        assert 0 <= r.included <= 8 and (r.epsilon_spent is None) == math.isinf(epsilon)


def test_an_undefined_auc_is_a_null_with_its_note():
    """Every canary on one side: the AUC is NaN, written as null with ``auc_note`` (the old dict's with_note)."""
    from tsdp.attacks.canary.certified import ScoreBound
    from tsdp.attacks.canary.steinke_bound import AUC_UNDEFINED

    s = ScoreBound(epsilon_lower=0.0, guesses=0, correct=0, side=None, ceiling=0.0, limited_by="training",
                   auc=math.nan)
    assert json.loads(dumps(s.as_dict())) == {**dict.fromkeys(SCORE_KEYS), "epsilon_lower": 0.0, "guesses": 0,
                                              "correct": 0, "ceiling": 0.0, "limited_by": "training",
                                              "auc_note": "null: " + AUC_UNDEFINED}
