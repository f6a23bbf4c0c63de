"""`tsdp check-accountant`: exit 0 (nothing unsound) / 1 (some cell unsound) / 2 (bad input, one line each)."""
import itertools
import json
import textwrap

import pytest

from conftest import error_line, run_cli

ACCOUNTANTS = textwrap.dedent('''
    import math
    import time

    from tsdp import epsilon


    def halved(config, steps, delta):
        """T6 with rho * r halved (N doubled): a deliberately wrong accountant; no answer (inf) for pooled windows."""
        if config.top == "pooled":
            return math.inf
        return epsilon(config.with_(N=2 * config.N), delta, steps=steps, estimates=("sound",)).epsilon


    def raises(config, steps, delta):
        raise RuntimeError("my accountant broke")


    def nan(config, steps, delta):
        return math.nan


    def negative(config, steps, delta):
        return -0.5


    def text(config, steps, delta):
        return "1.5"


    def hangs(config, steps, delta):
        time.sleep(60)


    def fails_on_import():
        pass
''')
_NAMES = itertools.count()
SMALL = ["--random", "0", "--steps", "1"]  # the Section 5 cells, one step each


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A module of accountants in the current folder, under a name of its own (sys.modules caches by name)."""
    name = f"accountants_{next(_NAMES)}"
    (tmp_path / f"{name}.py").write_text(ACCOUNTANTS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_wrong_accountant_exits_1_with_the_attack(module):
    code, out, err = run_cli(["check-accountant", f"{module}:halved", *SMALL, "--json"])
    assert code == 1, err
    d = json.loads(out)
    assert d["passed"] is False and d["counts"]["unsound"] >= 1
    wor = [v for v in d["verdicts"] if v["config"]["top"] == "wor" and v["config"]["instances"] == 1
           and v["config"]["bottom"] == "wr" and v["config"]["sigma_context"] == 0]
    assert wor and all(v["verdict"] == "unsound" and v["epsilon_reported"] < v["epsilon_attained"] for v in wor)
    assert wor[0]["audit_command"].startswith("tsdp audit --theorem T6 --trials")


def test_tsdps_own_accountant_exits_0():
    code, out, err = run_cli(["check-accountant", "--tsdp", *SMALL])
    assert code == 0, err
    assert "0 unsound (0 of them relation mismatches)" in out


def test_a_guessed_window_rate_exits_1_and_says_what_it_claims():
    code, out, _ = run_cli(["check-accountant", "--dp-accounting", "pld", "--sample-rate", "window", *SMALL])
    assert code == 1
    assert "UNSOUND: dp-accounting Poisson PLD at rate Λ/(N·T) reports ε = " in out
    assert "The accountant claims: add/remove of one window under Poisson sampling at rate Λ/(N·T)" in out


@pytest.mark.parametrize("function,words", [
    ("raises", "raised RuntimeError at wor/wr N=320 L=20 L_C=1 L_F=1 Λ=32 λ=1 σ=1, 1 step(s), δ = 1e-05: my accountant broke"),
    ("nan", "returned NaN at wor/wr"),
    ("negative", "returned a negative ε = -0.5 at"),
    ("text", "returned '1.5' (str) at"),
    ("hangs", "hung at wor/wr N=320 L=20 L_C=1 L_F=1 Λ=32 λ=1 σ=1, 1 step(s), δ = 1e-05: no answer within 0.5 s"),
    ("missing", "invalid module:function: cannot load"),
])
def test_a_bad_accountant_is_one_line_exit_2(module, function, words):
    code, out, err = run_cli(["check-accountant", f"{module}:{function}", *SMALL, "--timeout", "0.5"])
    assert code == 2 and out == ""
    line = error_line(err)
    assert "tsdp check-accountant: error: accountant" in line or "error: invalid module:function" in line, line
    assert words in line, line


@pytest.mark.parametrize("argv,words", [
    (["no_such_module_anywhere:f"], "invalid module:function: cannot load 'no_such_module_anywhere:f'"),
    (["not-a-spec"], "invalid module:function: must be module:function"),
    ([], "give exactly one accountant"),
    (["--tsdp", "--opacus", "rdp", "--sample-rate", "series"], "give exactly one accountant: module:function, "
                                                                "--opacus KIND, --dp-accounting KIND or --tsdp (got "
                                                                "--opacus, --tsdp)"),
    (["--opacus", "rdp"], "invalid --opacus: give --sample-rate series or window"),
    (["--tsdp", "--sample-rate", "series"], "invalid --sample-rate: only with --opacus or --dp-accounting"),
    (["--tsdp", "--delta", "2"], "invalid --delta"),
    (["--tsdp", "--timeout", "0"], "invalid --timeout: must be finite and > 0"),
    (["--tsdp", "--timeout", "nan"], "invalid --timeout: must be finite and > 0"),
    (["--tsdp", "--relation", "window", "--w", "2"], "invalid --w: must be 1 for --relation window"),
    (["--tsdp", "--w", "0"], "invalid --w: must be >= 1"),
    (["--tsdp", "--random", "-1"], "invalid --random: must be >= 0"),
    (["--tsdp", "--steps", "0"], "invalid --steps: must be >= 1"),
    (["--tsdp", "--seed", "-3"], "invalid --seed"),
    (["--opacus", "xyz", "--sample-rate", "series"], "invalid choice: 'xyz'"),
])
def test_bad_flags_are_one_line_exit_2(argv, words):
    code, out, err = run_cli(["check-accountant", *argv])
    assert code == 2 and out == ""
    line = error_line(err)
    assert words in line, line
