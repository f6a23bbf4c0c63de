"""The one vocabulary of training-configuration flags (DESIGN.md) and of data flags, shared by every sub-command."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union

from tsdp.theorems.config import DEFAULT_CONFIG, Choice, TrainingConfig

if TYPE_CHECKING:
    from tsdp.datasets.series import SeriesData

_D = DEFAULT_CONFIG


@dataclass(frozen=True)
class ConfigFlag:
    """One training-configuration flag: the :class:`TrainingConfig` field it sets and its help. The rest is derived
    from the field (:func:`add_config_arguments`): the flag ``--field-name``, the type and default of
    :data:`DEFAULT_CONFIG`'s value, the choices of an option (a :class:`~tsdp.theorems.config.Choice`);
    ``options`` holds the argparse options the field's default does not imply.

    Attributes:
        field: The :class:`TrainingConfig` field the flag sets.
        help: The flag's help.
        options: argparse options the field's default does not imply.
    """

    field: str
    help: str
    options: Mapping[str, Any] = dataclass_field(default_factory=dict)

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    def arguments(self) -> Dict[str, Any]:
        """The keyword arguments of ``add_argument``."""
        default = getattr(_D, self.field)
        derived: Dict[str, Any] = {"type": type(default), "default": default}
        if isinstance(default, bool):  # a switch: present sets it
            derived = {"action": "store_true"}
        elif isinstance(default, Choice):
            derived = {"choices": type(default).values(), "default": default.value}
        return {**derived, **self.options, "help": self.help}

    def value(self, args: argparse.Namespace) -> Any:
        """The field's value from parsed flags (a list of ``nargs`` as a tuple, an empty one as None).

        Args:
            args: The parsed flags.

        Returns:
            The field's value.
        """
        given = getattr(args, self.field)
        return (tuple(given) or None) if isinstance(given, list) else given


CONFIG_FLAGS: Tuple[ConfigFlag, ...] = (
    ConfigFlag("N", f"number of sequences (default {_D.N})"),
    ConfigFlag("L", f"sequence length (default {_D.L}; with --lengths, the shortest of them)", {"default": None}),
    ConfigFlag("lengths", "variable sequence lengths; the shortest is used (--L, if given, must equal it)",
               {"type": int, "nargs": "+", "default": None, "metavar": "L_i"}),
    ConfigFlag("context_length", f"L_C (default {_D.context_length})"),
    ConfigFlag("forecast_length", f"L_F (default {_D.forecast_length})"),
    ConfigFlag("batch_size", f"Λ, subsequences per step (default {_D.batch_size})"),
    ConfigFlag("instances", f"λ, subsequences per sequence (default {_D.instances})"),
    ConfigFlag("sigma", f"noise multiplier σ (default {_D.sigma})"),
    ConfigFlag("top", f"top-level scheme (default {_D.top})"),
    ConfigFlag("bottom", f"bottom-level scheme (default {_D.bottom})"),
    ConfigFlag("relation", f"neighbouring relation (default {_D.relation})"),
    ConfigFlag("w", f"elements (event) or windows' worth (user) that change (default {_D.w})"),
    ConfigFlag("v", f"largest change of one element (default {_D.v:g})"),
    ConfigFlag("sigma_context", f"context augmentation std σ_C in units of v (default {_D.sigma_context:g})"),
    ConfigFlag("sigma_forecast", f"forecast augmentation std σ_F in units of v (default {_D.sigma_forecast:g})"),
    ConfigFlag("drop_last", "shuffled iteration only: an epoch is floor(N λ / Λ) full steps and drops the rest of "
                            "its permutation (the experiment grid's shuffled epoch, as the official code's)"),
)
"""The training-configuration flags, in the order the help lists them: the one table :func:`add_config_arguments`
and :func:`config_from_args` read (a new :class:`TrainingConfig` field takes one row here; tests/cli check that every
field has one)."""

def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --N --L ... --sigma-forecast (:data:`CONFIG_FLAGS`); defaults are the paper's Section 5 configuration.

    Args:
        parser: The parser.
    """
    g = parser.add_argument_group("training configuration (defaults: paper Section 5)")
    for flag in CONFIG_FLAGS:
        g.add_argument(flag.flag, **flag.arguments())


def config_from_args(args: argparse.Namespace) -> TrainingConfig:
    """A validated :class:`TrainingConfig` from parsed flags (:data:`CONFIG_FLAGS`; raises ConfigError).

    Args:
        args: The parsed flags.

    Returns:
        The configuration.

    Raises:
        ConfigError: A flag's value violates a constraint.
    """
    return TrainingConfig(**{flag.field: flag.value(args) for flag in CONFIG_FLAGS})


