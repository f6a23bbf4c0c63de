"""The optional extras a data format needs (pandas, pyarrow, gluonts), imported only by the code that reads it."""
from __future__ import annotations

from types import ModuleType

from tsdp.theorems.errors import MissingExtraError


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, which the ``extra`` of tsdp installs.

    Args:
        module: The module's import name (``pandas``, ``pyarrow.parquet``).
        extra: The extra of tsdp that installs it (``data``).

    Returns:
        The module.

    Raises:
        MissingExtraError: ``module`` is not installed (one line naming the extra).
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"{module} is needed for this data format", extra) from None

