"""The non-private utility claims C10 and C12 (reports.non_private) on what they train: the batches of each cell's
configuration drawn by the sampler the training draws them with (Λ windows a step, λ in each of N' = Λ / λ series),
and the compute loop through a stand-in training (its verdict and a NaN CRPS), in milliseconds; the real trainings
run in `tsdp report` (tests/reports/test_report_end_to_end.py, slow)."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tsdp.experiments.cells import cell_config, split_of
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.reports.claim_base import ClaimContext
from tsdp.reports.claims import CLAIMS
from tsdp.reports.non_private import EPOCHS, MODEL, TOPS
from tsdp.theorems.config import DEFAULT_CONFIG, Top
from tsdp.training.samplers import make_sampler

SETTINGS = GridSettings(epochs=EPOCHS, seed=0)


@pytest.mark.parametrize("top", TOPS)
@pytest.mark.parametrize("lam", CLAIMS["C12"].levels)
def test_c12_batches_hold_lambda_windows_of_each_series(top, lam):
    """C12's cell (top level, λ) at Λ = 32 on M1 yearly, one epoch drawn by the configuration's sampler on the
    training series (tsdp.training.plan's): every step holds N' = 32 / λ distinct series with λ windows each, Λ = 32
    windows (the deterministic order's last step: the series left, λ windows each), every start inside its series;
    the epoch is floor(N λ / Λ) steps (deterministic: ceil(N / N')), and no series is in two steps of a
    deterministic or shuffled epoch (every series once in the deterministic one)."""
    cell = Cell(MODEL, math.inf, 0, "1-event", top)
    config = CLAIMS["C12"].training_config(cell, SETTINGS, lam)
    per_step = 32 // lam
    assert (config.batch_size, config.instances, config.sequences_per_step, config.top) == (32, lam, per_step, top)
    lengths = split_of(SETTINGS).train.lengths
    sampler = make_sampler(config, lengths)
    n = len(lengths)
    steps = -(-n // per_step) if top == Top.DETERMINISTIC else n * lam // 32
    assert sampler.steps_per_epoch == config.steps_per_epoch == steps
    index = sampler.sample(steps, torch.Generator().manual_seed(1))
    n_starts = torch.as_tensor([max(0, L - config.forecast_length + 1) for L in lengths])
    seen = []
    for s in range(steps):
        seq, start = index.seq[s][index.mask[s]], index.start[s][index.mask[s]]
        series, counts = torch.unique(seq, return_counts=True)
        assert set(counts.tolist()) == {lam}, (s, counts)
        left = n - per_step * s
        expected = per_step if top != Top.DETERMINISTIC or left >= per_step else left
        assert len(series) == expected and len(seq) == expected * lam
        assert bool(((start >= 0) & (start < n_starts[seq])).all())
        seen += series.tolist()
    if top != Top.WOR:
        assert len(seen) == len(set(seen))
    if top == Top.DETERMINISTIC:
        assert sorted(seen) == list(range(n))


def test_c12_lambda_one_cells_are_c10s_largest_batch():
    """C12's λ = 1 cells train C10's Λ = 32 configuration (the grid's, λ = 1), top level for top level."""
    for top in TOPS:
        cell = Cell(MODEL, math.inf, 0, "1-event", top)
        c12 = CLAIMS["C12"].training_config(cell, SETTINGS, 1)
        assert c12 == CLAIMS["C10"].training_config(cell, SETTINGS, 32) == cell_config(cell, SETTINGS).with_(
            batch_size=32)


def _stand_in(monkeypatch, crps_of):
    """Replace the training C10 / C12 call by one returning ``crps_of(cell, config)`` and the epochs cap's steps;
    return the (top, Λ, λ, seed index, epochs cap) of every call."""
    from tsdp.experiments import cells

    calls = []

    def train_cell(cell, settings, config):
        calls.append((str(cell.top), config.batch_size, config.instances, cell.seed_index, settings.epochs))
        return SimpleNamespace(crps=crps_of(cell, config), steps=settings.epochs * config.steps_per_epoch)

    monkeypatch.setattr(cells, "train_cell", train_cell)
    return calls


def test_c12_compute_trains_its_grid_and_judges_an_effect_of_lambda(monkeypatch):
    """Through a stand-in training whose CRPS falls with λ (0.5 / λ plus seeded noise of std 1e-3): every (top level,
    λ, seed) trained once at Λ = 32 (quick: 2 seeds, 5 epochs, said in the reason), the λ effect found (not
    reproduced), the top level's not; a CRPS that varies with the seed alone (0.2, 0.201) is no effect of either
    factor, and a test with power ≥ 0.8 against 5% of it (reproduced)."""
    rng = np.random.default_rng(0)
    calls = _stand_in(monkeypatch, lambda cell, config: 0.5 / config.instances + 1e-3 * rng.standard_normal())
    entry = CLAIMS["C12"].evaluate(DEFAULT_CONFIG, quick=True, ctx=ClaimContext(seed=0))
    assert sorted(calls) == sorted((t, 32, lam, s, 5) for t in TOPS for lam in (1, 2, 4, 8, 16) for s in (0, 1))
    assert entry["verdict"] == "not reproduced" and "A 5-epoch cap (the quick report's" in entry["reason"]
    top, lam = entry["numbers"]["tests"]
    assert lam["significant"] and not top["significant"] and lam["factor"] == "subsequences λ"
    assert entry["verdict_text"].startswith("not reproduced on M1 yearly at ε = ∞, Λ = 32")
    assert entry["verdict_text"].endswith("(all 15 cells)")
    _stand_in(monkeypatch, lambda cell, config: 0.2 + 1e-3 * cell.seed_index)
    entry = CLAIMS["C12"].evaluate(DEFAULT_CONFIG, quick=True)
    assert [t["p_value"] for t in entry["numbers"]["tests"]] == pytest.approx([1.0, 1.0])
    assert entry["verdict"] == "reproduced"


def test_non_private_claims_with_a_nan_crps_are_not_evaluated(monkeypatch):
    """A training that gives a NaN CRPS (one cell, one seed): no test, 'not evaluated' on 0 cells, C10 and C12."""
    _stand_in(monkeypatch, lambda cell, config: math.nan if (str(cell.top), cell.seed_index) == ("shuffle", 1)
              else 0.2)
    for cid, grid in (("C10", 12), ("C12", 15)):
        entry = CLAIMS[cid].evaluate(DEFAULT_CONFIG, quick=True)
        assert entry["verdict"] == "not evaluated" and entry["numbers"]["tests"] is None
        assert entry["verdict_text"].endswith(f"(0 of {grid} cells)") and entry["reason"] == "a training gave no CRPS"
