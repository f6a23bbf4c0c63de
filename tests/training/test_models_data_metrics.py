"""Student-t likelihood and sampling, CRPS / seasonal naive, data generators and loaders."""
import json

import numpy as np
import pytest
import torch
from scipy import stats

from tsdp.datasets.formats import load_series
from tsdp.datasets.series import synthetic, synthetic_for
from tsdp.training.metrics import (crps_from_samples, crps_scale, point_crps, seasonal_naive,
                                      weighted_quantile_loss)
from tsdp.training.models import MODELS, make_model, student_t_nll, student_t_sample
from tsdp.verify.accountant import largest_within
from tsdp.theorems.config import TrainingConfig


def test_student_t_nll_matches_scipy():
    y = torch.tensor([0.3, -2.0, 10.0], dtype=torch.float64)
    df = torch.tensor([2.5, 7.0, 30.0], dtype=torch.float64)
    loc = torch.tensor([0.0, 1.0, 9.0], dtype=torch.float64)
    scale = torch.tensor([1.0, 0.5, 3.0], dtype=torch.float64)
    ref = -stats.t.logpdf(y.numpy(), df.numpy(), loc.numpy(), scale.numpy())
    assert np.allclose(student_t_nll(y, df, loc, scale).numpy(), ref, atol=1e-12)


def test_student_t_sample_law():
    """Samples of t_3(2, 0.5) pass a KS test against scipy's CDF (false-failure rate 1e-4)."""
    n = 20_000
    s = student_t_sample(torch.full((n,), 3.0), torch.full((n,), 2.0), torch.full((n,), 0.5), torch.Generator().manual_seed(0))
    assert stats.kstest(s.numpy(), stats.t(3, 2.0, 0.5).cdf).pvalue > 1e-4


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_shapes_and_finite_loss_on_padding(name):
    """Per-sample loss shape (B,), finite even for an all-zero (fully padded) context; sample paths (B, S, L_F)."""
    torch.manual_seed(0)
    model = make_model(name, 30, 6)
    c = torch.cat([torch.zeros(1, 30), 5 + torch.randn(3, 30)])
    loss = model(c, 5 + torch.randn(4, 6))
    assert loss.shape == (4,) and bool(torch.isfinite(loss).all())
    paths = model.sample(c, 7, torch.Generator().manual_seed(1))
    assert paths.shape == (4, 7, 6) and bool(torch.isfinite(paths).all())


def test_unknown_model_and_short_deepar_context():
    with pytest.raises(ValueError, match="unknown model"):
        make_model("prophet", 10, 2)
    with pytest.raises(ValueError, match="lag"):
        make_model("deepar", 0, 2)


def test_weighted_quantile_loss_by_hand():
    """wQL_q = 2 Σ|(y - ŷ)(1{y ≤ ŷ} - q)| / Σ|y|: y = (1, 3), ŷ = (2, 2), q = 0.1 → 2 (0.9 + 0.1) / 4 = 0.5."""
    assert weighted_quantile_loss(np.array([1.0, 3.0]), np.array([2.0, 2.0]), 0.1) == pytest.approx(0.5)


def test_crps_of_all_zero_targets_is_refused():
    """Σ|y| = 0 leaves the scaled CRPS undefined (it was inf or nan at exit 0): a ValueError saying so; any other
    target is scaled by its Σ|y|."""
    with pytest.raises(ValueError, match="is 0: the CRPS, scaled by their total"):
        weighted_quantile_loss(np.zeros((2, 3)), np.ones((2, 3)), 0.5)
    with pytest.raises(ValueError, match="undefined"):
        point_crps(np.zeros(4), np.zeros(4))
    assert crps_scale(np.array([[-1.0, 0.0], [2.5, 0.0]])) == 3.5


def test_crps_of_point_mass_is_weighted_absolute_error():
    """Identical sample paths: mean wQL over q = 0.1..0.9 equals Σ|y - ŷ| / Σ|y| (the mean of 2q and 2(1-q) is 1)."""
    rng = np.random.default_rng(0)
    y = rng.uniform(1, 5, size=(4, 3))
    yhat = y + rng.normal(size=(4, 3))
    samples = np.repeat(yhat[:, None], 10, axis=1)
    expected = np.abs(y - yhat).sum() / np.abs(y).sum()
    assert crps_from_samples(y, samples) == pytest.approx(expected)
    assert point_crps(y, yhat) == pytest.approx(expected)


def test_crps_rewards_calibration():
    """Samples from the true N(10, 1) law score better than a law shifted by 2 (large samples, fixed seed)."""
    rng = np.random.default_rng(1)
    y = rng.normal(10, 1, size=(200, 4))
    good = crps_from_samples(y, rng.normal(10, 1, size=(200, 500, 4)))
    bad = crps_from_samples(y, rng.normal(12, 1, size=(200, 500, 4)))
    assert good < 0.8 * bad


def test_seasonal_naive_exact_on_periodic_series():
    h = [np.tile([1.0, 2.0, 3.0, 4.0], 5), np.array([7.0, 8.0])]
    f = seasonal_naive(h, 6, season=4)
    assert f[0].tolist() == [1, 2, 3, 4, 1, 2]
    assert f[1].tolist() == [7.5] * 6  # shorter than a season: its mean (GluonTS's SeasonalNaivePredictor)


