"""`tsdp.train`, `tsdp.audit_model` and `tsdp.audit_training` answer with frozen dataclasses whose ``as_dict()`` is
the JSON the CLI prints.

The key trees below were recorded from the dict-returning code that came before the typed results (tiny
`tsdp train --json` / `tsdp audit-model --json` / `tsdp audit-fn --json` runs, audit-fn's for every combination of
canary, analysis, claim and runs below; that test passes on the dict-returning code too): the JSON of these commands
must keep every key and its nesting. The attribute tests read every JSON number back through the attributes, so the
typed result and its JSON form cannot disagree.
"""
import contextlib
import dataclasses
import io
import json
import math
import os
import sys

import numpy as np
import torch

from tsdp.datasets.benchmarks import DatasetSpec, Windows, hold_out
import pytest

from tsdp.datasets.series import synthetic_for
from tsdp.training.options import Budget, Checkpoints, Evaluation
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
    r = train(TINY, "dlinear", synthetic_for(TINY, seed=2),
              budget=Budget(steps=6, delta=1e-5, warmup_steps=3, warmup_sigma=4.0, discretization=1e-3),
              evaluation=Evaluation(n_samples=4), device="cpu", progress=False, seed=0)
    d = as_json(r)
    assert key_tree(d) == tree(TRAIN_KEYS, ledger=[ledger_entry(*CONFIG_KEYS), ledger_entry("sigma")])
    assert r.selection is None and r.trained_model is None
    for f in dataclasses.fields(r):
        if f.name in ("ledger", "selection", "trained_model"):
            continue
        if f.name in ("batch_capacity", "overflow_steps"):  # the eager step path (the CPU default): no fixed shape
            assert r.batch_capacity is None and f.name not in d
            continue
        assert d[f.name] == getattr(r, f.name), f.name
    assert (r.steps, r.warmup_steps, r.warmup_sigma, r.compositions, r.private) == (9, 3, 4.0, 9, True)
    assert [(e.event, e.count, e.theorem, e.config) for e in r.ledger] == [
        (e["event"], e["count"], e["theorem"], e["config"]) for e in d["ledger"]]
    assert [e.count for e in r.ledger] == [3, 6] and r.ledger[1].config == {"sigma": 2.0}
    assert r.epsilon > 0 and math.isfinite(r.crps) and r.epochs == 9 / TINY.steps_per_epoch


def test_a_nonprivate_train_result_has_nulls_where_the_old_dict_had():
    r = train(TINY, "simple-ff", synthetic_for(TINY, seed=2), budget=Budget(steps=2, private=False),
              evaluation=Evaluation(n_samples=2), checkpoints=Checkpoints(return_model=True), device="cpu",
              progress=False, seed=0)
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
    r = train(TINY, "simple-ff", _split(TINY, 4), budget=Budget(steps=4, delta=1e-5, discretization=1e-3),
              evaluation=Evaluation(n_samples=2), checkpoints=Checkpoints(validate_every=2), device="cpu",
              progress=False, seed=0)
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
    from tsdp.attacks.canary.trained_model import ModelTraining, audit_model

    cfg = TrainingConfig(N=16, L=8, context_length=1, forecast_length=1, batch_size=4)
    for epsilon in (math.inf, 2.0):
        r = audit_model("simple-ff", cfg, canaries=8, epsilon=epsilon, delta=1e-5,
                        training=ModelTraining(epochs=1, device="cpu"))
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


FDP_SCORE_KEYS = ["canaries", "delta", "confidence", "guess_sets", "significance", "analyses", "epsilon_lower",
                  "epsilon_if_gaussian", "violation", "ceiling", "limited_by", "auc"]
GUESS_SET_KEYS = ["epsilon_lower", "k_in", "k_out", "correct"]
GAUSSIAN_KEYS = ["epsilon_if_gaussian", "mu_lower", "k_in", "k_out", "correct"]
ANALYSES = ["dp", "gdp", "steinke"]
BOUND_KEYS = ["canaries", "included", "delta", "confidence", "epsilon_lower", "epsilon_claimed", "violation",
              "above_claim", "curve_rejected", "scores"]
GRADIENT_KEYS = ["optimizer", "steps", "clip", "scale", "observed", "data_span", "data_part", "parameters",
                 "epsilon_ideal", "mechanism", "mechanism_failed"]
