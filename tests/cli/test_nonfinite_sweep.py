"""No non-finite number at exit 0: every command, driven with extreme but accepted values, answers with finite
numbers, a labelled infinity, or one error line (exit 2).

Each case of ``FAST`` (and of ``SLOW``, marked slow) runs ``tsdp`` in this process (:func:`sweep.run_case`) with the text output and with
``--json``, and :func:`problems` names what is wrong with its outcome:

* exit 0 (an answer) or 1 (a detected violation, with its numbers), text: no ``nan`` / ``inf`` / ``Infinity``
  token (a legitimate infinity reads ``∞ (no noise)`` or ``∞ (no guarantee)``, an undefined AUC in words);
* the same, JSON: RFC 8259 (a strict parser that refuses NaN and Infinity tokens), and every number that was
  non-finite before :func:`tsdp.cli.output.dumps` wrote it as null has its ``<key>_note`` beside it (the
  conversion is watched, so a null that stands for "not given" is not mistaken for one);
* otherwise exit 2 with exactly one ``tsdp ...: error:`` line; never a traceback.

A case may also name words its output must hold (the label of a legitimate infinity, the flag of a refusal).
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

from sweep import CONSTANT_MODEL, NON_FINITE, run_case

LIMIT_S = 300

USER_CODE = CONSTANT_MODEL + '''
import math


def constant(series):
    return Model()


def largest(series):
    return Model(1e38)


def sgd(series):
    """A plain torch loop (no clipping, no noise): the gradient canaries hook its optimizer."""
    torch.manual_seed(0)
    model = torch.nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2)
    x = torch.tensor([[float(v)] for s in series for v in s[:-1]])
    y = torch.tensor([[float(v)] for s in series for v in s[1:]])
    for i in range(4):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x[i::4]), y[i::4]).backward()
        optimizer.step()
    return lambda context, forecast: ((model(context[:, -1:]) - forecast[:, :1]) ** 2).sum(dim=1)


def loss_largest(model, context, forecast):
    return torch.full((context.shape[0],), 3e38)


def accountant_unbounded(config, steps, delta):
    return math.inf


def accountant_largest(config, steps, delta):
    return 1e308


def accountant_smallest(config, steps, delta):
    return 5e-324
'''


def _wide_csv(path, values):
    rows = [",".join(f"s{i}" for i in range(values.shape[1]))]
    rows += [",".join(repr(float(v)) for v in row) for row in values]
    path.write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory, model_file):
    """Data files (8 series of 40 steps: constant, all zero, tiny, large, with NaN, with inf), the saved model of
    the `tsdp forecast` cases, and an importable module of user functions (``finite_user``)."""
    d = tmp_path_factory.mktemp("nonfinite")
    rng = np.random.default_rng(0)
    normal = rng.normal(size=(40, 8))
    tables = {"constant": np.full((40, 8), 5.0), "zero": np.zeros((40, 8)), "tiny": normal * 1e-40,
              "large": normal * 1e30, "normal": normal}
    out = {}
    for name, values in tables.items():
        out[name] = d / f"{name}.csv"
        _wide_csv(out[name], values)
    for name, bad in (("with_nan", math.nan), ("with_inf", math.inf)):
        values = normal.copy()
        values[3, 2] = bad
        out[name] = d / f"{name}.csv"
        _wide_csv(out[name], values)
    out["model"] = model_file
    out["experiment"] = d / "experiment"
    (d / "finite_user.py").write_text(USER_CODE)
    sys.path.insert(0, str(d))
    yield out
    sys.path.remove(str(d))
    sys.modules.pop("finite_user", None)


def F(key):
    """A path of the ``files`` fixture, resolved inside the test."""
    return ("FILE", key)


SMALL = ["--N", "16", "--L", "8", "--batch-size", "4"]
ON_FILE = ["--N", "8", "--L", "39", "--batch-size", "4"]  # the fixture's files: 8 series, 40 steps, L_F = 1
TEN = [str(v) for v in range(1, 11)]


def _predict(values, *extra):
    return ["forecast", "predict", "--model-file", F("model"), "--values", *values, "--epsilon", "1",
            "--delta", "1e-5", "--device", "cpu", *extra]


def _tradeoff(data, *extra):
    return ["forecast", "tradeoff", "--model-file", F("model"), "--data", F(data), "--samples", "2",
            "--epsilons", "1", "--rates", "1", "--device", "cpu", *extra]


def _audit_model(*extra):
    return ["audit-model", "--model", "simple-ff", "--canaries", "8", "--delta", "1e-5", "--epochs", "1",
            "--device", "cpu", *extra]


def _audit_fn(train, *extra, canary="spike"):
    return ["audit-fn", "--train", f"finite_user:{train}", "--canaries", "20", "--delta", "1e-5", "--canary",
            canary, *extra]


def _train(*extra):
    return ["train", "--epochs", "1", "--delta", "1e-5", "--device", "cpu", *extra]


# (argv, words): a flag ("--x"): refused (exit 2) by a line naming it; other words: answered (exit 0, text) with them;
# '': either, clean
FAST = [
    (["profile", "--alpha", "0", "1e308", "5e-324", "1"], "-∞"),
    (["profile", "--alpha", "0", "2", "--dps", "20"], "-∞"),
    (["profile", "--epsilon", "1e308", "-1000", "710"], ""),
    (["profile", "--epsilon", "1", "--sigma", "1e-150"], ""),
    (["profile", "--epsilon", "1", "--v", "1e308", "--sigma-context", "1e308"], ""),
    (["profile", "--epsilon", "1", "--v", "5e-324", "--sigma-forecast", "1e308"], ""),
    (["epsilon", "--delta", "0.999999", "--steps", "1"], ""),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--v", "1e308"], ""),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--v", "5e-324"], ""),
    (["epsilon", "--epsilon", "1e308", "--steps", "1"], ""),
    (["epsilon", "--epsilon", "0", "--steps", "1"], ""),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--discretization", "1"], ""),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--tail-mass-truncation", "0.9999"], ""),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--sigma", "1e150"], ""),
    (["calibrate", "--epsilon", "1", "--delta", "0.9999999", "--steps", "1"], ""),
    (["forecast", "epsilon", "--delta", "1e-5", "--sigma", "1e150"], ""),
    (["forecast", "epsilon", "--delta", "1e-5", "--r", "5e-324"], ""),
    (["forecast", "epsilon", "--epsilon", "1e308"], ""),
    (["forecast", "epsilon", "--delta", "1e-5", "--v", "1e308"], "--sigma"),
    (["forecast", "calibrate", "--epsilon", "1e308", "--delta", "1e-5"], "--epsilon"),
    (["forecast", "calibrate", "--epsilon", "1e-308", "--delta", "1e-5"], "--epsilon"),
    (_predict(["0"] * 10), ""),
    (_predict(["1e30"] * 10), ""),
    (_predict(["1e-308", "5e-324"] * 5), ""),
    (_predict(TEN, "--v", "1e308"), "--v"),
    (_tradeoff("normal"), "∞ (no noise)"),
    (_tradeoff("zero"), "--data"),
    (_tradeoff("with_nan"), "--data"),
]

SLOW = [
    (["calibrate", "--epsilon", "1e308", "--delta", "1e-5", "--steps", "1"], ""),
    (["calibrate", "--epsilon", "1e-308", "--delta", "1e-5", "--steps", "1"], ""),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--sigma", "1e-150"], "--sigma"),
    (_tradeoff("constant"), "∞ (no noise)"),
    (_tradeoff("large"), ""),
    (_tradeoff("tiny", "--epsilons", "1e308"), "--epsilons"),
    (_train(*SMALL, "--clip", "5e-324"), ""),
    (_train(*SMALL, "--lr", "5e-324"), ""),
    (_train(*SMALL, "--weight-decay", "1e30"), ""),
    (_train(*SMALL, "--v", "1e308"), ""),
    (_train(*SMALL, "--warmup-steps", "2", "--warmup-sigma", "1e-150"), "--warmup-sigma"),
    (_train(*SMALL, "--warmup-steps", "2", "--warmup-sigma", "1e150"), "--warmup-sigma"),
    (_train(*SMALL, "--model", "deepar", "--context-length", "2", "--sigma-forecast", "1e30"), "--lr"),
    (_train("--data", F("constant"), *ON_FILE), ""),
    (_train("--data", F("zero"), *ON_FILE), "--data"),
    (_train("--data", F("tiny"), *ON_FILE), ""),
    (_train("--data", F("large"), *ON_FILE), ""),
    (_train("--data", F("with_inf"), *ON_FILE), "--data"),
    (_audit_model("--epsilon", "inf", *SMALL), "∞ (no noise)"),
    (_audit_model("--epsilon", "1e308", *SMALL), ""),
    (_audit_model("--epsilon", "1", "--spike", "5e-324", *SMALL), ""),
    (_audit_model("--epsilon", "1", "--data", F("zero"), *ON_FILE), "--data"),
    (_audit_model("--epsilon", "1", "--data", F("tiny"), *ON_FILE), ""),
    (["audit", "--trials", "100", "--delta", "1e-5", "--confidence", "0.999999999999"], ""),
    (["audit", "--trials", "100", "--delta", "1e-5", "--alpha", "1e308"], ""),
    (["audit", "--trials", "100", "--delta", "1e-5", "--v", "1e308"], ""),
    (_audit_fn("constant"), ""),
    (_audit_fn("constant", "--epsilon", "1e308"), ""),
    (_audit_fn("largest"), ""),
    (_audit_fn("constant", "--loss", "finite_user:loss_largest"), ""),
    (_audit_fn("constant", "--spike", "5e-324"), ""),
    (_audit_fn("constant", "--data", F("zero")), ""),
    (_audit_fn("constant", "--data", F("large")), ""),
    (_audit_fn("constant", "--plan", "--epsilon", "1e308"), "more than"),
    (_audit_fn("sgd", *SMALL, canary="gradient"), ""),
    (_audit_fn("sgd", *SMALL, "--clip", "1e308", canary="gradient"), ""),
    (_audit_fn("sgd", *SMALL, "--clip", "5e-324", canary="gradient"), ""),
    (_audit_fn("sgd", *SMALL, "--gradient-scale", "1e308", canary="gradient"), ""),
    (_audit_fn("sgd", *SMALL, "--gradient-scale", "5e-324", canary="gradient"), ""),
    (_audit_fn("sgd", *SMALL, "--epsilon", "1e308", "--sigma", "1e150", canary="gradient"), ""),
    (_audit_fn("sgd", *SMALL, "--plan", "--steps", "4", "--parameters", "2", "--epsilon", "1e308",
               canary="gradient"), ""),
    (["check-accountant", "finite_user:accountant_unbounded", "--steps", "1", "--random", "0"],
     "∞ (no guarantee)"),
    (["check-accountant", "finite_user:accountant_largest", "--steps", "1", "--random", "0"], ""),
    (["check-accountant", "finite_user:accountant_smallest", "--steps", "1", "--random", "0"], ""),
    (["check-accountant", "--tsdp", "--steps", "1", "--random", "0", "--relation", "series"], ""),
    (["bench", "canary", "--canaries", "2", "--seeds", "1", "--mu", "1"], ""),
    (["bench", "blackbox", "--canaries", "2", "--epochs", "1", "--seed", "0"], "AUC n/a"),  # both on one side
    (["audit", "--trials", "100", "--delta", "0.9999999"], ""),
    (["experiment", "--quick", "--models", "simple-ff", "--epsilons", "1", "inf", "--seeds", "1", "--epochs", "1",
      "--levels", "1-event", "--tops", "wor", "--device", "cpu", "--out", F("experiment")], "∞ (no noise)"),
    (["experiment", "--models", "dlinear", "--epsilons", "0.001", "1", "--seeds", "1", "--epochs", "1", "--samples",
      "10", "--tops", "wor", "--device", "cpu", "--out", F("experiment")], "no step"),  # ε = 0.001 buys no step
    (["experiment", "--models", "dlinear", "--epsilons", "1e308", "--seeds", "1", "--epochs", "1", "--samples", "10",
      "--tops", "wor", "--delta", "0.9999999", "--discretization", "1", "--device", "cpu", "--out", F("experiment")],
     ""),
    (["experiment", "--models", "dlinear", "--levels", "label-noise", "--sigma-forecast", "1000000", "--seeds", "1",
      "--epochs", "1", "--samples", "10", "--tops", "wor", "--device", "cpu", "--out", F("experiment")], ""),
    (["bench", "canary", "--canaries", "100", "--seeds", "2", "--mu", "20"], ""),
]


class Watch:
    """The non-finite numbers each ``dumps`` call was given, with their paths (:func:`tsdp.cli.output.dumps`
    writes them as null)."""

    def __init__(self, monkeypatch):
        import tsdp.cli.output as output

        self.found = []
        convert = output.json_data

        def watched(payload):
            self.found += list(_non_finite(payload, ()))
            return convert(payload)

        monkeypatch.setattr(output, "json_data", watched)


def _non_finite(x, path):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _non_finite(v, path + (str(k),))
    elif isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            yield from _non_finite(v, path + (i,))
    elif isinstance(x, np.ndarray):
        yield from _non_finite(x.tolist(), path)
    elif isinstance(x, (float, np.floating)) and not math.isfinite(x):
        yield path


def _refuse(token):
    raise ValueError(f"non-finite JSON token {token}")


def unlabelled(data, paths) -> list:
    """The paths among ``paths`` (of non-finite numbers, now null in ``data``) whose nearest dict key ``k`` has no
    ``k_note`` string beside it."""
    missing = []
    for path in paths:
        node, owner, key = data, None, None
        for step in path:
            if isinstance(node, dict):
                owner, key = node, step
            node = node[step]
        if node is not None or owner is None or not isinstance(owner.get(f"{key}_note"), str):
            missing.append("/".join(map(str, path)))
    return missing


def problems(outcome, found, as_json: bool, words: str) -> str:
    """What is wrong with a case's outcome ('' when nothing)."""
    if outcome.hang:
        return "hang"
    if "Traceback" in outcome.err:
        return "traceback: " + outcome.err[-800:]
    if outcome.code in (0, 1):  # an answer, or a detected violation (exit 1) with its numbers
        if as_json:
            try:
                data = json.loads(outcome.out, parse_constant=_refuse)
            except ValueError as err:
                return f"not RFC 8259 JSON at exit 0: {err}"
            missing = unlabelled(data, found)
            if missing:
                return f"null without its <key>_note at exit {outcome.code}: {missing}"
        else:
            bad = [ln for ln in outcome.out.splitlines() if NON_FINITE.search(ln)]
            if bad:
                return f"non-finite at exit {outcome.code}: {bad[:3]}"
            if words.startswith("--"):
                return f"exit {outcome.code}, expected a refusal naming {words}"
            if words and words not in outcome.out:
                return f"{words!r} not in the output: {outcome.out[-500:]}"
        return ""
    lines = [ln for ln in outcome.err.splitlines() if ": error: " in ln]
    if outcome.code != 2 or len(lines) != 1:
        return f"exit {outcome.code} with {len(lines)} error line(s): {outcome.err[-800:]}"
    if "tsdp " not in lines[0]:  # after a progress bar's last redraw, where stderr is not a terminal
        return f"error line {lines[0]!r}"
    if words and not words.startswith("--"):
        return f"exit 2, expected an answer holding {words!r}: {lines[0]}"
    if words and words not in lines[0]:
        return f"{words!r} not in {lines[0]!r}"
    return ""


