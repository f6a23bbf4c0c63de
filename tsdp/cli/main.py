"""`tsdp`: the command line. Human output by default, --json for machines.

Exit codes: 0 success, 1 a check failed (a privacy violation), 2 bad input, 128 + the signal when stopped: 130 by
Ctrl-C, 143 by SIGTERM (what SLURM, Kubernetes, ``timeout`` and systemd send), each after the same cleanup, with one
line on stderr (:mod:`tsdp.cli.termination`; only the command line installs its SIGTERM handler).
Bad input is one line on stderr, ``tsdp <command>: error: ...``, naming the flag as typed (or
the file and line of a data file, or the user function that failed and why); no traceback
unless the global ``--debug`` flag asks for it (errors that are bugs still show one). Usage errors are
one line too; the usage block comes with ``--help`` only. JSON output is RFC 8259 valid:
non-finite numbers are written as ``null`` (:mod:`tsdp.cli.output`). A closed stdout
(``tsdp epsilon --json | head -c 10``) ends quietly. Progress bars go to stderr, and so does what a user's function
prints (:func:`tsdp.cli.output.user_output_to_stderr`): stdout holds the command's output only; an error line
or note after a bar left mid-line (stderr not a terminal) starts a line of its own. A sub-command of a sub-command
names itself (``tsdp forecast predict: error: ...``).

Nothing heavy is imported at start-up (``tsdp --help`` loads neither sympy nor torch):
the sub-commands import the layers below inside their handlers, ``--device`` imports torch
only to check a device other than auto/cpu, and the error classes of the lower layers are
looked up only once an exception arrives (:func:`_user_errors`).
"""
from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import sys
import traceback
import warnings
from typing import Callable, Dict, List, Optional

from .config_args import CATALOGUE, HelpFormatter, add_config_arguments, check_device, config_from_args
from .counts import integral_counts
from .errors import UsageError  # its one home; re-exported here for `from .main import UsageError`

COMMANDS: Dict[str, Callable[[argparse.Namespace], int]] = {}
RUNS_USER_CODE: Dict[str, Callable[[argparse.Namespace], bool]] = {}
"""Commands that run a user's code in this process: whether their arguments make them run it. Such a run is
supervised from another process (:func:`tsdp.attacks.canary.time_limit.supervised`), so that code stuck in one long C
routine is stopped at its time limit, and code that ends the process itself (``os._exit(0)``) is an error, not a
result."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and no prefix abbreviations (flags are named as typed)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """A usage error: one line on stderr, exit 2 (no usage block).

        Args:
            message: argparse's message.
        """
        self.exit(2, f"{self.prog}: error: {_one_line(message)}\n")


def command(name: str, runs_user_code: Optional[Callable[[argparse.Namespace], bool]] = None
            ) -> Callable[[Callable], Callable]:
    """Register the handler of a sub-command (a decorator).

    Args:
        name: The sub-command.
        runs_user_code: ``runs_user_code(args)``: whether this run calls a user's code in this process, for a
            command that can (:data:`RUNS_USER_CODE`: such a run is supervised).

    Returns:
        The decorator, which returns the handler unchanged.
    """
    def register(fn):
        COMMANDS[name] = fn
        if runs_user_code is not None:
            RUNS_USER_CODE[name] = runs_user_code
        return fn

    return register


def _emit(args, payload: dict, human: Callable[[dict], str]) -> None:
    from .output import dumps

    print(dumps(payload) if args.json else human(payload))


def _one_line(message: str) -> str:
    return " ".join(str(message).split())


# ----------------------------------------------------------------------------- theorems


@command("theorems")
def cmd_theorems(args: argparse.Namespace) -> int:
    """`tsdp theorems`: every bound of the catalogue and the claims, one block each (or --json).

    Args:
        args: The parsed flags.

    Returns:
        0.
    """
    from tsdp.theorems.registry import CLAIMS, REGISTRY

    rows = [b.describe() for b in (*REGISTRY.values(), *CLAIMS.values())]

    def human(_):
        lines = []
        for r in rows:
            lines.append(f"{r['id']:<12} {r['reference']:<10} {r['kind']:<6} {r['scope']:<6} {r['label']}")
            lines.append(f"{'':<12} scheme: {r['scheme']}")
            lines.append(f"{'':<12} {r['statement']}")
        return "\n".join(lines)

    _emit(args, {"theorems": rows}, human)
    return 0


# ----------------------------------------------------------------------------- profile


ALPHA_ZERO_EPSILON = "-∞"
"""ε = log α of ``--alpha 0`` in human output (the JSON writes null with an ``epsilon_note``)."""

DPS_MAX_EPSILON = 1e6
"""The largest |ε| evaluated in mpmath (``profile --dps``): at 1e308 its erfc overflows a float inside."""


PROFILE_DIGITS = 10
"""Significant digits of `tsdp profile`'s float64 H_α column."""


