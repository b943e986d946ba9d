"""A content-addressed embedding cache: one vector per distinct text a model has embedded.

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
from pathlib import Path

import numpy as np

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
