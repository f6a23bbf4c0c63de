"""`tsdp epsilon` / `tsdp calibrate` on the command line: default configuration and errors."""
import json
import math

import pytest
from dp_accounting.pld import privacy_loss_distribution as lib

from tsdp.theorems.config import DEFAULT_CONFIG
from tsdp.theorems.registry import get
from tsdp.cli.main import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.slow  # the library's own mixture PLD at 1e-4 takes 15 s; test_accounting_library checks T6 on a coarser grid
def test_default_config_epsilon_matches_library(capsys):
    num = get("T6").pair(DEFAULT_CONFIG).numeric()
    ref = lib.from_mixture_gaussian_mechanism(num.sigma, list(num.a * num.sigma), list(num.p),
                                              value_discretization_interval=1e-4)
    for steps in (1, 100, 1000):
        code, out, _ = run(capsys, "epsilon", "--delta", "1e-5", "--steps", str(steps), "--json")
        assert code == 0
        r = json.loads(out)
        assert r["theorem"] == "T6" and r["compositions"] == steps
        e_lib = (ref if steps == 1 else ref.self_compose(steps)).get_epsilon_for_delta(1e-5)
        assert r["epsilon"] >= e_lib * (1 - 1e-9)
        assert r["epsilon_attained"] <= e_lib * (1 + 1e-9)
        assert math.isclose(r["epsilon_attained"], e_lib, rel_tol=1e-2)
        if steps == 1:
            assert math.isclose(r["epsilon"], e_lib, rel_tol=1e-3)


@pytest.mark.parametrize("argv,flag", [
    (["epsilon", "--delta", "0", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "1.5", "--steps", "1"], "--delta"),
    (["epsilon", "--delta", "1e-5", "--steps", "1", "--epochs", "1"], "--steps"),
    (["epsilon", "--delta", "1e-5"], "--steps"),
    (["epsilon", "--delta", "1e-5", "--steps", "-2"], "--steps"),
    (["calibrate", "--epsilon", "0", "--delta", "1e-5", "--steps", "1"], "--epsilon"),
    (["calibrate", "--epsilon", "-1", "--delta", "1e-5", "--steps", "1"], "--epsilon"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, flag):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and flag in err and "Traceback" not in err


def test_calibrate_cli_round_trip(capsys):
    code, out, _ = run(capsys, "calibrate", "--epsilon", "2", "--delta", "1e-5", "--steps", "10",
                       "--discretization", "1e-3", "--tolerance", "1e-2", "--json")
    assert code == 0
    r = json.loads(out)
    code, out, _ = run(capsys, "epsilon", "--delta", "1e-5", "--steps", "10", "--sigma", str(r["sigma"]),
                       "--discretization", "1e-3", "--json")
    assert json.loads(out)["epsilon"] <= 2.0


def test_sound_only_composes_the_sound_estimate_alone(capsys, monkeypatch):
    """`--sound-only`: the same sound ε as the bracket, bit for bit, and no attained accountant built;
    the sound ε is an upper bound on the library's own construction of T6's pair."""
    from tsdp.verify import accountant

    argv = ("epsilon", "--delta", "1e-5", "--steps", "10", "--discretization", "1e-3", "--json")
    code, out, _ = run(capsys, *argv)
    both = json.loads(out)
    built = []
    init = accountant.PldAccountant.__init__

    def spy(self, estimate="sound", **kw):
        built.append(estimate)
        init(self, estimate, **kw)

    monkeypatch.setattr(accountant.PldAccountant, "__init__", spy)
    code, out, _ = run(capsys, *argv, "--sound-only")
    alone = json.loads(out)
    assert code == 0 and built == ["sound"]
    assert alone["epsilon"] == both["epsilon"] and alone["epsilon_attained"] is None
    assert alone["estimates"] == ["sound"] and both["estimates"] == ["sound", "attained"]
    assert alone["attained_refused"] is None  # not asked for, not refused
    num = get("T6").pair(DEFAULT_CONFIG).numeric()
    ref = lib.from_mixture_gaussian_mechanism(num.sigma, list(num.a * num.sigma), list(num.p),
                                              value_discretization_interval=1e-3).self_compose(10)
    assert alone["epsilon"] >= ref.get_epsilon_for_delta(1e-5) * (1 - 1e-9)
    code, out, err = run(capsys, "epsilon", "--delta", "1e-5", "--steps", "10", "--sound-only")
    assert code == 0 and "attained" not in out and "sound" in out.splitlines()[0]


def test_sound_only_of_a_lower_bound_is_one_error_line(capsys):
    code, _, err = run(capsys, "epsilon", "--delta", "1e-5", "--steps", "10", "--sound-only", "--theorem", "T3",
                       "--top", "deterministic", "--instances", "4", "--batch-size", "128")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "lower bound" in err