MECHANISM_TEST_KEYS = ["name", "tested", "failed", "alpha", "p_value", "measured", "declared", "steps_failing",
                       "steps", "finding"]
DATA_PART_KEYS = ["mode", "atoms", "steps", "windows_per_step", "seconds_per_step", "summary"]
ENGINE_KEYS = ["executor", "workers", "cluster", "shards_planned", "shards_run", "retries", "stopped_early",
               "seconds", "run_seconds"]
AUDIT_FN_KEYS = ["canary", "analysis", "data_canaries"]
CLI_KEYS = ["train", "sigma"]

USER_TRAINING = """
import numpy as np
import torch


def gradient(series):  # a linear model, 5 SGD steps on every window's last value, with noise on the step
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.as_tensor(np.stack([s[:4] for s in series]), dtype=torch.float32)
    y = torch.as_tensor(np.stack([s[4:5] for s in series]), dtype=torch.float32)
    for _ in range(5):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            p.grad += torch.randn_like(p) * 0.5
        opt.step()
    return model


def loss(model, context, forecast):
    return ((model(context[:, -4:]) - forecast) ** 2).sum(dim=1)


def last_value(series):  # a returned model that forecasts the last context value
    return lambda context, forecast: ((forecast - context[:, -1:]) ** 2).sum(dim=1)
"""
AUDIT_FN = ["audit-fn", "--N", "4", "--L", "40", "--context-length", "4", "--forecast-length", "1", "--batch-size",
            "4", "--sigma", "4", "--delta", "1e-5", "--seed", "1", "--json"]
AUDIT_FN_SPIKE = [a for i, a in enumerate(AUDIT_FN) if "--sigma" not in AUDIT_FN[max(i - 1, 0):i + 1]]
"""AUDIT_FN less --sigma, a claim's flag that spike canaries do not use (refused)."""


@pytest.fixture(scope="module")
def user_training(tmp_path_factory):
    """The folder of an importable module of user training functions (``USER_TRAINING``), and its name."""
    folder = tmp_path_factory.mktemp("user")
    name = f"typed_audit_user_{os.getpid()}"
    (folder / f"{name}.py").write_text(USER_TRAINING)
    yield folder, name
    sys.modules.pop(name, None)


def score_tree(analysis: str, claimed: bool):
    """The key tree of one score: Steinke et al.'s bound, or the f-DP test (``claimed``: with the claimed curve)."""
    if analysis == "steinke":
        return tree(SCORE_KEYS)
    names = ANALYSES + (["claimed"] if claimed else [])
    analyses = dict(dp=tree(GUESS_SET_KEYS), gdp=tree(GAUSSIAN_KEYS), steinke=tree(GUESS_SET_KEYS),
                    **({"claimed": tree(["violation"])} if claimed else {}))
    return tree(FDP_SCORE_KEYS, significance=dict.fromkeys(names), analyses=analyses, ceiling=dict.fromkeys(ANALYSES))


def audit_fn_tree(canary: str, analysis: str, *, runs: bool = False, data_part: bool = False, cli: bool = True):
    """The recorded key tree of `tsdp audit-fn --json` (``cli`` False: of ``TrainingAudit.as_dict()``, without the
    CLI's ``train``, ``sigma`` and ``device``), with the two keys added since it was recorded: ``device`` and the
    mechanism tests' third entry (sampling)."""
    names = ["sum", "mixture"] if canary == "gradient" else ["memorisation"]
    score = score_tree(analysis, claimed=canary == "gradient")
    keys = BOUND_KEYS + AUDIT_FN_KEYS + (CLI_KEYS if cli else []) + (["runs", "engine"] if runs else [])
    nested = {"scores": {n: score for n in names}, "engine": tree(ENGINE_KEYS) if runs else None}
    if canary == "gradient":  # the CLI adds where the audit's tensors ran (`--device`, added with the sampling test)
        keys += GRADIENT_KEYS + (["device"] if cli else [])
        nested.update(mechanism=tree(["failed", "alpha", "tests"], tests=[tree(MECHANISM_TEST_KEYS)] * 3),
                      data_part=tree(DATA_PART_KEYS) if data_part else None)
    else:
        keys += ["spike"]
    return tree(keys, **nested)


