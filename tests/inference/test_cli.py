"""`tsdp forecast ...`: accounting, calibration, private forecasts, and bad input (exit 2, one line)."""
import json

import pytest
import torch

from tsdp.attacks.inference.mechanism import save_model
from tsdp.training.models import make_model
from tsdp.cli.main import main
from tsdp.theorems.bounds.inference import InferenceConfig
from tsdp.verify import inference_accounting as ia


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "m.pt"
    torch.manual_seed(0)
    save_model(path, make_model("simple-ff", 4, 2), "simple-ff", 4, 2)
    return str(path)


def test_epsilon_and_calibrate_agree_with_the_library(capsys):
    code, out, _ = run(capsys, "forecast", "epsilon", "--r", "0.5", "--sigma", "1.5", "--w", "2",
                       "--context-length", "6", "--releases", "2", "--delta", "1e-5", "--json")
    d = json.loads(out)
    cfg = InferenceConfig(r=0.5, sigma=1.5, w=2, v=1.0, context_length=6, releases=2)
    assert code == 0 and d["epsilon"] == ia.sound(cfg, delta=1e-5) and d["epsilon_attained"] is None  # L_C > 1
    code, out, _ = run(capsys, "forecast", "calibrate", "--r", "0.75", "--w", "1", "--v", "10", "--epsilon", "2",
                       "--delta", "1e-4", "--json")
    d = json.loads(out)
    assert code == 0 and d["epsilon"] <= 2 < d["epsilon_rejected"]


@pytest.mark.parametrize("argv,tv", [(["--r", "0.5"], 0.5), (["--r", "0.5", "--w", "2", "--context-length", "8",
                                                               "--releases", "2"], 0.9375)])
def test_calibrate_at_a_delta_above_the_total_variation_says_every_sigma_meets_the_target(capsys, argv, tv):
    """δ = 0.95 is above 1 - (1 - r)^(m k), the probability that some release keeps a changed step (0.5 for one
    release of one step at r = 0.5; 1 - 0.5^4 for two releases of two changed steps): exit 0, the line says every σ
    meets the target with that probability, and --json says it with ε = 0 (the old search said the target was met
    even at σ = 0.001 and exited 2)."""
    code, out, err = run(capsys, "forecast", "calibrate", *argv, "--epsilon", "1", "--delta", "0.95")
    assert code == 0, err
    head = out.splitlines()[0]
    assert head.startswith("every σ > 0 meets the target: δ = 0.95 ≥ ") and float(head.split("≥ ")[1].split(",")[0]) >= tv
    code, out, err = run(capsys, "forecast", "calibrate", *argv, "--epsilon", "1", "--delta", "0.95", "--json")
    d = json.loads(out)
    assert code == 0 and d["every_sigma"] is True and d["epsilon"] == 0.0 and d["sigma_rejected"] is None
    assert d["total_variation"] == pytest.approx(tv, rel=1e-11) and d["total_variation"] >= tv


def test_predict_prints_quantiles(capsys, model_file):
    code, out, _ = run(capsys, "forecast", "predict", "--model-file", model_file, "--context-length", "4",
                       "--values", "1", "2", "3", "4", "5", "--epsilon", "4", "--delta", "1e-4", "--r", "0.5",
                       "--samples", "50", "--json")
    d = json.loads(out)
    assert code == 0 and len(d["quantiles"]["0.5"]) == 2
    assert d["quantiles"]["0.1"][0] <= d["quantiles"]["0.5"][0] <= d["quantiles"]["0.9"][0]


def test_predict_draws_fresh_randomness_unless_a_seed_is_given(capsys, model_file):
    """The release is (ε, δ)-DP only if its keep pattern and noise are secret: with a fixed default seed anyone could
    redraw them (tsdp is public) and compute the release of every candidate series, telling neighbours apart with
    certainty (ε = ∞). Two releases without --seed differ (fresh 63-bit seeds collide with probability 2^-63) and
    differ from the release at seed 0; with --seed the release is reproducible."""
    common = ["forecast", "predict", "--model-file", model_file, "--values", "1", "2", "3", "4", "5", "--epsilon", "4",
              "--delta", "1e-4", "--r", "0.5", "--samples", "50", "--json"]
    outs = []
    for extra in ([], [], ["--seed", "0"], ["--seed", "0"]):
        code, out, err = run(capsys, *common, *extra)
        assert code == 0, err
        outs.append(json.loads(out)["quantiles"])
    assert outs[0] != outs[1] and outs[2] not in outs[:2]
    assert outs[2] == outs[3]


