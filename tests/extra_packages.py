"""The top-level packages the optional extras bring (pyproject's optional-dependencies, the test references
included): what a plain install lacks (tests/cli/test_plain_install.py simulates it) and what start-up must not
import (tests/test_startup.py)."""

EXTRA_PACKAGES = ("statsforecast", "pandas", "pyarrow", "gluonts", "opacus", "dask", "distributed", "statsmodels",
                  "aeon", "mkdocs")
