"""Confluence tables -> header labels and data rows (`TableData`), spans expanded, sizes capped."""

from __future__ import annotations

from bs4 import Tag

from threadwise.core.ingest.linearize import TableData
from threadwise.core.ingest.markdown_text import markdown_text, one_line

MAX_COLSPAN = 50
MAX_COLUMNS = 200


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


def single_cell(table: Tag) -> Tag | None:
    rows = _direct_rows(table)
    if len(rows) != 1:
        return None
    cells = rows[0].find_all(("td", "th"), recursive=False)
    return cells[0] if len(cells) == 1 else None


def cell_text(cell: Tag) -> str:
    """A cell's text on one line; the lines of a list or code block inside it are separated by "; "."""
    parts: list[str] = []
    for line in markdown_text(cell).splitlines():
        line = one_line(line)
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
