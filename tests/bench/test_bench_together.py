"""`tsdp bench loop`'s row for cells trained together: its rows and its table (no wall-clock asserts)."""
from tsdp.bench.loop import make_bench_model
from tsdp.bench.rounds import MIN_ROUNDS
from tsdp.bench.together import bench_together, format_together


def test_rows_and_table():
    rows = bench_together(["mlp", "deepar"], lambda m: make_bench_model(m, 6, 2), cells=3, batch=2,
                          context_length=6, forecast_length=2, rounds=MIN_ROUNDS)
    assert [r["model"] for r in rows] == ["mlp", "deepar"]
    for r in rows:
        assert r["cells"] == 3 and r["steps"] >= 1
        for side in ("alone", "together"):
            ms, cps = r["ms"][side], r["cells_per_second"][side]
            assert 0 < ms.min <= ms.median <= ms.max
            assert 0 < cps.min <= cps.median <= cps.max
        assert r["speedup"].min <= r["speedup"].median <= r["speedup"].max
    lines = format_together(rows)
    assert "cells trained together" in lines[0] and len(lines) == 2 + len(rows)
    assert format_together([]) == []