def test_predict_with_deepar_releases_and_accounts_the_whole_context_it_reads(capsys, tmp_path, monkeypatch):
    """DeepAR reads W = L_C + max lag - 1 values (lags 1..7 and L_C = 2: W = 8), its file's context length: the
    mechanism releases all W of them and σ is calibrated for m = min(w, W) changed steps (w = 8 here), not for the
    L_C = 2 its scale reads (which would need less noise: T15 grows with m)."""
    from tsdp.attacks.inference import mechanism
    from tsdp.training.models import deepar_window
    from tsdp.verify.inference_accounting import calibrate_sigma

    lags = tuple(range(1, 8))
    width = deepar_window(2, lags)
    torch.manual_seed(0)
    path = tmp_path / "deepar.pt"
    save_model(path, make_model("deepar", width, 2, lags=lags, covariates=0), "deepar", width, 2)
    seen = []
    real = mechanism.private_forecast

    def spy(model, x, r, sigma, n_samples, generator, covariates=None):
        seen.append((tuple(x.shape), model.context_length))
        return real(model, x, r, sigma, n_samples, generator, covariates)

    monkeypatch.setattr(mechanism, "private_forecast", spy)
    code, out, err = run(capsys, "forecast", "predict", "--model-file", str(path), "--values",
                         *map(str, range(1, 13)), "--epsilon", "2", "--delta", "1e-4", "--r", "0.5", "--w", "8",
                         "--samples", "20", "--seed", "1", "--device", "cpu", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert seen == [((1, width), width)] and d["model"]["context_length"] == width == 8
    accounted = calibrate_sigma(InferenceConfig(r=0.5, sigma=1.0, w=8, v=1.0, context_length=width), 2.0, 1e-4)
    assert d["sigma"] == accounted.sigma
    assert d["sigma"] > calibrate_sigma(InferenceConfig(r=0.5, sigma=1.0, w=8, v=1.0, context_length=2), 2.0,
                                        1e-4).sigma


@pytest.mark.parametrize("argv,flag", [
    (["--r", "0"], "--r"), (["--r", "1.5"], "--r"), (["--v", "0"], "--v"), (["--v", "-2"], "--v"),
    (["--values", "1", "2", "3"], "--values"), (["--w", "0"], "--w"), (["--context-length", "0"], "--context-length"),
    (["--epsilon", "-1"], "--epsilon"), (["--delta", "2"], "--delta"),
])
def test_predict_bad_input_exits_2_with_one_line_naming_the_flag(capsys, model_file, argv, flag):
    base = {"--model-file": [model_file], "--context-length": ["4"], "--values": ["1", "2", "3", "4", "5"],
            "--epsilon": ["2"], "--delta": ["1e-4"], "--r": ["0.5"]}
    args = ["forecast", "predict"]
    given = {argv[0]: argv[1:]}
    for k, v in {**base, **given}.items():
        args += [k, *v]
    code, out, err = run(capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and flag in err


def test_epsilon_bad_input_exits_2(capsys):
    code, _, err = run(capsys, "forecast", "epsilon", "--r", "0", "--delta", "1e-5")
    assert code == 2 and "--r" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "forecast", "epsilon", "--r", "0.5", "--delta", "1e-5", "--epsilon", "1")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_predict_refuses_a_deepar_file_of_another_version(capsys, tmp_path):
    """A DeepAR saved before the static category's constant existed (its ``static.weight`` absent) is refused in one
    line that names the file and says another version may have other layers; the same file complete predicts."""
    torch.manual_seed(0)
    path, old = tmp_path / "deepar.pt", tmp_path / "old.pt"
    save_model(path, make_model("deepar", 4, 2), "deepar", 4, 2)
    blob = torch.load(path, weights_only=True)
    del blob["state_dict"]["static.weight"]
    torch.save(blob, old)
    common = ["--context-length", "4", "--values", "1", "2", "3", "4", "5", "--epsilon", "4", "--delta", "1e-4",
              "--samples", "20"]
    code, out, err = run(capsys, "forecast", "predict", "--model-file", str(old), *common)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert str(old) in err and "another version" in err
    code, _, _ = run(capsys, "forecast", "predict", "--model-file", str(path), *common)
    assert code == 0


def test_predict_gives_deepar_the_covariates_of_the_forecast(capsys, tmp_path):
    """A DeepAR trained on hourly data (4 calendar features and the age) predicts from an hourly --data series with
    the covariates of the positions after its last value: the JSON quantiles equal the library's private forecast
    of those covariates at the same seed (and not those of zero covariates). --values has no calendar and is
    refused in one line; so is a model file without its covariates (another version)."""
    import numpy as np
    pd = pytest.importorskip("pandas")

    from tsdp.attacks.inference.mechanism import private_forecast
    from tsdp.datasets.series import SeriesStart
    from tsdp.datasets.time_features import window_covariates
    from tsdp.cli.cmd_forecast import QUANTILES
    from tsdp.training.generators import seeded_generator

    torch.manual_seed(0)
    model = make_model("deepar", 4, 2, covariates=5)
    path = tmp_path / "deepar.pt"
    save_model(path, model, "deepar", 4, 2, "h")
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]
    csv = tmp_path / "hourly.csv"
    stamps = pd.date_range("2024-03-09 20:00", periods=len(values), freq="h")  # across midnight
    csv.write_text("item_id,timestamp,target\n" + "".join(f"a,{t},{v}\n" for t, v in zip(stamps, values)))
    common = ["--model-file", str(path), "--epsilon", "4", "--delta", "1e-4", "--r", "0.5", "--samples", "30",
              "--seed", "3", "--json", "--device", "cpu"]  # bit for bit on the CPU; CUDA's rounding: tests/test_cuda.py
    code, out, err = run(capsys, "forecast", "predict", "--data", str(csv), *common)
    assert code == 0, err
    got = json.loads(out)
    covariates = torch.from_numpy(window_covariates([SeriesStart("2024-03-09 20:00:00", "h")], [len(values) + 2], 6))
    context = torch.tensor(values[-4:], dtype=torch.float32)[None]

    def quantiles(z):
        paths = private_forecast(model.eval(), context, 0.5, got["sigma"], 30, seeded_generator(3), z)
        return np.quantile(paths[0].numpy(), QUANTILES, axis=0)

    np.testing.assert_allclose(got["quantiles"]["0.5"], quantiles(covariates)[QUANTILES.index(0.5)], rtol=1e-6)
    assert not np.allclose(got["quantiles"]["0.5"], quantiles(None)[QUANTILES.index(0.5)], rtol=1e-6)
    code, out, err = run(capsys, "forecast", "predict", "--values", *map(str, values), *common)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--values" in err and "'h'" in err
    blob = torch.load(path, weights_only=True)
    del blob["covariates"]
    torch.save(blob, tmp_path / "old.pt")
    code, out, err = run(capsys, "forecast", "predict", "--data", str(csv), "--model-file", str(tmp_path / "old.pt"),
                         *common[2:])
    assert code == 2 and "another version" in err and len(err.strip().splitlines()) == 1


