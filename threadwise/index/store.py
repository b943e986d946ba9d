"""The evidence index: dense (Chroma) + lexical (BM25), updated one page at a time, atomically.

How a page update stays atomic across the two stores:
1. the page's new evidence rows are written to Chroma *beside* the old ones (row ids carry the content hash);
2. one SQLite transaction in the manifest switches the page to the new hash and bumps the index generation;
3. the old rows are deleted.
Queries only return rows whose (page, hash) the manifest names, so a process killed between any two steps
answers from the previous state, and the next update or `flush()` sweeps the leftovers. BM25 is derived from
the active Chroma rows and rebuilt when the generation has moved on.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from threadwise.core.protocols import Embedder
from threadwise.core.types import Evidence, Page, ScoredEvidence
from threadwise.index.bm25_store import BM25Store
from threadwise.index.chroma_store import ChromaServer, ChromaStore, evidence_from_row, row_id
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
"""


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
    ) -> None:
        self.directory = Path(directory)
        self.embedder = embedder
        self.collection = collection
        # vectors on a Chroma server instead of in the folder; the manifest and BM25 stay in the folder
        self.chroma_server = chroma_server
        # Dense vectors see the first `embed_chars` of the contextualized text (title, heading, then the evidence):
        # past that an averaging encoder only dilutes, and a truncating one cuts anyway. BM25 sees all of it.
        self.embed_chars = embed_chars
        self.directory.mkdir(parents=True, exist_ok=True)
        self._manifest_path = self.directory / f"{collection}.manifest.sqlite"
        # One writer at a time: threads of this process, and other processes on the same folder (a CLI sync
        # while the bot's scheduler syncs another space).
        self._write_lock = _WriteLock(self.directory / f"{collection}.write.lock")
        self._bm25_lock = threading.Lock()
        self._chroma: ChromaStore | None = None
        self._bm25 = BM25Store(directory=self.directory / f"{collection}.bm25")
        self._page_bm25 = BM25Store(directory=self.directory / f"{collection}.pages.bm25")
        self._active: dict[str, str] = {}
        self._active_generation = -1
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
                    "away, then run `threadwise sync --full` (or `threadwise index DIR`)"
                )
        self.embedded_pages = 0  # pages embedded by this instance (for reports and tests)

    # ----- plumbing -----
    @contextmanager
    def _manifest(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self._manifest_path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            yield db
        finally:
            db.close()

    @property
    def chroma(self) -> ChromaStore:
        if self._chroma is None:
            self._chroma = ChromaStore(
                directory=self.directory / "chroma", collection=self.collection, server=self.chroma_server
            )
        return self._chroma

    def generation(self) -> int:
        with self._manifest() as db:
            return int(db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])

    def _active_hashes(self) -> dict[str, str]:
        gen = self.generation()
        if gen != self._active_generation:
            with self._manifest() as db:
                self._active = dict(db.execute("SELECT page_id, content_hash FROM pages").fetchall())
            self._active_generation = gen
        return self._active

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
        with self._manifest() as db:
            row = db.execute(
                "SELECT version, content_hash FROM pages WHERE page_id = ?", (page.id,)
            ).fetchone()
        return row is not None and row[0] == page.version and row[1] == page.content_hash

    def put_page(self, page: Page, evidences: Sequence[Evidence]) -> bool:
        """Replace the page's evidence atomically. Returns False, embedding nothing, when it is unchanged."""
        if self.is_current(page):
            return False
        vectors = self.embedder.embed([e.context_text[: self.embed_chars] for e in evidences])
        with self._write_lock:
            self.chroma.add(evidences, vectors, page.content_hash)
            self._switch(
                "INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?)",
                (page.id, page.space, page.version, page.content_hash, page.title, len(evidences)),
            )
            self.chroma.delete_where(
                {"$and": [{"page_id": page.id}, {"page_hash": {"$ne": page.content_hash}}]}
            )
        self.embedded_pages += 1
        return True

    def _switch(self, sql: str, args: tuple[Any, ...]) -> None:
        """Change the manifest and move the generation on, in one transaction: the moment a change takes effect."""
        with self._manifest() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute(sql, args)
            db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
            db.execute("COMMIT")

    def delete_page(self, page_id: str) -> None:
        with self._write_lock:
            self._switch("DELETE FROM pages WHERE page_id = ?", (page_id,))
            self.chroma.delete_where({"page_id": page_id})

    def delete_space(self, space: str) -> int:
        """Remove all of a space's pages; returns how many pages went."""
        ids = list(self.page_states(space))
        with self._write_lock:
            self._switch("DELETE FROM pages WHERE space = ?", (space,))
            self.chroma.delete_where({"space": space})
        return len(ids)

    def flush(self) -> None:
        """Sweep rows left by an interrupted update and bring BM25 up to date (call after a batch)."""
        with self._write_lock:
            active = self._active_hashes()
            stale = [rid for rid, _doc, m in self.chroma.get() if active.get(m["page_id"]) != m["page_hash"]]
            if stale:
                self.chroma.delete_ids(stale)
            self._ensure_bm25()

    # ----- searching -----
    def _ensure_bm25(self) -> None:
        gen = self.generation()
        if self._bm25.generation == gen:
            return
        with self._bm25_lock:
            if self._bm25.generation == gen or (self._bm25.load(gen) and self._page_bm25.load(gen)):
                return
            active = self._active_hashes()
            rows = [
                (rid, doc, m)
                for rid, doc, m in self.chroma.get()
                if active.get(m["page_id"]) == m["page_hash"]
            ]
            self._bm25.rebuild(gen, [r[0] for r in rows], [r[1] for r in rows], [r[2]["space"] for r in rows])
            self._rebuild_page_bm25(gen, rows)

    def _rebuild_page_bm25(self, gen: int, rows: list[tuple[str, str, dict]]) -> None:
        """A page-level BM25 (the title three times, then the page's text): which page is the question about?"""
        pages: dict[str, tuple[str, str, list[tuple[int, str]]]] = {}
        for _rid, _doc, m in rows:
            _title, _space, parts = pages.setdefault(m["page_id"], (m["title"], m["space"], []))
            if m["kind"] != "row":  # rows repeat their table's text
                parts.append((int(m["position"]), m["text"]))
        ids = list(pages)
        texts = [" ".join([pages[p][0]] * 3 + [t for _, t in sorted(pages[p][2])]) for p in ids]
        self._page_bm25.rebuild(gen, ids, texts, [pages[p][1] for p in ids])

    def search_lexical(self, query: str, k: int, spaces: Sequence[str] | None = None) -> list[ScoredEvidence]:
        self._ensure_bm25()
        active = self._active_hashes()
        pairs = [
            (rid, s) for rid, s in self._bm25.search(query, k * 2, spaces) if self._is_active(rid, active)
        ][:k]
        by_id = (
            {rid: (doc, meta) for rid, doc, meta in self.chroma.get(ids=[p[0] for p in pairs])}
            if pairs
            else {}
        )
        return [ScoredEvidence(evidence_from_row(*by_id[rid]), s) for rid, s in pairs if rid in by_id]

    def search_pages(
        self, query: str, k: int, spaces: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Pages as (page id, BM25 score), best first, by their whole text."""
        self._ensure_bm25()
        active = self._active_hashes()
        return [(pid, s) for pid, s in self._page_bm25.search(query, k, spaces) if pid in active]

    def search_dense(
        self, vector: np.ndarray, k: int, spaces: Sequence[str] | None = None
    ) -> list[ScoredEvidence]:
        active = self._active_hashes()
        where = {"space": {"$in": list(spaces)}} if spaces else None
        rows = self.chroma.query(vector, k * 2, where)
        hits = [
            ScoredEvidence(evidence_from_row(doc, meta), sim)
            for rid, sim, doc, meta in rows
            if active.get(meta["page_id"]) == meta["page_hash"]
        ]
        return hits[:k]

    @staticmethod
    def _is_active(rid: str, active: dict[str, str]) -> bool:
        eid, _, page_hash = rid.rpartition("@")
        page_id = eid.rpartition(":")[0]
        return active.get(page_id) == page_hash

    def vectors_for(self, embedder: Embedder, evidences: Sequence[Evidence]) -> np.ndarray | None:
        """The stored vectors of these evidences if `embedder` is the index's own (saves Explain embedding
        them again), else None."""
        return self.embeddings_of(evidences) if embedder is self.embedder else None

    def embeddings_of(self, evidences: Sequence[Evidence]) -> np.ndarray:
        """The stored vectors of these evidences (re-embedding any that are not stored)."""
        active = self._active_hashes()
        ids = [row_id(e, active.get(e.page_id, "")) for e in evidences]
        stored = self.chroma.get_embeddings(ids) if ids else {}
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
