"""`tsdp audit --threshold split` cuts the trials into shards of at most ceil(trials / 20) (a selection share in steps
of 5%): a typed --shard-size above that was lowered silently, though the shard size is part of the sample's definition
with --seed. It is now refused in one line naming the largest it may be, exit 2; a value within it is used as typed,
and without --shard-size the default is lowered as before (the run line says the size used)."""
import math

import pytest

from cli_run import error_line, run_cli

SPLIT = ["audit", "--trials", "400", "--delta", "1e-5", "--threshold", "split", "--device", "cpu"]


@pytest.mark.parametrize("shard_size", ["21", "100", "65536"])
def test_a_shard_size_the_split_would_lower_is_refused(shard_size):
    code, out, err = run_cli([*SPLIT, "--shard-size", shard_size])
    line = error_line(err)
    assert code == 2 and out == ""
    assert line.startswith("tsdp audit: error: invalid --shard-size: ") and "at most 20" in line, line
    assert f"(got {shard_size})" in line


def test_the_cap_is_ceil_of_a_twentieth():
    from tsdp.attacks.montecarlo.options import split_shard_size

    for trials in (1, 19, 20, 21, 400, 401, 10 ** 6 + 1):
        assert split_shard_size(trials, 10 ** 9) == max(1, math.ceil(trials / 20))
        assert split_shard_size(trials, 1) == 1


@pytest.mark.parametrize("typed", [["--shard-size", "20"], ["--shard-size", "7"], []])
def test_a_shard_size_within_the_cap_is_used_as_typed(typed):
    code, out, err = run_cli([*SPLIT, *typed, "--json"])
    assert code == 0, err
    import json

    run = json.loads(out)["run"]
    assert run["shard_size"] == (int(typed[1]) if typed else 20)
    assert run["shards_planned"] == 2 * math.ceil(400 / run["shard_size"])  # both worlds
