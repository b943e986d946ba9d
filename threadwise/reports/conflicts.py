"""Which two pages an answer said disagree: found in the answer's own text.

The answerer introduces a row that contradicts one quoted before it with "Another source says otherwise"
("Eine andere Quelle sagt dazu anderes"), optionally "(last modified …, older than the first, of DATE)", then
a colon (core/answer/conflicts.py). The note's page is the source cited right after it; the page it
contradicts is one cited before it: the one whose date the note names, else the nearest other page.
"""

from __future__ import annotations

import re

from threadwise.core.answer.citations import CITATION, group_numbers
from threadwise.reports.rows import PageRef, TurnFacts

NOTE = re.compile(
    r"(?:Another source says otherwise|Eine andere Quelle sagt dazu anderes)(?:\s*\(([^)]*)\))?:"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def conflicting_pages(turn: TurnFacts) -> list[tuple[PageRef, PageRef]]:
    """(page quoted first, page that says otherwise) for every disagreement the answer noted."""
    if "otherwise" not in turn.answer and "anderes" not in turn.answer:
        return []
    citations = [(m.start(), m.end(), group_numbers(m.group(1))) for m in CITATION.finditer(turn.answer)]
    pairs = []
    for note in NOTE.finditer(turn.answer):
        after = next((numbers for start, _end, numbers in citations if start >= note.end() and numbers), None)
        other = turn.page_of(after[0]) if after else None
        if other is None:
            continue
        before = [
            page
            for _start, end, numbers in reversed(citations)
            if end <= note.start()
            for page in (turn.page_of(n) for n in numbers)
            if page is not None and page.page_id != other.page_id
        ]
        dates = _DATE.findall(note.group(1) or "")
        first = next((p for p in before if dates and p.last_modified[:10] == dates[-1]), None)
        first = first or (before[0] if before else None)
        if first is not None:
            pairs.append((first, other))
    return pairs
