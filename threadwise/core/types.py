"""The small types every stage shares: a wiki page and its evidence, ranked hits, completed questions, answers.

Plain frozen dataclasses, no behaviour beyond a label, a hash or an evidence's stored form: each stage of `threadwise.core` takes and
returns these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

EvidenceKind = Literal["passage", "list", "table", "row"]

# Bump when extraction or contextualization changes what a page's evidence looks like: it is part of every
# page's content hash, so the next sync or `index` re-extracts and re-embeds every page once.
EXTRACTION_VERSION = 1


@dataclass(frozen=True)
class Page:
    """One Confluence page, body in storage format (XHTML with ac:/ri: macros), as the REST API returns it."""

    id: str
    space: str
    title: str
    url: str
    body: str
    version: int = 1
    last_modified: str = ""  # ISO 8601
    ancestors: tuple[str, ...] = ()  # breadcrumb titles, root first
    labels: tuple[str, ...] = ()
    # who saved the current version, as Confluence names them ("" when it did not say); every edit makes a new
    # version, which re-indexes the page, so it is left out of the content hash (and of the indexed text)
    last_editor: str = ""

    @property
    def content_hash(self) -> str:
        """Hash of everything that ends up inside an evidence's text: a change here means re-indexing."""
        h = hashlib.sha256(f"extraction {EXTRACTION_VERSION}\x00".encode())
        for part in (self.title, " / ".join(self.ancestors), self.body, self.space, self.url):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
        return h.hexdigest()[:32]


@dataclass(frozen=True)
class PageRef:
    """A page as a listing shows it: enough to decide scope and what changed, without the body."""

    id: str
    title: str
    version: int = 0  # 0 when the listing did not say
    ancestor_ids: tuple[str, ...] = ()  # root first
    ancestors: tuple[str, ...] = ()  # breadcrumb titles, root first


@dataclass(frozen=True)
class Element:
    """A raw piece of a page in reading order, before contextualization."""

    kind: EvidenceKind
    text: str  # readable text; a row is already verbalized ("Row 2 in Table 1: Member is Alice, and ...")
    heading: str = ""  # the path of headings above it, "H2 > H3" ("" when none)
    table_no: int | None = None  # 1-based, for tables and rows
    row_no: int | None = None  # 1-based, for rows
    cells: tuple[tuple[str, str], ...] = ()  # (column header, value) pairs, for rows


@dataclass(frozen=True)
class Evidence:
    """A retrievable unit: the raw text users see, and the contextualized text retrieval and the LLM see."""

    id: str  # "<page_id>:<position>"
    page_id: str
    space: str
    page_title: str
    url: str
    page_version: int
    kind: EvidenceKind
    position: int  # order within the page, 0-based
    text: str  # raw evidence text, shown to users
    context_text: str  # title / heading / before / evidence / after: what is embedded, matched and prompted
    heading: str = ""
    table_no: int | None = None
    row_no: int | None = None
    cells: tuple[tuple[str, str], ...] = field(default=())
    last_modified: str = ""
    last_editor: str = ""  # the page's (Page.last_editor); stored only when known
    # The final retrieval score (fused, or re-ranked) for the question this evidence was retrieved for: the
    # answerer treats evidences whose scores nearly tie alike. None outside a retrieval (stored sources, tests);
    # not part of the stored form, nor of equality.
    score: float | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        """A short human label: 'Page title (row 7)'."""
        if self.kind == "row" and self.row_no is not None:
            table = f"table {self.table_no}, " if self.table_no and self.table_no > 1 else ""
            return f"{self.page_title} ({table}row {self.row_no})"
        return self.page_title

    def to_dict(self) -> dict[str, str | int]:
        """The one stored form of an evidence (index rows, stored answers' sources): flat scalars that Chroma
        metadata and JSON both hold, so no None (an absent table or row number, or an unknown editor, is left
        out) and the cells as a JSON string."""
        d: dict[str, str | int] = {
            "evidence_id": self.id,
            "page_id": self.page_id,
            "space": self.space,
            "title": self.page_title,
            "url": self.url,
            "version": self.page_version,
            "kind": self.kind,
            "position": self.position,
            "text": self.text,
            "context_text": self.context_text,
            "heading": self.heading,
            "last_modified": self.last_modified,
        }
        if self.last_editor:
            d["last_editor"] = self.last_editor
        if self.table_no is not None:
            d["table_no"] = self.table_no
        if self.row_no is not None:
            d["row_no"] = self.row_no
        if self.cells:
            d["cells"] = json.dumps(self.cells, ensure_ascii=False)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Evidence:
        """Reads `to_dict`'s form back, and what older versions stored: sources whose cells are lists, whose
        table and row numbers are None, and which lack the keys added later (context text, heading, …)."""
        cells = d.get("cells") or ()
        if isinstance(cells, str):
            cells = json.loads(cells)
        table_no, row_no = d.get("table_no"), d.get("row_no")
        return cls(
            id=str(d["evidence_id"]),
            page_id=str(d["page_id"]),
            space=str(d["space"]),
            page_title=str(d["title"]),
            url=str(d["url"]),
            page_version=int(d.get("version", 1)),
            kind=d["kind"],
            position=int(d.get("position", 0)),
            text=str(d["text"]),
            context_text=str(d.get("context_text", d["text"])),
            heading=str(d.get("heading", "")),
            table_no=None if table_no is None else int(table_no),
            row_no=None if row_no is None else int(row_no),
            cells=tuple((str(h), str(v)) for h, v in cells),
            last_modified=str(d.get("last_modified", "")),
            last_editor=str(d.get("last_editor", "")),
        )


