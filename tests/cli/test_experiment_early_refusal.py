"""`tsdp experiment` refuses a δ the accountant cannot resolve before any long work: the refusal comes while the
data are read (the smallest δ the accountant resolves depends on their sizes), so neither the baselines'
statsforecast (whose first import compiles for tens of seconds), nor the grid's time probes, nor any cell has started
(each replaced here by a function that fails the test if called)."""
import pytest

from cli_run import error_line, run_cli


def _long_work(name):
    def started(*a, **k):
        raise AssertionError(f"long work started before the bad --delta was refused: {name}")
    return started


@pytest.mark.parametrize("delta", ["5e-324", "1e-300"])
def test_an_unresolvable_delta_is_refused_before_the_baselines_and_the_grid(monkeypatch, tmp_path, delta):
    import tsdp.experiments.estimate as estimate
    import tsdp.experiments.baselines as baselines
    import tsdp.experiments.table as table

    monkeypatch.setattr(baselines, "statsforecast_version", _long_work("statsforecast"))
    monkeypatch.setattr(table, "run_grid", _long_work("the grid"))
    monkeypatch.setattr(estimate, "probe", _long_work("the time probe of a cell"))
    code, out, err = run_cli(["experiment", "--quick", "--delta", delta, "--out", tmp_path / "grid"])
    assert code == 2 and out == ""
    line = error_line(err)
    assert "--delta" in line and "smallest δ the accountant resolves" in line
    assert not (tmp_path / "grid").exists()  # nothing written either