STEPS_HELP = ("training steps S: optimizer updates, the same count in every command. The accountant composes "
              "one event per step for step-scoped schemes (WOR, Poisson, pooled top level) and one per epoch "
              "touched for deterministic/shuffled iteration (ceil(S / ceil(N/N')) epochs); outputs label that "
              "number 'compositions'")
"""The one definition of ``--steps`` for every sub-command's help (README: "The commands")."""


def check_device(value: str) -> str:
    """Why ``--device value`` cannot be used here ('' when it can): auto and cpu always can;
    anything else is checked against what torch sees (torch is imported only then).

    Args:
        value: ``--device``'s value.

    Returns:
        The reason, or ''.
    """
    v = value.strip().lower()
    if v in ("auto", "cpu"):
        return ""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return f"{value!r} needs torch, which is not installed (use cpu)"
    try:
        dev = torch.device(v)
    except (RuntimeError, ValueError):
        return f"unknown device {value!r} (use auto, cpu, cuda, cuda:N or mps)"
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            return f"{value!r}: torch sees no CUDA device on this machine (use auto or cpu)"
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            return f"{value!r}: torch sees {torch.cuda.device_count()} CUDA device(s)"
        return ""
    if dev.type == "mps":
        return "" if torch.backends.mps.is_available() else f"{value!r}: torch sees no MPS device (use auto or cpu)"
    if dev.type == "cpu":
        return ""
    return f"{value!r}: device type {dev.type!r} is not supported (use auto, cpu, cuda or mps)"


MODEL_NAMES = ("simple-ff", "deepar", "dlinear", "itransformer")
"""The CLI names of ``training.models.MODELS`` (listed here so the parser needs no torch): every --model flag's
choices."""

CATALOGUE = "T1-T15"
"""The ids of the catalogue, as help texts name them (tests/cli/test_help.py checks it against the registry,
which the parser cannot import: it loads sympy)."""

DATA_OPTIONS = ("layout", "item_id", "timestamp", "target", "freq")
"""The loader options of :func:`tsdp.datasets.formats.load_series` that have a flag of their own."""


def loader_options_given(args: argparse.Namespace) -> List[str]:
    """The loader flags (:data:`DATA_OPTIONS`) typed with other than their default (--layout auto, the others
    none): what a command that does not read ``--data`` itself must still refuse (the loader refuses them for a
    source that is not a table, or has no calendar).

    Args:
        args: The parsed flags.

    Returns:
        The flags, e.g. ``["--layout", "--freq"]``.
    """
    defaults = {"layout": "auto"}
    return [f"--{option.replace('_', '-')}" for option in DATA_OPTIONS
            if getattr(args, option) != defaults.get(option)]


def add_data_arguments(parser: argparse.ArgumentParser, *, default=None, required: bool = False,
                       synthetic: bool = True, what: str = "the series") -> None:
    """Add --data --layout --item-id --timestamp --target --freq, the one set of data flags of every command that reads
    series (read by :func:`data_from_args`). ``synthetic``: whether 'synthetic' is offered (it needs the
    training-configuration flags); ``what``: what the command does with the data, for the help.

    Args:
        parser: The parser.
        default (str | None): ``--data``'s default.
        required: Whether ``--data`` is required.
        synthetic: Whether 'synthetic' is offered.
        what: What the command does with the data.
    """
    g = parser.add_argument_group("data (read by one loader in every command)")
    sources = "'synthetic' (seeded: N series of length L + L_F), " if synthetic else ""
    shown = f" (default {default})" if default is not None else ""
    g.add_argument("--data", default=default, required=required, metavar="SOURCE",
                   help=f"{what}: {sources}'grunfeld' (11 firms x 20 years, statsmodels), 'm1-yearly' (the M1 "
                   f"competition's 181 yearly series, Monash repository), or a file: CSV (.csv, .csv.gz), parquet (.parquet, "
                   f".pq), GluonTS JSON lines (.json, .jsonl, also .gz) or Monash .tsf{shown}")
    g.add_argument("--layout", choices=("auto", "long", "wide"), default="auto",
                   help="table layout of a CSV / parquet file: long (one row per item, timestamp, value), wide (one "
                   "column per series) or auto: long when an item id column is present or named, wide when every "
                   "column is numeric; otherwise the error says which flag to add (default auto)")
    g.add_argument("--item-id", default=None, metavar="COLUMN",
                   help="long layout: the column naming each series (default item_id)")
    g.add_argument("--timestamp", default=None, metavar="COLUMN",
                   help="the time column (default timestamp); in a wide table it is optional, the row index")
    g.add_argument("--target", default=None, metavar="COLUMN",
                   help="long layout: the value column (default target); for 'grunfeld' invest, value or capital "
                   "(default invest)")
    g.add_argument("--freq", default=None, type=data_step, metavar="STEP",
                   help="the step between values: a pandas offset alias (h, 10min, D, W, MS, ...) or, for numeric "
                   "timestamps, a number. Tables infer it when not given and refuse a missing timestamp at it; GluonTS "
                   "JSON lines need it for their calendar (each entry's start), from which DeepAR reads the time "
                   "features of every position (without it: the age feature only)")


