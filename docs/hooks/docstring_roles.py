"""Render tsdp's reST-flavoured docstrings as Markdown in the API reference, cross-references as links.

tsdp's docstrings are prose with Sphinx roles (``:func:`x` ``) and double-backtick literals;
mkdocstrings renders Markdown. This griffe extension (mkdocs.yml names it in the handler's
``extensions``) rewrites each role to an *optional* autorefs cross-reference: a link to the
object's entry in the reference where the name is documented, plain inline code where it is not
(a private helper, a bare name, another package). A role may name an object by its repository
path (``attacks.canary.evidence``, the layer folder as the code is laid out); the link uses the
importable name, ``tsdp.attacks.canary.evidence``, by the layer folders of pyproject's
``package-dir``. ``::`` paragraph endings become ``:``, so the reference reads as the docstring does.
"""
from __future__ import annotations

import html
import re
from typing import Callable

import griffe

from tsdp.layers import FACADE, FOLDERS

_ROLE = re.compile(r":(?:func|mod|class|data|meth|attr|exc|obj|const):`(~?)([^`]+)`")
_DOUBLE = re.compile(r"``([^`]+)``")
_LITERAL_BLOCK = re.compile(r"::(\s*\n)")
_ESCAPED_SPACE = re.compile(r"\\ ")  # reST's "``x``\\ s": an escaped space joins a plural to its literal
#: the repository's layer folders, installed as ``tsdp.<folder>`` (their one list: tsdp.layers)
LAYERS = tuple(folder for folder in FOLDERS if folder != FACADE)


def importable(name: str, resolve: Callable[[str], str] | None = None) -> str:
    """``name`` as Python imports it: a repository path (``verify.pld``) under ``tsdp.``; a name of the
    docstring's own scope (``ConfigError``, imported or defined there) by ``resolve``; anything else as given."""
    name = name.strip().removesuffix("()")
    if name.split(".", 1)[0] in LAYERS:
        return f"tsdp.{name}"
    if resolve is not None and not name.startswith("tsdp."):
        head, _, rest = name.partition(".")
        try:
            return resolve(head) + (f".{rest}" if rest else "")
        except (griffe.NameResolutionError, KeyError, AttributeError, ValueError):
            return name
    return name


def _link(match: re.Match, resolve: Callable[[str], str] | None = None) -> str:
    short, target = match.group(1), match.group(2).strip()
    identifier = importable(target, resolve)
    shown = target.removesuffix("()").rsplit(".", 1)[-1] if short else identifier
    if target.endswith("()"):
        shown += "()"
    return f'<autoref identifier="{html.escape(identifier)}" optional><code>{html.escape(shown)}</code></autoref>'


def markdown(text: str, resolve: Callable[[str], str] | None = None) -> str:
    """One docstring: Sphinx roles as optional cross-references, literals as Markdown inline code.

    Args:
        text: the docstring.
        resolve: the full path of a name in the docstring's scope (griffe's ``Object.resolve``).
    """
    text = _ESCAPED_SPACE.sub("", text)
    linked = _ROLE.sub(lambda match: _link(match, resolve), text)
    return _LITERAL_BLOCK.sub(r":\1", _DOUBLE.sub(r"`\1`", linked))


class SphinxRolesToMarkdown(griffe.Extension):
    def on_object(self, *, obj, **kwargs) -> None:  # griffe calls it for every object it loads
        if obj.docstring is not None:
            scope = obj if obj.is_module or obj.is_class else obj.parent
            obj.docstring.value = markdown(obj.docstring.value, scope.resolve if scope is not None else None)
