"""Bad input never crashes. Every sub-command, every flag, the same classes of bad
value (0, negative, NaN, inf, 1e308, 1e-308, wrong type, missing file, directory, binary
file, malformed JSON / CSV / JSON lines, conflicting flags): exit 2 with one line on stderr
naming the flag as typed (or the file and line), or a correct answer (exit 0, and --json
output that is valid RFC 8259 JSON); never a traceback.

In-process (``tsdp.cli.main.main``); every bad case fails before any training or audit, so
the whole table runs in the fast suite.
"""
import json
import math

import pytest

from cli_run import error_line, run_cli

SMALL = ["--N", "16", "--L", "8", "--batch-size", "4"]  # a small configuration for train / audit-model


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    out = {"dir": d / "a_directory.jsonl", "missing": d / "missing.jsonl"}
    out["dir"].mkdir()
    binary = bytes(range(256)) * 8
    for name in ("binary.jsonl", "binary.csv", "binary.json"):
        (d / name).write_bytes(binary)
        out[name] = d / name
    texts = {
        "not_json.jsonl": '{"target": [1, 2, 3]}\n{"target": [1, 2\n',
        "list_line.jsonl": '{"target": [1, 2, 3]}\n[1, 2, 3]\n',
        "no_target.jsonl": '{"target": [1, 2, 3]}\n{"start": "2020-01-01"}\n',
        "nested.jsonl": '{"target": [[1, 2], [3, 4]]}\n',
        "string_values.jsonl": '{"target": [1, "two", 3]}\n',
        "target_number.jsonl": '{"target": 3}\n',
        "bad_cell.csv": "a,b\n1,2\n3,x\n",
        "hole.csv": "a,b\n1,2\n,3\n4,5\n",
        "hole.jsonl": '{"target": [1, null, 2]}\n',
        "empty_target.jsonl": '{"target": [1, 2]}\n{"target": []}\n',
        "empty.jsonl": "\n\n",
        "too_many_cells.csv": "a,b\n1,2\n3,4,5\n",
        "config_not_json.json": "{sigma: 1",
        "config_list.json": "[1, 2]",
        "config_unknown.json": '{"sigmaa": 1}',
        "config_negative.json": '{"sigma": -1}',
        "config_type.json": '{"N": "many"}',
        "out_is_file": "x",
    }
    for name, text in texts.items():
        (d / name).write_text(text)
        out[name] = d / name
    return out


def F(key):
    """A file of the ``files`` fixture, resolved inside the test."""
    return ("FILE", key)


# (argv, what the error line must contain) - None: a correct answer (exit 0) is also fine
CONFIG_FLAGS = {  # flag -> bad values (each must be refused by `profile`, which needs no other flag)
    "--N": ["0", "-1", "abc", "1e308", "nan"],
    "--L": ["0", "-5", "2.5", "inf"],
    "--batch-size": ["0", "-1", "1e308"],
    "--instances": ["0", "-3", "x"],
    "--context-length": ["-1", "nan"],
    "--forecast-length": ["0", "-1"],
    "--sigma": ["0", "-1", "nan", "inf", "-inf", "abc"],
    "--w": ["0", "-2"],
    "--v": ["0", "-1", "nan", "inf"],
    "--sigma-context": ["-1", "nan", "inf"],
    "--sigma-forecast": ["-0.5", "nan"],
    "--lengths": ["0", "-1", "x"],
    "--top": ["foo", "1"],
    "--bottom": ["foo"],
    "--relation": ["foo"],
}

