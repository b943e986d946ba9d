"""Bring an index in line with a set of pages: extract, embed only what changed, drop pages that are gone."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from threadwise.core.ingest.contextualize import ContextParts
from threadwise.core.ingest.extract import PageParseError, extract_evidence
from threadwise.core.ingest.linearize import check_linearizer
from threadwise.core.types import Evidence, Page, PageFailure
from threadwise.index.embedding_cache import EmbedCounts
from threadwise.index.store import EvidenceIndex

Progress = Callable[[int, int], None]  # (done, total)
BATCH_PAGES = 16  # pages per call to the embedder (~250 evidences on ConfQuestions); each switches on its own
log = logging.getLogger(__name__)


@dataclass
class IndexReport:
    pages: int = 0
    embedded: int = 0  # pages (re-)embedded
    unchanged: int = 0
    removed: int = 0
    failures: list[PageFailure] = field(default_factory=list)
    capped: list[PageFailure] = field(default_factory=list)  # indexed only up to the page limits
    seconds: float = 0.0
    vectors: EmbedCounts = field(default_factory=EmbedCounts)  # texts embedded, found cached, shared by rows


@dataclass(frozen=True)
class PageLimits:
    """What one page may cost: a 5 MB page would otherwise take minutes and hundreds of MB to index.
    A page beyond a limit is indexed up to it and reported (ConfQuestions' largest page: 73k characters)."""

    max_chars: int = 500_000  # of the page's storage-format body
    max_evidences: int = 1_000

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PageLimits:
        """THREADWISE_MAX_PAGE_CHARS, THREADWISE_MAX_EVIDENCES_PER_PAGE."""
        return cls(
            max_chars=max(1, int(env.get("THREADWISE_MAX_PAGE_CHARS") or cls.max_chars)),
            max_evidences=max(1, int(env.get("THREADWISE_MAX_EVIDENCES_PER_PAGE") or cls.max_evidences)),
        )


Extract = Callable[[Page], list[Evidence]]


def _limited(
    page: Page, extract: Extract, limits: PageLimits, capped: Callable[[PageFailure], None] | None
) -> list[Evidence]:
    """The page's evidence within `limits`; an empty page has none (it is indexed empty, so the text it had
    stops answering). A page beyond the limits is indexed up to them, logged and handed to `capped`."""
    if not page.body.strip():
        return []
    evidences = extract(replace(page, body=page.body[: limits.max_chars]))
    if len(page.body) > limits.max_chars or len(evidences) > limits.max_evidences:
        note = PageFailure(
            page.id,
            page.title,
            f"{len(page.body):,} characters, {len(evidences):,} evidences: indexed up to "
            f"{limits.max_chars:,} characters and {limits.max_evidences:,} evidences",
        )
        log.warning("page %s (%s) is beyond the page limits: %s", page.id, page.title, note.reason)
        if capped is not None:
            capped(note)
    # the whole page's hash is stored: a capped page stays current and is not extracted again
    return evidences[: limits.max_evidences]


def index_batch(
    index: EvidenceIndex,
    pages: Sequence[Page],
    *,
    extract: Extract = extract_evidence,
    counts: EmbedCounts | None = None,
    limits: PageLimits | None = None,
    capped: Callable[[PageFailure], None] | None = None,
) -> list[bool | PageFailure]:
    """The one road from pages to the index, for the folder indexer and the Confluence sync alike.

    A page the index holds at this version and content is not extracted (nor embedded): False. Otherwise
    its evidence is extracted and swapped in atomically: True, or a failure value when the page yields no
    usable evidence (its previous evidence, if any, stays). The pages of a batch share one call to the
    embedder (texts it embedded before come from its cache); `counts` adds up where the vectors came from.
    An empty page is indexed empty; a page beyond `limits` up to them (see `_limited`).
    """
    outcomes: list[bool | PageFailure] = [False] * len(pages)
    todo: list[tuple[int, Page, list[Evidence]]] = []
    for i, page in enumerate(pages):
        if index.is_current(page):
            continue
        try:
            todo.append((i, page, _limited(page, extract, limits or PageLimits(), capped)))
        except PageParseError as error:
            outcomes[i] = PageFailure(page_id=page.id, title=page.title, reason=str(error))
    written = index.put_pages([(page, evidences) for _, page, evidences in todo], counts=counts)
    for (i, _page, _evs), changed in zip(todo, written, strict=True):
        outcomes[i] = changed
    return outcomes


def index_page(
    index: EvidenceIndex, page: Page, *, extract: Extract = extract_evidence, limits: PageLimits | None = None
) -> bool | PageFailure:
    """`index_batch` of one page."""
    return index_batch(index, [page], extract=extract, limits=limits)[0]


def index_pages(
    index: EvidenceIndex,
    pages: Sequence[Page],
    *,
    parts: ContextParts | None = None,
    linearizer: str = "verbalized",
    index_tables: bool = True,
    index_rows: bool = True,
    remove_missing: bool = True,
    progress: Progress | None = None,
    limits: PageLimits | None = None,
) -> IndexReport:
    """Index `pages` through `index_batch`, `BATCH_PAGES` at a time; a page whose version and content hash
    are unchanged costs one read.

    With `remove_missing`, indexed pages not among `pages` are deleted (the folder is the whole truth).
    """
    started = time.perf_counter()
    report = IndexReport(pages=len(pages))
    extract = partial(
        extract_evidence,
        parts=parts or ContextParts.from_name("ALL"),
        linearizer=check_linearizer(linearizer),
        index_tables=index_tables,
        index_rows=index_rows,
    )
    if progress is not None:
        progress(0, len(pages))  # the clock of a rate starts here, not at the first batch done
    for start in range(0, len(pages), BATCH_PAGES):
        batch = pages[start : start + BATCH_PAGES]
        outcomes = index_batch(
            index, batch, extract=extract, counts=report.vectors, limits=limits, capped=report.capped.append
        )
        for outcome in outcomes:
            if isinstance(outcome, PageFailure):
                report.failures.append(outcome)
            elif outcome:
                report.embedded += 1
            else:
                report.unchanged += 1
        if progress is not None:
            progress(start + len(batch), len(pages))
    if remove_missing:
        # a page that failed to parse is still among `pages`: its previous evidence stays
        for gone in set(index.page_states()) - {p.id for p in pages}:
            index.delete_page(gone)
            report.removed += 1
    index.flush()
    report.seconds = time.perf_counter() - started
    return report