def test_predict_names_the_freq_json_lines_need_for_a_calendar_model(capsys, tmp_path):
    """A DeepAR trained at the step 'h' forecasting GluonTS JSON lines (which do not say their step): without --freq
    the one error line names the fix, --freq h; with it the forecast runs."""
    pytest.importorskip("pandas")
    torch.manual_seed(0)
    path = tmp_path / "deepar_h.pt"
    save_model(path, make_model("deepar", 4, 2, covariates=5), "deepar", 4, 2, "h")
    data = tmp_path / "good.jsonl"
    data.write_text(json.dumps({"start": "2024-03-09 20:00:00", "target": [3.0, 1.0, 4.0, 1.0, 5.0, 9.0]}) + "\n")
    common = ["forecast", "predict", "--model-file", str(path), "--data", str(data), "--epsilon", "4", "--delta",
              "1e-4", "--samples", "10", "--device", "cpu", "--json"]
    code, out, err = run(capsys, *common)
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert code == 2 and len(errors) == 1 and "invalid --data" in errors[0] and "--freq h" in errors[0]
    code, out, err = run(capsys, *common, "--freq", "h")
    assert code == 0, err


@pytest.mark.parametrize("scale", [1e38, 1e30])
def test_tradeoff_of_series_that_overflow_the_float32_model_is_refused_not_a_nan_table(capsys, tmp_path, model_file,
                                                                                        scale):
    """Series of magnitude 1e38 (beyond float32 once the model adds to them) or 1e30 (whose forecasts' squares
    overflow): the forecasts are not finite, so the CRPS is no number: one line naming --data, exit 2, as
    `forecast predict` refuses such a series (a NaN table with exit 0 before)."""
    path = tmp_path / "big.csv"
    path.write_text("a,b\n" + "".join(f"{scale * (1 + i % 3)!r},{scale * (2 + i % 2)!r}\n" for i in range(12)))
    code, out, err = run(capsys, "forecast", "tradeoff", "--model-file", model_file, "--data", str(path),
                         "--epsilons", "1", "--rates", "1", "--samples", "10", "--seed", "0")
    if code == 0:  # the float32 model held these values: every number of the table is finite
        assert "nan" not in out.lower() and "inf " not in out
        return
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--data" in err, (code, out, err)


def test_predict_uses_every_bit_of_its_seed(capsys, model_file):
    """The release's secret is its 63-bit seed. torch's CPU ``manual_seed`` keeps the low 32 bits, so seeds that
    agree there drew the same keep pattern and noise: an adversary could try all 2^32. Seeds 3 and 3 + 2^32 now give
    different releases."""
    common = ["forecast", "predict", "--model-file", model_file, "--values", "1", "2", "3", "4", "5", "--epsilon", "4",
              "--delta", "1e-4", "--r", "0.5", "--samples", "50", "--json"]
    outs = []
    for seed in (3, 3 + 2 ** 32):
        code, out, err = run(capsys, *common, "--seed", str(seed))
        assert code == 0, err
        outs.append(json.loads(out)["quantiles"])
    assert outs[0] != outs[1]
