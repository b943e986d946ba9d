"""Evidence contextualization (RAGonite, Sec. 4): attach the page context an evidence needs to be found.

A table row such as "Row 2 in Table 1: Member is Alice, and Task is ..." says nothing about *which* meeting
it belongs to; the page title, the heading above it and the text around it do. Each part can be switched
off for ablations, with the paper's presets NONE / TTL / HDR / BEF / AFT / ALL (plus BRC, the breadcrumb).

The contextualized text is laid out most important first, because dense embedders silently truncate
(all-MiniLM-L6-v2 at 256 tokens): page and section first, then the evidence itself, then the text before and
after it, each capped to a budget and trimmed at word boundaries. It reads:

    Page: Weekly sync 2024-10-14 (in Team Atlas > Meetings) | Section: Action items
    Row 2 in Table 1: Member is Alice, and Task is Similarity function, and ...
    Before: ... we agreed on these action items:
    After: All items are due before the next sync ...

The labels make the parts legible to the answering LLM; they are the same words in every evidence, so they
carry no weight for BM25.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from threadwise.core.types import Element, Evidence, Page

DEFAULT_NEIGHBOUR_CHARS = (
    200  # BM25-only P@1, ConfQuestions dev (en, completed): 300 chars 0.820, 200 chars 0.827
)


# The paper's short names for the parts (BRC, the breadcrumb, is ours: the paper's pages had none).
PART_CODES = {"TTL": "title", "BRC": "breadcrumb", "HDR": "heading", "BEF": "before", "AFT": "after"}


@dataclass(frozen=True)
class ContextParts:
    """Which parts of the page context are added to each evidence."""

    title: bool = True
    breadcrumb: bool = True
    heading: bool = True
    before: bool = True
    after: bool = True

    @classmethod
    def from_name(cls, name: str) -> ContextParts:
        """Parse "ALL", "NONE", or a combination such as "TTL,HDR" / "ttl+bef" (case-insensitive)."""
        tokens = [t.strip().upper() for t in name.replace("+", ",").split(",") if t.strip()]
        known = ["ALL", "NONE", *PART_CODES]
        unknown = [t for t in tokens if t not in known]
        if not tokens or unknown:
            raise ValueError(
                f"unknown context parts {name!r}; use one of {', '.join(known)} or a combination"
            )
        if "ALL" in tokens:
            return cls()
        return cls(**{part: code in tokens for code, part in PART_CODES.items()})

    @property
    def name(self) -> str:
        """The name `from_name` maps back to this value: "ALL", "NONE" or e.g. "TTL,HDR"."""
        codes = [code for code, part in PART_CODES.items() if getattr(self, part)]
        return "ALL" if len(codes) == len(PART_CODES) else ",".join(codes) or "NONE"


NONE = ContextParts.from_name("NONE")
TTL = ContextParts.from_name("TTL")
BRC = ContextParts.from_name("BRC")
HDR = ContextParts.from_name("HDR")
BEF = ContextParts.from_name("BEF")
AFT = ContextParts.from_name("AFT")
ALL = ContextParts()


def contextualize(
    page: Page,
    elements: Sequence[Element],
    *,
    parts: ContextParts = ALL,
    neighbour_chars: int = DEFAULT_NEIGHBOUR_CHARS,
) -> list[Evidence]:
    """Turn a page's elements into evidence with ids "<page_id>:<position>" (position = index in `elements`).

    Before/after: for a passage or list, the neighbouring element; for a table *and each of its rows*, the
    content just outside the table, i.e. the text introducing it and the text following it (often a footer such
    as "OTA upgrade" or "[1] MLE tripped on reboot"). The adjacent row would add little: it is another record
    of the same table, a near-duplicate that dilutes the row's own embedding and makes rows of one table look
    alike to BM25, while the introduction and footer say what the whole table is about, which every row lacks.
    """
    units = _units(elements)
    unit_texts = _unit_texts(elements, units)
    evidence = []
    for position, element in enumerate(elements):
        unit = units[position]
        before = unit_texts[unit - 1] if parts.before and unit > 0 else ""
        after = unit_texts[unit + 1] if parts.after and unit + 1 < len(unit_texts) else ""
        text = context_text(
            page,
            element,
            parts=parts,
            before=tail(before, neighbour_chars),
            after=head(after, neighbour_chars),
        )
        evidence.append(
            Evidence(
                id=f"{page.id}:{position}",
                page_id=page.id,
                space=page.space,
                page_title=page.title,
                url=page.url,
                page_version=page.version,
                kind=element.kind,
                position=position,
                text=element.text,
                context_text=text,
                heading=element.heading,
                table_no=element.table_no,
                row_no=element.row_no,
                cells=element.cells,
                last_modified=page.last_modified,
                last_editor=page.last_editor,
            )
        )
    return evidence


def context_text(
    page: Page, element: Element, *, parts: ContextParts, before: str = "", after: str = ""
) -> str:
    """Lay out one evidence with its context: header line, evidence, then "Before:"/"After:" lines."""
    header = []
    breadcrumb = " > ".join(a for a in page.ancestors if a)
    if parts.title and page.title:
        header.append(
            f"Page: {page.title}" + (f" (in {breadcrumb})" if parts.breadcrumb and breadcrumb else "")
        )
    elif parts.breadcrumb and breadcrumb:
        header.append(f"In: {breadcrumb}")
    if parts.heading and element.heading:
        header.append(f"Section: {element.heading}")
    lines = [" | ".join(header)] if header else []
    lines.append(element.text)
    if before:
        lines.append(f"Before: {before}")
    if after:
        lines.append(f"After: {after}")
    return "\n".join(lines)


def tail(text: str, budget: int) -> str:
    """The last ~budget characters of `text` on one line, starting at a word boundary ("… end of text")."""
    flat = " ".join(text.split())
    if len(flat) <= budget:
        return flat
    cut = flat[-budget:]
    space = cut.find(" ")
    return "… " + (cut[space + 1 :] if 0 <= space < len(cut) - 1 else cut)


def head(text: str, budget: int) -> str:
    """The first ~budget characters of `text` on one line, ending at a word boundary ("start of text …")."""
    flat = " ".join(text.split())
    if len(flat) <= budget:
        return flat
    cut = flat[:budget]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut) + " …"


def _units(elements: Sequence[Element]) -> list[int]:
    """Number the page's units: a table and its rows are one unit; every other element is its own."""
    units: list[int] = []
    unit = -1
    for i, element in enumerate(elements):
        same_table = (
            element.kind == "row"
            and i > 0
            and elements[i - 1].kind in ("table", "row")
            and elements[i - 1].table_no == element.table_no
        )
        if not same_table:
            unit += 1
        units.append(unit)
    return units


def _unit_texts(elements: Sequence[Element], units: list[int]) -> list[str]:
    """Each unit's text: a table unit is represented by its whole table (by its rows if that is missing)."""
    members: list[list[Element]] = [[] for _ in range(units[-1] + 1)] if units else []
    for element, unit in zip(elements, units, strict=True):
        members[unit].append(element)
    texts = []
    for group in members:
        tables = [e for e in group if e.kind == "table"]
        texts.append("\n".join(e.text for e in (tables or group)))
    return texts
