"""The exception of the catalogue, in a module without sympy, so the CLI can name it at start-up."""


class TheoremError(ValueError):
    """An unknown theorem id, or a theorem that does not apply to the configured scheme."""
