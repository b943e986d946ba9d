"""Table linearizers: how a parsed table (and each of its rows) becomes text for retrieval and prompts.

The default, "verbalized", is the paper's form (RAGonite, Sec. 4):
`Row 2 in Table 1: Member is Alice, and Task is Similarity function, and ...`. The others exist to compare
against it in ablations: "piped" (`a | b` lines), "markdown", "html" and "plaintext" (cells only, no header).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

LINEARIZERS = ("verbalized", "piped", "markdown", "html", "plaintext")


@dataclass(frozen=True)
class TableData:
    """A table after colspan/rowspan expansion: one label per column, and the data rows' cell texts.

    In a row-header table (`row_header=True`, the first column is <th> and there is no header row) the first
    cell of each row labels that row, and `header` is empty. A row made of one cell spanning the whole table
    (a section label such as "Intel platforms") is kept as a 1-tuple; every other row has one text per column.
    """

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    row_header: bool = False


def check_linearizer(name: str) -> str:
    """Return `name` if it is a known linearizer, else raise ValueError listing the known ones."""
    if name not in LINEARIZERS:
        raise ValueError(f"unknown table linearizer {name!r}; choose one of {', '.join(LINEARIZERS)}")
    return name


def row_cells(table: TableData, row_index: int) -> tuple[tuple[str, str], ...]:
    """The (column header, value) pairs of one data row (0-based index), empty cells skipped.

    A section-label row gives one pair with an empty header. In a row-header table the row's label is the
    header and the other cells, joined, are the value.
    """
    row = table.rows[row_index]
    if len(row) == 1 and len(table.header) > 1:
        return (("", row[0]),) if row[0] else ()
    if table.row_header:
        values = [v for v in row[1:] if v]
        if not values:
            return (("", row[0]),) if row[0] else ()
        return ((row[0], ", ".join(values)),)
    return tuple((table.header[i] if i < len(table.header) else "", v) for i, v in enumerate(row) if v)


def verbalize_row(table: TableData, table_no: int, row_index: int) -> str:
    """`Row <n> in Table <t>: <header> is <value>, and ...` (rows numbered 1..n among data rows)."""
    parts = [f"{h} is {v}" if h else v for h, v in row_cells(table, row_index)]
    return f"Row {row_index + 1} in Table {table_no}: " + ", and ".join(parts)


def linearize_row(table: TableData, table_no: int, row_index: int, linearizer: str = "verbalized") -> str:
    """One data row as text in the chosen style; non-verbalized styles repeat the header for self-containment."""
    if linearizer == "verbalized":
        return verbalize_row(table, table_no, row_index)
    one_row = TableData(header=table.header, rows=(table.rows[row_index],), row_header=table.row_header)
    return _LINEARIZE_WHOLE[check_linearizer(linearizer)](one_row, table_no)


def linearize_table(table: TableData, table_no: int, linearizer: str = "verbalized") -> str:
    """The whole table as text in the chosen style."""
    return _LINEARIZE_WHOLE[check_linearizer(linearizer)](table, table_no)


def _verbalized(table: TableData, table_no: int) -> str:
    return "\n".join(verbalize_row(table, table_no, i) for i in range(len(table.rows)))


def _piped(table: TableData, table_no: int) -> str:
    lines = [" | ".join(table.header)] if any(table.header) else []
    lines += [" | ".join(row) for row in table.rows]
    return "\n".join(lines)


def _markdown(table: TableData, table_no: int) -> str:
    width = max([len(table.header)] + [len(r) for r in table.rows])

    def line(cells: tuple[str, ...]) -> str:
        padded = list(cells) + [""] * (width - len(cells))
        return "| " + " | ".join(c.replace("|", "\\|") for c in padded) + " |"

    return "\n".join([line(table.header), "|" + " --- |" * width] + [line(r) for r in table.rows])


def _html(table: TableData, table_no: int) -> str:
    out = ["<table>"]
    if any(table.header):
        out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in table.header) + "</tr>")
    for row in table.rows:
        cells = [
            f"<th>{html.escape(v)}</th>" if table.row_header and i == 0 else f"<td>{html.escape(v)}</td>"
            for i, v in enumerate(row)
        ]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _plaintext(table: TableData, table_no: int) -> str:
    return "\n".join(" ".join(v for v in row if v) for row in table.rows)


_LINEARIZE_WHOLE = {
    "verbalized": _verbalized,
    "piped": _piped,
    "markdown": _markdown,
    "html": _html,
    "plaintext": _plaintext,
}
