"""The kinds of block the report is made of (:func:`reports.render.blocks` builds them, :mod:`reports.page` writes
them): a block is a tuple whose first item is its :class:`Block` kind.

* ``(Block.HEADING, level, text)``, ``(Block.PARAGRAPH, text)``, ``(Block.ALERT, ok, text)`` (ok: True, False, or
  None where nothing was checked);
* ``(Block.TABLE, header, rows)``, ``(Block.IMAGE, file name, caption)``;
* ``(Block.DETAILS, summary, [blocks])``: a fold for long grids (HTML ``<details>``, which GitHub's Markdown renders
  too).
"""
from __future__ import annotations

from tsdp.theorems.config import Choice


class Block(Choice):
    """A block's kind (its string is the tag the block carries)."""

    HEADING = "h"
    PARAGRAPH = "p"
    ALERT = "alert"
    TABLE = "table"
    IMAGE = "img"
    DETAILS = "details"
