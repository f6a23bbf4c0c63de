"""Orchestrate `tsdp report`: compute every section, draw the figures, write the four outputs.

:func:`build_report` runs, in order, the accounting (section 1), claims C1-C6 (2), the quick
consistency run (3), the tightness audits (4) and the errata table (5) with a tqdm progress
bar on stderr, then writes ``<out>/results.json``, ``report.md``, ``index.html`` and the PNGs.
Outputs are atomic: everything is written to a temporary directory beside ``<out>`` and
replaces the old report only when complete. Ctrl-C (or a failure) stops the computation:
what is done is written, marked ``"interrupted"`` (``"failed"``), to ``<out>.incomplete/``
when ``<out>`` holds an earlier report (left intact), and the exception is re-raised (the
CLI exits 130 on Ctrl-C).

Trial counts (per world) keep the whole default report within 10 minutes on 2 CPU cores and
``quick`` within 2 minutes; the auditor uses CUDA when present.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Optional

from tsdp.theorems.config import TrainingConfig
from tsdp.verify.json_data import json_data

from . import figures
from .accounting_section import DELTAS, SCHEDULES, accounting_section
from .claim_base import ClaimContext
from .claims import CLAIMS
from .consistency import consistency_section
from .errata import errata_section
from .inference_section import inference_section
from .render import to_html, to_markdown
from .schema import SCHEMA_VERSION
from .tightness import load_auditor, tightness_section, violation_summary

TRIALS = {"tightness": 50_000, "composed": 10_000, "c6": 500_000}
QUICK_TRIALS = {"tightness": 5_000, "composed": 0, "c6": 20_000}
OUT_ROOT = Path(__file__).resolve().parent / "out"


def jsonable(x):
    """results as plain JSON (:func:`tsdp.verify.json_data.json_data`: non-finite numbers as null)."""
    return json_data(x)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tsdp")
    except Exception:  # pragma: no cover - not installed
        return "unknown"


def build_report(config: TrainingConfig, *, name: str = "default", out_dir: Optional[Path] = None,
                 quick: bool = False, progress: bool = True, seed: int = 0, audits: bool = True,
                 real_data=None) -> dict:
    """Compute the report for ``config`` and write it to ``out_dir`` (default reports/out/<name>/).

    Returns the results dict (as written to results.json, see :mod:`reports.schema`). Each
    section's numbers carry their soundness direction (sound = upper, attained = lower,
    audited = lower confidence bound). ``audits=False`` (or a missing auditor) reports
    "audit not available" instead of audited numbers. ``real_data``: (name, SeriesData) of the inference
    section's real panel (None: Grunfeld).
    """
    from tqdm import tqdm

    final = Path(out_dir) if out_dir is not None else OUT_ROOT / name
    out = _staging(final)  # everything is written here; the old report in ``final`` stays until this one is complete
    trials = dict(QUICK_TRIALS if quick else TRIALS)
    audit_fn = load_auditor() if audits else None
    results = {"schema_version": SCHEMA_VERSION,
               "meta": {"name": name, "mode": "quick" if quick else "default", "version": _version(),
                        "status": "running", "elapsed_s": None, "timings_s": {}, "trials": trials,
                        "audit_status": "ran" if audit_fn is not None else "audit not available"},
               "accounting": None, "claims": None, "consistency": None, "tightness": None, "errata": None,
               "inference": None,
               "violation": None, "violations": None}
    n_tight = 3 if quick else 8 + 1
    total = len(DELTAS) * len(SCHEDULES) + len(CLAIMS) + 1 + n_tight + 1 + 2
    bar = tqdm(total=total, desc="tsdp report", unit="task", disable=not progress, dynamic_ncols=True)
    t0 = time.perf_counter()
    timings = results["meta"]["timings_s"]

    def timed(key, fn):
        start = time.perf_counter()
        value = fn()
        timings[key] = round(time.perf_counter() - start, 2)
        return value

    def tick(label=""):
        bar.set_postfix_str(str(label))
        bar.update(1)

    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=RuntimeWarning, module="tsdp.verify.pld")
            results["accounting"] = timed("accounting", lambda: accounting_section(config, tick=lambda: tick("accounting")))
            claims = results["claims"] = []  # filled claim by claim, so an interrupt keeps the finished ones
            ctx = ClaimContext(audit_fn, trials["c6"], seed)
            for cid, claim in CLAIMS.items():
                bar.set_postfix_str(cid)
                claims.append(timed(cid, lambda claim=claim: claim.evaluate(config, quick, ctx)))
                tick(cid)
            results["consistency"] = timed("consistency", lambda: consistency_section(seed))
            tick("verify --quick")
            results["tightness"] = timed("tightness", lambda: tightness_section(
                config, audit_fn=audit_fn, trials=trials["tightness"], composed_trials=trials["composed"],
                quick=quick, seed=seed, tick=tick))
            c3 = next(c for c in claims if c["id"] == "C3")
            results["errata"] = timed("errata", lambda: errata_section(config, results["consistency"]["checks"], c3))
            tick("errata")
            results["inference"] = timed("inference", lambda: inference_section(quick=quick, seed=seed, tick=tick,
                                                                                      real_data=real_data))
            check = violation_summary(results["tightness"])
            results["violation"], results["violations"] = check["violation"], check["violations"]
            results["meta"]["audits_checked"] = check["checked"]
            for c in claims:
                c["figures"] = CLAIMS[c["id"]].figure(c, out)
            results["tightness"]["figures"] = (figures.figure_tightness(results["tightness"], out)
                                               + figures.figure_composition(results["tightness"], out))
        results["meta"]["status"] = "complete"
    except KeyboardInterrupt:
        results["meta"]["status"] = "interrupted"
        raise
    finally:
        bar.close()
        results["meta"]["elapsed_s"] = round(time.perf_counter() - t0, 2)
        if results["meta"]["status"] == "running":  # an exception: say so, never "running"
            results["meta"]["status"] = "failed"
        _write(results, out)
        _publish(out, final, complete=results["meta"]["status"] == "complete")
    return jsonable(results)


STALE_STAGING_S = 3600
"""A staging directory without an owner file is left alone for this long (a run may be creating it)."""
_OWNER = ".owner-pid"


def _staging(final: Path) -> Path:
    """A fresh temporary directory beside ``final`` (same file system, so publishing is a rename), owned by
    this process (its pid in ``.owner-pid``); stale ones of killed runs are removed first (:func:`_remove_stale`)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(final)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
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


def _publish(staging: Path, final: Path, *, complete: bool) -> None:
    """Put a finished report in place of the old one, by renames (no partial state in ``final``).

    A complete report replaces ``final`` (the old one is renamed aside, then removed, stale
    figures with it). An interrupted or failed one goes to ``final`` only when that holds no
    earlier report; otherwise ``final`` stays untouched and the partial report goes to
    ``<final>.incomplete/`` (replacing an earlier incomplete one), where it can still be read.
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
    unknown field) and lets :class:`theorems.config.ConfigError` name a bad value.
    """
    from dataclasses import fields

    from tsdp.theorems.config import DEFAULT_CONFIG

    if spec == "default":
        return "default", DEFAULT_CONFIG
    path = Path(spec)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read config file {spec}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
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
