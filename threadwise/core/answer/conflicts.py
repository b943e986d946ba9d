"""When two quoted rows really disagree, and how the answer says so.

Two rows disagree when they are about the same thing and give it different values: two versions of a policy
("Vacation days: 30" against "Vacation days: 28"), two test reports of one configuration. They do not when
they are about different items that merely share a first cell: Alice's action item of the October 7 meeting
and hers of October 14 are two records, not a conflict. So a disagreement needs
- the same first cell (the row's subject),
- pages that are not records of different dated events (titles naming different dates, as meeting notes do),
- rows that agree on something besides their subject (or share only one other column): rows that differ
  in every shared column are different items,
- and no naming column (model, name, product, device, configuration, …) with different values: a first cell
  "Vendor: Dell" is shared by a Dell Optiplex 980 and a Dell Latitude 7490, which are two items.
When both pages carry their last-modified date, the note says which is newer.
"""

from __future__ import annotations

import re
from datetime import date

from threadwise.core.answer.spans import Span
from threadwise.core.types import Evidence

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "januar", "jan"),
            ("february", "februar", "feb"),
            ("march", "märz", "mar"),
            ("april", "apr"),
            ("may", "mai"),
            ("june", "juni", "jun"),
            ("july", "juli", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oktober", "oct", "okt"),
            ("november", "nov"),
            ("december", "dezember", "dec", "dez"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}}),?\s+(\d{{4}})\b", re.I)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})\.?\s+({_MONTH})\.?\s+(\d{{4}})\b", re.I)
_DOTTED = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b")


def title_dates(title: str) -> frozenset[date]:
    """The calendar dates a page title names ('Weekly sync, October 14, 2024', '2024-10-14 notes', …)."""
    found: set[tuple[int, int, int]] = set()
    found.update((int(y), int(m), int(d)) for y, m, d in _ISO.findall(title))
    found.update((int(y), _MONTHS[m.lower()], int(d)) for m, d, y in _MONTH_DAY_YEAR.findall(title))
    found.update((int(y), _MONTHS[m.lower()], int(d)) for d, m, y in _DAY_MONTH_YEAR.findall(title))
    found.update((int(y), int(m), int(d)) for d, m, y in _DOTTED.findall(title))
    out = set()
    for y, m, d in found:
        try:
            out.add(date(y, m, d))
        except ValueError:
            continue
    return frozenset(out)


def different_events(title: str, other_title: str) -> bool:
    """Pages that record different dated events (two meetings' notes): their rows are other items."""
    mine, theirs = title_dates(title), title_dates(other_title)
    return bool(mine and theirs and not mine & theirs)


# Columns whose value names the item a row is about (besides its first cell), in English and German.
_NAMING = re.compile(
    r"\b(?:model|modell|name|product|produkt|device|gerät|geraet|machine|maschine|hardware|platform|plattform|"
    r"configuration|konfiguration|config|host|server|sku|part|item|component|komponente|system|board|laptop|"
    r"cpu|gpu|chip|serial|id)\b",
    re.I,
)


def names_the_item(header: str) -> bool:
    """Whether a column names which item the row is about ("Model", "Hardware model", "Gerät")."""
    return bool(_NAMING.search(header))


def disagrees(span: Span, other: Span) -> bool:
    """Two rows about the same thing (same subject, same kind of record) that give one column different
    values; see the module docstring."""
    if not span.cells or not other.cells or span.cells[0] != other.cells[0]:
        return False
    if different_events(span.page_title, other.page_title):
        return False
    mine = dict(span.cells[1:])
    shared = [(h, v) for h, v in other.cells[1:] if h and h in mine]
    differing = [h for h, v in shared if mine[h] != v]
    if any(names_the_item(h) for h in differing):
        return False  # another model, device, configuration: another item
    return bool(differing) and (len(shared) <= 1 or len(differing) < len(shared))


def disagreement_note(evidence: Evidence, first: Evidence, *, german: bool) -> str:
    """'Another source says otherwise (last modified 2023-05-02, older than 2024-01-10 of the first):'."""
    note = "Eine andere Quelle sagt dazu anderes" if german else "Another source says otherwise"
    mine, theirs = evidence.last_modified[:10], first.last_modified[:10]
    if not mine or not theirs or mine == theirs:
        return f"{note}:"
    newer = mine > theirs
    if german:
        relation = "neuer" if newer else "älter"
        return f"{note} (zuletzt geändert {mine}, {relation} als die erste vom {theirs}):"
    relation = "newer" if newer else "older"
    return f"{note} (last modified {mine}, {relation} than the first, of {theirs}):"