AUDIT_FN_CASES = {
    "gradient, fdp": (["--train", "{m}:gradient"], dict(canary="gradient", analysis="fdp")),
    "gradient, fdp, claim": (["--train", "{m}:gradient", "--epsilon", "1"], dict(canary="gradient", analysis="fdp")),
    "gradient, steinke": (["--train", "{m}:gradient", "--analysis", "steinke"],
                          dict(canary="gradient", analysis="steinke")),
    "gradient, steinke, claim": (["--train", "{m}:gradient", "--analysis", "steinke", "--epsilon", "1"],
                                 dict(canary="gradient", analysis="steinke")),
    "gradient, fdp, loss, data canaries": (["--train", "{m}:gradient", "--loss", "{m}:loss", "--data-canaries", "1"],
                                           dict(canary="gradient", analysis="fdp", data_part=True)),
    "gradient, steinke, runs": (["--train", "{m}:gradient", "--analysis", "steinke", "--runs", "2"],
                                dict(canary="gradient", analysis="steinke", runs=True)),
    "spike, fdp": (["--train", "{m}:last_value", "--canary", "spike"], dict(canary="spike", analysis="fdp")),
    "spike, fdp, claim": (["--train", "{m}:last_value", "--canary", "spike", "--epsilon", "1"],
                          dict(canary="spike", analysis="fdp")),
    "spike, steinke": (["--train", "{m}:last_value", "--canary", "spike", "--analysis", "steinke"],
                       dict(canary="spike", analysis="steinke")),
    "spike, steinke, claim, runs": (["--train", "{m}:last_value", "--canary", "spike", "--analysis", "steinke",
                                     "--epsilon", "1", "--runs", "2"], dict(canary="spike", analysis="steinke",
                                                                            runs=True)),
    "spike, fdp, runs": (["--train", "{m}:last_value", "--canary", "spike", "--runs", "2"],
                         dict(canary="spike", analysis="fdp", runs=True)),
}


@pytest.mark.parametrize("case", sorted(AUDIT_FN_CASES))
def test_audit_fn_cli_json_keeps_the_old_key_tree(case, user_training, monkeypatch):
    """`tsdp audit-fn --json` for each combination of canary (gradient / spike), analysis (fdp / steinke), claim (with
    or without --epsilon), --runs (the engine's keys) and a given loss (the data part's keys): the recorded key tree,
    nested parts included (the scores, the f-DP analyses, the mechanism tests)."""
    folder, name = user_training
    monkeypatch.chdir(folder)
    argv, shape = AUDIT_FN_CASES[case]
    common = AUDIT_FN if shape["canary"] == "gradient" else AUDIT_FN_SPIKE  # spike canaries refuse --sigma
    code, out = cli_json(*common, *(a.format(m=name) for a in argv), "--canaries", "20" if
                         shape["canary"] == "gradient" else "6")
    assert code in (0, 1)  # a violation exits 1
    assert key_tree(out) == audit_fn_tree(**shape), case
    assert out["violation"] == (code == 1) and out["canary"] == shape["canary"] and out["analysis"] == shape["analysis"]


def _numbers_agree(record, d: dict, names) -> None:
    for name in names:
        value = getattr(record, name)
        assert d[name] == (value.as_dict() if hasattr(value, "as_dict") else value), name


