"""`--download` offline: GluonTS's own recipe fetches a benchmark from a local HTTP server on 127.0.0.1.

GluonTS builds `electricity` from LSTNet's archive, a gzipped CSV (one row per hour, one column per
series, no header) at a URL in its recipe's table (`gluonts.dataset.repository._lstnet.datasets_info`).
The test serves a small archive in that format and points the table's entry at it (the URL and the
fixture's size are the only changes); everything else is GluonTS's recipe and tsdp's loader.
"""
import functools
import gzip
import http.server
import json
import threading

import numpy as np
import pytest

pytest.importorskip("gluonts")

from gluonts.dataset.repository import _lstnet  # noqa: E402

from tsdp.datasets.benchmarks import PAPER, load_split  # noqa: E402
from tsdp.datasets.series import DataError, SeriesStart  # noqa: E402


class _Server:
    """A static file server on 127.0.0.1 (a free port) in a thread, counting the GET requests it answered."""

    def __init__(self, folder):
        self.requests = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                server.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(folder)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _lstnet_archive(folder, steps: int, series: int) -> np.ndarray:
    """LSTNet's archive format: ``electricity.txt.gz``, a gzipped CSV of ``steps`` rows × ``series`` columns."""
    rng = np.random.default_rng(11)
    t = np.arange(steps)[:, None]
    values = np.round(100 + 20 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 3, (steps, series)), 3)
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / "electricity.txt.gz", "wt") as out:
        for row in values:
            out.write(",".join(f"{x:.3f}" for x in row) + "\n")
    return values


