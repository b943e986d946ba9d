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
from markdownify import MarkdownConverter

from threadwise.core.ingest.confluence_macros import rewrite_confluence_markup
from threadwise.core.ingest.linearize import (
    TableData,
    check_linearizer,
    linearize_row,
    linearize_table,
    row_cells,
)
from threadwise.core.types import Element

DEFAULT_MAX_CHARS = 1500
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
STRUCTURE = (*HEADINGS, "table", "ul", "ol")  # what ends a passage
MAX_COLSPAN = 50
MAX_COLUMNS = 200

_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
_LIST_ITEM_START = re.compile(r"^(?=(?:[-*+]|\d+\.) )", re.M)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class _Converter(MarkdownConverter):
    """markdownify set up for evidence text: plain readable text, lists and code blocks kept, no link or
    emphasis clutter, no escaping. Nested tables (inside a cell or a list) become plain lines."""

    def __init__(self) -> None:
        super().__init__(
            bullets="-",
            heading_style="atx",
            escape_asterisks=False,
            escape_underscores=False,
            escape_misc=False,
            strip=[
                "a",
                "img",
                "b",
                "strong",
                "em",
                "i",
                "u",
                "span",
                "sup",
                "sub",
                "s",
                "del",
                "code",
                "font",
            ],
        )

    def convert_table(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return "\n\n" + text.strip() + "\n\n"

    def convert_tr(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return " ".join(text.split()) + "\n"

    def convert_td(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return " " + text.strip() + " "

    convert_th = convert_td

    def convert_li(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if "td" in parent_tags or "th" in parent_tags:  # in a cell: one item a line, no bullet to confuse
            return "\n" + text.strip() + "\n"  # with text such as "24. December"
        return str(super().convert_li(el, text, parent_tags))  # type: ignore[misc]  # untyped library


_CONVERTER = _Converter()


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
            text = _one_line(node.get_text())
            if text:
                level = int(node.name[1])
                stack = [(lv, t) for lv, t in stack if lv < level] + [(level, text)]
                heading = " > ".join(t for _, t in stack)
        elif kind == "text":
            text = _markdown(node)
            elements += [Element("passage", chunk, heading) for chunk in _pack_passage(text, max_chars)]
        elif kind == "list":
            text = _markdown(node)
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
                box = _single_cell(child)
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


def _markdown(node: Tag) -> str:
    """Readable text of a subtree: markdownify, then tidy whitespace (no trailing spaces, one blank line)."""
    text = _CONVERTER.convert_soup(node).replace("\xa0", " ")
    lines = [line.rstrip() for line in text.splitlines()]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ---- splitting long passages and lists ---------------------------------------------------------------------


def _pack_passage(text: str, max_chars: int) -> list[str]:
    """Split at paragraph boundaries into chunks of at most ~max_chars (a longer paragraph is split too)."""
    paragraphs = [p.strip() for p in _BLANK_LINES.split(text) if p.strip()]
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


# ---- tables -----------------------------------------------------------------------------------------------


def table_data(table: Tag) -> TableData | None:
    """Expand a <table> into header labels and data rows; None when it has no data row.

    The header is the leading rows made only of <th> (several such rows are joined per column: "Legacy /
    Install"), else the first row. A table with no header row whose rows all start with <th> is a row-header
    table. colspan/rowspan repeat a cell's text over the cells it covers.
    """
    grid = _grid(table)
    if not grid:
        return None
    header_rows = 0
    while header_rows < len(grid) - 1 and all(cell[2] for cell in grid[header_rows] if cell is not None):
        header_rows += 1
    width = max(len(row) for row in grid)
    row_header = False
    if header_rows == 0:
        has_td = any(cell is not None and not cell[2] for row in grid for cell in row)
        row_header = width > 1 and has_td and all(row[0] is not None and row[0][2] for row in grid)
        if not row_header and len(grid) > 1:
            header_rows = 1
    header = tuple(_column_label([grid[r][c] for r in range(header_rows)]) for c in range(width))
    rows = []
    for row in grid[header_rows:]:
        texts = tuple(cell[1] if cell is not None else "" for cell in row)
        if not any(texts):
            continue
        cell_ids = {cell[0] for cell in row if cell is not None}
        rows.append(texts[:1] if len(cell_ids) == 1 and width > 1 else texts)
    if not rows:
        return None
    return TableData(header=header if any(header) else (), rows=tuple(rows), row_header=row_header)


Cell = tuple[int, str, bool]  # (id of the source cell, text, is <th>)


def _grid(table: Tag) -> list[list[Cell | None]]:
    """The table's rows as a rectangular grid, spans expanded; rows with no cell are left out."""
    trs = [tr for tr in _direct_rows(table) if tr.find(("td", "th"), recursive=False) is not None]
    filled: dict[tuple[int, int], Cell] = {}
    width = 0
    for r, tr in enumerate(trs):
        c = 0
        for cell in tr.find_all(("td", "th"), recursive=False):
            while (r, c) in filled:
                c += 1
            if c >= MAX_COLUMNS:
                break
            rowspan = _span(cell.get("rowspan"), len(trs) - r)
            colspan = min(_span(cell.get("colspan"), MAX_COLSPAN), MAX_COLUMNS - c)
            value: Cell = (id(cell), cell_text(cell), cell.name == "th")
            for dr in range(rowspan):
                for dc in range(colspan):
                    filled[(r + dr, c + dc)] = value
            c += colspan
        width = max(width, c)
    return [[filled.get((r, c)) for c in range(width)] for r in range(len(trs))] if width else []


def _direct_rows(table: Tag) -> list[Tag]:
    rows: list[Tag] = []
    for child in table.children:
        if isinstance(child, Tag):
            if child.name == "tr":
                rows.append(child)
            elif child.name in ("thead", "tbody", "tfoot"):
                rows += child.find_all("tr", recursive=False)
    return rows


def _span(value: object, limit: int) -> int:
    """A rowspan/colspan attribute as a count in 1..limit (0 means "to the end", as in HTML)."""
    text = str(value).strip() if value is not None else ""
    if not text.isdigit():
        return 1
    return max(1, min(int(text) or limit, limit))


def _single_cell(table: Tag) -> Tag | None:
    rows = _direct_rows(table)
    if len(rows) != 1:
        return None
    cells = rows[0].find_all(("td", "th"), recursive=False)
    return cells[0] if len(cells) == 1 else None


def cell_text(cell: Tag) -> str:
    """A cell's text on one line; the lines of a list or code block inside it are separated by "; "."""
    parts: list[str] = []
    for line in _markdown(cell).splitlines():
        line = _one_line(line)
        if not line or line.startswith("```"):
            continue
        if parts:
            parts.append(" " if parts[-1][-1] in ".;:!?," else "; ")
        parts.append(line)
    return "".join(parts)


def _column_label(cells: list[Cell | None]) -> str:
    """One label from a column's header cells, top to bottom, a spanned cell counted once."""
    labels: list[str] = []
    for cell in cells:
        if cell is not None and cell[1] and (not labels or labels[-1] != cell[1]):
            labels.append(cell[1])
    return " / ".join(labels)
