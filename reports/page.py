"""Write the report's blocks (:func:`reports.render.blocks`) as report.md and as a self-contained index.html (PNG
figures base64-embedded): the two documents show the same blocks, so every number in either is in
results.json."""
from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import List

from .blocks import Block
from .render import blocks


def _md(blks: List[tuple], out: List[str]) -> None:
    for blk in blks:
        if blk[0] == Block.HEADING:
            out.append("#" * blk[1] + " " + blk[2])
        elif blk[0] == Block.PARAGRAPH:
            out.append(blk[1])
        elif blk[0] == Block.ALERT:
            out.append(f"> **{blk[2]}**")
        elif blk[0] == Block.TABLE:
            header, rows = blk[1], blk[2]
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "---|" * len(header))
            out.extend("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows)
        elif blk[0] == Block.IMAGE:
            out.append(f"![{blk[2]}]({blk[1]})")
        elif blk[0] == Block.DETAILS:
            out.append(f"<details><summary>{html.escape(blk[1])}</summary>")
            out.append("")
            _md(blk[2], out)
            out.append("</details>")
        out.append("")


def to_markdown(results: dict) -> str:
    """report.md: the blocks as GitHub-flavoured Markdown, figures linked by file name.

    Args:
        results: results.json's data.

    Returns:
        The Markdown.
    """
    out: List[str] = []
    _md(blocks(results), out)
    return "\n".join(out)


PAGE_WIDTH_PX = 1200
"""Width of index.html's content column (CSS px); figures no wider than it are shown unscaled."""

_CSS = (f"body{{font-family:sans-serif;max-width:{PAGE_WIDTH_PX}px;margin:1em auto;padding:0 1em;line-height:1.4}}"
        "table{border-collapse:collapse;margin:0.5em 0;font-size:0.85em}"
        "td,th{border:1px solid #bbb;padding:2px 6px;vertical-align:top}th{background:#eee}"
        "img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}"
        "details{margin:0.4em 0}summary{cursor:pointer;color:#225}"
        ".alert{padding:0.6em 1em;border-radius:4px;font-weight:bold;margin:0.6em 0}"
        ".bad{background:#fdd;border:2px solid #c00}.ok{background:#dfd;border:1px solid #080}"
        ".none{background:#ffd;border:1px solid #aa0}")


def _html(blks: List[tuple], figure_dir: Path, out: List[str]) -> None:
    for blk in blks:
        if blk[0] == Block.HEADING:
            out.append(f"<h{blk[1]}>{html.escape(blk[2])}</h{blk[1]}>")
        elif blk[0] == Block.PARAGRAPH:
            parts = html.escape(blk[1]).split("**")
            out.append("<p>" + "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts)) + "</p>")
        elif blk[0] == Block.ALERT:
            cls = {True: "ok", False: "bad", None: "none"}[blk[1]]
            out.append(f"<div class='alert {cls}'>{html.escape(blk[2])}</div>")
        elif blk[0] == Block.TABLE:
            out.append("<table><tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in blk[1]) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in blk[2])
            out.append("</table>")
        elif blk[0] == Block.IMAGE:
            data = base64.b64encode((figure_dir / blk[1]).read_bytes()).decode("ascii")
            out.append(f"<img alt='{html.escape(blk[2])}' src='data:image/png;base64,{data}'>")
        elif blk[0] == Block.DETAILS:
            out.append(f"<details><summary>{html.escape(blk[1])}</summary>")
            _html(blk[2], figure_dir, out)
            out.append("</details>")


def to_html(results: dict, figure_dir: Path) -> str:
    """index.html: the blocks as one self-contained page, PNGs embedded as base64 data URIs.

    Args:
        results: results.json's data.
        figure_dir: The folder of the PNGs.

    Returns:
        The HTML page.
    """
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>tsdp report</title>",
           f"<style>{_CSS}</style></head><body>"]
    _html(blocks(results), figure_dir, out)
    out.append("</body></html>")
    return "\n".join(out)