def _resolve(argv, files):
    return [str(files[a[1]]) if isinstance(a, tuple) else str(a) for a in argv]


def _id(case):
    return " ".join(a if isinstance(a, str) else a[1] for a in case[0])[:90]


def _check(case, files, monkeypatch):
    argv, words = case
    if "--data" in argv:  # a CSV table: without the data extra every case is its one missing-extra line
        pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    argv = _resolve(argv, files)
    failures = []
    for as_json in (False, True):
        watch = Watch(monkeypatch)
        outcome = run_case(argv + ["--json"] * as_json, LIMIT_S)
        wrong = problems(outcome, watch.found, as_json, words)
        if wrong:
            failures.append(f"{'--json' if as_json else 'text'}: {wrong}")
    assert not failures, failures


@pytest.mark.parametrize("case", FAST, ids=[_id(c) for c in FAST])
def test_no_non_finite_at_exit_0(case, files, monkeypatch):
    _check(case, files, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW, ids=[_id(c) for c in SLOW])
def test_no_non_finite_at_exit_0_heavy(case, files, monkeypatch):
    _check(case, files, monkeypatch)


def test_the_checker_catches_what_it_must(monkeypatch):
    """The checks can fail: a bare nan in text, a NaN token in JSON, an unlabelled null from inf, two error lines."""
    from sweep import Outcome

    assert problems(Outcome(0, "q0.1: nan\n", "", 0.0), [], False, "")
    assert problems(Outcome(0, '{"x": NaN}', "", 0.0), [], True, "")
    assert problems(Outcome(0, '{"x": null}', "", 0.0), [("x",)], True, "")
    assert problems(Outcome(0, '{"x": [null, 1]}', "", 0.0), [("x", 0)], True, "")
    assert not problems(Outcome(0, '{"x": [null, 1], "x_note": "null: -∞"}', "", 0.0), [("x", 0)], True, "")
    assert not problems(Outcome(0, '{"x": null}', "", 0.0), [], True, "")  # None: not a converted number
    assert problems(Outcome(2, "", "tsdp x: error: a\ntsdp x: error: b\n", 0.0), [], False, "")
    assert problems(Outcome(2, "", "Traceback (most recent call last):\n", 0.0), [], False, "")
    assert problems(Outcome(2, "", "tsdp x: error: invalid --b\n", 0.0), [], False, "--a")
    monkeypatch.setattr("tsdp.cli.output.json_data", lambda x: x)  # a dumps without the conversion refuses NaN
    from tsdp.cli.output import dumps

    with pytest.raises(ValueError):
        dumps({"x": math.nan})


def test_with_note_labels_non_finite_values_only():
    """``<key>_note`` goes beside a non-finite number or a list holding one (numpy floats too); finite numbers, lists
    of them and None get none."""
    from tsdp.verify.json_data import with_note

    assert with_note({"x": math.inf}, "x", "why") == {"x": math.inf, "x_note": "why"}
    assert with_note({"x": [1.0, np.float64("nan")]}, "x", "why")["x_note"] == "why"
    for value in (1.0, [1.0, 2.0], None, "inf"):
        assert with_note({"x": value}, "x", "why") == {"x": value}