def test_synthetic_seeded_and_split():
    a, b, c = synthetic(5, 40, seed=3), synthetic(5, 40, seed=3), synthetic(5, 40, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a.series, b.series))
    assert not np.array_equal(a.series[0], c.series[0])
    train, target = a.split(8)
    assert train.lengths == (32,) * 5 and target.shape == (5, 8)
    assert np.array_equal(target[2], a.series[2][-8:])
    cfg = TrainingConfig(N=3, L=20, forecast_length=4, batch_size=2, lengths=(20, 25, 30))
    assert synthetic_for(cfg, seed=0).lengths == (24, 29, 34)


def test_csv_loader_variable_lengths(tmp_path):
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    p = tmp_path / "d.csv"
    p.write_text("a,b,c\n1,2,3\n4,5,\n7,,\n")
    d = load_series(p)
    assert [s.tolist() for s in d.series] == [[1, 4, 7], [2, 5], [3]]
    q = tmp_path / "noheader.csv"
    q.write_text("1.5,2\nnan,3\n")
    assert [s.tolist() for s in load_series(q).series] == [[1.5], [2, 3]]
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n,3\n4,5\n")
    with pytest.raises(ValueError, match="missing value"):
        load_series(bad)


def test_jsonl_loader(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"target": [1, 2, 3], "start": "2020"}) + "\n\n" + json.dumps({"target": [4.5, None]}) + "\n")
    assert [s.tolist() for s in load_series(p).series] == [[1, 2, 3], [4.5]]
    (tmp_path / "d.txt").write_text("1,2\n")
    with pytest.raises(ValueError, match="unknown data format"):
        load_series(tmp_path / "d.txt")


def test_largest_within_matches_brute_force():
    """Doubling + bisection (the accountant's max_steps search) finds the largest s with ε(s) ≤ budget, respecting a cap."""
    def eps(s):
        return 0.37 * s ** 0.5

    for budget in (0.1, 0.37, 1.0, 5.0, 20.0):
        brute = max([0] + [s for s in range(1, 5000) if eps(s) <= budget])
        assert largest_within(budget, eps) == brute
        assert largest_within(budget, eps, cap=50) == min(brute, 50)
    assert largest_within(5.0, eps, cap=0) == 0
    with pytest.raises(ValueError, match="never reached"):
        largest_within(1.0, lambda s: 0.0)


def test_evaluation_in_memory_sized_chunks_is_the_one_draw_crps(monkeypatch):
    """train.evaluate draws the test windows in chunks that fit TSDP_MEMORY_LIMIT; each window's quantiles are its own
    paths', so with paths that are a fixed function of the window the CRPS is the one-draw value, bit for bit, and
    the model is asked for many chunks under a small limit (and one under the default)."""
    import torch

    from tsdp.training.metrics import BYTES_PER_SAMPLE_STEP, crps_from_samples
    from tsdp.training.train import evaluate

    class Fixed(torch.nn.Module):
        calls = []

        def sample(self, contexts, n, generator):
            self.calls.append(contexts.shape[0])
            spread = torch.linspace(-1.0, 1.0, n)[None, :, None]
            return contexts[:, None, -2:] * (1.0 + 0.1 * spread)  # (B, n, L_F = 2)

    rng = np.random.default_rng(0)
    contexts = torch.tensor(rng.random((50, 4)) + 0.5, dtype=torch.float32)
    targets = rng.random((50, 2)) + 0.5
    model = Fixed()
    paths = model.sample(contexts, 11, None).numpy()
    one_draw = crps_from_samples(targets, paths)
    Fixed.calls.clear()
    kw = dict(n_samples=11, generator=None, device=torch.device("cpu"))
    assert evaluate(model, contexts, targets, **kw) == one_draw and Fixed.calls == [50]
    Fixed.calls.clear()
    monkeypatch.setenv("TSDP_MEMORY_LIMIT", str(7 * 11 * (4 + 2) * BYTES_PER_SAMPLE_STEP))  # 7 windows a chunk
    assert evaluate(model, contexts, targets, **kw) == one_draw
    assert Fixed.calls == [7] * 7 + [1]


@pytest.mark.parametrize("dtype,rtol", [(torch.float32, 1e-6), (torch.float64, 1e-14)])
def test_lstm_whole_gates_equal_the_gate_views_to_float_rounding(dtype, rtol):
    """DeepAR's LSTM step with its activations over whole tensors (the sampler's, and every stack of runs trained
    together) gives the outputs, states and gradients of the per-gate views (the model's own, :func:`train`'s) to
    float rounding."""
    from tsdp.training.deepar import DeepAR

    torch.manual_seed(0)
    model = make_model("deepar", 30, 6).to(dtype)
    assert isinstance(model, DeepAR) and not model.rnn.whole_gates
    rnn = model.rnn
    g = torch.Generator().manual_seed(1)
    x = torch.randn(37, rnn.cells[0]["ih"].in_features, generator=g, dtype=dtype)
    state = [(torch.randn(37, rnn.hidden, generator=g, dtype=dtype), torch.randn(37, rnn.hidden, generator=g,
                                                                                   dtype=dtype)) for _ in rnn.cells]
    outs = {}
    for whole in (False, True):
        rnn.zero_grad()
        h, new = rnn.step(x, state, whole)
        (h.square().sum() + sum(c.sum() for _, c in new)).backward()
        outs[whole] = [h.detach()] + [t.detach() for s in new for t in s] + [p.grad.clone() for p in rnn.parameters()]
    for a, b in zip(outs[False], outs[True]):
        assert torch.allclose(a, b, rtol=rtol, atol=rtol * b.abs().max().item())
