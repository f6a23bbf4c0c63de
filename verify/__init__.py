"""Accounting (dp-accounting PLDs), consistency checks, and the `tsdp` command line.

Never imports torch (DESIGN.md layering); `attacks` and `reports` are imported lazily by
the sub-commands that need them. Importing this package imports nothing but itself: its
modules load when they are imported, and leave ``sys.modules`` as the import system makes it.
"""