def test_audit_training_attributes_carry_the_json_numbers(user_training, monkeypatch):
    """A gradient-canary audit with a claim and a loss, and a spike-canary audit: ``as_dict()`` has the recorded key
    tree (the CLI's without ``train`` and ``sigma``), and every JSON value is the attribute of the same name (the
    gradient facts at the top level, each score and its analyses by name); the audit's ``violation`` is the bound's
    or a failed mechanism test's."""
    from tsdp.attacks.canary.audit_result import EvidenceBound, GradientRun, TrainingAudit
    from tsdp.attacks.canary.certified import FdpScoreBound, ScoreBound
    from tsdp.attacks.canary.user_training import AuditOptions, audit_training

    folder, name = user_training
    monkeypatch.syspath_prepend(str(folder))
    user = __import__(name)
    config = TrainingConfig(N=4, L=40, context_length=4, forecast_length=1, batch_size=4, sigma=4.0)
    data = synthetic_for(config, seed=1)
    r = audit_training(user.gradient, data, config, canaries=20, delta=1e-5, epsilon=1.0, loss=user.loss, seed=1)
    d = as_json(r)
    assert isinstance(r, TrainingAudit) and dataclasses.is_dataclass(r) and isinstance(r.gradient, GradientRun)
    assert key_tree(d) == audit_fn_tree("gradient", "fdp", data_part=True, cli=False)
    _numbers_agree(r, d, [f.name for f in dataclasses.fields(EvidenceBound) if f.name != "scores"]
                   + ["canary", "analysis", "data_canaries"])
    _numbers_agree(r.gradient, d, [f.name for f in dataclasses.fields(GradientRun)])
    assert d["mechanism_failed"] == r.mechanism_failed == r.gradient.mechanism.failed
    assert r.violation == (r.above_claim or bool(r.curve_rejected) or r.mechanism_failed)
    for score_name, s in r.scores.items():
        assert isinstance(s, FdpScoreBound) and d["scores"][score_name] == s.as_dict()
        assert s.analyses.dp.as_dict() == d["scores"][score_name]["analyses"]["dp"]
        assert s.epsilon_lower == max(s.analyses.dp.epsilon_lower, s.analyses.steinke.epsilon_lower)
    assert r.epsilon_lower == max(s.epsilon_lower for s in r.scores.values()) and r.epsilon_claimed == 1.0
    with pytest.raises(TypeError):
        r["epsilon_lower"]  # an attribute, not a key: no dict in disguise
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.violation = False

    spike = audit_training(user.last_value, data, config, canaries=6, delta=1e-5, canary="spike",
                           options=AuditOptions(analysis="steinke"), seed=1)
    d = as_json(spike)
    assert key_tree(d) == audit_fn_tree("spike", "steinke", cli=False)
    assert spike.gradient is None and spike.engine is None and spike.runs == 1 and not spike.mechanism_failed
    assert d["spike"] == spike.spike == 10.0 and d["curve_rejected"] is spike.curve_rejected is None
    assert all(isinstance(s, ScoreBound) for s in spike.scores.values())
    assert spike.violation == spike.above_claim is False


def test_an_fdp_score_is_the_f_dp_certificate_with_its_auc():
    """The f-DP score (``evidence.fdp``) is the f-DP test's certificate (:func:`attacks.canary.fdp_bound.certify`)
    with the AUC: with and without the claimed curve, and with every canary included (a NaN AUC: null with
    ``auc_note``); with the Gaussian analysis left out, no ``epsilon_if_gaussian`` in the JSON form."""
    from tsdp.attacks.canary import fdp_bound
    from tsdp.attacks.canary.evidence import fdp
    from tsdp.attacks.canary.steinke_bound import auc, with_auc
    from tsdp.verify.accountant import PldAccountant
    from tsdp.verify.events import training_event

    rng = np.random.default_rng(4)
    included = rng.random(40) < 0.5
    scores = included + rng.random(40)
    profile = PldAccountant().compose(training_event(TINY.with_(sigma=8.0), steps=2))
    for inc, claimed in ((included, None), (included, profile), (np.ones(40, dtype=bool), None)):
        certificate = fdp_bound.certify(scores, inc, 1e-5, 0.95, claimed=claimed)
        typed = fdp(scores, inc, 1e-5, 0.95, claimed=claimed)
        expected = dict(json.loads(dumps(certificate.as_dict())), auc=json.loads(dumps(auc(scores, inc))))
        got = json.loads(dumps(typed.as_dict()))
        assert {k: v for k, v in got.items() if k != "auc_note"} == expected
        assert (typed.analyses.claimed is None) == (claimed is None)
        assert typed.epsilon_if_gaussian == certificate.analyses.gdp.epsilon_if_gaussian
    assert math.isnan(typed.auc) and "auc_note" in typed.as_dict()
    without = with_auc(fdp_bound.certify(scores, included, 1e-5, 0.95, analyses=("dp", "steinke")), scores, included)
    assert without.analyses.gdp is None and "epsilon_if_gaussian" not in without.as_dict()
    assert list(without.as_dict()["analyses"]) == ["dp", "steinke"]
