"""The non-private utility claims C10 and C12 (reports.non_private) on what they train: the batches of each cell's
configuration drawn by the sampler the training draws them with (Λ windows a step, λ in each of N' = Λ / λ series),
a cell's seeds trained together as each alone, and the compute loop through a stand-in training (its two protocols,
its verdicts and a NaN CRPS), in milliseconds; the real trainings run in `tsdp report`
(tests/reports/test_report_end_to_end.py, slow)."""
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from tsdp.experiments.cells import cell_config, split_of
from tsdp.experiments.grid import Cell, GridSettings
from tsdp.reports.claim_base import ClaimContext
from tsdp.reports.claims import CLAIMS
from tsdp.reports.non_private import CAP_EPOCHS, MODEL, STEPS, TOPS
from tsdp.theorems.config import DEFAULT_CONFIG, Top
from tsdp.training.samplers import make_sampler

SETTINGS = GridSettings(epochs=CAP_EPOCHS, seed=0)


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


def test_train_seeds_trains_each_seed_as_its_cell_alone():
    """A cell's seeds trained together (train_seeds, C10's and C12's trainings) give each seed's numbers of its grid
    cell trained alone (train_cell: a group of one), bit for bit: last and selected test CRPS, selected step, steps;
    a private cell is refused naming epsilon."""
    from tsdp.experiments.cells import train_cell, train_seeds
    from tsdp.theorems.config import ConfigError

    settings = GridSettings(epochs=2, seed=3)
    cell = Cell(MODEL, math.inf, 0, "1-event", "shuffle")
    config = CLAIMS["C10"].training_config(cell, settings, 32)
    together = train_seeds(cell, settings, config, [0, 1])
    alone = [train_cell(Cell(MODEL, math.inf, s, "1-event", "shuffle"), settings, config) for s in (0, 1)]
    for t, a in zip(together, alone):
        assert (t.crps, t.selection.selected_crps, t.selection.selected_step, t.steps) == \
            (a.crps, a.selection.selected_crps, a.selection.selected_step, a.steps)
    assert together[0].crps != together[1].crps
    with pytest.raises(ConfigError) as exc:
        train_seeds(Cell(MODEL, 1.0, 0, "1-event", "shuffle"), settings, config, [0])
    assert exc.value.parameter == "epsilon"