@dataclass(frozen=True)
class PageFailure:
    """A page that could not be turned into evidence: skipped and reported, never fatal."""

    page_id: str
    title: str
    reason: str


@dataclass(frozen=True)
class RestrictedPage:
    """A page left out of the index because Confluence restricts who may read it, or would not say who may."""

    page_id: str
    title: str
    reason: str


# --- retrieval


@dataclass(frozen=True)
class Scope:
    """What a retrieval may look at: the spaces allowed (None: every space; empty: none) and the pages inside
    them it must not see (the asker may not read them). Applied inside each search, before fusion."""

    spaces: tuple[str, ...] | None = None
    hidden_pages: frozenset[str] = frozenset()

    @classmethod
    def of(cls, spaces: Sequence[str] | None = None, hidden_pages: Iterable[str] = ()) -> Scope:
        return cls(None if spaces is None else tuple(spaces), frozenset(hidden_pages))

    @property
    def nothing(self) -> bool:
        """True when no page can be in scope (no space allowed)."""
        return self.spaces is not None and not self.spaces

    def allows(self, space: str, page_id: str) -> bool:
        return (self.spaces is None or space in self.spaces) and page_id not in self.hidden_pages


EVERYTHING = Scope()


@dataclass(frozen=True)
class ScoredEvidence:
    evidence: Evidence
    score: float


@dataclass(frozen=True)
class Hit:
    """One entry of a ranked list: which evidence, its score in that stage, its 1-based rank."""

    evidence_id: str
    score: float
    rank: int


# --- question completion


@dataclass(frozen=True)
class PastTurn:
    """An earlier turn of the conversation, as completion sees it."""

    question: str  # as asked
    completed_question: str  # as it was understood
    answer: str
    page_ids: tuple[str, ...] = ()  # pages of the evidence shown (cited first)


@dataclass(frozen=True)
class Completion:
    """The self-contained question, how it was obtained, and the LLM exchanges it took (for the trace)."""

    question: str
    method: str  # "first-turn", "llm", or the fallback's method with the reason the LLM was not used
    calls: tuple[LLMCall, ...] = ()
    # a follow-up that may start a new topic (core/complete/topic.py): the question as asked, and the pages the
    # thread's current topic was answered from; the pipeline settles which to ask by the question's own retrieval
    alone: str = ""
    topic_pages: tuple[str, ...] = ()
    # the words it shares with the topic though it names a new thing, as (its word, the topic's): a rare pair
    # keeps it on the topic, common ones let it leave only when no topic page comes near it (topic.py: `hold`)
    shared: tuple[tuple[str, str], ...] = ()


# --- answers

# The paper's out-of-scope sentence. Answerers say exactly this when the evidence does not hold the answer.
NOT_FOUND = "The desired information cannot be found in the retrieved pool of evidence."
NOT_FOUND_DE = "Die gewünschte Information ist in den gefundenen Quellen nicht enthalten."
# What people read when the answer is not in the wiki (the extractive answerer says it, the front ends show it),
# followed by the closest pages.
NOT_FOUND_PLAIN = "I couldn't find this in the synced pages."
NOT_FOUND_PLAIN_DE = "Ich habe dazu nichts in den synchronisierten Seiten gefunden."


@dataclass(frozen=True)
class LLMCall:
    """One exchange with a chat model, kept for the trace: the exact prompt sent and the raw completion."""

    role: str  # "completion", "answer", "counterfactual", "judge", "follow_ups"
    model: str
    messages: list[dict[str, str]]
    completion: str
    ms: float


@dataclass(frozen=True)
class Answer:
    """An answer to a question over numbered sources (1-based, in the order the evidences were given)."""

    text: str  # may contain "[Source N]" citations
    cited: tuple[int, ...] = ()  # source numbers cited, in order of first mention
    not_found: bool = False
    answerer: str = ""  # which answerer/model produced it
    follow_ups: tuple[str, ...] = ()  # suggested next questions (LLM mode)
    calls: tuple[LLMCall, ...] = field(default=())  # prompts and raw completions, for the trace
