"""The evidence index: dense (Chroma) + lexical (BM25), updated one page at a time, atomically.

How a page update stays atomic across the two stores:
1. the page is marked dirty in the manifest (`IndexManifest`, in the shared database), and its new evidence rows
   are written to Chroma *beside* the old ones (row ids carry the content hash);
2. one database transaction in the manifest switches the page to the new hash and bumps the index generation;
3. the old rows are deleted, and the page's dirty mark goes.
Queries only return rows whose (page, hash) the manifest names, so a process killed between any two steps
answers from the previous state, and the next `flush()` sweeps the leftovers of the pages still marked dirty.
BM25 is derived from the active rows: when the generation has moved on, the pages whose (version, hash, title)
differ from what BM25 holds are read again and only they are replaced (`bm25_store`); a whole rebuild, a batch
of pages at a time, only when there is no saved BM25 or most pages changed. Nothing here reads a whole
collection or the whole manifest at once: both grow with the wiki.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from threadwise.core.protocols import Embedder
from threadwise.core.retrieve.tokenize import tokenize
from threadwise.core.types import EVERYTHING, Evidence, Page, Scope, ScoredEvidence
from threadwise.index.bm25_catch_up import FreshTerms, add_to_corpora, catch_up_bm25, page_terms
from threadwise.index.bm25_corpus import TokenCorpus
from threadwise.index.bm25_store import BM25Store
from threadwise.index.chroma_store import (
    ChromaServer,
    ChromaStore,
    CurrentChroma,
    evidence_from_row,
    nearest_in_scope,
    row_id,
)
from threadwise.index.embedding_cache import EmbedCounts, EmbeddingCache, RowVectors, evidence_vectors
from threadwise.index.manifest import IndexManifest, PageState
from threadwise.index.shared_lock import WriteLock
from threadwise.models.embedders import how_to_keep


@dataclass(frozen=True)
class PreparedPages:
    """Pages ready to be written: those that changed, with their evidence and its vectors (in order), and
    per page asked for, whether it changed."""

    pages: list[tuple[Page, Sequence[Evidence]]]
    vectors: np.ndarray
    written: list[bool]


class EvidenceIndex:
    """Dense + lexical evidence index in one folder. Safe to share between threads; one writer at a time."""

    def __init__(
        self,
        *,
        directory: Path,
        embedder: Embedder,
        collection: str = "evidence",
        embed_chars: int = 1200,
        chroma_server: ChromaServer | None = None,
        row_vectors: RowVectors = "own",
        manifest: IndexManifest | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.embedder = embedder
        self.collection = collection
        # vectors on a Chroma server instead of in the folder; BM25 stays in the folder, derived from them
        self.chroma_server = chroma_server
        # Dense vectors see the first `embed_chars` of the contextualized text (title, heading, then the evidence):
        # past that an averaging encoder only dilutes, and a truncating one cuts anyway. BM25 sees all of it.
        self.embed_chars = embed_chars
        # "table": a table row takes its table's vector instead of one of its own and is left out of dense
        # search, where its table stands for it (BM25 still reads the row). Build and search alike.
        self.row_vectors = row_vectors
        self.directory.mkdir(parents=True, exist_ok=True)
        # the app's shared database (wiring.py); without one, a SQLite file of the index's own in the folder
        self.manifest = manifest or IndexManifest.in_folder(self.directory, collection)
        # One writer at a time: threads of this process, other processes on the same folder (a CLI sync while
        # the bot's scheduler syncs another space), and replicas sharing a PostgreSQL manifest.
        self._write_lock = WriteLock(
            self.directory / f"{collection}.write.lock", shared=self.manifest.writing
        )
        self._bm25_lock = threading.Lock()
        self._chroma = CurrentChroma(
            directory=self.directory / "chroma",
            collection=collection,
            server=chroma_server,
            generation=self.generation,
        )
        self._bm25 = BM25Store(directory=self.directory / f"{collection}.bm25")
        self._page_bm25 = BM25Store(directory=self.directory / f"{collection}.pages.bm25")
        self._fresh = FreshTerms()  # the BM25 documents of the pages written here, until BM25 catches up
        # shared by every collection in the folder: eval collections of two settings reuse each other's vectors
        self.cache = EmbeddingCache(path=self.directory / "embedding-cache.sqlite")
        with self._write_lock:
            # an old release's sqlite3 manifest beside Chroma is read into the database once
            self.manifest.migrate_from(self.directory / f"{collection}.manifest.sqlite")
            stored = self.manifest.embedder()
            if stored is None:
                self.manifest.create(embedder.name)
                stored = self.manifest.embedder()
        if stored != embedder.name:
            raise ValueError(
                f"the index in {self.directory} ({collection}) was built with embedder {stored!r}, "
                f"not {embedder.name!r}: vectors of two models do not mix. Keep it with "
                f"{how_to_keep(str(stored))}, or rebuild it with the new one: move {self.directory} "
                "away, then run `threadwise sync --full` (or `threadwise index --docs DIR` for a folder of pages)"
            )
        self.embedded_pages = 0  # pages embedded by this instance (for reports and tests)
        self.counts = EmbedCounts()  # where this instance's vectors came from

    # ----- plumbing -----
    @property
    def chroma(self) -> ChromaStore:
        """The Chroma collection, opened on first use by exactly one thread."""
        return self._chroma.store

    def _using_chroma(self) -> AbstractContextManager[ChromaStore]:
        """The Chroma collection, current with the manifest: reopened first if another process changed it."""
        return self._chroma.using()

    def warm_up(self) -> None:
        """Open Chroma and load BM25 now, before the first question needs them."""
        self._ensure_bm25()

    def generation(self) -> int:
        return self.manifest.generation()

    # ----- reading state -----
    def page_states(self, space: str | None = None) -> dict[str, PageState]:
        return {state.page_id: state for batch in self.manifest.states(space) for state in batch}

    def count(self, space: str | None = None) -> int:
        """Number of evidences of active pages (asked before every answer: one aggregate, not every row)."""
        return self.manifest.count(space)

    def spaces(self) -> list[str]:
        return self.manifest.spaces()

    # ----- writing -----
    def are_current(self, pages: Sequence[Page]) -> list[bool]:
        """Per page, whether it is indexed at this version and content (one lookup by key for them all, not
        the whole manifest)."""
        versions = self.manifest.versions_of([p.id for p in pages])
        return [versions.get(p.id) == (p.version, p.content_hash) for p in pages]

    def put_page(self, page: Page, evidences: Sequence[Evidence]) -> bool:
        """Replace the page's evidence atomically. Returns False, embedding nothing, when it is unchanged."""
        return self.put_pages([(page, evidences)])[0]

    def put_pages(
        self, items: Sequence[tuple[Page, Sequence[Evidence]]], *, counts: EmbedCounts | None = None
    ) -> list[bool]:
        """`put_page` for several pages with one call to the embedder (a bigger batch, one cache lookup); each
        page still switches atomically on its own. Returns, per page, whether it was written; `counts` (if
        given) adds up where the vectors came from."""
        return self.write_pages(self.prepare_pages(items, counts=counts))

    def prepare_pages(
        self, items: Sequence[tuple[Page, Sequence[Evidence]]], *, counts: EmbedCounts | None = None
    ) -> PreparedPages:
        """The first half of `put_pages`, which writes nothing: which pages changed, and their vectors. It may
        run in another thread while `write_pages` writes the batch before (`indexer.IndexPipeline`)."""
        written = [not current for current in self.are_current([p for p, _ in items])]
        todo = [item for item, w in zip(items, written, strict=True) if w]
        return PreparedPages(
            todo, self.vectors_of([e for _, evs in todo for e in evs], counts=counts), written
        )

    def write_pages(self, prepared: PreparedPages) -> list[bool]:
        """The second half of `put_pages`: the new rows of every changed page written beside the old ones in
        one go, then each page switched to them on its own, atomically, and its old rows deleted."""
        ids = [page.id for page, _ in prepared.pages]
        if not ids:
            return prepared.written
        states = [
            PageState(page.id, page.space, page.version, page.content_hash, page.title, len(evidences))
            for page, evidences in prepared.pages
        ]
        with self._write_lock, self._using_chroma() as chroma:
            # dirty until the old rows are gone: `flush` finishes a killed update
            self.manifest.mark_dirty(ids)
            chroma.add_pages(
                [(evidences, page.content_hash) for page, evidences in prepared.pages], prepared.vectors
            )
            for state in states:
                self._chroma.saw(self.manifest.put(state))
                chroma.delete_where(
                    {"$and": [{"page_id": state.page_id}, {"page_hash": {"$ne": state.content_hash}}]}
                )
            self.manifest.clear_dirty(ids)
        # tokenized once the lock is free (other writers wait on it); until then a catch-up reads from Chroma
        for state, (page, evidences) in zip(states, prepared.pages, strict=True):
            self._fresh.put(state, [(row_id(e, page.content_hash), e) for e in evidences])
        self.embedded_pages += len(ids)
        return prepared.written

    def vectors_of(self, evidences: Sequence[Evidence], *, counts: EmbedCounts | None = None) -> np.ndarray:
        """Dense vectors for these evidences (see `evidence_vectors`); `counts` adds up where they came from."""
        vectors, got = evidence_vectors(
            evidences,
            embedder=self.embedder,
            cache=self.cache,
            embed_chars=self.embed_chars,
            row_vectors=self.row_vectors,
        )
        for c in (self.counts, counts):
            if c is not None:
                c.add(got)
        return vectors

    def delete_page(self, page_id: str) -> None:
        with self._write_lock, self._using_chroma() as chroma:
            self.manifest.mark_dirty([page_id])
            self._chroma.saw(self.manifest.remove_page(page_id))
            chroma.delete_where({"page_id": page_id})
            self.manifest.clear_dirty([page_id])

    def delete_space(self, space: str) -> int:
        """Remove all of a space's pages; returns how many pages went."""
        ids = list(self.page_states(space))
        with self._write_lock, self._using_chroma() as chroma:
            self.manifest.mark_dirty(ids)
            self._chroma.saw(self.manifest.remove_space(space))
            chroma.delete_where({"space": space})
            self.manifest.clear_dirty(ids)
        return len(ids)

    def flush(self) -> None:
        """Sweep rows left by an interrupted update and bring BM25 up to date (call after a batch).

        Only pages marked dirty are looked at (an update in progress, or killed midway): the sweep never reads
        the whole collection, which fails past ~32,000 rows (SQLite's variable limit) and grows with the wiki."""
        with self._write_lock:
            while True:
                ids = self.manifest.dirty()
                if not ids:
                    break
                active = self.manifest.hashes_of(ids)
                with self._using_chroma() as chroma:
                    for pid in ids:
                        current = active.get(pid)
                        chroma.delete_where(
                            {"page_id": pid}
                            if current is None
                            else {"$and": [{"page_id": pid}, {"page_hash": {"$ne": current}}]}
                        )
                self.manifest.clear_dirty(ids)
            self.cache.prune()
            self._ensure_bm25()

    # ----- searching -----
    def _ensure_bm25(self) -> None:
        """Bring both BM25 indexes to the manifest's generation: load what another process saved, then read
        again only the pages that changed since (see `catch_up_bm25`)."""
        gen = self.generation()
        stores = (self._bm25, self._page_bm25)
        if all(s.generation == gen for s in stores):
            return
        with self._bm25_lock:
            for store in stores:
                if store.generation != gen:
                    store.load()
            if any(s.generation != gen for s in stores):
                save = self._write_lock.acquire_now()  # saved only when no writer is changing the index
                try:
                    pages = partial(self.manifest.states, batch=200)
                    catch_up_bm25(pages, self._add_to_corpora, gen, *stores, save=save)
                    self._fresh.clear()
                finally:
                    if save:
                        self._write_lock.__exit__()

    def _add_to_corpora(self, batch: Sequence[PageState], evidences: TokenCorpus, pages: TokenCorpus) -> None:
        """Tokenize a batch of pages into the corpora: as this process wrote them, else their rows in Chroma."""
        terms, unread = self._fresh.take(batch)
        if unread:
            active = {s.page_id: s for s in unread}
            rows: dict[str, list[tuple[str, Evidence]]] = {pid: [] for pid in active}
            with self._using_chroma() as chroma:
                for rid, doc, meta in chroma.get(where={"page_id": {"$in": list(active)}}):
                    if active[meta["page_id"]].content_hash == meta["page_hash"]:  # not another version's
                        rows[meta["page_id"]].append((rid, evidence_from_row(doc, meta)))
            terms.update({pid: page_terms(state, rows[pid]) for pid, state in active.items()})
        add_to_corpora([terms[s.page_id] for s in batch], evidences, pages)

    def search_lexical(self, query: str, k: int, scope: Scope | None = None) -> list[ScoredEvidence]:
        scope = scope or EVERYTHING
        if scope.nothing:
            return []
        self._ensure_bm25()
        found = self._bm25.search(query, k * 2, scope.spaces, scope.hidden_pages)
        active = self.manifest.hashes_of(_page_of(rid) for rid, _s in found)
        pairs = [(rid, s) for rid, s in found if active.get(_page_of(rid)) == _hash_of(rid)][:k]
        by_id: dict[str, tuple[str | None, dict]] = {}
        if pairs:
            with self._using_chroma() as chroma:
                by_id = {rid: (doc, meta) for rid, doc, meta in chroma.get(ids=[p[0] for p in pairs])}
        return [ScoredEvidence(evidence_from_row(*by_id[rid]), s) for rid, s in pairs if rid in by_id]

    def search_pages(self, query: str, k: int, scope: Scope | None = None) -> list[tuple[str, float]]:
        """Pages as (page id, BM25 score), best first, by their whole text."""
        scope = scope or EVERYTHING
        if scope.nothing:
            return []
        self._ensure_bm25()
        found = self._page_bm25.search(query, k, scope.spaces, scope.hidden_pages)
        active = self.manifest.hashes_of(pid for pid, _s in found)
        return [(pid, s) for pid, s in found if pid in active]

    def word_share(self, word: str) -> float:
        """The share of the index's pages whose text holds `word` (its most common BM25 term: "used" → "use")."""
        self._ensure_bm25()
        return max((self._page_bm25.share(term) for term in tokenize(word)), default=0.0)

    def search_dense(self, vector: np.ndarray, k: int, scope: Scope | None = None) -> list[ScoredEvidence]:
        scope = scope or EVERYTHING
        if scope.nothing:
            return []
        with self._using_chroma() as chroma:
            rows = nearest_in_scope(chroma, vector, 2 * k, scope, self.manifest, row_vectors=self.row_vectors)
        active = self.manifest.hashes_of(meta["page_id"] for _rid, _sim, _doc, meta in rows)
        hits = [
            ScoredEvidence(evidence_from_row(doc, meta), sim)
            for rid, sim, doc, meta in rows
            if active.get(meta["page_id"]) == meta["page_hash"]
        ]
        # equal scores by id, as in BM25: a copied page's evidence has the very same vector as the original's,
        # and HNSW returns such ties in the order the rows were written
        hits.sort(key=lambda h: (-h.score, h.evidence.id))
        return hits[:k]

    def vectors_for(self, embedder: Embedder, evidences: Sequence[Evidence]) -> np.ndarray | None:
        """The stored vectors of these evidences if `embedder` is the index's own (saves Explain embedding
        them again), else None."""
        return self.embeddings_of(evidences) if embedder is self.embedder else None

    def embeddings_of(self, evidences: Sequence[Evidence]) -> np.ndarray:
        """The stored vectors of these evidences (re-embedding any that are not stored)."""
        active = self.manifest.hashes_of(e.page_id for e in evidences)
        ids = [row_id(e, active.get(e.page_id, "")) for e in evidences]
        stored: dict[str, np.ndarray] = {}
        if ids:
            with self._using_chroma() as chroma:
                stored = chroma.get_embeddings(ids)
        missing = [i for i, rid in enumerate(ids) if rid not in stored]
        fresh = (
            self.embedder.embed([evidences[i].context_text[: self.embed_chars] for i in missing])
            if missing
            else None
        )
        out = np.zeros((len(evidences), self.embedder.dim), dtype=np.float32)
        for i, rid in enumerate(ids):
            if rid in stored:
                out[i] = stored[rid]
        for j, i in enumerate(missing):
            assert fresh is not None
            out[i] = fresh[j]
        return out


def _page_of(rid: str) -> str:
    """The page id inside a row id (`page:n@hash`)."""
    return rid.rpartition("@")[0].rpartition(":")[0]


def _hash_of(rid: str) -> str:
    return rid.rpartition("@")[2]
