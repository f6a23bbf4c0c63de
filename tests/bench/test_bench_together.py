"""`tsdp bench loop`'s row for cells trained together: its rows and its table (no wall-clock asserts)."""
import json

import pytest

from tsdp.bench.loop import make_bench_model
from tsdp.bench.rounds import MIN_ROUNDS, Conditions, Spread
from tsdp.bench.together import TogetherRow, bench_together, format_together
from tsdp.cli.output import dumps


def test_rows_and_table():
    """Typed rows whose two figures are one measurement seen twice: per round, cells per second is
    ``cells`` × 1000 / ms per step, a decreasing map, so the median maps to the median and the range's ends swap."""
    rows = bench_together(["mlp", "deepar"], lambda m: make_bench_model(m, 6, 2), cells=3, batch=2,
                          context_length=6, forecast_length=2, rounds=MIN_ROUNDS)
    assert all(isinstance(r, TogetherRow) for r in rows) and [r.model for r in rows] == ["mlp", "deepar"]
    for r in rows:
        assert r.cells == 3 and r.batch == 2 and r.steps >= 1 and isinstance(r.environment, Conditions)
        assert list(r.ms) == list(r.cells_per_second) == ["alone", "together"]
        for side in ("alone", "together"):
            ms, cps = r.ms[side], r.cells_per_second[side]
            assert isinstance(ms, Spread) and 0 < ms.min <= ms.median <= ms.max
            assert cps.median == pytest.approx(3e3 / ms.median, rel=1e-12)
            assert (cps.min, cps.max) == pytest.approx((3e3 / ms.max, 3e3 / ms.min), rel=1e-12)
        assert r.speedup.min <= r.speedup.median <= r.speedup.max
        form = r.as_dict()
        assert list(form) == ["model", "cells", "batch", "steps", "ms", "cells_per_second", "speedup", "environment"]
        assert form["speedup"] == r.speedup.as_dict() and form["environment"] == r.environment.as_dict()
    lines = format_together(rows)
    assert "cells trained together (3 runs of batch 2 each" in lines[0] and len(lines) == 2 + len(rows)
    assert lines[2].startswith("mlp") and lines[3].startswith("deepar")
    assert format_together([json.loads(dumps(r.as_dict())) for r in rows]) == lines  # the JSON form reads alike
    assert format_together([]) == []
