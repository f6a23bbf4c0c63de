"""`tsdp forecast predict` on M1 yearly printed a 0.1-quantile of about -1.7e6 for a series of positive values
(3,600 to 1,425,090). Not a bug: the printed quantiles are those of the model's own Student-t law (checked here
against scipy.stats.t.ppf at the model's ν, loc, scale), and an undertrained model's law is that wide. The model
file now carries its test scores at training, and predict (and tradeoff) say when the model did not beat seasonal
naive."""
import json

import numpy as np
import pytest
import torch
from scipy import stats

from tsdp.attacks.inference.mechanism import TrainingScores, load_model, save_model
from tsdp.cli.main import main
from tsdp.datasets.formats import load_series
from tsdp.training.models import make_model

UNDERTRAINED = TrainingScores(crps=0.7119, seasonal_naive_crps=0.6366, untrained_crps=0.8188)
TRAINED = TrainingScores(crps=0.1121, seasonal_naive_crps=0.6366, untrained_crps=0.8188)
SAMPLES = 20_000


def _model_file(tmp_path, trained):
    """An untrained simple-ff (L_C = L_F = 1, M1 yearly's shape), saved with ``trained`` as its scores."""
    path = tmp_path / "m.pt"
    torch.manual_seed(0)
    save_model(path, make_model("simple-ff", 1, 1), "simple-ff", 1, 1, trained=trained)
    return path


def _predict(capsys, path, *extra):
    code = main(["forecast", "predict", "--model-file", str(path), "--data", "m1-yearly", "--epsilon", "1",
                 "--delta", "1e-5", "--seed", "0", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out


def test_the_printed_quantiles_are_the_models_own_student_t_law(tmp_path, capsys):
    """Each printed quantile of SAMPLES draws is within 5 standard errors of scipy's quantile of t_ν(loc, scale) at the
    model's parameters for the series' last value (the noise, σ ≈ 4 on a value of 1.4e6, moves them by 3e-6 of the
    scale); the sample quantile's standard error is sqrt(q (1 - q) / n) / density there, so the test fails by chance
    with probability below 1e-5 (fixed seed: it does not)."""
    path = _model_file(tmp_path, UNDERTRAINED)
    got = json.loads(_predict(capsys, path, "--samples", str(SAMPLES), "--json"))
    x = np.asarray(load_series("m1-yearly").series[0], dtype=float)
    model, _ = load_model(path, torch.device("cpu"))
    with torch.no_grad():
        df, loc, scale = (float(t) for t in model.distribution(torch.tensor(x[-1:], dtype=torch.float32)[None]))
    law = stats.t(df, loc, scale)
    for q, values in got["quantiles"].items():
        q = float(q)
        standard_error = np.sqrt(q * (1 - q) / SAMPLES) / law.pdf(law.ppf(q))
        assert abs(values[0] - law.ppf(q)) < 5 * standard_error, (q, values[0], law.ppf(q), standard_error)
    assert got["quantiles"]["0.1"][0] < 0 < x.min()  # what was reported: the law's honest lower tail
    assert scale > 0.5 * x[-1]  # an untrained model's law: as wide as the value it forecasts


@pytest.mark.parametrize("trained, noted", [(UNDERTRAINED, True), (TRAINED, False), (None, False)])
def test_predict_says_when_the_model_did_not_beat_seasonal_naive(tmp_path, capsys, trained, noted):
    path = _model_file(tmp_path, trained)
    human = _predict(capsys, path, "--samples", "50").splitlines()
    got = json.loads(_predict(capsys, path, "--samples", "50", "--json"))
    notes = [line for line in human if line.startswith("note: ")]
    assert len(notes) == noted and (got["note"] is not None) == noted
    if noted:
        assert notes[0] == f"note: {got['note']}"
        assert "0.7119" in notes[0] and "0.6366" in notes[0] and "undertrained" in notes[0]
    assert got["model"].get("trained") == (None if trained is None else trained.as_dict())


def test_tradeoff_says_it_too(tmp_path, capsys):
    path = _model_file(tmp_path, UNDERTRAINED)
    code = main(["forecast", "tradeoff", "--model-file", str(path), "--data", "grunfeld", "--epsilons", "1",
                 "--rates", "1", "--samples", "10", "--seed", "0", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "undertrained" in json.loads(out.out)["note"]


def test_a_saved_model_round_trips_its_scores(tmp_path):
    path = _model_file(tmp_path, UNDERTRAINED)
    _, header = load_model(path, torch.device("cpu"))
    assert header.trained == UNDERTRAINED and not header.trained.beats_seasonal_naive and TRAINED.beats_seasonal_naive


@pytest.mark.parametrize("scores", [{"crps": "much"}, {"crps": 0.5}, {"crps": 0.5, "seasonal_naive_crps": 0.6,
                                                                      "untrained_crps": 0.7, "extra": 1}, [0.5], 3])
def test_a_file_whose_scores_are_malformed_is_not_a_model_file(tmp_path, scores):
    path = _model_file(tmp_path, None)
    blob = torch.load(path, weights_only=True)
    blob["trained"] = scores
    torch.save(blob, path)
    with pytest.raises(ValueError, match="is not a model file written by this version"):
        load_model(path, torch.device("cpu"))


def test_a_save_that_fails_leaves_no_file(tmp_path, monkeypatch):
    """The model file is written whole or not at all (a stop while saving left a truncated one)."""
    import tsdp.verify.file_cache as file_cache

    def stopped(fd, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(file_cache.os, "fsync", stopped)
    with pytest.raises(KeyboardInterrupt):
        _model_file(tmp_path, TRAINED)
    assert list(tmp_path.iterdir()) == []