CASES = [
    # ---- top level
    ([], "COMMAND"),
    (["frobnicate"], "frobnicate"),
    (["theorems", "--bogus"], "--bogus"),
    (["theorems", "extra"], "extra"),
    # ---- profile
    (["profile"], "--alpha"),
    (["profile", "--alpha", "-1"], "--alpha"),
    (["profile", "--alpha", "nan"], "--alpha"),
    (["profile", "--alpha", "inf"], "--alpha"),
    (["profile", "--alpha", "abc"], "--alpha"),
    (["profile", "--alpha", "1e308"], None),
    (["profile", "--alpha", "1e-308"], None),
    (["profile", "--epsilon", "nan"], "--epsilon"),
    (["profile", "--epsilon", "inf"], "--epsilon"),
    (["profile", "--epsilon", "710"], None),
    (["profile", "--epsilon", "1e308"], None),
    (["profile", "--epsilon", "-1e308"], "--epsilon"),  # argparse reads -1e308 as a flag: one line
    (["profile", "--epsilon=-1e308"], None),
    (["profile", "--alpha", "2", "--dps", "0"], "--dps"),
    (["profile", "--alpha", "2", "--dps", "-1"], "--dps"),
    (["profile", "--alpha", "2", "--dps", "1e308"], "--dps"),
    (["profile", "--alpha", "2", "--dps", "100000"], "--dps"),
    (["profile", "--alpha", "2", "--theorem", "T99"], "T99"),
    (["profile", "--alpha", "2", "--sig", "1"], "--sig"),  # no prefix abbreviations
    # ---- epsilon
    (["epsilon", "--delta", "1e-5"], "--steps"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--epochs", "1"], "--steps"),
    (["epsilon", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "0", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "-1", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "nan", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "inf", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "1e308", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "abc", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "1e-308", "--steps", "1", "--discretization", "0.01"], "--delta"),
    (["epsilon", "--delta", "1e-5", "--steps", "0"], "--steps"),
    (["epsilon", "--delta", "1e-5", "--steps", "-1"], "--steps"),
    (["epsilon", "--delta", "1e-5", "--steps", "1.5"], "--steps"),
    (["epsilon", "--delta", "1e-5", "--steps", "1e308"], "--steps"),
    (["epsilon", "--delta", "1e-5", "--epochs", "0"], "--epochs"),
    (["epsilon", "--delta", "1e-5", "--epochs", "nan"], "--epochs"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--discretization", "0"], "--discretization"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--discretization", "nan"], "--discretization"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--discretization", "2"], "--discretization"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--discretization", "1e-308"], None),  # coarsened: an answer
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--tail-mass-truncation", "1"], "--tail-mass-truncation"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--tail-mass-truncation", "-1"], "--tail-mass-truncation"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--tail-mass-truncation", "nan"], "--tail-mass-truncation"),
    (["epsilon", "--delta", "1e-5", "--epsilon", "1", "--steps", "1"], "--delta"),
    (["epsilon", "--epsilon", "nan", "--steps", "1"], "--epsilon"),
    (["epsilon", "--epsilon", "-1", "--steps", "1"], "--epsilon"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--theorem", "T99"], "T99"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--sigma", "1e-6"], "--sigma"),
    # ---- calibrate
    (["calibrate", "--delta", "1e-5", "--steps", "1"], "--epsilon"),
    (["calibrate", "--epsilon", "0", "--delta", "1e-5", "--steps", "1"], "--epsilon"),
    (["calibrate", "--epsilon", "-1", "--delta", "1e-5", "--steps", "1"], "--epsilon"),
    (["calibrate", "--epsilon", "nan", "--delta", "1e-5", "--steps", "1"], "--epsilon"),
    (["calibrate", "--epsilon", "inf", "--delta", "1e-5", "--steps", "1"], "--epsilon"),
    (["calibrate", "--epsilon", "1", "--delta", "0", "--steps", "1"], "--delta"),
    (["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "0"], "--steps"),
    (["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "1", "--tolerance", "0"], "--tolerance"),
    (["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "1", "--tolerance", "1"], "--tolerance"),
    (["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "1", "--tolerance", "nan"], "--tolerance"),
    # ---- verify
    (["verify", "--seed", "-1"], "--seed"),
    (["verify", "--seed", "abc"], "--seed"),
    (["verify", "--jobs", "0"], "--jobs"),
    (["verify", "--jobs", "-1"], "--jobs"),
    # ---- train
    (["train", "--epochs", "1"], "--delta"),
    (["train", "--epsilon", "0", "--delta", "1e-5"], "--epsilon"),
    (["train", "--epsilon", "-1", "--delta", "1e-5"], "--epsilon"),
    (["train", "--epsilon", "nan", "--delta", "1e-5"], "--epsilon"),
    (["train", "--epsilon", "1", "--delta", "0"], "--delta"),
    (["train", "--epsilon", "1", "--delta", "inf"], "--delta"),
    (["train", "--epochs", "0", "--delta", "1e-5"], "--epochs"),
    (["train", "--epochs", "-1", "--delta", "1e-5"], "--epochs"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--clip", "0"], "--clip"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--clip", "nan"], "--clip"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--lr", "0"], "--lr"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--lr", "-1"], "--lr"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--lr", "inf"], "--lr"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--seed", "-1"], "--seed"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--seed", "1e308"], "--seed"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--device", "foo"], "--device"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--model", "foo"], "--model"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--optimizer", "foo"], "--optimizer"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--theorem", "T99"], "T99"),
    (["train", "--epochs", "1", "--delta", "1e-5", "--sigma", "0"], "--sigma"),
    *[(["train", "--epochs", "1", "--delta", "1e-5", "--data", F(k)], "FILE")
      for k in ("missing", "dir", "binary.jsonl", "binary.csv", "not_json.jsonl", "list_line.jsonl", "no_target.jsonl",
                "nested.jsonl", "string_values.jsonl", "target_number.jsonl", "bad_cell.csv", "too_many_cells.csv",
                "hole.csv", "hole.jsonl", "empty_target.jsonl", "empty.jsonl")],
    # ---- audit
    (["audit", "--delta", "1e-5"], "--trials"),
    (["audit", "--trials", "0", "--delta", "1e-5"], "--trials"),
    (["audit", "--trials", "abc", "--delta", "1e-5"], "--trials"),
    (["audit", "--trials", "100", "--delta", "0"], "--delta"),
    (["audit", "--trials", "100", "--delta", "nan"], "--delta"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--steps", "0"], "--steps"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--confidence", "1"], "--confidence"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--confidence", "nan"], "--confidence"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--select-fraction", "0"], "--select-fraction"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--theorem", "T99"], "T99"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--theorem", "T1", "--top", "wor"], "--top"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--theorem", "T6", "--bottom", "poisson"], "--bottom"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--device", "foo"], "--device"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--seed", "-1"], "--seed"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--sigma", "nan"], "--sigma"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--sigma", "1e-6"], "--sigma"),
    (["audit", "--trials", "100", "--delta", "1e-5", "--alpha", "0.5"], "--alpha"),
    # ---- audit-model
    (["audit-model", "--model", "simple-ff", "--canaries", "1", "--epsilon", "1", "--delta", "1e-5"], "--canaries"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "0", "--delta", "1e-5"], "--epsilon"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "nan", "--delta", "1e-5"], "--epsilon"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1"], "--delta"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5", "--epochs", "0"],
     "--epochs"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5", "--lr", "0"], "--lr"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5", "--lr", "nan"],
     "--lr"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5", "--spike", "-1"],
     "--spike"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5", "--device",
      "cuda:99"], "--device"),
    (["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5", "--seed", "-1"],
     "--seed"),
    *[(["audit-model", "--model", "simple-ff", "--canaries", "8", "--epsilon", "1", "--delta", "1e-5", "--data", F(k)],
       "FILE") for k in ("missing", "dir", "binary.jsonl", "nested.jsonl", "no_target.jsonl", "bad_cell.csv")],
    # ---- bench
    (["bench"], "what"),
    (["bench", "foo"], "foo"),
    (["bench", "loop", "--rounds", "0"], "--rounds"),
    (["bench", "loop", "--rounds", "-1"], "--rounds"),
    (["bench", "loop", "--models", "foo"], "--models"),
    (["bench", "loop", "--device", "tpu"], "--device"),
    (["bench", "loop", "--device", "cuda:0"], "--device"),
    (["bench", "audit", "--device", "cpu"], "--device"),
    (["bench", "audit", "--rounds", "0"], "--rounds"),
    (["bench", "audit", "--discretization", "0.01"], "--discretization"),
    (["bench", "accounting", "--discretization", "0"], "--discretization"),
    (["bench", "accounting", "--discretization", "nan"], "--discretization"),
    (["bench", "accounting", "--rounds", "3"], "--rounds"),
    # ---- report
    (["report", "--config", F("missing")], "--config"),
    (["report", "--config", F("dir")], "--config"),
    (["report", "--config", F("binary.json")], "--config"),
    (["report", "--config", F("config_not_json.json")], "--config"),
    (["report", "--config", F("config_list.json")], "--config"),
    (["report", "--config", F("config_unknown.json")], "sigmaa"),
    (["report", "--config", F("config_negative.json")], "'sigma'"),
    (["report", "--config", F("config_type.json")], "'N'"),
    (["report", "--seed", "-1"], "--seed"),
    (["report", "--out", F("out_is_file")], "--out"),
]
CASES += [(["profile", "--alpha", "2", flag, v], flag) for flag, values in CONFIG_FLAGS.items() for v in values]
CASES += [(["epsilon", "--delta", "1e-5", "--steps", "1", flag, values[0]], flag)
          for flag, values in CONFIG_FLAGS.items()]


