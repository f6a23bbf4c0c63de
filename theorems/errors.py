"""The exceptions of the catalogue, of a configuration and of a missing optional extra, in a module without sympy,
so the CLI can name them at start-up."""
from __future__ import annotations



class TheoremError(ValueError):
    """An unknown theorem id, or a theorem that does not apply to the configured scheme."""


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the one-line message names ``pip install 'tsdp[extra]'``.

    Args:
        needs: What needs the dependency.
        extra: The extra that installs it.
    """

    def __init__(self, needs: str, extra: str):
        self.extra = extra
        super().__init__(f"{needs}: pip install 'tsdp[{extra}]'")


class ConfigError(ValueError):
    """A parameter violates a constraint; the message names the parameter and the constraint.

    Args:
        parameter: The parameter's name (a field, an argument, or a CLI flag's parameter).
        constraint: The constraint it violates, in words.
        value (object): The value given (shown, shortened, in the message; None: not shown).

    Attributes:
        parameter: As given.
        constraint: As given.
    """

    def __init__(self, parameter: str, constraint: str, value=None):
        self.parameter = parameter
        self.constraint = constraint
        self.value = value
        shown = "" if value is None else f" (got {short_repr(value)})"
        super().__init__(f"invalid {parameter}: {constraint}{shown}")

    def __reduce__(self):
        """Pickled with its three arguments (a class with its own ``__init__`` pickles its own way): the error a
        worker process or Dask task raised arrives whole."""
        if type(self).__init__ is not ConfigError.__init__:
            return super().__reduce__()
        return type(self), (self.parameter, self.constraint, self.value)


def short_repr(value) -> str:
    """``repr(value)``, cut to one readable piece when long (an integer of 400 digits, a long list): how a message
    quotes a value it was given (a configuration's error, a stored cell's key that differs).

    Args:
        value: Any value.

    Returns:
        Its ``repr``, or for one over 80 characters its first 60 and its length (an integer: its digit count).
    """
    text = repr(value)
    if len(text) <= 80:
        return text
    if isinstance(value, int):
        return f"an integer of {len(str(abs(value)))} digits"
    return f"{text[:60]}... ({len(text)} characters)"
