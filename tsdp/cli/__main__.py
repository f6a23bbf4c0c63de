"""``python -m tsdp.cli``: the `tsdp` command."""
import sys

from .main import main

sys.exit(main())
