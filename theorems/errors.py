"""The exceptions of the catalogue and of a missing optional extra, in a module without sympy, so the CLI can
name them at start-up."""


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
