"""Orchestrate `tsdp report`: compute every section, draw the figures, write the four outputs.

:func:`build_report` runs, in order, the accounting (section 1), claims C1-C12 (2), the quick
consistency run (3), the tightness audits (4), the errata table (5) and the inference tables
with a tqdm progress bar on stderr, then writes ``<out>/results.json``, ``report.md``,
``index.html`` and the PNGs. The bar names the sub-step running (a claim's cell, an audit) and
redraws every second; warnings raised meanwhile (e.g. a coarsened PLD grid) are collected,
not printed into the bar: one summary line follows the bar, and results.json lists them under
``meta.notes``.
Outputs are atomic: everything is written to a temporary directory beside ``<out>`` and
replaces the old report only when complete. Ctrl-C, a SIGTERM to the command (:mod:`tsdp.cli.termination`) or a
failure stops the computation:
what is done is written, marked ``"interrupted"`` (``"failed"``), to ``<out>.incomplete/``
when ``<out>`` holds an earlier report (left intact), and the exception is re-raised (the
CLI exits 130 on Ctrl-C, 143 on SIGTERM); a stop while that is written removes the temporary directory instead.

The audits run on the sharded engine (:mod:`tsdp.attacks.montecarlo.shards`) with one worker
per core this process may use (:data:`WORKERS`); the same seed gives the same counts on any
number of workers, hence the same verdicts. The auditor uses CUDA when present.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import secrets
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Optional

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.cpus import available_cpus
from tsdp.verify.json_data import json_data

from .accounting_section import DELTAS, SCHEDULES, accounting_section
from .report_accounting import ReportAccounting
from .claim_base import ClaimContext
from .claims import CLAIMS
from .consistency import consistency_section
from .errata import errata_section
from .inference_section import attach_measured, inference_section
from .page import to_html, to_markdown
from .schema import SCHEMA_VERSION, AuditStatus, RunStatus
from .tightness import load_auditor, tightness_section, tightness_ticks, violation_summary

WORKERS = available_cpus()
"""Audit worker processes: the cores this process may run on."""
TRIALS = {"tightness": 50_000, "composed": 10_000, "c6": 500_000}
QUICK_TRIALS = {"tightness": 5_000, "composed": 0, "c6": 20_000}
OUT_ROOT = Path("reports", "out")
"""The folder of the reports written without ``--out`` (each in ``<name>/``), relative to the current folder: never
beside this module, which an installed tsdp keeps in site-packages (not writable, or not the user's)."""


def jsonable(x: Any) -> Any:
    """results as plain JSON (:func:`tsdp.verify.json_data.json_data`: non-finite numbers as null).

    Args:
        x (object): The results, or any part of them.

    Returns:
        Plain JSON data.
    """
    return json_data(x)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tsdp")
    except PackageNotFoundError:  # pragma: no cover - not installed
        return "unknown"


def build_report(config: TrainingConfig, *, name: str = "default", out_dir: Optional[Path] = None,
                 quick: bool = False, progress: bool = True, seed: int = 0, audits: bool = True,
                 workers: int = WORKERS, real_data=None) -> dict:
    """Compute the report for ``config`` and write it to ``out_dir`` (default reports/out/<name>/ in the current
    folder, :data:`OUT_ROOT`).

    Returns the results dict (as written to results.json, see :mod:`reports.schema`). Each
    section's numbers carry their soundness direction (sound = upper, attained = lower,
    audited = lower confidence bound). ``audits=False`` (or a missing auditor) reports
    "audit not available" instead of audited numbers. ``workers`` (default :data:`WORKERS`): the
    audits' worker processes and, above 1, side processes for the claims that run no audit
    (:class:`_ClaimPool`); 1 computes everything in this process. The numbers do not depend on it.
    ``real_data``: (name, SeriesData) of the inference section's real panel (None: Grunfeld).

    Args:
        config: The configuration.
        name: The report's name (its folder under reports/out/).
        out_dir: The folder written (None: reports/out/<name>/).
        quick: The quick run (smaller grids, fewer trials).
        progress: Show a progress bar on stderr.
        seed: The seed.
        audits: Run the audits (False: "audit not available").
        workers: The audits' worker processes, and side processes for the claims.
        real_data (tuple | None): (name, SeriesData) of the inference section's real panel (None: Grunfeld).

    Returns:
        The results, as written to results.json.
    """
    from tsdp.verify.progress import progress_bar

    final = Path(out_dir) if out_dir is not None else OUT_ROOT / name
    trials = dict(QUICK_TRIALS if quick else TRIALS)
    audit_fn = load_auditor(workers=workers) if audits else None
    results = {"schema_version": SCHEMA_VERSION,
               "meta": {"name": name, "mode": "quick" if quick else "default", "version": _version(),
                        "status": RunStatus.RUNNING, "elapsed_s": None, "timings_s": {}, "trials": trials,
                        "audit_status": AuditStatus.RAN if audit_fn is not None else AuditStatus.NOT_AVAILABLE},
               "accounting": None, "claims": None, "consistency": None, "tightness": None, "errata": None,
               "inference": None,
               "violation": None, "violations": None}
    n_tight = tightness_ticks(quick=quick, audits=audit_fn is not None)
    total = len(DELTAS) * len(SCHEDULES) + len(CLAIMS) + 1 + n_tight + 1 + 2
    # no ETA: the tasks' durations differ by two orders of magnitude, so tqdm's rate would mislead
    bar = progress_bar(total=total, desc="tsdp report", unit="task", disable=not progress, dynamic_ncols=True,
                       bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")
    t0 = time.perf_counter()
    timings = results["meta"]["timings_s"]
    notes: list = []  # (category, message) of every warning, the side processes' included
    caught: list = []
    running: dict = {"": "starting"}  # what each lane (this process: "", a side process's claim: its id) does now
    entries: dict = {}
    lock = threading.Lock()  # show() runs in this thread, the redraw thread and the pool's result thread

    def show(lane: str, what: Optional[str]) -> None:
        with lock:
            if what is None:
                running.pop(lane, None)
            else:
                running[lane] = what
            bar.set_postfix_str(" | ".join(f"{k}: {v}" if k else v for k, v in running.items()))

    def step(section):
        """A sub-step callback: the bar names the section and the sub-step now running."""
        return lambda what: show("", f"{section}: {what}")

    def tick(label=""):
        show("", str(label))
        bar.update(1)

    def timed(key, fn):
        start = time.perf_counter()
        value = fn()
        timings[key] = round(time.perf_counter() - start, 2)
        return value

    def finished(cid: str, entry: dict, seconds: float, claim_notes: list) -> None:
        """A claim's entry, in CLAIMS order among the finished ones (an interrupt keeps them)."""
        entries[cid], timings[cid] = entry, round(seconds, 2)
        notes.extend(claim_notes)
        results["claims"] = [entries[c] for c in CLAIMS if c in entries]
        show(cid, None)
        bar.update(1)

    side = [cid for cid, claim in CLAIMS.items() if not claim.audits] if workers > 1 else []
    pool = None
    out = staging_dir(final)  # everything is written here; the old report in ``final`` stays until this one is complete
    try:  # from the staging folder's making on: whatever stops the run, the folder is published or removed
        if side:
            from tsdp.executor.processes import starting_processes

            with starting_processes():  # a SIGTERM is raised once the pool is made (its processes started, ``pool`` set)
                pool = _ClaimPool(min(workers, len(side)), config, quick, seed, show, finished)
        with _Redraw(bar, pool), warnings.catch_warnings(record=True) as caught:
            _note_filters()
            for cid in side:
                pool.submit(cid)
            answers = ReportAccounting()  # the report's one accounting, passed down to its sections
            results["accounting"] = timed("accounting", lambda: accounting_section(
                config, tick=lambda: tick("accounting"), answers=answers))
            for cid, claim in CLAIMS.items():
                if cid not in side:
                    show("", cid)
                    ctx = ClaimContext(audit_fn, trials["c6"], seed, step=step(cid))
                    start = time.perf_counter()
                    finished(cid, claim.evaluate(config, quick, ctx), time.perf_counter() - start, [])
            results["consistency"] = timed("consistency", lambda: consistency_section(seed))
            tick("verify --quick")
            results["tightness"] = timed("tightness", lambda: tightness_section(
                config, audit_fn=audit_fn, trials=trials["tightness"], composed_trials=trials["composed"],
                quick=quick, seed=seed, tick=tick, step=step("tightness"), answers=answers))
            results["inference"] = timed("inference", lambda: inference_section(quick=quick, seed=seed, tick=tick,
                                                                                      real_data=real_data))
            if pool is not None:
                show("", "waiting for " + ", ".join(c for c in side if c not in entries))
                pool.wait()
            claims = results["claims"]
            attach_measured(claims, results["inference"])
            c3 = next(c for c in claims if c["id"] == "C3")
            results["errata"] = timed("errata", lambda: errata_section(config, results["consistency"]["checks"], c3))
            tick("errata")
            check = violation_summary(results["tightness"])
            results["violation"], results["violations"] = check["violation"], check["violations"]
            results["meta"]["audits_checked"] = check["checked"]
            results["meta"]["audit_confidence"] = check["confidence"]
            results["meta"]["audit_family_confidence"] = check["family_confidence"]
            show("", "figures")
            from . import figures  # matplotlib: not before --out is checked (it writes its cache under HOME)

            with figures.drawing():
                for c in claims:
                    c["figures"] = CLAIMS[c["id"]].figure(c, out)
                results["tightness"]["figures"] = (figures.figure_tightness(results["tightness"], out)
                                                   + figures.figure_composition(results["tightness"], out))
        results["meta"]["status"] = RunStatus.COMPLETE
    except KeyboardInterrupt:
        results["meta"]["status"] = RunStatus.INTERRUPTED
        raise
    finally:
        try:
            if pool is not None:
                pool.close(graceful=results["meta"].get("status") == RunStatus.COMPLETE)
            bar.close()
            notes.extend(_note(w) for w in caught)
            results["meta"]["notes"] = note_summary(notes)
            if notes:
                print(note_line(results["meta"]["notes"]), file=sys.stderr)
            results["meta"]["elapsed_s"] = round(time.perf_counter() - t0, 2)
            if results["meta"]["status"] == RunStatus.RUNNING:  # an exception: say so, never "running"
                results["meta"]["status"] = RunStatus.FAILED
            _write(results, out)
            publish(out, final, complete=results["meta"]["status"] == RunStatus.COMPLETE)
        except BaseException:  # a stop (Ctrl-C, SIGTERM) or a failure in this cleanup: no half-written folder stays
            shutil.rmtree(out, ignore_errors=True)
            raise
    return jsonable(results)


def _note_filters() -> None:
    """Inside ``warnings.catch_warnings(record=True)``: record every warning (each occurrence; the summary counts
    them) except the accountant's float RuntimeWarnings and ResourceWarnings (Python ignores these by default: a .pyc
    file left open by a SIGTERM that stopped an import is no finding of the report)."""
    warnings.simplefilter("always")
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="tsdp.verify.pld")
    warnings.filterwarnings("ignore", category=ResourceWarning)  # the interpreter's (a file an interrupt left open)


def _note(w) -> tuple:
    """A caught warning as (category name, message), what the summary counts and a side process returns."""
    return w.category.__name__, str(w.message)


_STEPS = None  # in a side process: the queue its claims' sub-steps go to (_ClaimPool)


def _side_init(steps) -> None:
    """A side process reports through ``steps`` only: its stderr (the accountant's own tqdm bars) is discarded,
    so nothing it writes lands inside the parent's bar; warnings and exceptions come back with the results."""
    global _STEPS
    _STEPS = steps
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process


def _side_claim(cid: str, config: TrainingConfig, quick: bool, seed: int) -> tuple:
    """Evaluate claim ``cid`` (one that runs no audit) in a side process: (entry, seconds, [(category, message)]);
    its sub-steps go to the parent's queue."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        _note_filters()
        entry = CLAIMS[cid].evaluate(config, quick, ClaimContext(seed=seed, step=lambda what: _STEPS.put((cid, what))))
    return entry, time.perf_counter() - start, [_note(w) for w in caught]


class _ClaimPool:
    """The claims that run no audit (C1-C5), evaluated in ``workers`` spawned side processes while this one
    computes the other sections. The same code on the same inputs: the same numbers as in this process.
    ``show(cid, what)`` receives their sub-steps, ``finished(cid, entry, seconds, notes)`` their results;
    :meth:`close` ends the processes (at once, after an interrupt or a failure)."""

    def __init__(self, workers: int, config, quick: bool, seed: int, show, finished):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.steps = context.Queue()
        self._pool = context.Pool(workers, initializer=_side_init, initargs=(self.steps,))
        self._args, self._show, self._finished, self._pending = (config, quick, seed), show, finished, []

    def submit(self, cid: str) -> None:
        self._pending.append(self._pool.apply_async(
            _side_claim, (cid, *self._args), callback=lambda r, cid=cid: self._finished(cid, *r)))

    def drain(self, timeout: float) -> None:
        """Show the sub-steps that arrive within ``timeout`` seconds."""
        import queue

        try:
            while True:
                cid, what = self.steps.get(timeout=timeout)
                self._show(cid, what)
                timeout = 0
        except queue.Empty:
            pass

    def wait(self) -> None:
        """Until every claim is finished; re-raises a claim's exception."""
        for result in self._pending:
            result.get()

    def close(self, graceful: bool = False) -> None:
        """End the processes: ``graceful`` (every claim finished) lets them exit on their own, so they release their
        queue's locks themselves (terminating them left the semaphores for the resource tracker to complain about at
        exit); otherwise at once."""
        if graceful:
            self._pool.close()
        else:
            self._pool.terminate()
        self._pool.join()
        self.steps.close()
        self.steps.join_thread()


class _Redraw:
    """Redraw a tqdm bar every second from a daemon thread while the block runs, so its clock moves
    during a long sub-step; with a :class:`_ClaimPool`, show its claims' sub-steps as they arrive."""

    def __init__(self, bar, pool: Optional[_ClaimPool] = None, every: float = 1.0):
        self._bar, self._pool, self._every, self._stop = bar, pool, every, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            if self._pool is None:
                self._stop.wait(self._every)
            else:
                self._pool.drain(self._every)
            self._bar.refresh()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def note_summary(caught) -> list:
    """Warnings caught during the run, as (category, message) pairs, each distinct one once:
    [{category, message, count}], first seen first.

    Args:
        caught (list): The warnings caught (``warnings.catch_warnings(record=True)``).

    Returns:
        ``[{category, message, count}]``.
    """
    counts: dict = {}
    for key in caught:
        counts[key] = counts.get(key, 0) + 1
    return [{"category": c, "message": m, "count": n} for (c, m), n in counts.items()]


def note_line(notes: list) -> str:
    """The one line printed after the bar: how many notes of which kind, the first message, where the rest are.

    Args:
        notes: What :func:`note_summary` returned.

    Returns:
        The line ('' without notes).
    """
    total = sum(n["count"] for n in notes)
    kinds: dict = {}
    for n in notes:
        kinds[n["category"]] = kinds.get(n["category"], 0) + n["count"]
    return (f"notes: {total} ({', '.join(f'{k} x{v}' for k, v in kinds.items())}), e.g. {notes[0]['message']}; "
            "all in results.json meta.notes")


STALE_STAGING_S = 3600
"""A staging directory without an owner file is left alone for this long (a run may be creating it)."""
_OWNER = ".owner-pid"


def staging_dir(final: Path) -> Path:
    """A fresh temporary directory beside ``final`` (same file system, so publishing is a rename), owned by
    this process (its pid in ``.owner-pid``); stale ones of killed runs are removed first (:func:`_remove_stale`).

    Args:
        final: The report's folder, written only by :func:`publish`.

    Returns:
        The staging directory, where the report is written until it is published.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(final)
    while True:  # not mkdtemp: its 0700 would stay the published report's mode; mkdir's honours the umask
        staging = final.parent / f".{final.name}.tmp-{secrets.token_hex(4)}"
        try:
            staging.mkdir()
            break
        except FileExistsError:
            continue
    (staging / _OWNER).write_text(str(os.getpid()))
    return staging


def _remove_stale(final: Path) -> None:
    """Remove the ``.<name>.tmp-*`` staging directories beside ``final`` that no running process owns: the
    pid in their owner file is not alive, or they have no owner file and are older than :data:`STALE_STAGING_S`."""
    for staging in final.parent.glob(f".{glob.escape(final.name)}.tmp-*"):
        owner = staging / _OWNER
        try:
            pid = int(owner.read_text())
        except (OSError, ValueError):
            pid = None
        if pid is not None and _alive(pid):
            continue
        try:
            if pid is None and time.time() - staging.stat().st_mtime < STALE_STAGING_S:
                continue
        except OSError:
            continue
        shutil.rmtree(staging, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by another user
        return True
    except (OSError, OverflowError):  # no such pid can exist
        return False
    return True


REPORT_MARK = "results.json"
"""The file every report, complete or not, writes: a folder holding it holds an earlier report."""


SIBLING_NAME_EXTRA = 14
"""The most bytes the names :func:`staging_dir` and :func:`publish` make beside a report add to its own:
``.<name>.tmp-`` and 8 hex digits, ``.<name>.old-<pid>`` (a pid has at most 7 digits), ``<name>.incomplete``."""


def _name_max(folder: Path) -> int:
    """The longest name (bytes) the file system of ``folder`` allows (255 where it does not say)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def check_out_dir(final: Path) -> None:
    """ConfigError naming ``out`` unless :func:`publish` may replace ``final`` whole: a folder that does not exist yet,
    is empty, or holds an earlier report (:data:`REPORT_MARK`). Anything else in it would be removed with the old
    report; the file system's root has no name to publish beside, and a name the folders beside it
    (:data:`SIBLING_NAME_EXTRA`) would make too long for the file system cannot be published. Checked before any work.

    Args:
        final: The report's folder, as it will be published.

    Raises:
        ConfigError: ``final`` is the root, a folder holding something other than a report, or a name with no room
            for the names beside it.
    """
    from tsdp.theorems.config import ConfigError

    if not final.resolve().name:
        raise ConfigError("out", "is the file system's root: give a folder for the report", str(final))
    room = _name_max(next(p for p in final.resolve().parents if p.is_dir()))
    if len(os.fsencode(final.resolve().name)) + SIBLING_NAME_EXTRA > room:
        raise ConfigError("out", f"its name is too long for the report's folders beside it (.<name>.tmp-XXXXXXXX "
                                 f"while it is written): give a name of at most {room - SIBLING_NAME_EXTRA} bytes",
                          str(final))
    if final.is_dir() and any(final.iterdir()) and not (final / REPORT_MARK).is_file():
        raise ConfigError("out", "holds files that are not a tsdp report, and a finished report replaces the folder "
                                 "whole: give a new or empty folder, or one holding an earlier report", str(final))


def publish(staging: Path, final: Path, *, complete: bool) -> None:
    """Put a finished report in place of the old one, by renames (no partial state in ``final``).

    A complete report replaces ``final`` (the old one is renamed aside, then removed, stale
    figures with it). An interrupted or failed one goes to ``final`` only when that holds no
    earlier report; otherwise ``final`` stays untouched and the partial report goes to
    ``<final>.incomplete/`` (replacing an earlier incomplete one), where it can still be read.

    Args:
        staging: The report as written (:func:`staging_dir`); it is moved, not copied.
        final: The report's folder.
        complete: Whether the report is complete.
    """
    (staging / _OWNER).unlink(missing_ok=True)  # the report holds only its own files
    old_report = final.is_dir() and any(final.iterdir())
    target = final if complete or not old_report else final.with_name(final.name + ".incomplete")
    if target.exists():
        aside = final.with_name(f".{final.name}.old-{os.getpid()}")
        target.rename(aside)
        staging.rename(target)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        staging.rename(target)


def _write(results: dict, out: Path) -> None:
    """results.json, report.md, index.html (figures embedded) into ``out``."""
    data = jsonable(results)
    for c in data.get("claims") or []:
        c.setdefault("figures", [])
    (out / "results.json").write_text(json.dumps(data, indent=1, allow_nan=False))
    (out / "report.md").write_text(to_markdown(data))
    (out / "index.html").write_text(to_html(data, out))


def load_config(spec: str) -> tuple:
    """(name, TrainingConfig) from ``default`` or a JSON file of TrainingConfig fields.

    Raises ValueError naming the file and the problem (unreadable, not JSON, not an object,
    a field named twice, unknown field) and lets :class:`theorems.config.ConfigError` name a bad value.

    Args:
        spec: ``default`` or the path of a JSON file.

    Returns:
        (name, configuration).

    Raises:
        ValueError: The file is unreadable, not JSON, not an object, names a field twice, or has an unknown field.
        ConfigError: A bad value.
    """
    from dataclasses import fields

    from tsdp.theorems.config import DEFAULT_CONFIG
    from tsdp.verify.json_data import RepeatedKeyError, loads_once_each

    if spec == "default":
        return "default", DEFAULT_CONFIG
    if not spec.strip():  # Path("") is the current folder: "cannot read config file : Is a directory"
        raise ValueError(f"config file name is empty (got {spec!r}): give `default` or a JSON file")
    path = Path(spec)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read config file {spec}: {exc.strerror or exc}") from None
    try:
        data = loads_once_each(text)
    except RepeatedKeyError as exc:
        raise ValueError(f"config file {spec} {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"config file {spec} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError(f"config file {spec} nests too deeply to be a JSON object of TrainingConfig fields") from None
    if not isinstance(data, dict):
        raise ValueError(f"config file {spec} must hold a JSON object of TrainingConfig fields")
    known = {f.name for f in fields(TrainingConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"config file {spec}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if isinstance(data.get("lengths"), list):
        data["lengths"] = tuple(data["lengths"])
    return path.stem, DEFAULT_CONFIG.with_(**data)
