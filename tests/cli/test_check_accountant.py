"""`tsdp check-accountant`: exit 0 (nothing unsound) / 1 (some cell unsound) / 2 (bad input, one line each)."""
import itertools
import json
import textwrap

import pytest

from cli_run import error_line, run_cli

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


    def exits_0(config, steps, delta):
        import sys
        sys.exit(0)


    def exits_3(config, steps, delta):
        raise SystemExit(3)


    def os_exit(config, steps, delta):
        import os
        os._exit(0)


    def interrupted(config, steps, delta):
        raise KeyboardInterrupt


    def holds_the_gil(config, steps, delta):
        return sum(range(10 ** 12))  # one C call, minutes long, that never releases the GIL


    def huge(config, steps, delta):
        return 10 ** 400


    def prints(config, steps, delta):
        import os
        import sys
        print("computing", config.top)
        print("a warning", file=sys.stderr)
        os.write(1, b"from C\\n")
        return math.inf


    def declines_some(config, steps, delta):
        if config.top == "pooled":
            raise NotImplementedError("pooled windows are not covered")
        if config.top == "deterministic":
            return None
        return math.inf


    def declines_all(config, steps, delta):
        return None


    def tsdps_public_api(config, steps, delta):
        import tsdp
        return tsdp.epsilon(config, delta, steps=steps).epsilon
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
    (["--tsdp", "--timeout", "0"], "invalid --timeout: must be >= 0.001 (got 0.0)"),
    (["--tsdp", "--timeout", "-5"], "invalid --timeout: must be >= 0.001 (got -5.0)"),
    (["--tsdp", "--timeout", "nan"], "invalid --timeout: must be finite (not NaN or inf)"),
    (["--tsdp", "--timeout", "inf"], "invalid --timeout: must be finite (not NaN or inf)"),
    (["--tsdp", "--timeout", "1e10"], "invalid --timeout: must be <= 1e+07 (got 10000000000.0)"),
    (["--tsdp", "--timeout", "1e308"], "invalid --timeout: must be <= 1e+07 (got 1e+308)"),
    (["--tsdp", *SMALL, "--delta", "1e-300"], "invalid --delta: 1e-300 is below the smallest δ"),  # tsdp's, not the
    (["--tsdp", *SMALL, "--steps", "1000000000000"], "invalid --steps: 1000000000000 compositions are more"),  # fn's
    (["--tsdp", "--top", "bogus"], "argument --top: invalid choice: 'bogus'"),
    (["--tsdp", "--bottom", "nope"], "argument --bottom: invalid choice: 'nope'"),
    (["--tsdp", "--relation", "element"], "argument --relation: invalid choice: 'element'"),
    (["--tsdp", "--random", "0", "--top", "shuffle"], "invalid --top: leaves no cell of the grid (its schemes: "
                                                      "deterministic/wr, pooled/wr, wor/poisson, wor/wr)"),
    (["--tsdp", "--random", "0", "--top", "pooled", "--bottom", "poisson"], "invalid --top: with bottom = poisson "
                                                                            "leaves no cell of the grid"),
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


@pytest.mark.parametrize("function,words", [
    ("exits_0", "accountant {m}:exits_0 called sys.exit(0) (raised SystemExit) at wor/wr N=320"),
    ("exits_3", "accountant {m}:exits_3 called sys.exit(3) (raised SystemExit) at wor/wr N=320"),
    ("os_exit", "accountant {m}:os_exit ended its process (exit status 0: os._exit, a signal or a crash) at wor/wr"),
    ("interrupted", "accountant {m}:interrupted raised KeyboardInterrupt at wor/wr N=320 L=20 L_C=1 L_F=1 Λ=32 λ=1 σ=1, "
                    "1 step(s), δ = 1e-05 (no message)"),
    ("huge", "accountant {m}:huge returned a number too large for a float (int, 401 digits) at wor/wr"),
])
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_an_accountant_that_exits_or_overflows_is_one_line_exit_2(module, function, words, json_flag):
    """sys.exit(0) and os._exit(0) used to end the command with status 0 and no output: a green CI check of nothing."""
    code, out, err = run_cli(["check-accountant", f"{module}:{function}", *SMALL, *json_flag])
    assert code == 2 and out == ""
    assert words.format(m=module) in error_line(err)