def data_step(text: str) -> Union[float, str]:
    """--freq: a number (numeric timestamps' step) where the text is one, else the text (a pandas offset alias,
    checked by the loader).

    Args:
        text: ``--freq``'s value.

    Returns:
        A number, or the text.
    """
    try:
        return float(text)
    except ValueError:
        return text


def data_from_args(args: argparse.Namespace, config: Optional[TrainingConfig] = None, *,
                   seed: int = 0) -> "SeriesData":
    """The :class:`~tsdp.datasets.series.SeriesData` that ``--data`` names, read by
    :func:`tsdp.datasets.formats.load_series` with the layout flags. A problem with the source is a
    UsageError naming --data and the file (and line); one with a loader option names its flag.

    Args:
        args: The parsed flags.
        config: The configuration that sizes 'synthetic' (None: its defaults).
        seed: The seed of 'synthetic'.

    Returns:
        The series.

    Raises:
        UsageError: The source or a loader option cannot be used.
    """
    from tsdp.datasets.formats import DataError, load_series

    from .errors import UsageError

    if not str(args.data).strip():
        raise UsageError(f"invalid --data: empty (give a file or one of the sources --help lists) "
                         f"(got {args.data!r})")
    try:
        return load_series(args.data, config=config, seed=seed,
                           **{option: getattr(args, option) for option in DATA_OPTIONS})
    except DataError as exc:
        if exc.parameter in ("data", *DATA_OPTIONS):
            raise  # main names its flag (--data, --layout, --item-id, ...)
        raise UsageError(f"invalid --data: {exc.parameter}: {exc.constraint}") from None
    except ImportError as exc:  # an optional extra (pandas, pyarrow, statsmodels) that this format needs
        raise UsageError(f"invalid --data: {exc}") from None


class HelpFormatter(argparse.HelpFormatter):
    """Every command's help format: a flag's default is shown as "(default X)" unless its help already names
    it or there is none to show (None, False); never "(default: None)"."""

    def _get_help_string(self, action):
        text = action.help or ""
        nothing = action.default is None or action.default is False or action.default == argparse.SUPPRESS
        if "default" in text or nothing or not action.option_strings:
            return text
        shown = " ".join(map(str, action.default)) if isinstance(action.default, (list, tuple)) else action.default
        return f"{text} (default {shown})"


def data_sizing_the_config(args: argparse.Namespace, command: str, *,
                           held_out: Optional[int] = None) -> Optional["SeriesData"]:
    """The series of a file ``--data`` (read before any calibration or training), with N and L taken from them
    (:func:`fit_to_data`) and said in one note line on stderr; None for 'synthetic', which the configuration sizes
    (read after it, :func:`data_from_args`).

    Args:
        args: The parsed flags (``args.N`` and ``args.L`` are set from the data where they were not typed).
        command: The command's name, for the note line.
        held_out: The values at the end of every series that are not trained on (None: L_F, the test set that
            train and audit-model keep back; 0 where the whole series is trained on, as audit-fn's train gets it).

    Returns:
        The :class:`~tsdp.datasets.series.SeriesData` of the file, or None for 'synthetic'.

    Raises:
        UsageError: A typed --N, --L or --lengths that the data contradicts (:func:`fit_to_data`).
        DataError: A source that cannot be read (naming --data or the loader option at fault).
    """
    import sys

    if args.data == "synthetic":
        check_synthetic_lengths(args)
        return None
    check_flags_apart_from_data(args)
    data = data_from_args(args)
    note = fit_to_data(args, data, held_out=args.forecast_length if held_out is None else held_out)
    if note:
        print(f"tsdp {command}: note: {note}", file=sys.stderr)
    return data


