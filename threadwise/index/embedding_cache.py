"""A content-addressed embedding cache (one vector per distinct text a model has embedded), and the road from
evidences to their dense vectors through it.

Identical evidence texts (copied pages, drafts, repeated boilerplate, the unchanged evidences of an edited page,
a page indexed again after it was deleted, an eval collection that differs from another only in its name) are
embedded once. Keys are a hash of the model's fingerprint (its name and every setting that changes a vector)
and the text, so two models never share a vector. Lookups go by key in chunks: nothing reads the whole table.
Entries nobody used for `keep_days` are pruned (`prune`), so the file follows the wiki instead of its history.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from threadwise.core.protocols import Embedder
from threadwise.core.types import Evidence

RowVectors = Literal["own", "table"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL, used INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used);
"""
_CHUNK = 500  # keys per statement: far below SQLite's variable limit


def _today() -> int:
    return int(time.time() // 86400)


class EmbeddingCache:
    """Vectors by (model fingerprint, text) in one SQLite file; safe across threads and processes."""

    def __init__(self, *, path: Path, keep_days: int = 90) -> None:
        self.path = Path(path)
        self.keep_days = keep_days
        with self._db() as db:
            db.executescript(_SCHEMA)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            yield db
        finally:
            db.close()

    @staticmethod
    def key(fingerprint: str, text: str) -> bytes:
        return hashlib.blake2b(f"{fingerprint}\x00{text}".encode(), digest_size=20).digest()

    def get(self, keys: Sequence[bytes], dim: int) -> dict[bytes, np.ndarray]:
        """The stored vectors among `keys` (marks them used today)."""
        found: dict[bytes, np.ndarray] = {}
        today = _today()
        with self._db() as db:
            for start in range(0, len(keys), _CHUNK):
                chunk = list(keys[start : start + _CHUNK])
                marks = ",".join("?" * len(chunk))
                rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk).fetchall()
                for key, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape[0] == dim:
                        found[key] = vector
                db.execute(
                    f"UPDATE vectors SET used = ? WHERE used < ? AND key IN ({marks})", [today, today, *chunk]
                )
        return found

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        today = _today()
        rows = [
            (k, np.asarray(v, dtype=np.float32).tobytes(), today) for k, v in zip(keys, vectors, strict=True)
        ]
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            db.execute("COMMIT")

    def prune(self) -> int:
        """Forget vectors nobody used for `keep_days`; returns how many went."""
        with self._db() as db:
            cur = db.execute("DELETE FROM vectors WHERE used < ?", (_today() - self.keep_days,))
            return int(cur.rowcount)

    def size(self) -> int:
        with self._db() as db:
            return int(db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])


@dataclass
class EmbedCounts:
    """Where the vectors of the evidences written came from (for reports and the benchmarks)."""

    evidences: int = 0  # evidences written
    embedded: int = 0  # texts the model embedded
    cached: int = 0  # vectors found in the embedding cache (or repeated within a batch)
    shared: int = 0  # table rows that took their table's vector

    def add(self, other: EmbedCounts) -> None:
        self.evidences += other.evidences
        self.embedded += other.embedded
        self.cached += other.cached
        self.shared += other.shared


def evidence_vectors(
    evidences: Sequence[Evidence],
    *,
    embedder: Embedder,
    cache: EmbeddingCache,
    embed_chars: int,
    row_vectors: RowVectors = "own",
) -> tuple[np.ndarray, EmbedCounts]:
    """Dense vectors of evidences (their first `embed_chars` contextualized characters, of which the model may
    read less: `passage_text`): from `cache` where the model read the same text before, rows from their table
    when `row_vectors` is "table", the rest in one call to the embedder (each distinct text once), which then
    go into the cache."""
    tables = {(e.page_id, e.table_no): i for i, e in enumerate(evidences) if e.kind == "table"}
    shared = {
        i: tables[(e.page_id, e.table_no)]
        for i, e in enumerate(evidences)
        if row_vectors == "table" and e.kind == "row" and (e.page_id, e.table_no) in tables
    }
    own = [i for i in range(len(evidences)) if i not in shared]
    fingerprint = getattr(embedder, "fingerprint", embedder.name)
    seen = getattr(embedder, "passage_text", lambda text: text)  # what the model reads of a text
    texts = [seen(evidences[i].context_text[:embed_chars]) for i in own]
    keys = [EmbeddingCache.key(fingerprint, t) for t in texts]
    found = cache.get(list(dict.fromkeys(keys)), embedder.dim)
    missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
    if missing:
        fresh = embedder.embed(list(missing.values()))
        cache.put(list(missing), fresh)
        found.update(zip(missing, fresh, strict=True))
    vectors: dict[int, np.ndarray] = {i: found[k] for i, k in zip(own, keys, strict=True)}
    vectors.update({i: vectors[table] for i, table in shared.items()})
    dim = embedder.dim  # known for sure only once the model is loaded (BGE-M3 reads it from the model)
    out = np.stack([vectors[i] for i in range(len(evidences))]) if evidences else np.zeros((0, dim))
    out = out.astype(np.float32)
    counts = EmbedCounts(len(evidences), len(missing), len(own) - len(missing), len(shared))
    return out, counts