def _stand_in(monkeypatch, last_of, selected_of=lambda cell, config, s: 0.2, step_of=lambda steps, s: steps // 4):
    """Replace the training C10 / C12 call (train_seeds) by one returning, for seed s, the last iterate's CRPS
    ``last_of(cell, config, s)``, the selected checkpoint's ``selected_of(cell, config, s)`` at step
    ``step_of(steps, s)``, and the steps of the protocol (its steps, or its epochs cap); return the (top, Λ, λ, seed
    indices, steps, epochs, validate_every) of every call."""
    from tsdp.experiments import cells

    calls = []

    def train_seeds(cell, settings, config, seed_indices, training):
        seeds = list(seed_indices)
        steps = training.steps or training.epochs * config.steps_per_epoch
        calls.append((str(cell.top), config.batch_size, config.instances, tuple(seeds), training.steps,
                      training.epochs, training.validate_every))
        return [SimpleNamespace(crps=last_of(cell, config, s), steps=steps, epochs=steps / config.steps_per_epoch,
                                selection=SimpleNamespace(selected_crps=selected_of(cell, config, s),
                                                          selected_step=step_of(steps, s))) for s in seeds]

    monkeypatch.setattr(cells, "train_seeds", train_seeds)
    return calls


def test_c12_compute_trains_both_protocols_and_judges_the_papers(monkeypatch):
    """Through a stand-in training whose last iterate under the epochs cap falls with λ (0.5 / λ plus seeded noise of
    std 1e-3: training length) and whose selected checkpoint does not (0.2 plus noise): the quick grid (λ ∈ {1, 16},
    3 top levels, 2 seeds trained together) once under the paper's protocol (1500 steps, validated every 25) and once
    under the 10-epoch cap; the paper's protocol finds no effect with power ≥ 0.8 and its runs converged (best step
    at a quarter of training): reproduced; the cap's verdict, beside it, finds the λ effect (not reproduced). Best
    steps in the last quarter for every run: qualified, not converged, the test's own word named."""
    rng = np.random.default_rng(0)
    calls = _stand_in(monkeypatch, lambda cell, config, s: 0.5 / config.instances + 1e-3 * rng.standard_normal(),
                      lambda cell, config, s: 0.2 + 1e-3 * rng.standard_normal())
    entry = CLAIMS["C12"].evaluate(DEFAULT_CONFIG, quick=True, ctx=ClaimContext(seed=0))
    assert sorted(calls, key=str) == sorted([(t, 32, lam, (0, 1), STEPS[True], None, 25) for t in TOPS
                                             for lam in (1, 16)]
                                            + [(t, 32, lam, (0, 1), None, CAP_EPOCHS, None) for t in TOPS
                                               for lam in (1, 16)], key=str)
    n = entry["numbers"]
    assert n["paper"]["convergence"] == {"runs": 12, "late": 0, "tail": 0.25, "limit": 0.5, "converged": True}
    assert entry["verdict"] == "reproduced", entry["reason"]
    assert entry["verdict_text"] == ("reproduced on M1 yearly at ε = ∞, Λ = 32 for the paper's 256, 1500 steps a cell, "
                                     "the lowest-validation-loss checkpoint (the quick grid, 6 of 15 cells)")
    assert "every cell 1500 steps (the quick report's; the full report's 6000)" in entry["reason"]
    assert "λ ∈ {1, 16} (the quick report's; the full report's λ ∈ {1, 2, 4, 8, 16})" in entry["reason"]
    capped, figure = entry["other_verdicts"]
    top, lam = n["capped"]["tests"]
    assert lam["significant"] and not top["significant"] and capped["verdict"] == "not reproduced"
    assert capped["verdict_text"] == ("not reproduced on M1 yearly at ε = ∞, Λ = 32 for the paper's 256, a 10-epoch "
                                      "cap, the last iterate (the quick grid, 6 of 15 cells)")
    assert "The cap runs 50 steps at λ = 1, 850 steps at λ = 16 (WOR top level, Λ = 32)" in capped["reason"]
    assert figure["verdict"] == "not evaluated"
    noise = lambda cell, config, s: 0.2 + 1e-3 * rng.standard_normal()  # noqa: E731
    _stand_in(monkeypatch, noise, noise, step_of=lambda steps, s: steps - 25 * s)
    entry = CLAIMS["C12"].evaluate(DEFAULT_CONFIG, quick=True)
    assert entry["numbers"]["paper"]["convergence"]["late"] == 12
    assert entry["verdict"] == "qualified" and entry["reason"].endswith(
        "more than 50%, the training had not converged, so the test's finding (reproduced) can still be training "
        "length")


def test_c10_full_grid_trains_every_level_with_four_seeds_and_both_designs(monkeypatch):
    """The full report: C10's four Λ × 3 top levels, 4 seeds trained together, under 6000 equal steps and 800 equal
    epochs (both validated every 25 steps); a CRPS that varies with the seed alone is no effect of either factor in
    either design (p = 1): reproduced, the equal-epochs design's verdict first among the others."""
    calls = _stand_in(monkeypatch, lambda cell, config, s: 0.3 + 1e-3 * s, lambda cell, config, s: 0.2 + 1e-3 * s)
    entry = CLAIMS["C10"].evaluate(DEFAULT_CONFIG, quick=False)
    levels = [(t, b) for t in TOPS for b in (4, 8, 16, 32)]
    assert sorted(c for c in calls if c[4]) == sorted((t, b, 1, (0, 1, 2, 3), STEPS[False], None, 25)
                                                      for t, b in levels)
    assert sorted(c for c in calls if c[6] and not c[4]) == sorted((t, b, 1, (0, 1, 2, 3), None, 800, 25)
                                                                   for t, b in levels)
    assert [t["p_value"] for t in entry["numbers"]["paper"]["tests"]] == pytest.approx([1.0, 1.0])
    assert entry["verdict"] == "reproduced" and entry["verdict_text"].endswith("(all 12 cells)")
    assert "every cell 6000 steps, validated" in entry["reason"] and "quick report" not in entry["reason"]
    assert [o["verdict"] for o in entry["other_verdicts"]] == ["reproduced", "reproduced", "not evaluated"]


def test_non_private_claims_with_a_nan_crps_are_not_evaluated(monkeypatch):
    """A training that gives a NaN selected CRPS (one cell, one seed): no test of the paper's protocol, 'not
    evaluated' on 0 cells, C10 and C12; the cap's last iterates are finite and judged beside it."""
    _stand_in(monkeypatch, lambda cell, config, s: 0.2 + 1e-3 * s,
              lambda cell, config, s: math.nan if (str(cell.top), s) == ("shuffle", 1) else 0.2)
    for cid, grid in (("C10", 12), ("C12", 15)):
        entry = CLAIMS[cid].evaluate(DEFAULT_CONFIG, quick=True)
        assert entry["verdict"] == "not evaluated" and entry["numbers"]["paper"]["tests"] is None
        assert entry["verdict_text"].endswith(f"(0 of {grid} cells)") and entry["reason"] == "a training gave no CRPS"
        assert entry["other_verdicts"][0]["verdict"] == "reproduced"