SIZE_PLACEHOLDER = 2 ** 53
"""N and L while a file's series are not read yet (:func:`check_flags_apart_from_data`): no data can contradict them."""


def check_flags_apart_from_data(args: argparse.Namespace) -> None:
    """The configuration flags' own constraints, checked before a file ``--data`` is read (and before an extra it needs
    is asked for: the README's order, bad flags first): the configuration with N and L :data:`SIZE_PLACEHOLDER` and no
    lengths, so that only a constraint of the other flags can fail (--batch-size 0, --instances 0, --sigma -1); those
    that involve N or L are checked once the data have set them. A σ left to calibration is read as the default's.

    Args:
        args: The parsed flags.

    Raises:
        ConfigError: A flag's own value violates a constraint, naming it.
    """
    from tsdp.theorems.config import ConfigError

    values = {flag.field: flag.value(args) for flag in CONFIG_FLAGS}
    if values["sigma"] is None:  # to be calibrated (tsdp train without --sigma): not a flag's value
        values["sigma"] = DEFAULT_CONFIG.sigma
    try:
        TrainingConfig(**{**values, "N": SIZE_PLACEHOLDER, "L": SIZE_PLACEHOLDER, "lengths": None})
    except ConfigError as exc:
        if exc.parameter not in ("N", "L", "lengths"):
            raise


def check_synthetic_lengths(args: argparse.Namespace) -> None:
    """'synthetic' makes one series per --lengths value: a count other than --N (or its default) is refused before
    any calibration or training (:func:`tsdp.datasets.series.synthetic` refuses it too, later).

    Args:
        args: The parsed flags (``args.data`` 'synthetic').

    Raises:
        UsageError: --lengths of another count than N.
    """
    from .errors import UsageError

    if args.lengths and len(args.lengths) != args.N:
        raise UsageError(f"invalid --lengths: 'synthetic' makes one series per length: {len(args.lengths)} lengths for "
                         f"N = {args.N} (give --N {len(args.lengths)}, or {args.N} lengths)")


def fit_to_data(args: argparse.Namespace, data, *, held_out: int) -> Optional[str]:
    """Take N and L from the series of a file ``--data`` (not 'synthetic', which the configuration sizes): N its
    number of series, L the shortest training length (each series' length less the ``held_out`` test values), the
    values the accountant must see. Sets ``args.N`` and ``args.L`` where they were not typed and returns the one line
    that says so (None when the flags said it all), before any calibration or training.

    Raises:
        UsageError: a typed --N that is not the data's count (or --lengths of another count), or a typed --L (the
            shortest --lengths) longer than the shortest training series; a shorter one is kept: it only raises
            r = k/T, the sound direction.

    Args:
        args: The parsed flags (``args.N``, ``args.L`` set).
        data (SeriesData): The series.
        held_out: Test values held out at the end of each series.

    Returns:
        The note, or None.
    """
    from .errors import UsageError

    typed = getattr(args, "typed_flags", set())
    lengths = [len(s) - held_out for s in data.series]
    n, shortest = len(lengths), min(lengths)
    count_flag = "--N" if "--N" in typed else "--lengths" if args.lengths else None
    given = args.N if count_flag == "--N" else len(args.lengths) if args.lengths else None
    if given is not None and given != n:
        raise UsageError(f"invalid {count_flag}: {args.data} holds {n} series, not {given} (give --N {n}, or drop "
                         f"{count_flag}: N is taken from the data)")
    held = f" (the last L_F = {held_out} held out for testing)" if held_out else ""
    length_flag = "--L" if args.L is not None else "--lengths" if args.lengths else None
    typed_length = args.L if args.L is not None else min(args.lengths) if args.lengths else None
    if typed_length is not None and typed_length > shortest:
        raise UsageError(f"invalid {length_flag}: the shortest series of {args.data} holds {shortest} training values"
                         f"{held}, fewer than {typed_length}: the accountant would understate r = k/T (give --L "
                         f"{shortest}, or drop {length_flag}: L is taken from the data)")
    taken = [] if given is not None else [f"N = {n} (its series)"]
    if typed_length is None:
        taken.append(f"L = {shortest} (the training values of its shortest series"
                     + (f", the last L_F = {held_out} held out for testing)" if held_out else ")"))
        args.L = shortest
    args.N = n
    return f"{' and '.join(taken)} taken from {args.data}" if taken else None
