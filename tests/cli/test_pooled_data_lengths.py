"""Pooled windows trained on a file: the accountant must count the pool the sampler draws from, Σ_n T_n windows.

Pooled sampling draws Λ windows from every window of every series (T13 / T14 read the pool N_tot); the
configuration counts N T at --L, or Σ T_n of --lengths. A file whose series are longer than that (--data with no
--lengths, or a shorter --L) or shorter (a --lengths longer than the data) would be accounted for another pool: a
smaller pool overstates the rate, a larger one understates it (measured on 8 series, 7 of 40 training values and one
of 20, Λ = 8, 2 epochs, σ = 1, T13: ε 17.06 counted at N T = 160 windows, 11.02 at the 300 the sampler draws from,
7.36 with --lengths 20 80 ... 80). Refused with one error line naming the flag; the exact lengths train and are charged
`tsdp epsilon`'s ε of the same lengths and steps.
"""
import json

import pytest

from cli_run import error_line, run_cli

POOLED = ["--top", "pooled", "--theorem", "T13", "--batch-size", "8", "--sigma", "1", "--delta", "1e-5"]


def _panel(path, lengths):
    """A long-format CSV of series with ``lengths`` values (one more each: train holds out L_F = 1)."""
    rows = ["item_id,timestamp,target"]
    for i, n in enumerate(lengths):
        rows += [f"s{i},2024-01-{1 + t // 24:02d} {t % 24:02d}:00:00,{5 + ((7 * i + 3 * t) % 11) / 10}"
                 for t in range(n + 1)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pooled")
    return {"unequal": _panel(folder / "unequal.csv", [20] + [40] * 7),
            "equal": _panel(folder / "equal.csv", [40] * 8)}


@pytest.mark.parametrize("case,flags,named", [
    ("unequal", [], "--lengths"),
    ("equal", ["--L", "20"], "--L"),
    ("unequal", ["--lengths", "20", *["80"] * 7], "--lengths"),
    ("unequal", ["--lengths", *["20"] * 8], "--lengths"),
])
def test_a_pool_other_than_the_datas_is_refused_naming_the_flag(files, case, flags, named):
    """Before any training, exit 2 with one error line that names the flag and the data's window count."""
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    code, out, err = run_cli(["train", "--data", files[case], *flags, *POOLED, "--steps", "2", "--json"])
    assert code == 2 and out == "", (code, out, err)
    line = error_line(err)
    windows = "300" if case == "unequal" else "320"
    assert named in line and windows in line, line


@pytest.mark.parametrize("case,flags", [("unequal", ["--lengths", "20", *["40"] * 7]), ("equal", [])])
def test_the_datas_own_lengths_train_and_are_charged_their_pool(files, case, flags):
    """The file's own lengths (typed, or equal lengths taken from it) train 3 steps and are charged `tsdp epsilon`'s
    ε of those lengths and steps, whose pool is the sampler's Σ T_n."""
    pytest.importorskip("pandas", reason="the data extra (pandas) is not installed")
    code, out, err = run_cli(["train", "--data", files[case], *flags, *POOLED, "--steps", "3", "--json"])
    assert code == 0, err
    spent = json.loads(out)
    shape = flags or ["--N", "8", "--L", "40"]
    code, out, err = run_cli(["epsilon", *shape, *POOLED, "--steps", "3", "--sound-only", "--json"])
    assert code == 0, err
    reference = json.loads(out)
    assert spent["steps"] == 3 and abs(spent["epsilon"] - reference["epsilon"]) <= 1e-9, (spent, reference)
