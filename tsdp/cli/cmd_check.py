"""`tsdp check-accountant`: check anyone's accountant against tsdp's attained and sound ε (tsdp.testing).

The accountant is ``module:function`` (``fn(config, steps, delta) -> ε``), a standard one fed a
guessed sampling rate (``--opacus rdp|prv|gdp`` or ``--dp-accounting pld|rdp`` with
``--sample-rate series|window``), or tsdp's own (``--tsdp``). The grid is declared
(:func:`tsdp.testing.grid.default_grid`: the paper's Section 5 configurations plus ``--random``
seeded ones), restricted by ``--top`` and ``--bottom``. The accountant runs in a worker process
(:mod:`tsdp.testing.worker`): a hang, ``sys.exit`` or ``os._exit`` is one line, and what it prints
is shown after the table (text) or in each verdict's ``output`` (``--json`` stays valid JSON). A
cell it declines (returns None, raises NotImplementedError) is reported and not judged. Exit 0:
some cell judged and none unsound; 1: some cell is below tsdp's attained ε for the claimed
relation (a relation mismatch is reported as such, and still fails the claim); 2: bad input,
including an accountant that raises, hangs past ``--timeout``, exits, or returns NaN, a negative
ε or a non-number, and a run in which no cell was judged (one line).
"""
from __future__ import annotations

from tsdp.attacks.canary.time_limit import TIMEOUT_MAX, TIMEOUT_MIN, check_timeout
from tsdp.testing.worker import DEFAULT_TIMEOUT
from tsdp.theorems.config import BOTTOM_LEVEL, TOP_LEVEL

from .errors import UsageError, check_delta, load_entry_point
from .output import dumps, user_output_to_stderr

RELATIONS = ("window", "event", "user", "series")



def _accountant(args):
    """The accountant the flags name (UsageError for a missing, doubled or inconsistent choice)."""
    sources = [name for name, given in (("module:function", args.target), ("--opacus", args.opacus),
                                        ("--dp-accounting", args.dp_accounting), ("--tsdp", args.tsdp)) if given]
    if len(sources) != 1:
        raise UsageError("give exactly one accountant: module:function, --opacus KIND, --dp-accounting KIND or --tsdp"
                         + (f" (got {', '.join(sources)})" if sources else ""))
    guessed = args.opacus or args.dp_accounting
    if guessed and args.sample_rate is None:
        raise UsageError(f"invalid {sources[0]}: give --sample-rate series or window (the guessed Poisson rate)")
    if not guessed and args.sample_rate is not None:
        raise UsageError("invalid --sample-rate: only with --opacus or --dp-accounting")
    from tsdp import testing

    if args.opacus:
        return testing.opacus_accountant(args.opacus, args.sample_rate)
    if args.dp_accounting:
        return testing.poisson_pld(args.sample_rate, args.dp_accounting)
    if args.tsdp:
        return testing.tsdp_accountant()
    return testing.accountant(load_entry_point(args.target, "module:function"), name=args.target)


