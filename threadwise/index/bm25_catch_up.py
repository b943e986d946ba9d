"""Bringing BM25 indexes up to date with the index's pages: `catch_up_bm25` compares each page's signature
(version, hash, title) with what an index holds and reads again only the pages that differ; the whole wiki
only when nothing is saved or most pages changed. `page_terms` is what a page's rows give each corpus, and
`FreshTerms` keeps it for the pages a process writes, so that catching up needs not read them back."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING

from threadwise.core.retrieve.tokenize import tokenize
from threadwise.core.types import Evidence
from threadwise.index.bm25_corpus import TokenCorpus
from threadwise.index.bm25_store import BM25Store

if TYPE_CHECKING:
    from threadwise.index.manifest import PageState

REBUILD_SHARE = 0.5  # more pages changed than this share: a whole rebuild costs no more


def page_signature(version: int, content_hash: str, title: str) -> str:
    """What a page's documents depend on: a change of any makes the page's documents be read again."""
    return f"{version}@{content_hash}@{title}"


def catch_up_bm25(
    pages: Callable[[], Iterable[Sequence[PageState]]],
    read: Callable[[Sequence[PageState], TokenCorpus, TokenCorpus], None],
    generation: int,
    evidences: BM25Store,
    page_index: BM25Store,
    *,
    save: bool = True,
) -> None:
    """Bring the evidence and the page BM25 indexes to `generation`: `pages()` lists the indexed pages in
    batches, `read(batch, evidence corpus, page corpus)` tokenizes their active texts. Pages whose signature
    differs from what an index holds are read again, pages gone are dropped; with nothing loaded, or most pages
    changed, both are rebuilt from every page."""
    stores = (evidences, page_index)
    loaded = all(s.generation >= 0 for s in stores)
    listed: dict[str, str] = {}
    todo: list[PageState] = []
    for batch in pages():
        for row in batch:
            signature = listed[row.page_id] = page_signature(row.version, row.content_hash, row.title)
            if loaded and any(s.signatures.get(row.page_id) != signature for s in stores):
                todo.append(row)
    ev_corpus, page_corpus = TokenCorpus(), TokenCorpus()
    if not loaded or len(todo) > REBUILD_SHARE * len(listed):
        for batch in pages():
            read(batch, ev_corpus, page_corpus)
        for store, corpus in zip(stores, (ev_corpus, page_corpus), strict=True):
            store.rebuild(generation, corpus, listed, save=save)
        return
    changed: dict[str, str | None] = {row.page_id: listed[row.page_id] for row in todo}
    changed.update({p: None for s in stores for p in s.signatures if p not in listed})
    for start in range(0, len(todo), 200):
        read(todo[start : start + 200], ev_corpus, page_corpus)
    for store, corpus in zip(stores, (ev_corpus, page_corpus), strict=True):
        store.update(generation, changed, corpus, save=save)


@dataclass(frozen=True)
class PageTerms:
    """A page's BM25 documents, tokenized: its active rows as (row id, space, terms), and the page's own
    document (the title three times, then its text: which page is the question about?)."""

    page_id: str
    space: str
    rows: list[tuple[str, str, list[str]]]
    page: list[str]


def page_terms(state: PageState, rows: Iterable[tuple[str, Evidence]]) -> PageTerms:
    """What a page's active rows (row id, evidence) give each corpus: each row's context text, and the page's
    text for the page corpus, in position order; table rows stay out of it (they repeat their table's text)."""
    ordered = sorted(rows, key=itemgetter(0))
    parts = sorted((e.position, e.text) for _, e in ordered if e.kind != "row")
    return PageTerms(
        state.page_id,
        state.space,
        [(rid, e.space, tokenize(e.context_text)) for rid, e in ordered],
        tokenize(" ".join([state.title] * 3 + [text for _, text in parts])),
    )


def add_to_corpora(batch: Sequence[PageTerms], evidences: TokenCorpus, pages: TokenCorpus) -> None:
    """A batch of pages into the corpora: their rows in row-id order, then the pages in the batch's order."""
    rows = sorted(
        ((rid, space, terms, p.page_id) for p in batch for rid, space, terms in p.rows), key=itemgetter(0)
    )
    for rid, space, terms, page_id in rows:
        evidences.add_terms(rid, space, terms, page=page_id)
    for p in batch:
        pages.add_terms(p.page_id, p.space, p.page)


class FreshTerms:
    """The BM25 documents of the pages this process wrote, tokenized as each was written (while the embedder
    works on the next batch), keyed by page signature: a catch-up then reads from Chroma and tokenizes only
    the pages other processes wrote, or that changed again since. Holds up to `max_rows` rows' terms; a
    catch-up empties it. Thread-safe: a sync writes while searches catch up."""

    def __init__(self, *, max_rows: int = 50_000) -> None:
        self.max_rows = max_rows
        self._pages: dict[str, tuple[str, PageTerms]] = {}
        self._rows = 0
        self._lock = threading.Lock()

    def put(self, state: PageState, rows: Sequence[tuple[str, Evidence]]) -> None:
        if self._rows + len(rows) > self.max_rows:
            return
        terms = page_terms(state, rows)
        with self._lock:
            self._pages[state.page_id] = (
                page_signature(state.version, state.content_hash, state.title),
                terms,
            )
            self._rows += len(rows)

    def take(self, batch: Sequence[PageState]) -> tuple[dict[str, PageTerms], list[PageState]]:
        """The terms kept of these pages at their signature, and the pages that must be read."""
        found: dict[str, PageTerms] = {}
        with self._lock:
            for state in batch:
                kept = self._pages.get(state.page_id)
                if kept and kept[0] == page_signature(state.version, state.content_hash, state.title):
                    found[state.page_id] = kept[1]
        return found, [state for state in batch if state.page_id not in found]

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()
            self._rows = 0
