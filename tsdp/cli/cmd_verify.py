"""`tsdp verify`: run the consistency checks of :mod:`verify.checks`.

Human output: a table of checks with their status, then every failure and finding with
its numbers. ``--json``: one object with ``checks`` and ``summary``. Exit code 0 only
when no check fails (findings, the documented errata of the paper, do not fail the run).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .config_args import CATALOGUE
from .errors import UsageError
from .output import dumps

if TYPE_CHECKING:
    from tsdp.verify.checks.result import VerifyReport


def _measured_text(value) -> str:
    """A measured number or a tolerance of a check, compact: floats to 3 significant digits, a profile's maximum with
    its α, the first four items of a dict or list."""
    if isinstance(value, float):
        return f"{value:.3g}" if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        if "max" in value:
            return f"{_measured_text(value['max'])}@α={_measured_text(value.get('at_alpha'))}"
        shown = ", ".join(f"{k}: {_measured_text(v)}" for k, v in list(value.items())[:4])
        return "{" + shown + ("…}" if len(value) > 4 else "}")
    if isinstance(value, list):
        return "[" + ", ".join(_measured_text(v) for v in value[:4]) + ("…]" if len(value) > 4 else "]")
    return str(value)


def format_report(report: "VerifyReport") -> str:
    """The human report: one row per check, the summary, then failures and findings in full.

    Args:
        report: What :func:`tsdp.verify.checks.runner.verify` returned.

    Returns:
        The text, lines joined.
    """
    from tsdp.verify.checks.result import FAIL, FINDING

    checks = report.checks
    width = max([len(c.name) for c in checks] + [5])
    lines = [f"{'check':<{width}}  {'status':<8} {'ids':<22} time", "-" * (width + 40)]
    for c in checks:
        ids = ",".join(c.theorems)
        lines.append(f"{c.name:<{width}}  {c.status:<8} {ids[:22]:<22} {round(c.elapsed_s, 4):.2f}s")
    s = report.summary
    lines.append("")
    lines.append(f"{s['total']} checks ({report.mode}, seed {report.seed}, {report.elapsed_s:.1f} s): "
                 f"{s['pass']} pass, {s['fail']} fail, {s['finding']} finding")
    lines.append("theorems covered: " + ", ".join(report.theorems_covered))
    for status in (FAIL, FINDING):
        bad = [c.as_dict() for c in report.with_status(status)]
        if not bad:
            continue
        lines.append("")
        lines.append(("FAILURES" if status == FAIL else "FINDINGS (documented errata of the paper as printed)")
                     + f" ({len(bad)}):")
        for c in bad:
            lines.append(f"* {c['name']} [{', '.join(c['theorems'])}]: {c['explanation']}")
            for k, v in c["measured"].items():
                lines.append(f"    {k} = {_measured_text(v)}")
            if c["tolerance"]:
                lines.append(f"    tolerance: {_measured_text(c['tolerance'])}")
    return "\n".join(lines)


def add_parsers(sub, command) -> None:
    """Add the `verify` sub-command and register its handler.

    Args:
        sub (argparse._SubParsersAction): The sub-command parsers of ``tsdp``.
        command (Callable): :func:`tsdp.cli.main.command`, which registers a handler by name.
    """
    p = sub.add_parser(
        "verify", help="run the consistency checks of every bound (profile axioms, orders, symmetry, ...)",
        description=f"Check the catalogue {CATALOGUE} against the paper's lemmas: privacy-profile axioms, order between "
        "bounds, α-symmetry, monotonicity claims (T5), mixture lemmas, agreement of evaluation paths and PLD "
        "pessimism, symbolic reductions, composition. Status per check: pass, fail, or finding (a documented "
        "erratum of the paper as printed, with its numbers). Exit code 1 when a check fails.")
    p.add_argument("--quick", action="store_true",
                   help="the paper's default configuration only (a fraction of the full run's time)")
    p.add_argument("--json", action="store_true", help="one JSON object with `checks` and `summary`")
    p.add_argument("--seed", type=int, default=0, help="seed of the random configurations and mixtures (default 0)")
    p.add_argument("--jobs", type=int, default=None,
                   help="worker processes (default: 1 for --quick, else min(2, CPU count))")
    p.add_argument("--select", default=None, metavar="SUBSTRING",
                   help="run only the checks whose name contains SUBSTRING (e.g. P6, T10, @paper)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr (the accountant's included)")

    @command("verify")
    def cmd_verify(args) -> int:
        from tsdp.verify.checks.runner import verify

        if args.seed < 0:
            raise UsageError(f"invalid --seed: must be >= 0 (got {args.seed})")
        from tsdp.verify.pld.limits import progress_bars_hidden

        with progress_bars_hidden(args.no_progress):  # the accountant's own bars too, in the workers as well
            report = verify(quick=args.quick, seed=args.seed, jobs=args.jobs, select=args.select,
                            progress=not (args.quick or args.no_progress))
        if args.select and not report.checks:
            raise UsageError(f"invalid --select: no check name contains {args.select!r}")
        print(dumps(report.as_dict()) if args.json else format_report(report))
        return 1 if report.failed else 0