def add_parsers(sub, command) -> None:
    """Add the `check-accountant` sub-command and register its handler.

    Args:
        sub (argparse._SubParsersAction): The sub-command parsers of ``tsdp``.
        command (Callable): :func:`tsdp.cli.main.command`, which registers a handler by name.
    """
    p = sub.add_parser(
        "check-accountant", help="check anyone's accountant against tsdp's attained and sound ε",
        description="Compare an accountant's ε with tsdp's bracket on a declared grid (the paper's Section 5 "
        "configurations plus seeded random ones): unsound below the attained ε (a lower bound a proof's construction "
        "reaches through the real loop; the line names the attack and the `tsdp audit` command), sound at or above "
        "the sound ε (an upper bound), between otherwise. Compared under the relation the accountant is claimed "
        "to answer for (--relation; event level by default, as in tsdp); where the value is sound for another "
        "relation the accountant could have meant, the line says so (a relation mismatch). A cell the accountant "
        "declines (returns None or raises NotImplementedError) is reported and not judged. Exit 0: some cell "
        "judged, none unsound; 1: some cell unsound for the claimed relation; 2: bad input, an accountant that "
        "raises, hangs, exits, or returns NaN, a negative ε or a non-number, or no cell judged.")
    p.add_argument("target", nargs="?", default=None, metavar="module:function",
                   help="your accountant: fn(config: tsdp.TrainingConfig, steps: int, delta: float) -> ε, imported "
                        "from the current folder or the Python path")
    p.add_argument("--opacus", choices=("rdp", "prv", "gdp"), default=None,
                   help="Opacus's RDP, PRV or GDP accountant at the guessed --sample-rate (needs tsdp[opacus])")
    p.add_argument("--dp-accounting", choices=("pld", "rdp"), default=None,
                   help="dp-accounting's PLD or RDP accountant of a Poisson-subsampled Gaussian at the guessed "
                        "--sample-rate")
    p.add_argument("--tsdp", action="store_true", help="tsdp's own accountant (the sound ε; inf where the "
                   "catalogue has no sound bound)")
    p.add_argument("--sample-rate", choices=("series", "window"), default=None,
                   help="the guessed Poisson rate: series = Λ/N (a series as the record), window = Λ/(N·T) (a window "
                        "as the record)")
    p.add_argument("--relation", choices=RELATIONS, default="event",
                   help="the neighbouring relation the accountant is claimed to answer for (substitution of one "
                        "window, w element values (event), w windows' worth (user) or one whole series; default event)")
    p.add_argument("--w", type=int, default=1, help="w of the event and user relations (default 1)")
    p.add_argument("--delta", type=float, default=1e-5, help="δ in (0, 1) (default 1e-05)")
    p.add_argument("--steps", type=int, nargs="+", default=None, metavar="S",
                   help="training steps of every cell instead of the grid's own (the paper's configuration at 1, 10, "
                        "100 and 1000 steps, its deterministic variant at 10 and 100, the other variants and the "
                        "random configurations at 100)")
    p.add_argument("--top", choices=TOP_LEVEL, default=None,
                   help="check only the grid's cells of this top level (default: all)")
    p.add_argument("--bottom", choices=BOTTOM_LEVEL, default=None,
                   help="check only the grid's cells of this bottom level (default: all)")
    p.add_argument("--random", type=int, default=6, help="seeded random configurations added to the grid (default 6)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random configurations (default 0)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds one call of the accountant may take before it counts as hung and its worker process "
                        f"is ended, in [{TIMEOUT_MIN:g}, {TIMEOUT_MAX:g}] (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--json", action="store_true", help="machine-readable output")

    @command("check-accountant")
    def cmd_check_accountant(args) -> int:
        check_delta(args.delta)
        check_timeout(args.timeout)
        from tsdp.testing.relations import RecordUnit, Substitution

        if not RecordUnit(args.relation).counts_elements and args.w != 1:
            raise UsageError(f"invalid --w: must be 1 for --relation {args.relation}")
        from tsdp.testing import AccountantError, check_accountant, default_grid
        from tsdp.testing.check import nothing_judged
        from tsdp.testing.grid import restrict

        relation = Substitution(args.relation, args.w)
        grid = restrict(default_grid(random=args.random, seed=args.seed), args.top, args.bottom)
        with user_output_to_stderr():  # what your module prints (at import too) must not mix with --json
            fn = _accountant(args)
            try:
                report = check_accountant(fn, grid, steps=args.steps, delta=args.delta, relation=relation,
                                          timeout=args.timeout, progress=True)
            except AccountantError as exc:
                raise UsageError(str(exc)) from None
        print(dumps(report.as_dict()) if args.json else report.table())
        if not report.judged:
            raise UsageError(nothing_judged(report))
        return 0 if report.passed else 1
