"""``python -m tsdp``: the `tsdp` command, as ``python -m tsdp.cli`` (for an environment whose scripts folder is not
on PATH)."""
import sys

from .cli.main import main

sys.exit(main())
