"""Render tsdp's reST-flavoured docstrings as Markdown in the API reference.

tsdp's docstrings are prose with Sphinx roles (``:func:`x` ``) and double-backtick literals;
mkdocstrings renders Markdown. This griffe extension (mkdocs.yml names it in the handler's
``extensions``) rewrites each role to inline code and ``::`` paragraph endings to ``:``, so the
reference reads as the docstring does.
"""
from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:func|mod|class|data|meth|attr|exc|obj|const):`~?([^`]+)`")
_DOUBLE = re.compile(r"``([^`]+)``")
_LITERAL_BLOCK = re.compile(r"::(\s*\n)")
_ESCAPED_SPACE = re.compile(r"\\ ")  # reST's "``x``\\ s": an escaped space joins a plural to its literal


def markdown(text: str) -> str:
    """One docstring, Sphinx roles and literals as Markdown inline code."""
    return _LITERAL_BLOCK.sub(r":\1", _DOUBLE.sub(r"`\1`", _ROLE.sub(r"`\1`", _ESCAPED_SPACE.sub("", text))))


class SphinxRolesToMarkdown(griffe.Extension):
    def on_object(self, *, obj, **kwargs) -> None:  # griffe calls it for every object it loads
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)