def test_the_time_limit_stops_one_long_c_call_that_holds_the_gil(module):
    """sum(range(10**12)) holds the GIL for minutes: the worker process is ended at the limit (2 s, plus the 1 s grace
    of SIGTERM), not after the call."""
    import time

    started = time.monotonic()
    code, out, err = run_cli(["check-accountant", f"{module}:holds_the_gil", *SMALL, "--timeout", "2"])
    took = time.monotonic() - started
    assert code == 2 and out == ""
    assert f"accountant {module}:holds_the_gil hung at wor/wr" in error_line(err)
    assert "no answer within 2 s (its worker process was ended)" in error_line(err)
    assert took < 20, took


def test_what_the_accountant_prints_stays_out_of_the_json_and_is_shown_in_text(module):
    code, out, err = run_cli(["check-accountant", f"{module}:prints", *SMALL, "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert sorted(d["verdicts"][0]["output"].splitlines()) == ["a warning", "computing wor", "from C"]
    code, out, err = run_cli(["check-accountant", f"{module}:prints", *SMALL])
    assert code == 0, err
    assert "the accountant printed at pooled/wr N=320 L=20 L_C=1 L_F=1 Λ=32 λ=1 σ=1, 1 step(s): " in out
    assert "computing pooled" in out


def test_declined_cells_are_reported_and_the_rest_judged(module):
    code, out, err = run_cli(["check-accountant", f"{module}:declines_some", *SMALL, "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["counts"]["declined"] == 2 and d["judged"] == 4 and d["passed"] is True
    declined = {v["config"]["top"]: v for v in d["verdicts"] if v["verdict"] == "declined"}
    assert set(declined) == {"pooled", "deterministic"}
    assert declined["pooled"]["note"] == "raised NotImplementedError: pooled windows are not covered"
    assert declined["deterministic"]["note"] == "returned None"
    assert declined["pooled"]["epsilon_reported"] is None


def test_an_accountant_that_declines_every_cell_checked_nothing_exit_2(module):
    code, out, err = run_cli(["check-accountant", f"{module}:declines_all", *SMALL])
    assert code == 2
    assert f"accountant {module}:declines_all: no cell was judged (6 declined, 0 unchecked of 6): nothing was " \
           "checked" in error_line(err)


def test_tsdps_public_api_as_a_users_accountant_passes(module):
    """tsdp.epsilon raises TheoremError where the catalogue has no sound bound (pooled windows, k > 1): that cell is
    declined, and every other cell is sound (tsdp's exact sound ε reads 'sound', not 'between')."""
    code, out, err = run_cli(["check-accountant", f"{module}:tsdps_public_api", *SMALL, "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["counts"] == {"unsound": 0, "between": 0, "sound": 5, "unchecked": 0, "declined": 1,
                           "relation_mismatch": 0}
    (pooled,) = [v for v in d["verdicts"] if v["verdict"] == "declined"]
    assert pooled["config"]["top"] == "pooled" and pooled["note"].startswith("raised TheoremError: no sound upper")


@pytest.mark.slow
def test_tsdps_public_api_passes_on_the_default_grid(module):
    code, out, err = run_cli(["check-accountant", f"{module}:tsdps_public_api", "--json"])
    assert code == 0, err
    d = json.loads(out)
    assert d["counts"]["declined"] == 1 and d["counts"]["unsound"] == 0 and d["judged"] == 15


@pytest.mark.parametrize("flags,schemes", [
    (["--top", "deterministic"], {"deterministic/wr"}),
    (["--bottom", "poisson"], {"wor/poisson"}),
    (["--top", "wor", "--bottom", "wr"], {"wor/wr"}),
])
def test_top_and_bottom_restrict_the_grid(flags, schemes):
    code, out, err = run_cli(["check-accountant", "--tsdp", *SMALL, *flags, "--json"])
    assert code == 0, err
    assert {f"{v['config']['top']}/{v['config']['bottom']}" for v in json.loads(out)["verdicts"]} == schemes


def test_the_timeout_default_is_the_librarys():
    """`--timeout`, check_accountant and the pytest plugin share one default (60 s)."""
    import inspect

    from tsdp.cli.main import build_parser
    from tsdp.testing import assert_sound_for_all, check_accountant

    sub = build_parser()._subparsers._group_actions[0].choices["check-accountant"]
    default = sub.get_default("timeout")
    assert default == 60.0
    for fn in (check_accountant, assert_sound_for_all):
        assert inspect.signature(fn).parameters["timeout"].default == default
