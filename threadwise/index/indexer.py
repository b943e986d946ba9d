"""Bring an index in line with a set of pages: extract, embed only what changed, drop pages that are gone."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Generic, TypeVar

from threadwise.core.ingest.contextualize import ContextParts
from threadwise.core.ingest.extract import PageParseError, extract_evidence
from threadwise.core.ingest.linearize import check_linearizer
from threadwise.core.types import Evidence, Page, PageFailure
from threadwise.index.embedding_cache import EmbedCounts
from threadwise.index.store import EvidenceIndex, PreparedPages

Progress = Callable[[int, int], None]  # (done, total)
T = TypeVar("T")
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


@dataclass
class ExtractedBatch:
    """A batch of pages extracted: per page its outcome so far (False: current already; a failure value:
    unusable), and the pages left to embed and write with their position in the batch and their evidence."""

    outcomes: list[bool | PageFailure]
    todo: list[tuple[int, Page, list[Evidence]]]


@dataclass
class PreparedBatch:
    """A batch of pages extracted and embedded, not yet written."""

    outcomes: list[bool | PageFailure]
    todo: list[int]  # positions in the batch of the pages to write, in the order of `prepared.pages`
    prepared: PreparedPages


def extract_batch(
    index: EvidenceIndex,
    pages: Sequence[Page],
    *,
    extract: Extract = extract_evidence,
    limits: PageLimits | None = None,
    capped: Callable[[PageFailure], None] | None = None,
) -> ExtractedBatch:
    """The first step of the one road from pages to the index (the folder indexer's and the Confluence
    sync's, through `IndexPipeline`): a page the index holds at this version and content is not extracted
    (nor embedded): False; a page that yields no usable evidence is a failure value (its previous evidence,
    if any, stays). An empty page is indexed empty; a page beyond `limits` up to them (see `_limited`)."""
    outcomes: list[bool | PageFailure] = [False] * len(pages)
    todo: list[tuple[int, Page, list[Evidence]]] = []
    for i, (page, current) in enumerate(zip(pages, index.are_current(pages), strict=True)):
        if current:
            continue
        try:
            todo.append((i, page, _limited(page, extract, limits or PageLimits(), capped)))
        except PageParseError as error:
            outcomes[i] = PageFailure(page_id=page.id, title=page.title, reason=str(error))
    return ExtractedBatch(outcomes, todo)


def embed_batch(
    index: EvidenceIndex, batch: ExtractedBatch, *, counts: EmbedCounts | None = None
) -> PreparedBatch:
    """The second step: the batch's pages share one call to the embedder (texts it embedded before come from
    its cache; `counts` adds up where the vectors came from). Writes nothing."""
    prepared = index.prepare_pages([(page, evidences) for _, page, evidences in batch.todo], counts=counts)
    return PreparedBatch(batch.outcomes, [i for i, _, _ in batch.todo], prepared)


def write_batch(index: EvidenceIndex, batch: PreparedBatch) -> list[bool | PageFailure]:
    """The last step: each changed page swapped in atomically (True); the batch's outcomes."""
    outcomes = list(batch.outcomes)
    for i, changed in zip(batch.todo, index.write_pages(batch.prepared), strict=True):
        outcomes[i] = changed
    return outcomes


class IndexPipeline(Generic[T]):
    """Batches of pages to the index in three overlapping steps: while a worker thread embeds batch n+1 (the
    embedder keeps the cores busy), the caller's thread extracts batch n+2 and writes batch n (Chroma, the
    manifest: one core at most). Each batch carries a `tag` of the caller's, handed back with its outcomes.
    Use it as a context manager; `finish()` writes the last batch."""

    def __init__(
        self,
        index: EvidenceIndex,
        *,
        extract: Extract = extract_evidence,
        counts: EmbedCounts | None = None,
        limits: PageLimits | None = None,
        capped: Callable[[PageFailure], None] | None = None,
    ) -> None:
        self._index = index
        self._extract = partial(extract_batch, index, extract=extract, limits=limits, capped=capped)
        self._embed = partial(embed_batch, index, counts=counts)
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="index-ahead")
        self._ahead: tuple[T, Future[PreparedBatch]] | None = None

    def put(self, pages: Sequence[Page], tag: T) -> list[tuple[T, list[bool | PageFailure]]]:
        """Extract `pages` and queue them for the embedder, then write the batch before them: its tag and
        outcomes (none the first time)."""
        upcoming = (tag, self._worker.submit(self._embed, self._extract(list(pages))))
        done = self.finish()
        self._ahead = upcoming
        return done

    def finish(self) -> list[tuple[T, list[bool | PageFailure]]]:
        """Write the batch being prepared, if any: its tag and outcomes."""
        if self._ahead is None:
            return []
        (tag, future), self._ahead = self._ahead, None
        return [(tag, write_batch(self._index, future.result()))]

    def run(
        self, batches: Iterable[tuple[Sequence[Page], T]]
    ) -> Iterator[tuple[T, list[bool | PageFailure]]]:
        """Every batch put, then the last one finished: (tag, outcomes) in order."""
        for pages, tag in batches:
            yield from self.put(pages, tag)
        yield from self.finish()

    def __enter__(self) -> IndexPipeline[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ahead is not None:  # left by an error: the batch being embedded is not written
            self._ahead[1].cancel()
        self._worker.shutdown(wait=True)


def index_page(
    index: EvidenceIndex,
    page: Page,
    *,
    extract: Extract = extract_evidence,
    limits: PageLimits | None = None,
    counts: EmbedCounts | None = None,
) -> bool | PageFailure:
    """One page down the same road, in the caller's thread."""
    extracted = extract_batch(index, [page], extract=extract, limits=limits)
    return write_batch(index, embed_batch(index, extracted, counts=counts))[0]


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
    """Index `pages` through `IndexPipeline`, `BATCH_PAGES` at a time; a page whose version and content hash
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

    def count(outcomes: list[bool | PageFailure]) -> None:
        for outcome in outcomes:
            if isinstance(outcome, PageFailure):
                report.failures.append(outcome)
            elif outcome:
                report.embedded += 1
            else:
                report.unchanged += 1

    done = 0
    with IndexPipeline[int](
        index, extract=extract, counts=report.vectors, limits=limits, capped=report.capped.append
    ) as pipeline:
        batches = (pages[start : start + BATCH_PAGES] for start in range(0, len(pages), BATCH_PAGES))
        for size, outcomes in pipeline.run((batch, len(batch)) for batch in batches):
            count(outcomes)
            done += size
            if progress is not None:
                progress(done, len(pages))
    if remove_missing:
        # a page that failed to parse is still among `pages`: its previous evidence stays
        for gone in set(index.page_states()) - {p.id for p in pages}:
            index.delete_page(gone)
            report.removed += 1
    index.flush()
    report.seconds = time.perf_counter() - started
    return report