def _profile_rounding(kind: str) -> Callable[[float, int], str]:
    """How `tsdp profile` prints a δ of a bound of this ``kind`` (:mod:`tsdp.verify.rounded`): a tight or upper
    bound's rounded up, a lower bound's rounded down, a claim's (no side is safe) to nearest."""
    from tsdp.theorems.bounds.base import Kind
    from tsdp.verify.rounded import rounded_down, rounded_nearest, rounded_up

    return {Kind.TIGHT: rounded_up, Kind.UPPER: rounded_up, Kind.LOWER: rounded_down}.get(kind, rounded_nearest)


def _epsilons(args) -> List[float]:
    """ε = log α of every --alpha and each --epsilon (kept in ε: e^ε overflows past 709.78)."""
    eps = []
    for a in args.alpha or []:
        if not (math.isfinite(a) and a >= 0):
            raise UsageError(f"invalid --alpha: must be finite and >= 0 (got {a})")
        eps.append(math.log(a) if a > 0 else -math.inf)
    for e in args.epsilon or []:
        if not math.isfinite(e):
            raise UsageError(f"invalid --epsilon: must be finite (got {e})")
        eps.append(e)
    if not eps:
        raise UsageError("give at least one --alpha A or --epsilon E")
    return eps


@command("profile")
def cmd_profile(args: argparse.Namespace) -> int:
    """`tsdp profile`: H_α = δ(ε = log α) of one bound at every --alpha and --epsilon, in float64 or, with --dps,
    in mpmath.

    Args:
        args: The parsed flags.

    Returns:
        0.

    Raises:
        UsageError: A bad --alpha, --epsilon or --dps.
    """
    import mpmath as mp
    import numpy as np

    from tsdp.theorems.registry import resolve

    from tsdp.verify.json_data import with_note

    config = config_from_args(args)
    eps = _epsilons(args)
    if args.dps is not None and not 15 <= args.dps <= 10_000:
        raise UsageError(f"invalid --dps: must be in [15, 10000] (got {args.dps})")
    if args.dps is not None and max(abs(e) if math.isfinite(e) else 0 for e in eps) > DPS_MAX_EPSILON:  # α = 0: -∞
        raise UsageError(f"invalid --epsilon: with --dps, |ε| must be <= {DPS_MAX_EPSILON:g} (mpmath's erfc "
                         f"overflows its precision bookkeeping beyond; without --dps any finite ε is answered)")
    bound, reason = resolve(config, args.theorem)
    given = [float(a) for a in args.alpha or []]  # α as typed; e^ε for each --epsilon (inf past 709)
    alphas = given + [math.exp(e) if e < 709 else math.inf for e in eps[len(given):]]
    if args.dps is None:
        finite = [i for i, a in enumerate(alphas) if math.isfinite(a)]
        delta = [0.0] * len(eps)
        for i, d in zip(finite, bound.profile(config, np.array([alphas[i] for i in finite]))):
            delta[i] = float(d)
        big = [i for i, a in enumerate(alphas) if not math.isfinite(a)]
        if big:  # α = e^ε past float range: the profile in ε (log space, no overflow)
            from tsdp.verify.pld import one_step_profile

            for i, d in zip(big, one_step_profile(bound, config).delta(np.array([eps[i] for i in big]))):
                delta[i] = float(d)
        values: list = delta
    else:
        with mp.workdps(args.dps):
            values = [bound.profile_mp(config, mp.exp(mp.mpf(e)) if math.isfinite(e) else mp.mpf(0), args.dps)
                      for e in eps]
        delta = [float(v) for v in values]
    payload = {
        "theorem": bound.id,
        "label": bound.label,
        "kind": bound.kind,
        "scope": bound.scope,
        "reason": reason,
        "config": config.as_dict(),
        "alpha": alphas,
        "epsilon": eps,
        "delta": delta,
    }
    if args.dps is not None:
        payload["dps"] = args.dps
        with mp.workdps(args.dps):  # str() writes the context's digits: the ones the values were computed at
            payload["delta_exact"] = [str(v) for v in values]
    with_note(payload, "epsilon", f"null: ε = log α = {ALPHA_ZERO_EPSILON} where α = 0")
    with_note(payload, "alpha", "null: α = e^ε beyond the float range (ε > 709.78); its ε is the entry of epsilon")

    def human(p):
        shown = payload.get("delta_exact", [_profile_rounding(bound.kind)(d, PROFILE_DIGITS) for d in delta])
        lines = [f"{bound.id} ({bound.reference}, {bound.label}): {bound.kind}, per {bound.scope} - {reason}"]
        lines.append(f"{'alpha':>14}  {'epsilon':>10}  H_alpha")
        for a, e, d in zip(alphas, eps, shown):
            alpha = f"{a:>14.6g}" if math.isfinite(a) else f"{'e^' + format(e, '.6g'):>14}"
            epsilon = f"{e:>10.6g}" if math.isfinite(e) else f"{ALPHA_ZERO_EPSILON:>10}"
            lines.append(f"{alpha}  {epsilon}  {d}")
        return "\n".join(lines)

    _emit(args, payload, human)
    return 0


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The `tsdp` argument parser: the top-level flags and every sub-command's parser (one module per group,
    :func:`subcommand_modules`), each ``type=int`` flag read through :mod:`tsdp.cli.counts`.

    Returns:
        The parser (docs/reference/cli.md is generated from it).
    """
    parser = Parser(
        prog="tsdp",
        description="Verify the privacy guarantees of DP-SGD for time-series forecasting "
        "(Schuchardt et al., ICML 2025: privacy amplification by structured subsampling).",
        epilog="Bad input exits 2 with one line naming the flag. --json output is RFC 8259 JSON; non-finite "
        "numbers are written as null. TSDP_MEMORY_LIMIT (bytes, or e.g. 4G; default 2G) caps the memory of "
        "one privacy-loss distribution; larger ones are answered at a coarser (still sound) discretisation. "
        "TSDP_NO_PROGRESS=1 hides the accountant's progress bars (as report's and verify's --no-progress do). "
        "Exit status: 0 done, 1 a check failed (a privacy violation), 2 bad input, 130 interrupted (Ctrl-C), "
        "143 terminated (SIGTERM, as SLURM, Kubernetes, timeout and systemd send): both stops clean up first (a "
        "report's partial output is published as interrupted, no temporary folder is left) and say so in one line.",
    )
    parser.add_argument("--debug", action="store_true",
                        help="with an error, print its traceback too (e.g. where your train or loss function raised)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("theorems", help=f"list every bound of the catalogue ({CATALOGUE})",
                       description="List every bound: id, paper label, kind (tight/upper/lower), scope, scheme, statement.")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("profile", help="privacy profile H_alpha (delta at e^epsilon) of one bound",
                       description="Evaluate H_α = δ(ε = log α) of a bound for the configuration. Without --theorem "
                       "the tightest sound upper bound for the configured scheme is used.")
    p.add_argument("--theorem", help="bound id, e.g. T6 (see `tsdp theorems`)")
    p.add_argument("--alpha", type=float, nargs="+", metavar="A", help="values of α ≥ 0")
    p.add_argument("--epsilon", type=float, nargs="+", metavar="E", help="values of ε (α = e^ε, any finite ε)")
    p.add_argument("--dps", type=int, default=None, help="evaluate in mpmath at this many digits, 15 to 10000 "
                   "(default: numpy float64)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_config_arguments(p)

    for name in subcommand_modules():
        importlib.import_module(name).add_parsers(sub, command)
    integral_counts(parser)
    return parser


def subcommand_modules() -> List[str]:
    """The modules that add sub-commands: every ``tsdp/cli/cmd_<name>.py``, in name order.

    Each defines ``add_parsers(subparsers, command)``, where ``command(name)`` registers the
    handler; a new sub-command is a new module, with no edit here. They must import heavy
    libraries (torch, matplotlib, dp-accounting) lazily, inside the handler.
    """
    import pkgutil
    from pathlib import Path

    return sorted(f"{__package__}.{m.name}" for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                  if m.name.startswith("cmd_"))


# ----------------------------------------------------------------------------- errors


def _user_errors() -> tuple:
    """The exception classes that mean bad input: UsageError, and those of the lower layers
    that are loaded (an exception of a class whose module is not loaded cannot arrive)."""
    found = [UsageError]
    for module, name in (("tsdp.theorems.config", "ConfigError"), ("tsdp.theorems.errors", "TheoremError"),
                         ("tsdp.theorems.errors", "MissingExtraError"), ("tsdp.datasets.series", "DataError")):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None:
            found.append(cls)
    return tuple(found)


SCHEDULE_FLAGS = ("--steps", "--epochs", "--warmup-steps", "--releases")
"""The flags that set a count of compositions (training steps, or `tsdp forecast`'s releases): a library error about
``steps`` names the one that was typed."""


def _flag(subparser: argparse.ArgumentParser, parameter: str, typed=()) -> Optional[str]:
    """The flag of ``subparser`` that sets ``parameter`` (batch_size -> --batch-size, alphas -> --alpha;
    steps -> the schedule flag that was typed, e.g. --epochs).

    The data's step (``freq``) has three sources, and an error about it names the one it came from: --freq where it
    was typed; else the data's own timestamps, named by --data (or, as a fallback, --dataset where that was typed); a
    GluonTS folder's metadata.json names itself (its errors carry the file as their parameter, no flag)."""
    options = subparser._option_string_actions  # noqa: SLF001 - argparse has no public accessor
    base = "--" + parameter.replace("_", "-")
    if base == "--freq" and typed and base not in typed and "--data" in options:
        return "--dataset" if "--dataset" in typed and "--dataset" in options else "--data"
    if base == "--steps":
        typed_schedule = [f for f in SCHEDULE_FLAGS if f in typed and f in options]
        if typed_schedule:
            return typed_schedule[0]
    for candidate in (base, base[:-1] if base.endswith("s") else base + "s"):
        if candidate in options:
            return candidate
    return None


API_SETTING = re.compile(r"\b([a-z][a-z_]*)=('[^']*'|\"[^\"]*\"|[\w.+-]+)")
"""An API setting as a library message spells it (``canary='spike'``, ``timeout=2``)."""


def _as_flags(text: str, subparser: argparse.ArgumentParser) -> str:
    """``text`` with every API setting ``name=value`` whose name is a flag of ``subparser`` written as the command line
    would take it (``--canary spike``): the CLI's messages name CLI flags."""
    def flag(match):
        found = _flag(subparser, match.group(1))
        return f"{found} {match.group(2).strip(chr(39) + chr(34))}" if found else match.group(0)

    return API_SETTING.sub(flag, text)


def _message(exc: Exception, subparser: argparse.ArgumentParser, typed=()) -> str:
    parameter = getattr(exc, "parameter", None)
    text = _as_flags(str(exc), subparser)
    theorem_error = getattr(sys.modules.get("tsdp.theorems.errors"), "TheoremError", ())
    if parameter is None and "--theorem" in typed and isinstance(exc, theorem_error) and "--theorem" not in text:
        return _one_line(f"invalid --theorem: {text}")  # the bound typed is unknown, a claim, or does not apply here
    if isinstance(parameter, str):
        flag = _flag(subparser, parameter, typed)
        if flag is not None:
            prefix = f"invalid {parameter}:"
            text = f"invalid {flag}:{text[len(prefix):]}" if text.startswith(prefix) else f"{text} [{flag}]"
    return _one_line(text)


def _check_common(args) -> None:
    """Checks every command shares: --seed in [0, 2^63), --device one torch sees."""
    from tsdp.theorems.config import SEED_MAX, check_int

    seed = getattr(args, "seed", None)
    if seed is not None:
        check_int("seed", seed, 0, SEED_MAX)
    device = getattr(args, "device", None)
    if isinstance(device, str):
        problem = check_device(device)
        if problem:
            raise UsageError(f"invalid --device: {problem}")


_NOTES: Dict[type, str] = {}
"""The notes of the running command, the latest of each warning class (:func:`_show_warning`)."""


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """A library's UserWarning (e.g. a PLD coarsened to fit memory) as one note line, the latest of its class only
    (a composition coarsened 16 times in a row says where it ended, once: :func:`_flush_notes`); float
    RuntimeWarnings (overflow in a tail that is then clipped) are not shown."""
    if issubclass(category, UserWarning):
        _NOTES.pop(category, None)  # keep the notes in the order of their latest
        _NOTES[category] = _one_line(message)


class _LineTracking:
    """stderr, knowing whether its current line holds text: what is written after a progress bar's residue (a bar
    still drawn, or on a file or a pipe even a cleared one: there '\r' does not end the line, so the bar's text stays
    on it) starts a line of its own, and :meth:`end_line` ends such a line before a note or the error line. A bar's
    own redraws (each starting with '\r') go on its line."""

    def __init__(self, stream):
        self._stream = stream
        try:
            self._terminal = bool(stream.isatty())
        except (AttributeError, ValueError):  # no isatty, or a closed stream
            self._terminal = False
        self.dirty = False

    def write(self, text: str) -> int:
        if self.dirty and text and text[0] not in "\r\n":  # other output after a bar's residue: a line of its own
            self._stream.write("\n")
            self.dirty = False
        head, newline, tail = text.rpartition("\n")
        if self._terminal and "\r" in tail:  # a terminal returns to the line's start: only what follows shows
            self.dirty = bool(tail.rpartition("\r")[2].strip())
        elif tail.strip("\r "):
            self.dirty = True
        elif newline:
            self.dirty = False
        return self._stream.write(text)

    def end_line(self) -> None:
        """Write a newline when the current line holds text (a bar's on a terminal, any on a file)."""
        if self.dirty:
            self._stream.write("\n")
            self.dirty = False

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _flush_notes() -> None:
    """Print the held notes (one line each, before the command's error line or at its end) and forget them."""
    if _NOTES and isinstance(sys.stderr, _LineTracking):
        sys.stderr.end_line()
    for note in _NOTES.values():
        print(f"tsdp: note: {note}", file=sys.stderr)
    _NOTES.clear()


def main(argv: Optional[List[str]] = None) -> int:
    """Run `tsdp` (module docstring: exit codes, one-line errors).

    Args:
        argv: The arguments after ``tsdp`` (None: ``sys.argv[1:]``).

    Returns:
        The exit code: 0 success, 1 a check failed, 2 bad input, 130 interrupted (Ctrl-C), 143 terminated
        (SIGTERM).
    """
    _escape_what_stdout_cannot_encode()
    parser = build_parser()
    args = parser.parse_args(argv)  # a usage error: one line, SystemExit(2) (--help: SystemExit(0))
    subparser = _leaf(parser, args)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: `tsdp bench --json` records its command
    args.typed_flags = {t.split("=", 1)[0] for t in args.argv if t.startswith("--")}
    if not RUNS_USER_CODE.get(args.command, lambda _: False)(args):
        return _run(args, subparser)
    from tsdp.attacks.canary.time_limit import supervised

    def fail(error: ValueError) -> int:  # on a line of its own: the child may have been drawing a bar
        print(f"\n{subparser.prog}: error: {_message(error, subparser, args.typed_flags)}", file=sys.stderr)
        return 2

    code = getattr(args, "train", None)
    functions = " or ".join(f for f in (code, getattr(args, "loss", None)) if f)
    return supervised(lambda: _run(args, subparser), lambda seconds: fail(StuckError(seconds, code)),
                      lambda status: fail(EndedError(status, functions)))


def _escape_what_stdout_cannot_encode() -> None:
    """Write a character stdout's encoding lacks (ε, δ, σ under a latin-1 or ASCII locale) as ``\\u03b5``, as stderr
    already does, rather than end the command in a UnicodeEncodeError; --json output is ASCII anyway."""
    import io

    if not isinstance(sys.stdout, io.TextIOWrapper):
        return  # redirected (a StringIO): it takes any text
    try:
        "εδσλΛ".encode(sys.stdout.encoding, errors=sys.stdout.errors)
    except (UnicodeEncodeError, LookupError):  # 'strict', or the C locale's 'surrogateescape'
        sys.stdout.reconfigure(errors="backslashreplace")


def _leaf(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command that was run, sub-commands of sub-commands included (``tsdp forecast predict``): its
    flags are the ones an error names, its prog the error line's prefix."""
    while True:
        found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
        chosen = getattr(args, found[0].dest, None) if found else None
        if chosen is None:
            return parser
        parser = found[0].choices[chosen]


class StuckError(ValueError):
    """User code that kept running past its time limit in one routine no signal interrupts (ended from outside).

    Args:
        seconds: The time limit.
        code: The user's function as typed (``module:function``), or None.
    """

    parameter = "timeout"

    def __init__(self, seconds: float, code: Optional[str] = None):
        who = f"your function {code}" if code else "your code"
        super().__init__(f"invalid timeout: {who} did not finish within the time limit of {seconds:g} s and held the "
                         "interpreter in one long routine (a C call no signal interrupts): it was ended from outside, "
                         "with every process it started")


class EndedError(ValueError):
    """User code that ended the process itself (``os._exit``, a signal) before the command finished: no result.

    Args:
        status: The process's exit status (as :func:`os.waitstatus_to_exitcode`: negative for a signal).
        functions: The user's functions as typed (``module:function``, several joined by "or"), or None.
    """

    parameter = "train"

    def __init__(self, status: int, functions: Optional[str] = None):
        import signal

        try:
            how = f"os._exit({status})" if status >= 0 else f"signal {signal.Signals(-status).name}"
        except ValueError:  # a signal number Python has no name for
            how = f"signal {-status}"
        who = f"your code ({functions}, or what it calls)" if functions else "your code"
        super().__init__(f"invalid train: {who} ended the process ({how}) before the audit finished; nothing was "
                         "certified")


def _run(args, subparser) -> int:
    """Run the parsed command; its errors as one line (exit 2)."""
    from .termination import stop_status, terminate_as_interrupt

    shown, stderr = warnings.showwarning, sys.stderr
    warnings.showwarning = _show_warning
    sys.stderr = _LineTracking(stderr)
    _NOTES.clear()
    try:
        with terminate_as_interrupt():  # SIGTERM (SLURM, Kubernetes, `timeout`): the cleanup of Ctrl-C, then 143
            _check_common(args)
            code = COMMANDS[args.command](args)
            sys.stdout.flush()
            return code
    except _user_errors() as exc:
        if args.debug:
            traceback.print_exception(exc)
        _flush_notes()
        sys.stderr.end_line()
        print(f"{subparser.prog}: error: {_message(exc, subparser, args.typed_flags)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader closed stdout (`| head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (:mod:`tsdp.cli.termination`): 128 + the signal
        status, words = stop_status(exc)
        _flush_notes()
        sys.stderr.end_line()
        print(f"{subparser.prog}: {words}", file=sys.stderr)
        return status
    finally:
        _flush_notes()
        warnings.showwarning, sys.stderr = shown, stderr


if __name__ == "__main__":
    sys.exit(main())
