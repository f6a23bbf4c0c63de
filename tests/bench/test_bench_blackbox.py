"""`tsdp bench blackbox`: spike-canary audits of a 1-NN memoriser and tsdp's models side by side (small sizes here)."""
import dataclasses
import json

import pytest

from tsdp.bench.blackbox import bench_blackbox, format_bench
from tsdp.cli.main import main

import published_json


def test_the_bench_reports_each_model_and_flags_the_memoriser():
    """60 canaries, 2 epochs: five rows (the memoriser, simple-ff and DeepAR without noise and with DP at the σ that
    spends the claim); the memoriser ranks every canary right and is flagged at the claim ε = 1, the DP runs are
    accounted at the claim (ε ≤ 1) and not flagged; the human table names every model."""
    r = bench_blackbox(canaries=60, epochs=2, series=30, length=20, seed=0)
    models = [(row.model, row.sigma is None) for row in r.rows]
    assert models == [("1-NN", True), ("simple-ff", True), ("deepar", True), ("simple-ff", False), ("deepar", False)]
    nn_row = r.rows[0]
    assert nn_row.auc == 1.0 and nn_row.flagged and nn_row.epsilon_lower > 1.0 and nn_row.training is None
    for row in r.rows[3:]:
        assert row.sigma == r.sigma and row.training.epsilon <= 1.0 + 1e-9 and not row.flagged
    assert all(row.training.epsilon is None for row in r.rows[1:3])  # no noise: no ε
    assert all(row.epsilon_lower <= row.ceiling + 1e-9 for row in r.rows)
    table = format_bench(r)
    assert "1-NN" in table and "deepar" in table and "DP-SGD" in table and table == format_bench(r.as_dict())
    json.dumps(r.as_dict())


def test_the_record_rebuilt_from_the_published_benchmark_gives_its_json_back():
    """The published rows: the memoriser's without training facts, tsdp's with them (the training's seconds in the
    row's ``seconds``); a row whose AUC is undefined carries its note last."""
    import math

    from tsdp.bench.blackbox import AUC_NOTE, BlackboxBench, BlackboxRow, TrainingFacts

    published = published_json.published("blackbox")
    rows = tuple(BlackboxRow(**{k: row[k] for k in ("model", "trained", "sigma", "auc", "epsilon_lower", "ceiling",
                                                     "limited_by", "flagged", "seconds")},
                             training=TrainingFacts(**{k: row[k] for k in ("crps", "untrained_crps", "epsilon", "steps",
                                                                           "seconds")}) if "crps" in row else None)
                 for row in published["rows"])
    bench = published_json.rebuilt(BlackboxBench, {**published, "rows": None})
    bench = dataclasses.replace(bench, rows=rows)
    published_json.assert_gives_back(bench, published)
    assert format_bench(bench) == format_bench(published)
    undefined = dataclasses.replace(rows[0], auc=math.nan).as_dict()
    assert list(undefined)[-1] == "auc_note" and undefined["auc_note"] == AUC_NOTE


@pytest.mark.parametrize("argv,flag", [
    (["--canaries", "1"], "--canaries"), (["--canaries", "10", "20"], "--canaries"), (["--epochs", "0"], "--epochs"),
    (["--epsilon", "nan"], "--epsilon"), (["--epsilon", "0"], "--epsilon"), (["--confidence", "1"], "--confidence"),
    (["--delta", "2"], "--delta"), (["--seed", "-1"], "--seed"), (["--mu", "1"], "--mu"), (["--rounds", "3"], "--rounds"),
])
def test_bad_flags_are_one_line(argv, flag, capsys):
    assert main(["bench", "blackbox"] + argv) == 2
    err = capsys.readouterr().err.strip()
    assert flag in err and "\n" not in err, err


def test_a_training_answers_with_its_model_and_facts_and_the_audit_keeps_each_run():
    """tsdp's loop as an audit's training function: :meth:`TsdpTraining.train` returns the model with its typed facts
    (no noise: no ε; at least one step); the wrapper an audit calls keeps one record per training and refuses
    to name the run when there was more than one."""
    import torch

    from tsdp.bench.blackbox import AuditedTraining, TrainingFacts, TsdpTraining
    from tsdp.datasets.series import synthetic
    from tsdp.theorems.config import TrainingConfig
    from tsdp.training.batch_sampler import fit_lengths

    data = synthetic(8, 21, seed=0, noise=2.0)
    config = fit_lengths(TrainingConfig(context_length=4, forecast_length=1, batch_size=4), data.split(1)[0].series)
    training = TsdpTraining(config, "simple-ff", 1, None, 1e-5)
    assert [f.name for f in dataclasses.fields(training)] == ["config", "model", "epochs", "sigma", "delta", "seed",
                                                              "lr"]
    audited = AuditedTraining(training)
    model = audited(list(data.series))
    assert isinstance(model, torch.nn.Module) and len(audited.runs) == 1
    facts = audited.only_run()
    assert isinstance(facts, TrainingFacts) and facts.epsilon is None and facts.steps >= 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        facts.steps = 0
    audited(list(data.series))
    with pytest.raises(RuntimeError, match="2 times"):
        audited.only_run()
