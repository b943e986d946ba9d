"""Bringing BM25 indexes up to date with the index's pages: `catch_up_bm25` compares each page's signature
(version, hash, title) with what an index holds and reads again only the pages that differ; the whole wiki
only when nothing is saved or most pages changed; `add_to_corpora` is what a page's rows give each corpus."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from threadwise.index.bm25_corpus import TokenCorpus
from threadwise.index.bm25_store import BM25Store
from threadwise.index.chroma_store import evidence_from_row

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


def add_to_corpora(
    rows: Iterable[tuple[str, str | None, dict[str, Any]]],
    batch: Sequence[PageState],
    evidences: TokenCorpus,
    pages: TokenCorpus,
) -> None:
    """Tokenize the active rows (id, document, metadata, as Chroma gives them) of a batch of pages: each row's
    context text into the evidence corpus, and each page (the title three times, then its text: which page is
    the question about?) into the page corpus. Rows of another version of a page are left out."""
    active = {s.page_id: (s.content_hash, s.space, s.title) for s in batch}
    parts: dict[str, list[tuple[int, str]]] = {pid: [] for pid in active}
    for rid, doc, m in sorted(rows, key=lambda r: r[0]):
        if active[m["page_id"]][0] != m["page_hash"]:
            continue
        evidence = evidence_from_row(doc, m)
        evidences.add(rid, evidence.space, evidence.context_text, page=evidence.page_id)
        if evidence.kind != "row":  # rows repeat their table's text
            parts[evidence.page_id].append((evidence.position, evidence.text))
    for pid, (_hash, space, title) in active.items():
        pages.add(pid, space, " ".join([title] * 3 + [t for _, t in sorted(parts[pid])]))
