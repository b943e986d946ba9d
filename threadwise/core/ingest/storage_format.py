"""Confluence storage format (XHTML with ac:/ri: macros) -> the page's elements in reading order.

Following RAGonite (Sec. 4): a top-level <ul>/<ol> (with its nested items) is a list, a <table> is a table
plus one verbalized row per data row, and the remaining text between headings is a passage. Passages are
broken where a list or table interrupts them (so "the text before the table" stays a unit of its own) and a
passage longer than `max_chars` is split at paragraph boundaries; an overlong list is split between its
top-level items. Each element remembers the headings it sits under, as a path ("OpenXT 9.0 > Legacy"): the
closest heading alone is often too terse ("Legacy", "Results") to tell which section of the page it is.

Parsing is lenient: lxml's HTML parser repairs any tag soup, so broken XHTML yields whatever text it has and
never raises. A page with no text at all yields no elements (the caller decides what that means).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Mapping

from bs4 import BeautifulSoup, Comment, NavigableString, PageElement, Tag

from threadwise.core.ingest.confluence_macros import rewrite_confluence_markup
from threadwise.core.ingest.linearize import check_linearizer, linearize_row, linearize_table, row_cells
from threadwise.core.ingest.markdown_text import BLANK_LINES, markdown_text, one_line
from threadwise.core.ingest.tables import single_cell, table_data
from threadwise.core.types import Element

DEFAULT_MAX_CHARS = 1500
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
STRUCTURE = (*HEADINGS, "table", "ul", "ol")  # what ends a passage

_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_LIST_ITEM_START = re.compile(r"^(?=(?:[-*+]|\d+\.) )", re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def parse_storage_format(
    body: str,
    *,
    linearizer: str = "verbalized",
    max_chars: int = DEFAULT_MAX_CHARS,
    user_names: Mapping[str, str] | None = None,
) -> list[Element]:
    """Parse a page body into ordered elements: passages, lists, tables and their rows.

    `linearizer` picks how tables and rows are written (see `threadwise.core.ingest.linearize`); `user_names` maps
    Confluence account ids / user keys to display names for mentions (unknown ones read "@user-1a2b3c").
    """
    check_linearizer(linearizer)
    soup = BeautifulSoup(_CDATA.sub(lambda m: html.escape(m.group(1), quote=False), body), "lxml")
    root = soup.body or soup
    rewrite_confluence_markup(soup, root, user_names or {})
    elements: list[Element] = []
    heading = ""
    stack: list[tuple[int, str]] = []
    table_no = 0
    for kind, node in _blocks(soup, root):
        if kind == "heading":
            text = one_line(node.get_text())
            if text:
                level = int(node.name[1])
                stack = [(lv, t) for lv, t in stack if lv < level] + [(level, text)]
                heading = " > ".join(t for _, t in stack)
        elif kind == "text":
            text = markdown_text(node)
            elements += [Element("passage", chunk, heading) for chunk in _pack_passage(text, max_chars)]
        elif kind == "list":
            text = markdown_text(node)
            elements += [Element("list", chunk, heading) for chunk in _pack_list(text, max_chars)]
        else:
            table = table_data(node)
            if table is None:
                continue
            table_no += 1
            elements.append(Element("table", linearize_table(table, table_no, linearizer), heading, table_no))
            for i in range(len(table.rows)):
                text = linearize_row(table, table_no, i, linearizer)
                elements.append(Element("row", text, heading, table_no, i + 1, row_cells(table, i)))
    return elements


def _blocks(soup: BeautifulSoup, root: Tag) -> Iterator[tuple[str, Tag]]:
    """Yield ("heading" | "text" | "list" | "table", node) in reading order.

    Consecutive content that is neither heading, list nor table is gathered into one <div> ("text").
    Containers (divs, layout cells, panels) that hold structure are walked into; a table of a single cell
    is a layout box, so it is walked into too.
    """
    run: list[PageElement] = []
    holds_structure = _ancestors_of(root.find_all(STRUCTURE))

    def flush() -> Iterator[tuple[str, Tag]]:
        if run:
            wrapper = soup.new_tag("div")
            for node in run:
                wrapper.append(node.extract())
            run.clear()
            yield "text", wrapper

    def walk(node: Tag) -> Iterator[tuple[str, Tag]]:
        for child in list(node.children):
            if isinstance(child, Comment):
                continue
            if not isinstance(child, Tag):
                if isinstance(child, NavigableString):
                    run.append(child)
                continue
            if child.name in HEADINGS:
                yield from flush()
                yield "heading", child
            elif child.name == "table":
                box = single_cell(child)
                if box is not None:
                    yield from walk(box)
                else:
                    yield from flush()
                    yield "table", child
            elif child.name in ("ul", "ol"):
                yield from flush()
                yield "list", child
            elif child.name != "pre" and id(child) in holds_structure:
                yield from walk(child)
            else:
                run.append(child)

    yield from walk(root)
    yield from flush()


def _ancestors_of(tags: list[Tag]) -> set[int]:
    """ids of every tag that has one of `tags` below it (one pass up from each, stopping at known ones)."""
    seen: set[int] = set()
    for tag in tags:
        parent = tag.parent
        while parent is not None and id(parent) not in seen:
            seen.add(id(parent))
            parent = parent.parent
    return seen


# ---- splitting long passages and lists ---------------------------------------------------------------------


def _pack_passage(text: str, max_chars: int) -> list[str]:
    """Split at paragraph boundaries into chunks of at most ~max_chars (a longer paragraph is split too)."""
    paragraphs = [p.strip() for p in BLANK_LINES.split(text) if p.strip()]
    return _pack([piece for p in paragraphs for piece in _split_long(p, max_chars)], max_chars, "\n\n")


def _pack_list(text: str, max_chars: int) -> list[str]:
    """Keep a list whole; an overlong one is split between its top-level items (nested items stay along)."""
    if len(text) <= max_chars:
        return [text] if text else []
    items = [item.rstrip() for item in _LIST_ITEM_START.split(text) if item.strip()]
    return _pack([piece for item in items for piece in _split_long(item, max_chars)], max_chars, "\n")


def _pack(pieces: list[str], max_chars: int, joiner: str) -> list[str]:
    chunks: list[str] = []
    current = ""
    for piece in pieces:
        if current and len(current) + len(joiner) + len(piece) > max_chars:
            chunks.append(current)
            current = piece
        else:
            current = current + joiner + piece if current else piece
    if current:
        chunks.append(current)
    return chunks


def _split_long(text: str, max_chars: int) -> list[str]:
    """Split one overlong paragraph at line breaks, else sentence ends, else spaces, else anywhere."""
    if len(text) <= max_chars:
        return [text]
    for pattern, joiner in ((re.compile(r"\n"), "\n"), (_SENTENCE_END, " "), (re.compile(r" +"), " ")):
        parts = [p for p in pattern.split(text) if p.strip()]
        if len(parts) > 1:
            pieces = [piece for part in parts for piece in _split_long(part, max_chars)]
            return _pack(pieces, max_chars, joiner)
    return [text[i : i + max_chars] for i in range(0, len(text), max_chars)]