def _ids(case):
    argv, _ = case
    return " ".join(a if isinstance(a, str) else a[1] for a in argv) or "<none>"


def test_enough_cases():
    commands = {argv[0] for argv, _ in CASES if argv}
    assert len(CASES) >= 80
    assert {"theorems", "profile", "epsilon", "calibrate", "verify", "train", "audit", "audit-model", "bench",
            "report"} <= commands


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_bad_input_one_line_exit_2(case, files):
    argv, expect = case
    if any(isinstance(a, tuple) and a[1].endswith(".csv") for a in argv):
        pytest.importorskip("pandas", reason="the data extra (pandas) reads CSV files: not installed")
    argv = [str(files[a[1]]) if isinstance(a, tuple) else a for a in argv]
    code, out, err = run_cli(argv)
    assert "Traceback" not in err
    if expect is None and code == 0:
        assert out.strip()
        return
    assert code == 2, (code, out, err)
    line = error_line(err)
    assert line.startswith("tsdp"), line
    want = [str(files[a[1]]) for a in case[0] if isinstance(a, tuple)][0] if expect == "FILE" else expect
    assert want in line, (want, line)


@pytest.mark.parametrize("argv", [
    ["profile", "--epsilon", "710", "1000", "--json"],
    ["profile", "--alpha", "1e308", "--json"],
    ["theorems", "--json"],
])
def test_json_is_rfc8259(argv):
    """--json output parses with a strict parser (no NaN / Infinity tokens); non-finite -> null."""
    code, out, err = run_cli(argv)
    assert code == 0, err

    def strict(token):
        raise AssertionError(f"non-standard JSON token {token}")

    payload = json.loads(out, parse_constant=strict)
    if argv[0] == "profile":
        assert all(d is None or (0 <= d <= 1) for d in payload["delta"])
        assert all(a is None or math.isfinite(a) for a in payload["alpha"])


def test_profile_past_float_range_is_the_log_space_value():
    """ε = 710 (α = e^710 overflows a float): δ is computed in ε, and agrees with mpmath at 30 digits."""
    code, out, err = run_cli(["profile", "--epsilon", "710", "--sigma", "0.05", "--json"])
    assert code == 0, err
    code_mp, out_mp, err_mp = run_cli(["profile", "--epsilon", "710", "--sigma", "0.05", "--dps", "30", "--json"])
    assert code_mp == 0, err_mp
    fast, exact = json.loads(out)["delta"][0], float(json.loads(out_mp)["delta_exact"][0])
    assert fast == pytest.approx(exact, rel=1e-6, abs=1e-300)


def test_closed_pipe_ends_quietly(tmp_path):
    """`tsdp theorems --json | head -c 10`: the reader goes away; no BrokenPipeError traceback."""
    import subprocess
    import sys

    proc = subprocess.run(f"{sys.executable} -m tsdp.cli theorems --json | head -c 10", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert len(proc.stdout) == 10
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr

