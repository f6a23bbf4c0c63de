"""The split of a user's file by brute force: every value of every series is its own position (series n, index i), so
which positions land in the training series, the validation windows and the test windows is read off the numbers.
No test or validation target is a training value; every history is the prefix of its series just before its targets;
the windows are the last ones, oldest first; the accountant's N is the kept series, and a series is dropped exactly
when it cannot keep L_F training values."""
import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings, strategies as st

from tsdp.datasets.benchmarks import UserData, user_split


def _position(n: int, i: int) -> float:
    return 1000.0 * (n + 1) + i


@settings(max_examples=40, deadline=None)
@given(f=st.integers(1, 4), t=st.integers(1, 3), k=st.integers(1, 3),
       lengths=st.lists(st.integers(1, 40), min_size=1, max_size=6))
def test_every_position_lands_where_the_split_says(f, t, k, lengths):
    need = (t + k + 1) * f
    if max(lengths) < max(f, need):  # no series kept, or L_F longer than every series: refused (another test)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "positions.jsonl"
        path.write_text("".join(json.dumps({"start": "2020-01-01", "target": [_position(n, i) for i in range(L)]})
                                + "\n" for n, L in enumerate(lengths)))
        split = user_split(UserData(str(path), forecast_length=f, context_length=1, batch_size=1, sigma=4.0,
                                    season=1, epochs=1, test_windows=t, validation_windows=k))
    kept = [n for n, L in enumerate(lengths) if L >= need]
    assert split.dropped == len(lengths) - len(kept) and split.train.N == len(kept)
    train_positions = set()
    for s, n in zip(split.train.series, kept):
        L = lengths[n]
        np.testing.assert_array_equal(s, [_position(n, i) for i in range(L - (t + k) * f)])
        train_positions |= set(s.tolist())
    for windows, count, first in ((split.validation, k, lambda L: L - (t + k) * f), (split.test, t, lambda L: L - t * f)):
        assert windows.count == count * len(kept)
        for j, (h, y) in enumerate(zip(windows.histories, windows.targets)):
            n = kept[j // count]
            begin = first(lengths[n]) + (j % count) * f  # the windows of a series, oldest first
            np.testing.assert_array_equal(y, [_position(n, i) for i in range(begin, begin + f)])
            np.testing.assert_array_equal(h, [_position(n, i) for i in range(begin)])
            assert not train_positions & set(y.tolist())
