"""Orchestrate `tsdp report`: compute every section, draw the figures, write the four outputs.

:func:`build_report` runs, in order, the accounting (section 1), claims C1-C6 (2), the quick
consistency run (3), the tightness audits (4) and the errata table (5) with a tqdm progress
bar on stderr, then writes ``<out>/results.json``, ``report.md``, ``index.html`` and the PNGs.
Ctrl-C stops the computation: what is done is still written, marked ``"interrupted"``, and
KeyboardInterrupt is re-raised (the CLI exits 130).

Trial counts (per world) keep the whole default report within 10 minutes on 2 CPU cores and
``quick`` within 2 minutes; the auditor uses CUDA when present.
"""
from __future__ import annotations

import json
import math
import time
import warnings
from pathlib import Path
from typing import Optional

from tsdp.theorems.config import TrainingConfig

from . import figures
from .accounting_section import DELTAS, SCHEDULES, accounting_section
from .claims import CLAIMS, claim_c6
from .consistency import consistency_section
from .errata import errata_section
from .render import to_html, to_markdown
from .schema import SCHEMA_VERSION
from .tightness import load_auditor, tightness_section

TRIALS = {"tightness": 50_000, "composed": 10_000, "c6": 500_000}
QUICK_TRIALS = {"tightness": 5_000, "composed": 0, "c6": 20_000}
OUT_ROOT = Path(__file__).resolve().parent / "out"


def jsonable(x):
    """results as plain JSON: dict keys to str, numpy scalars to Python, non-finite floats to None."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        x = x.item()
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    return x


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("tsdp")
    except Exception:  # pragma: no cover - not installed
        return "unknown"


def build_report(config: TrainingConfig, *, name: str = "default", out_dir: Optional[Path] = None,
                 quick: bool = False, progress: bool = True, seed: int = 0, audits: bool = True) -> dict:
    """Compute the report for ``config`` and write it to ``out_dir`` (default reports/out/<name>/).

    Returns the results dict (as written to results.json, see :mod:`reports.schema`). Each
    section's numbers carry their soundness direction (sound = upper, attained = lower,
    audited = lower confidence bound). ``audits=False`` (or a missing auditor) reports
    "audit not available" instead of audited numbers.
    """
    from tqdm import tqdm

    out = Path(out_dir) if out_dir is not None else OUT_ROOT / name
    out.mkdir(parents=True, exist_ok=True)
    trials = dict(QUICK_TRIALS if quick else TRIALS)
    audit_fn = load_auditor() if audits else None
    results = {"schema_version": SCHEMA_VERSION,
               "meta": {"name": name, "mode": "quick" if quick else "default", "version": _version(),
                        "status": "running", "elapsed_s": None, "timings_s": {}, "trials": trials,
                        "audit_status": "ran" if audit_fn is not None else "audit not available"},
               "accounting": None, "claims": None, "consistency": None, "tightness": None, "errata": None}
    n_tight = 3 if quick else 8 + 1
    total = len(DELTAS) * len(SCHEDULES) + len(CLAIMS) + 1 + n_tight + 1
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
            for cid, fn in CLAIMS.items():
                bar.set_postfix_str(cid)
                if fn is claim_c6:
                    c = timed(cid, lambda: claim_c6(config, quick, audit_fn, trials["c6"], seed))
                else:
                    c = timed(cid, lambda fn=fn: fn(config, quick))
                claims.append(c)
                tick(cid)
            results["consistency"] = timed("consistency", lambda: consistency_section(seed))
            tick("verify --quick")
            results["tightness"] = timed("tightness", lambda: tightness_section(
                config, audit_fn=audit_fn, trials=trials["tightness"], composed_trials=trials["composed"],
                quick=quick, seed=seed, tick=tick))
            c3 = next(c for c in claims if c["id"] == "C3")
            results["errata"] = timed("errata", lambda: errata_section(config, results["consistency"]["checks"], c3))
            tick("errata")
            for c in claims:
                draw = figures.FIGURES.get(c["id"])
                c["figures"] = draw(c, out) if draw is not None else []
            results["tightness"]["figures"] = (figures.figure_tightness(results["tightness"], out)
                                               + figures.figure_composition(results["tightness"], out))
        results["meta"]["status"] = "complete"
    except KeyboardInterrupt:
        results["meta"]["status"] = "interrupted"
        raise
    finally:
        bar.close()
        results["meta"]["elapsed_s"] = round(time.perf_counter() - t0, 2)
        _write(results, out)
    return jsonable(results)


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
    if not isinstance(data, dict):
        raise ValueError(f"config file {spec} must hold a JSON object of TrainingConfig fields")
    known = {f.name for f in fields(TrainingConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"config file {spec}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if isinstance(data.get("lengths"), list):
        data["lengths"] = tuple(data["lengths"])
    return path.stem, DEFAULT_CONFIG.with_(**data)
