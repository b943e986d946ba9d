"""The evidence index: dense (Chroma) + lexical (BM25), updated one page at a time, atomically.

How a page update stays atomic across the two stores:
1. the page is marked dirty in the manifest (SQLite), and its new evidence rows are written to Chroma *beside*
   the old ones (row ids carry the content hash);
2. one SQLite transaction in the manifest switches the page to the new hash and bumps the index generation;
3. the old rows are deleted, and the page's dirty mark goes.
Queries only return rows whose (page, hash) the manifest names, so a process killed between any two steps
answers from the previous state, and the next `flush()` sweeps the leftovers of the pages still marked dirty.
BM25 is derived from the active rows, read a batch of pages at a time, and rebuilt when the generation has
moved on. Nothing here reads a whole collection or the whole manifest at once: both grow with the wiki.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from threadwise.core.protocols import Embedder
from threadwise.core.types import Evidence, Page, ScoredEvidence
from threadwise.index.bm25_store import BM25Store, TokenCorpus
from threadwise.index.chroma_store import ChromaServer, ChromaStore, evidence_from_row, row_id
from threadwise.index.embedding_cache import EmbedCounts, EmbeddingCache, RowVectors, evidence_vectors
from threadwise.index.shared_lock import SharedLock
from threadwise.models.embedders import how_to_keep


class _WriteLock:
    """A re-entrant lock across threads (RLock) and processes (a lock file)."""

    def __init__(self, path: Path) -> None:
        self._threads = threading.RLock()
        self._file = FileLock(str(path), thread_local=False)

    def __enter__(self) -> None:
        self._threads.acquire()
        self._file.acquire()

    def __exit__(self, *exc: object) -> None:
        self._file.release()
        self._threads.release()


@dataclass(frozen=True)
class PageState:
    """What the index knows about an indexed page."""

    page_id: str
    space: str
    version: int
    content_hash: str
    title: str
    evidence_count: int


_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    page_id TEXT PRIMARY KEY, space TEXT NOT NULL, version INTEGER NOT NULL, content_hash TEXT NOT NULL,
    title TEXT NOT NULL, evidence_count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dirty (page_id TEXT PRIMARY KEY);
"""
_CHUNK = 500  # ids per SQL statement or Chroma call: far below SQLite's variable limit


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
    ) -> None:
        self.directory = Path(directory)
        self.embedder = embedder
        self.collection = collection
        # vectors on a Chroma server instead of in the folder; the manifest and BM25 stay in the folder
        self.chroma_server = chroma_server
        # Dense vectors see the first `embed_chars` of the contextualized text (title, heading, then the evidence):
        # past that an averaging encoder only dilutes, and a truncating one cuts anyway. BM25 sees all of it.
        self.embed_chars = embed_chars
        # "table": a table row takes its table's vector instead of one of its own and is left out of dense
        # search, where its table stands for it (BM25 still reads the row). Build and search alike.
        self.row_vectors = row_vectors
        self.directory.mkdir(parents=True, exist_ok=True)
        self._manifest_path = self.directory / f"{collection}.manifest.sqlite"
        # One writer at a time: threads of this process, and other processes on the same folder (a CLI sync
        # while the bot's scheduler syncs another space).
        self._write_lock = _WriteLock(self.directory / f"{collection}.write.lock")
        self._bm25_lock = threading.Lock()
        # The Chroma client is opened once (first use or warm-up), by one thread; every use holds `_chroma_use`
        # shared, and a reopen holds it exclusively. `_chroma_generation` is the generation the open client is
        # known to have seen: another process (a CLI sync beside `serve`) moving it on makes the next use reopen
        # the client, whose in-memory vector index would otherwise stay as it was when it was opened.
        self._chroma_open = threading.Lock()
        self._chroma_use = SharedLock()
        self._chroma: ChromaStore | None = None
        self._chroma_generation = -1
        self._bm25 = BM25Store(directory=self.directory / f"{collection}.bm25")
        self._page_bm25 = BM25Store(directory=self.directory / f"{collection}.pages.bm25")
        # shared by every collection in the folder: eval collections of two settings reuse each other's vectors
        self.cache = EmbeddingCache(path=self.directory / "embedding-cache.sqlite")
        with self._manifest() as db:
            db.executescript(_SCHEMA)
            stored = db.execute("SELECT value FROM meta WHERE key='embedder'").fetchone()
            if stored is None:
                db.execute("INSERT INTO meta VALUES ('embedder', ?)", (embedder.name,))
                db.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
            elif stored[0] != embedder.name:
                raise ValueError(
                    f"the index in {self.directory} ({collection}) was built with embedder {stored[0]!r}, "
                    f"not {embedder.name!r}: vectors of two models do not mix. Keep it with "
                    f"{how_to_keep(stored[0])}, or rebuild it with the new one: move {self.directory} "
                    "away, then run `threadwise sync --full` (or `threadwise index --docs DIR` for a folder of pages)"
                )
        self.embedded_pages = 0  # pages embedded by this instance (for reports and tests)
        self.counts = EmbedCounts()  # where this instance's vectors came from

    # ----- plumbing -----
    @contextmanager
    def _manifest(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self._manifest_path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash of the process loses nothing committed
            yield db
        finally:
            db.close()

    @property
    def chroma(self) -> ChromaStore:
        """The Chroma collection, opened on first use by exactly one thread."""
        if self._chroma is None:
            with self._chroma_open:
                if self._chroma is None:
                    generation = self.generation()
                    self._chroma = ChromaStore(
                        directory=self.directory / "chroma",
                        collection=self.collection,
                        server=self.chroma_server,
                    )
                    self._chroma_generation = generation
        return self._chroma

    @contextmanager
    def _using_chroma(self) -> Iterator[ChromaStore]:
        """The Chroma collection, current with the manifest: reopened first if another process changed it."""
        store = self.chroma
        if self.generation() != self._chroma_generation:
            with self._chroma_use.exclusive():
                generation = self.generation()
                if generation != self._chroma_generation:
                    store.reopen()
                    self._chroma_generation = generation
        with self._chroma_use.shared():
            yield store

    def warm_up(self) -> None:
        """Open Chroma and load BM25 now, before the first question needs them."""
        self._ensure_bm25()

    def generation(self) -> int:
        with self._manifest() as db:
            return int(db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])

    def _active_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """The active content hash of each of these pages that is indexed (a lookup by key, in chunks)."""
        ids = list(dict.fromkeys(page_ids))
        out: dict[str, str] = {}
        with self._manifest() as db:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                out.update(
                    db.execute(f"SELECT page_id, content_hash FROM pages WHERE page_id IN ({marks})", chunk)
                )
        return out

    def _pages_in_order(self, batch: int = 200) -> Iterator[list[tuple[str, str, str, str]]]:
        """Every indexed page as (page id, hash, space, title), `batch` at a time (keyset paging)."""
        after = ""
        while True:
            with self._manifest() as db:
                rows = db.execute(
                    "SELECT page_id, content_hash, space, title FROM pages WHERE page_id > ? "
                    "ORDER BY page_id LIMIT ?",
                    (after, batch),
                ).fetchall()
            if not rows:
                return
            yield rows
            after = rows[-1][0]

    # ----- reading state -----
    def page_states(self, space: str | None = None) -> dict[str, PageState]:
        sql = "SELECT page_id, space, version, content_hash, title, evidence_count FROM pages"
        args: tuple[Any, ...] = ()
        if space is not None:
            sql, args = sql + " WHERE space = ?", (space,)
        with self._manifest() as db:
            return {r[0]: PageState(*r) for r in db.execute(sql, args).fetchall()}

    def count(self, space: str | None = None) -> int:
        """Number of evidences of active pages (asked before every answer: one aggregate, not every row)."""
        sql = "SELECT COALESCE(SUM(evidence_count), 0) FROM pages"
        args: tuple[str, ...] = ()
        if space is not None:
            sql, args = sql + " WHERE space = ?", (space,)
        with self._manifest() as db:
            return int(db.execute(sql, args).fetchone()[0])

    def spaces(self) -> list[str]:
        with self._manifest() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT space FROM pages ORDER BY space").fetchall()]

    # ----- writing -----
    def is_current(self, page: Page) -> bool:
        """The page is indexed at this version and content (one row read, not the whole manifest)."""
        return self._current(page, self._versions_of([page.id]))

    def _versions_of(self, page_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
        out: dict[str, tuple[int, str]] = {}
        with self._manifest() as db:
            for start in range(0, len(page_ids), _CHUNK):
                chunk = list(page_ids[start : start + _CHUNK])
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT page_id, version, content_hash FROM pages WHERE page_id IN ({marks})"
                out.update({r[0]: (r[1], r[2]) for r in db.execute(sql, chunk)})
        return out

    @staticmethod
    def _current(page: Page, versions: dict[str, tuple[int, str]]) -> bool:
        return versions.get(page.id) == (page.version, page.content_hash)

    def put_page(self, page: Page, evidences: Sequence[Evidence]) -> bool:
        """Replace the page's evidence atomically. Returns False, embedding nothing, when it is unchanged."""
        return self.put_pages([(page, evidences)])[0]

    def put_pages(
        self, items: Sequence[tuple[Page, Sequence[Evidence]]], *, counts: EmbedCounts | None = None
    ) -> list[bool]:
        """`put_page` for several pages with one call to the embedder (a bigger batch, one cache lookup); each
        page still switches atomically on its own. Returns, per page, whether it was written; `counts` (if
        given) adds up where the vectors came from."""
        versions = self._versions_of([p.id for p, _ in items])
        written = [not self._current(p, versions) for p, _ in items]
        todo = [item for item, w in zip(items, written, strict=True) if w]
        vectors = self.vectors_of([e for _, evs in todo for e in evs], counts=counts)
        offset = 0
        for page, evidences in todo:
            part = vectors[offset : offset + len(evidences)]
            offset += len(evidences)
            with self._write_lock, self._using_chroma() as chroma:
                self._mark_dirty([page.id])  # until the old rows are gone: `flush` finishes a killed update
                chroma.add(evidences, part, page.content_hash)
                self._switch(
                    "INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?)",
                    (page.id, page.space, page.version, page.content_hash, page.title, len(evidences)),
                )
                chroma.delete_where(
                    {"$and": [{"page_id": page.id}, {"page_hash": {"$ne": page.content_hash}}]}
                )
                self._clear_dirty([page.id])
            self.embedded_pages += 1
        return written

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

    def _mark_dirty(self, page_ids: Sequence[str]) -> None:
        with self._manifest() as db:
            db.executemany("INSERT OR IGNORE INTO dirty VALUES (?)", [(p,) for p in page_ids])

    def _clear_dirty(self, page_ids: Sequence[str]) -> None:
        with self._manifest() as db:
            db.executemany("DELETE FROM dirty WHERE page_id = ?", [(p,) for p in page_ids])

    def _switch(self, sql: str, args: tuple[Any, ...]) -> None:
        """Change the manifest and move the generation on, in one transaction: the moment a change takes effect.

        Called with the write lock and Chroma in use: this process's client has seen the change it made."""
        with self._manifest() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(sql, args)
            db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
            generation = int(db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])
            db.execute("COMMIT")
        self._chroma_generation = generation

    def delete_page(self, page_id: str) -> None:
        with self._write_lock, self._using_chroma() as chroma:
            self._mark_dirty([page_id])
            self._switch("DELETE FROM pages WHERE page_id = ?", (page_id,))
            chroma.delete_where({"page_id": page_id})
            self._clear_dirty([page_id])

    def delete_space(self, space: str) -> int:
        """Remove all of a space's pages; returns how many pages went."""
        ids = list(self.page_states(space))
        with self._write_lock, self._using_chroma() as chroma:
            self._mark_dirty(ids)
            self._switch("DELETE FROM pages WHERE space = ?", (space,))
            chroma.delete_where({"space": space})
            self._clear_dirty(ids)
        return len(ids)

    def flush(self) -> None:
        """Sweep rows left by an interrupted update and bring BM25 up to date (call after a batch).

        Only pages marked dirty are looked at (an update in progress, or killed midway): the sweep never reads
        the whole collection, which fails past ~32,000 rows (SQLite's variable limit) and grows with the wiki."""
        with self._write_lock:
            while True:
                with self._manifest() as db:
                    ids = [r[0] for r in db.execute("SELECT page_id FROM dirty LIMIT ?", (_CHUNK,))]
                if not ids:
                    break
                active = self._active_of(ids)
                with self._using_chroma() as chroma:
                    for pid in ids:
                        current = active.get(pid)
                        chroma.delete_where(
                            {"page_id": pid}
                            if current is None
                            else {"$and": [{"page_id": pid}, {"page_hash": {"$ne": current}}]}
                        )
                self._clear_dirty(ids)
            self.cache.prune()
            self._ensure_bm25()

    # ----- searching -----
    def _ensure_bm25(self) -> None:
        gen = self.generation()
        if self._bm25.generation == gen:
            return
        with self._bm25_lock:
            if self._bm25.generation == gen or (self._bm25.load(gen) and self._page_bm25.load(gen)):
                return
            evidences, pages = TokenCorpus(), TokenCorpus()
            for batch in self._pages_in_order():
                self._add_to_corpora(batch, evidences, pages)
            self._bm25.rebuild(gen, evidences)
            self._page_bm25.rebuild(gen, pages)

    def _add_to_corpora(
        self, batch: list[tuple[str, str, str, str]], evidences: TokenCorpus, pages: TokenCorpus
    ) -> None:
        """Tokenize the active rows of a batch of pages into the evidence corpus, and each page (the title three
        times, then its text: which page is the question about?) into the page corpus."""
        active = {pid: (page_hash, space, title) for pid, page_hash, space, title in batch}
        with self._using_chroma() as chroma:
            rows = chroma.get(where={"page_id": {"$in": list(active)}})
        parts: dict[str, list[tuple[int, str]]] = {pid: [] for pid in active}
        for rid, doc, m in sorted(rows, key=lambda r: r[0]):
            if active[m["page_id"]][0] != m["page_hash"]:
                continue
            evidences.add(rid, m["space"], doc)
            if m["kind"] != "row":  # rows repeat their table's text
                parts[m["page_id"]].append((int(m["position"]), m["text"]))
        for pid, (_hash, space, title) in active.items():
            pages.add(pid, space, " ".join([title] * 3 + [t for _, t in sorted(parts[pid])]))

    def search_lexical(self, query: str, k: int, spaces: Sequence[str] | None = None) -> list[ScoredEvidence]:
        self._ensure_bm25()
        found = self._bm25.search(query, k * 2, spaces)
        active = self._active_of(_page_of(rid) for rid, _s in found)
        pairs = [(rid, s) for rid, s in found if active.get(_page_of(rid)) == _hash_of(rid)][:k]
        by_id: dict[str, tuple[str, dict]] = {}
        if pairs:
            with self._using_chroma() as chroma:
                by_id = {rid: (doc, meta) for rid, doc, meta in chroma.get(ids=[p[0] for p in pairs])}
        return [ScoredEvidence(evidence_from_row(*by_id[rid]), s) for rid, s in pairs if rid in by_id]

    def search_pages(
        self, query: str, k: int, spaces: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Pages as (page id, BM25 score), best first, by their whole text."""
        self._ensure_bm25()
        found = self._page_bm25.search(query, k, spaces)
        active = self._active_of(pid for pid, _s in found)
        return [(pid, s) for pid, s in found if pid in active]

    def search_dense(
        self, vector: np.ndarray, k: int, spaces: Sequence[str] | None = None
    ) -> list[ScoredEvidence]:
        conditions: list[dict[str, Any]] = [{"space": {"$in": list(spaces)}}] if spaces else []
        if self.row_vectors == "table":  # a row's vector is its table's: the table stands for it
            conditions.append({"kind": {"$ne": "row"}})
        where = conditions[0] if len(conditions) == 1 else {"$and": conditions} if conditions else None
        with self._using_chroma() as chroma:
            rows = chroma.query(vector, k * 2, where)
        active = self._active_of(meta["page_id"] for _rid, _sim, _doc, meta in rows)
        hits = [
            ScoredEvidence(evidence_from_row(doc, meta), sim)
            for rid, sim, doc, meta in rows
            if active.get(meta["page_id"]) == meta["page_hash"]
        ]
        return hits[:k]

    def vectors_for(self, embedder: Embedder, evidences: Sequence[Evidence]) -> np.ndarray | None:
        """The stored vectors of these evidences if `embedder` is the index's own (saves Explain embedding
        them again), else None."""
        return self.embeddings_of(evidences) if embedder is self.embedder else None

    def embeddings_of(self, evidences: Sequence[Evidence]) -> np.ndarray:
        """The stored vectors of these evidences (re-embedding any that are not stored)."""
        active = self._active_of(e.page_id for e in evidences)
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
