"""Bad input is answered with one clear error naming the parameter: the library
raises ConfigError / TheoremError, the CLI exits 2 with that one-line message and no traceback."""
import json
import math

import numpy as np
import pytest

from tsdp.theorems.bounds.base import TheoremError
from tsdp.theorems.config import DEFAULT_CONFIG, ConfigError, TrainingConfig
from tsdp.theorems.registry import CLAIMS, REGISTRY, get
from tsdp.cli.main import main


@pytest.mark.parametrize("changes,parameter", [
    ({"sigma": 0.0}, "sigma"),
    ({"sigma": -1.0}, "sigma"),
    ({"sigma": math.nan}, "sigma"),
    ({"sigma": math.inf}, "sigma"),
    ({"L": 3, "forecast_length": 4}, "L"),
    ({"batch_size": 2, "instances": 3}, "batch_size"),
    ({"N": 10, "batch_size": 11}, "batch_size"),  # N' = 11 > N
    # pooled Λ = 20 > N_tot = 10 windows (T = 1, λ = 2): no sampler draws it; T13 gave ε = 11.0 from weights [-1, 2]
    ({"top": "pooled", "N": 10, "L": 2, "forecast_length": 2, "context_length": 0, "batch_size": 20, "instances": 2},
     "batch_size"),
    ({"N": -5}, "N"),
    ({"context_length": -1}, "context_length"),
    ({"sigma_forecast": -0.5}, "sigma_forecast"),
    ({"sigma_context": math.nan}, "sigma_context"),
    ({"v": 0.0}, "v"),
    ({"N": 3.5}, "N"),
    ({"top": "replacement"}, "top"),
    ({"w": 2, "sigma_context": 0.5, "sigma_forecast": 1.0}, "sigma_context"),
])
def test_invalid_configuration_names_the_parameter(changes, parameter):
    with pytest.raises(ConfigError) as info:
        TrainingConfig(**{**DEFAULT_CONFIG.__dict__, **changes})
    assert info.value.parameter == parameter
    assert str(info.value).startswith(f"invalid {parameter}:")


def test_unknown_theorem_and_inapplicable_scheme():
    with pytest.raises(TheoremError, match="unknown theorem id 'T99'"):
        get("T99")
    assert get("t6") is REGISTRY["T6"]
    with pytest.raises(TheoremError, match="T6 does not apply: it needs instances λ = 1, got 2"):
        REGISTRY["T6"].profile(DEFAULT_CONFIG.with_(instances=2), np.array([1.0]))
    with pytest.raises(TheoremError, match="T1 does not apply: it needs top level"):
        REGISTRY["T1"].pair(DEFAULT_CONFIG)
    with pytest.raises(ValueError, match="alpha"):
        REGISTRY["T6"].profile(DEFAULT_CONFIG, np.array([-1.0]))


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,needle", [
    (["--sigma", "0"], "invalid --sigma: must be > 0"),
    (["--sigma", "nan"], "invalid --sigma: must be finite"),
    (["--L", "1", "--forecast-length", "2"], "invalid --L: must be >= forecast_length"),
    (["--batch-size", "2", "--instances", "3"], "invalid --batch-size"),
    (["--N", "10"], "more than N = 10"),
    (["--theorem", "T99"], "unknown theorem id 'T99'"),
    (["--theorem", "T1"], "T1 does not apply"),
    (["--alpha", "-1"], "invalid --alpha"),
    (["--dps", "5"], "invalid --dps"),
])
def test_cli_exits_2_with_one_line_and_no_traceback(capsys, argv, needle):
    args = list(argv) if "--alpha" in argv else ["--alpha", "1", *argv]
    code, out, err = _run(capsys, "profile", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_profile_cli_default_t6(capsys):
    """`tsdp profile --theorem T6 --alpha 1 2 10 --json` prints the engine's numbers; the
    α = 1 value is the closed form ρ r (2Φ(1/σ) - 1) = 0.01 · erf(1/√2)."""
    code, out, _ = _run(capsys, "profile", "--theorem", "T6", "--alpha", "1", "2", "10", "--json")
    payload = json.loads(out)
    assert code == 0 and payload["theorem"] == "T6" and payload["kind"] == "tight"
    assert payload["alpha"] == [1.0, 2.0, 10.0]
    assert payload["delta"] == pytest.approx(list(REGISTRY["T6"].profile(DEFAULT_CONFIG, [1.0, 2.0, 10.0])), rel=1e-15)
    assert payload["delta"][0] == pytest.approx(0.01 * math.erf(1 / math.sqrt(2)), rel=1e-13)
    code, out, _ = _run(capsys, "profile", "--theorem", "T6", "--epsilon", "0", "--dps", "40", "--json")
    assert json.loads(out)["delta_exact"][0].startswith("0.006826894921370")


def test_theorems_cli_lists_the_catalogue(capsys):
    code, out, _ = _run(capsys, "theorems", "--json")
    rows = json.loads(out)["theorems"]
    assert code == 0 and [r["id"] for r in rows] == list(REGISTRY) + list(CLAIMS)  # the bounds, then T5
    assert {r["kind"] for r in rows} == {"tight", "upper", "lower", "claim"}
    t9 = next(r for r in rows if r["id"] == "T9")
    assert t9["kind"] == "lower" and t9["reference"] == "Thm F.7"