@pytest.fixture
def serve_electricity(tmp_path, monkeypatch):
    """Serve an `electricity` archive of ``steps`` hours × ``series`` on 127.0.0.1 and point GluonTS's recipe at it
    (``windows``: its rolling test windows, GluonTS's 7 by default); returns the server and the values."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    servers = []

    def serve(steps: int = 900, series: int = 128, windows: int = 7):
        values = _lstnet_archive(tmp_path / "www", steps, series)
        server = _Server(tmp_path / "www").__enter__()
        servers.append(server)
        info = _lstnet.datasets_info["electricity"]
        monkeypatch.setitem(_lstnet.datasets_info, "electricity", info._replace(
            url=f"{server.url}/electricity.txt.gz", num_time_steps=steps, num_series=series,
            rolling_evaluations=windows))
        return server, values

    yield serve
    for server in servers:
        server.__exit__(None, None, None)


def test_download_fetches_caches_and_applies_the_papers_split(tmp_path, serve_electricity):
    """The first load downloads through GluonTS (one request) into the cache folder in its on-disk layout; the split
    is GluonTS's (train: the first 80 % of the hours, test: 7 rolling windows of 24) less 7·L_F validation steps (the official code's) at
    the end of every training series; a second load, with or without --download, reads the cache (no request)."""
    server, values = serve_electricity(steps=900, series=8)
    cache = tmp_path / "cache"
    split = load_split("electricity", cache, download=True)
    assert server.requests == ["/electricity.txt.gz"]
    assert (cache / "electricity" / "metadata.json").is_file() and (cache / "electricity" / "train").is_dir()
    f, k = PAPER["electricity"].forecast_length, PAPER["electricity"].validation_windows
    train_hours = int(900 * 0.8) + 1  # GluonTS's recipe: every hour up to the one at 80 % of the index
    assert split.train.N == 8 and split.train.lengths == (train_hours - k * f,) * 8
    np.testing.assert_allclose(split.train.series[3], values[: train_hours - k * f, 3], rtol=0, atol=1e-9)
    assert split.validation.count == 8 * k
    np.testing.assert_allclose(split.validation.targets[3 * k + k - 1], values[train_hours - f: train_hours, 3],
                               rtol=0, atol=1e-9)
    assert split.test.count == 7 * 8
    for window in (0, 6):
        end = train_hours + (window + 1) * f
        np.testing.assert_allclose(split.test.targets[window * 8 + 5], values[end - f: end, 5], rtol=0, atol=1e-9)
        np.testing.assert_allclose(split.test.histories[window * 8 + 5], values[: end - f, 5], rtol=0, atol=1e-9)
    # the calendar: metadata.json's freq, every series from GluonTS's recipe start (2012-01-01, hourly)
    start = SeriesStart("2012-01-01 00:00:00", "h")
    assert split.train.starts == (start,) * 8 and split.validation.starts == (start,) * (8 * k)
    assert split.test.starts == (start,) * (7 * 8)
    for download in (True, False):
        again = load_split("electricity", cache, download=download)
        assert len(server.requests) == 1
        np.testing.assert_array_equal(again.test.targets, split.test.targets)
        assert again.train.lengths == split.train.lengths


@pytest.mark.slow  # AutoETS (season 24) on 128 series of 241 hours, once (the rerun reads the cache): about 45 s
def test_experiment_download_runs_end_to_end_offline(tmp_path, serve_electricity, capsys):
    """`tsdp experiment --dataset electricity --download --data-dir DIR` fetches the archive once, trains with the
    paper's electricity settings (L_F = L_C = 24, Λ = 128, σ = 2) and a rerun reads the cache and the cell."""
    from tsdp.cli.main import main

    server, _ = serve_electricity(steps=300, series=128, windows=1)  # training series hold the 7 validation days
    data_dir = tmp_path / "datasets"
    data_dir.mkdir()
    argv = ["experiment", "--dataset", "electricity", "--download", "--data-dir", str(data_dir), "--models", "dlinear",
            "--epsilons", "inf", "--seeds", "1", "--tops", "wor", "--epochs", "1", "--samples", "10", "--device", "cpu",
            "--out", str(tmp_path / "cells"), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    k = PAPER["electricity"].validation_windows  # 7: the authors' code (the appendix text says 5)
    assert server.requests == ["/electricity.txt.gz"] and (data_dir / "electricity" / "train").is_dir()
    assert out["dataset"]["name"] == "electricity"
    assert (out["split"]["train_series"], out["split"]["test_windows"], out["split"]["validation_steps_per_series"],
            out["split"]["train_min_length"]) == (128, 128, k * 24, int(300 * 0.8) + 1 - k * 24)
    assert (out["dataset"]["context_length"], out["dataset"]["batch_size"], out["dataset"]["sigma"]) == (24, 128, 2.0)
    assert out["cells"][0]["steps"] == 1 and out["run"]["run"] == 1
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert len(server.requests) == 1 and again["run"]["resumed"] == 1 and again["rows"] == out["rows"]


def test_a_failed_download_is_the_one_line_that_says_what_to_download(tmp_path, serve_electricity, capsys):
    """The server answers 404 (as an offline proxy or a moved file would fail): one line, exit 2, nothing cached."""
    from tsdp.cli.main import main

    server, _ = serve_electricity(steps=900, series=8)
    (tmp_path / "www" / "electricity.txt.gz").unlink()
    data_dir = tmp_path / "datasets"
    data_dir.mkdir()
    assert main(["experiment", "--dataset", "electricity", "--download", "--data-dir", str(data_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert server.requests == ["/electricity.txt.gz"]
    assert len(err.splitlines()) == 1 and "get_dataset('electricity')" in err
    assert list(data_dir.iterdir()) == []  # nothing a later run could take for a finished download


def test_a_download_after_a_failed_one_or_over_an_empty_folder_fetches_the_data(tmp_path, serve_electricity):
    """After a failed download, the next --download fetches (GluonTS alone would take any folder at <DIR>/<NAME>,
    even the empty one an earlier failure left, for a finished download); an empty folder there is replaced; a
    non-empty one without train/ is one error naming it."""
    server, values = serve_electricity(steps=900, series=8)
    archive = tmp_path / "www" / "electricity.txt.gz"
    kept = archive.read_bytes()
    archive.unlink()
    cache = tmp_path / "cache"
    with pytest.raises(DataError):
        load_split("electricity", cache, download=True)
    assert list(cache.iterdir()) == []
    archive.write_bytes(kept)
    (cache / "electricity").mkdir()  # what a failed download of earlier versions left
    split = load_split("electricity", cache, download=True)
    assert server.requests == ["/electricity.txt.gz"] * 2 and split.train.N == 8
    assert sorted(p.name for p in cache.iterdir()) == ["electricity"]
    np.testing.assert_allclose(split.test.targets[0], values[int(900 * 0.8) + 1: int(900 * 0.8) + 25, 0], atol=1e-9)
    partial = tmp_path / "partial"
    (partial / "electricity").mkdir(parents=True)
    (partial / "electricity" / "metadata.json").write_text("{}")
    with pytest.raises(DataError) as exc:
        load_split("electricity", partial, download=True)
    assert str(partial / "electricity") in str(exc.value) and len(server.requests) == 2


@pytest.mark.parametrize("broken", ["no-test", "test-file"])
def test_a_benchmark_folder_without_a_test_folder_is_one_error_naming_it(tmp_path, broken, capsys):
    """A cached dataset whose test/ is missing or a file: one line naming the path (exit 2), no traceback."""
    from tsdp.cli.main import main

    folder = tmp_path / "electricity"
    (folder / "train").mkdir(parents=True)
    with gzip.open(folder / "train" / "data.json.gz", "wt") as out:
        for _ in range(130):
            out.write(json.dumps({"start": "2012-01-01 00:00", "target": [1.0] * 200}) + "\n")
    if broken == "test-file":
        (folder / "test").write_text("")
    with pytest.raises(DataError) as exc:
        load_split("electricity", tmp_path)
    assert str(folder / "test") in str(exc.value)
    assert main(["experiment", "--dataset", "electricity", "--data-dir", str(tmp_path), "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(folder / "test") in err and "Traceback" not in err
