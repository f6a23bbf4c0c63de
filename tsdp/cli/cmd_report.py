"""`tsdp report`: the tightness report - accounting, claims C1-C12 with verdicts,
consistency, tightness audits, errata - written to reports/out/<name>/ in the current folder (or --out).

reports (and through it matplotlib, torch) is imported inside the handler only.
"""
from __future__ import annotations

from .config_args import add_data_arguments, data_from_args, loader_options_given
from .output import dumps


def add_parsers(sub, command) -> None:
    """Add the `report` sub-command and register its handler.

    Args:
        sub (argparse._SubParsersAction): The sub-command parsers of ``tsdp``.
        command (Callable): :func:`tsdp.cli.main.command`, which registers a handler by name.
    """
    p = sub.add_parser(
        "report", help="write the tightness report (HTML, Markdown, JSON, PNG figures) for a configuration",
        description="Compute the configuration's accounting, verdicts on claims C1-C12 of the paper with the figures "
        "that reproduce Section 5 and Appendix C, the `tsdp verify --quick` summary, the tightness audits and the "
        "errata table; write index.html (self-contained), report.md, results.json and PNGs to reports/out/<name>/ "
        "in the current folder (or --out DIR). The audits, the claims' sweeps and C10's and C12's non-private trainings run on one process per "
        "available core (minutes on 2 cores; --quick runs smaller grids and fewer trials).")
    p.add_argument("--config", default="default", metavar="default|FILE",
                   help="`default` (paper Section 5) or a JSON file of TrainingConfig fields, e.g. "
                   '{"L": 4, "batch_size": 160}')
    p.add_argument("--quick", action="store_true", help="fewer grid cells and audit trials (a fraction of the time)")
    p.add_argument("--out", default=None, metavar="DIR", help="output directory (default reports/out/<name>/ in the current folder)")
    p.add_argument("--json", action="store_true", help="print results.json to stdout instead of a summary")
    p.add_argument("--seed", type=int, default=0, help="seed of the audits and random checks (default 0)")
    p.add_argument("--no-audit", action="store_true", help="skip the Monte Carlo audits (reported as not available)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr (the accountant's included)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes for the audits and the claims' sweeps (default: one per available core; "
                        "1: everything in this process; the numbers do not depend on it)")
    add_data_arguments(p, default="grunfeld", synthetic=False,
                       what="the real panel of the inference section (each series scaled to unit std)")

    @command("report")
    def cmd_report(args) -> int:
        import sys
        from pathlib import Path

        from .main import UsageError

        if args.seed < 0:
            raise UsageError(f"invalid --seed: must be >= 0 (got {args.seed})")
        if args.out is not None and not args.out.strip():
            raise UsageError(f"invalid --out: empty (give a folder, or drop --out for reports/out/<name>/) "
                             f"(got {args.out!r})")
        from tsdp.attacks.montecarlo.verdict import verdict_confidence_text
        from tsdp.reports.render import lower, upper
        from tsdp.reports.run import OUT_ROOT, WORKERS, build_report, check_out_dir, load_config

        from tsdp.theorems.config import ConfigError, check_output_path
        from tsdp.verify.cpus import check_workers

        workers = WORKERS if args.workers is None else check_workers("workers", args.workers)
        try:
            name, config = load_config(args.config)
        except UnicodeDecodeError:
            raise UsageError(f"invalid --config: {args.config} is not a text (JSON) file") from None
        except ConfigError as exc:  # a value in the file: name its key, not a flag
            raise UsageError(f"invalid --config: {args.config}: {exc} (key {exc.parameter!r})") from None
        except ValueError as exc:
            if type(exc) is not ValueError:
                raise
            raise UsageError(f"invalid --config: {exc}") from None
        default_panel = args.data == p.get_default("data") and not loader_options_given(args)
        real_data = None if default_panel else (args.data, data_from_args(args))  # None: the report's Grunfeld
        try:
            out = Path(args.out).resolve() if args.out else OUT_ROOT / name  # '.' has no name to publish beside
        except RuntimeError as exc:  # Path.resolve on a symbolic link loop (Python < 3.13; later: left unresolved)
            raise UsageError(f"invalid --out: cannot be used as a path here ({exc})") from None
        try:
            check_output_path("out", out, directory=True)  # before the report's minutes of work
        except ConfigError as exc:
            if args.out:
                raise
            raise UsageError(f"cannot write the report to {out}/ in the current folder ({exc.constraint}); "
                             f"give --out DIR") from None
        check_out_dir(out)  # a finished report replaces the folder whole
        from tsdp.verify.pld.limits import progress_bars_hidden

        with progress_bars_hidden(args.no_progress):  # the accountant's own bars too, in the audit and claim workers
            results = build_report(config, name=name, out_dir=out, quick=args.quick, seed=args.seed,
                                   progress=not args.no_progress, audits=not args.no_audit, real_data=real_data,
                                   workers=workers)
        if args.json:
            print(dumps(results))
        else:
            print(f"report written to {out}/ (index.html, report.md, results.json) in {results['meta']['elapsed_s']} s")
            print(f"theorem {results['accounting']['theorem']}: " + "; ".join(
                f"δ={r['delta']:g} {r['steps'] or r['epochs']} {'steps' if r['steps'] else 'epochs'}: "
                f"ε={upper(r['epsilon_sound'])}" for r in results["accounting"]["rows"][:5]))
            for c in results["claims"]:
                print(f"{c['id']}: {c['verdict_text']} - {c['reason']}")
                for o in c.get("other_verdicts", []):
                    print(f"{c['id']} ({o['source']}): {o['verdict_text']} - {o['reason']}")
            s = results["consistency"]["summary"]
            print(f"verify --quick: {s['pass']} pass, {s['fail']} fail, {s['finding']} finding; "
                  f"audits: {results['tightness']['audit_status']}")
        for v in results["violations"]:  # a certified lower bound above a sound ε fails the run
            why = (f"> sound ε = {upper(v['epsilon_sound'])} of {v['bound']}" if v.get("estimate_above", True) else
                   f"(sound ε = {upper(v['epsilon_sound'])}); its violation test rejects the sound profile of "
                   f"{v['bound']}")
            print(f"PRIVACY VIOLATION: audit of {v['theorem']} certifies ε ≥ {lower(v['epsilon_lower'])} "
                  f"({verdict_confidence_text(v['confidence'])}) {why}", file=sys.stderr)
        return 1 if results["violation"] else 0
