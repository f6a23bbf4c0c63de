"""Accounting (dp-accounting PLDs), consistency checks, and the `tsdp` command line.

Never imports torch (DESIGN.md layering); `attacks` and `reports` are imported lazily by
the sub-commands that need them. The scipy modules and the dp-accounting package ``__init__``
that the accountant never calls load on first use (:mod:`tsdp.verify.deferred`).
"""
from .deferred import defer_unused_imports

defer_unused_imports()
