"""How an evidence splits into the spans an extractive answer may quote.

A passage gives its sentences, a list its items (a nested item carries its parent's text: "Success: the XT
shield is green"), a table row its cells, and a whole table its rows (cells recovered from the verbalized
"Row 2 in Table 1: Member is Alice, and ..." lines). The answerer decides which span answers.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from threadwise.core.types import Evidence

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Span:
    """A piece of one evidence that could be the answer."""

    source: int  # 0-based index into the given evidences
    order: int  # position inside the evidence, for keeping combined spans in reading order
    text: str  # what the answer shows
    cells: tuple[tuple[str, str], ...] = ()  # for a table row: all its (header, value) pairs
    own: str = ""  # a nested list item without its parent's text ("" when the same as `text`)
    page_title: str = ""  # its page's title: tells a row of another meeting from a disagreeing one

    @property
    def is_intro(self) -> bool:
        """'It needs three things:' announces what follows rather than answering."""
        return self.text.rstrip().endswith(":")


_ABBREVIATIONS = tuple("e.g. i.e. etc. vs. cf. approx. incl. no. fig. z.b. bzw. ca.".split())
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[\"'(\[]?[A-Z0-9])")
_BULLET = re.compile(r"^\s*(?:[-*•·◦▪]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage (lines first, then sentence ends; '9.0.2' and 'e.g. X' stay whole)."""
    sentences: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if not line:
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line):
            before = line[start : match.start()]
            if before.lower().endswith(_ABBREVIATIONS) or len(before.split()) < 3:
                continue
            sentences.append(before)
            start = match.end()
        sentences.append(line[start:])
    return [s for s in sentences if _WORD.search(s)]


def list_items(text: str) -> list[tuple[str, str]]:
    """Items of a list evidence, one per line, as (item with its parents' text, item alone).

    A nested item is prefixed by its parent: 'Success: the XT shield is green'.
    """
    items: list[tuple[str, str]] = []
    parents: list[tuple[int, str]] = []  # (indent, item text) of the open ancestors
    for line in text.splitlines():
        if not line.strip():
            continue
        if items and not _BULLET.match(line):  # a line break inside an item
            full, own = items[-1]
            items[-1] = (f"{full} {line.strip()}", f"{own} {line.strip()}")
            parents[-1] = (parents[-1][0], f"{parents[-1][1]} {line.strip()}")
            continue
        indent = len(line) - len(line.lstrip())
        item = " ".join(_BULLET.sub("", line).split())
        while parents and parents[-1][0] >= indent:
            parents.pop()
        if parents:
            parent = parents[-1][1]
            items.append((f"{parent} {item}" if parent.endswith(":") else f"{parent}: {item}", item))
        else:
            items.append((item, item))
        parents.append((indent, item))
    return items


def clip(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]) + " …"


def candidate_spans(evidence: Evidence, source: int, *, max_words: int) -> list[Span]:
    """Split one evidence into the spans the answer may quote."""
    if evidence.kind == "row" and evidence.cells:
        cells = tuple((h.strip(), v.strip()) for h, v in evidence.cells if v.strip())
        return [Span(source, 0, render_cells(cells), cells, page_title=evidence.page_title)] if cells else []
    if evidence.kind == "list":
        pieces: list[tuple[str, str]] = []
        for text, own in list_items(evidence.text):
            # a long item is a paragraph in disguise: quote its sentences
            if len(text.split()) > max_words:
                pieces.extend((sentence, sentence) for sentence in split_sentences(text))
            else:
                pieces.append((text, own))
    elif evidence.kind == "table":
        spans = []
        lines = [x for x in evidence.text.splitlines() if x.strip()]
        headers = table_headers(lines)
        for i, line in enumerate(lines):
            cells = verbalized_cells(line, headers)
            spans.append(
                Span(source, i, render_cells(cells), cells, page_title=evidence.page_title)
                if cells
                else Span(source, i, line.strip())
            )
        return spans
    else:
        pieces = [(sentence, sentence) for sentence in split_sentences(evidence.text)]
    return [
        Span(source, i, clip(text, max_words), own="" if own == text else clip(own, max_words))
        for i, (text, own) in enumerate(pieces)
    ]


_VERBALIZED_ROW = re.compile(r"^Row \d+ in Table \d+:\s*")


def verbalized_cells(line: str, headers: Collection[str] = ()) -> tuple[tuple[str, str], ...]:
    """Cells back from a verbalized table line ('Row 2 in Table 1: Member is Alice, and Task is X'); () if not one.

    A header may itself hold " is " ("Who is paged is Primary"): the longest split that gives one of `headers`
    (the table's own, see `table_headers`) wins over the first " is "."""
    match = _VERBALIZED_ROW.match(line)
    if not match:
        return ()
    cells = []
    for part in line[match.end() :].split(", and "):
        splits = _header_splits(part)
        known = [(h, v) for h, v in splits if h in headers]
        header, value = known[-1] if known else (splits or [("", part)])[0]
        cells.append((header.strip(), value.strip()))
    return tuple(c for c in cells if c[1])


def _header_splits(part: str) -> list[tuple[str, str]]:
    """Every way to read 'A is B is C' as header and value: ('A', 'B is C'), ('A is B', 'C')."""
    pieces = part.split(" is ")
    return [(" is ".join(pieces[:k]), " is ".join(pieces[k:])) for k in range(1, len(pieces))]


def table_headers(lines: Sequence[str]) -> set[str]:
    """The column headers of a verbalized table: of the ways to split a cell, the header is the one that
    the table's rows share (a value differs from row to row)."""
    seen: Counter[str] = Counter()
    for line in lines:
        match = _VERBALIZED_ROW.match(line)
        if match:
            for part in line[match.end() :].split(", and "):
                seen.update({h for h, _ in _header_splits(part)})
    return {h for h, n in seen.items() if n > 1}


def render_cells(cells: Sequence[tuple[str, str]]) -> str:
    """'Column: value; Column: value' (a cell without a header shows its value alone)."""
    return "; ".join(f"{h}: {v}" if h else v for h, v in cells)
