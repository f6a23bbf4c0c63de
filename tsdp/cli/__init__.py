"""The `tsdp` command line: the top layer, above reports (``tsdp.cli.main.main``).

One module per group of sub-commands (``cmd_<name>.py``, discovered by
:func:`tsdp.cli.main.subcommand_modules`); each imports the layers below lazily, inside its
handlers, so that ``tsdp --help`` starts without sympy or torch.
"""
