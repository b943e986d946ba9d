"""The index manifest: which pages a collection holds, at which content hash, and the collection's generation.

It lives in the shared database (THREADWISE_DATABASE_URL: SQLite by default, PostgreSQL for replicas), so every
process over the same database and Chroma answers from the same state. A page switches to its new hash and the
generation moves on in one transaction: that commit is the moment a change takes effect (see `EvidenceIndex`).
Reads are lookups by key or keyset pages of `batch` rows: nothing reads the whole manifest at once.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Engine, Table, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from threadwise.db.index_tables import IndexCollectionRow, IndexDirtyRow, IndexPageRow

_COLLECTIONS = cast(Table, IndexCollectionRow.__table__)
_PAGES = cast(Table, IndexPageRow.__table__)
_DIRTY = cast(Table, IndexDirtyRow.__table__)
_CHUNK = 500  # ids per statement: far below SQLite's variable limit


@dataclass(frozen=True)
class PageState:
    """What the index knows about an indexed page."""

    page_id: str
    space: str
    version: int
    content_hash: str
    title: str
    evidence_count: int


class IndexManifest:
    """One collection's rows in the manifest tables (db/index_tables.py). Safe to share between threads."""

    def __init__(self, *, engine: Engine, collection: str) -> None:
        self.engine = engine
        self.collection = collection

    @classmethod
    def in_folder(cls, directory: Path, collection: str) -> IndexManifest:
        """A manifest in a SQLite database of its own in `directory`: for an index used without the app's
        database (eval, benchmarks, tests). The app hands the index the shared one (wiring.py)."""
        from threadwise.db.base import make_engine
        from threadwise.db.schema import upgrade

        directory.mkdir(parents=True, exist_ok=True)
        engine = make_engine(f"sqlite:///{directory / 'manifest.sqlite'}")
        upgrade(engine)
        return cls(engine=engine, collection=collection)

    def _mine(self, table: Any) -> Any:
        return table.c.collection == self.collection

    # ----- the collection -----
    def embedder(self) -> str | None:
        """The embedder that built this collection; None before its first use."""
        with self.engine.connect() as conn:
            return conn.execute(select(_COLLECTIONS.c.embedder).where(self._mine(_COLLECTIONS))).scalar()

    def create(self, embedder: str) -> None:
        """Record the collection as built by `embedder`, unless another process (a replica) just did."""
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(_COLLECTIONS).values(collection=self.collection, embedder=embedder, generation=0)
                )
        except IntegrityError:
            pass

    def generation(self) -> int:
        with self.engine.connect() as conn:
            found = conn.execute(select(_COLLECTIONS.c.generation).where(self._mine(_COLLECTIONS))).scalar()
        return int(found or 0)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Held while this process writes the collection (inside its folder's lock file). On PostgreSQL the
        writers may be replicas on other machines, which no lock file reaches: a session advisory lock keyed by
        the collection keeps them apart. SQLite is one machine's, where the lock file does it."""
        if self.engine.dialect.name != "postgresql":
            yield
            return
        key = int.from_bytes(
            hashlib.blake2b(self.collection.encode(), digest_size=8).digest(), "big", signed=True
        )
        with self.engine.connect() as conn:
            conn.execute(select(func.pg_advisory_lock(key)))
            try:
                yield
            finally:
                conn.execute(select(func.pg_advisory_unlock(key)))

    # ----- reading pages -----
    def versions_of(self, page_ids: Iterable[str]) -> dict[str, tuple[int, str]]:
        """(version, content hash) of each of these pages that is indexed (lookups by key, in chunks)."""
        ids = list(dict.fromkeys(page_ids))
        out: dict[str, tuple[int, str]] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), _CHUNK):
                rows = conn.execute(
                    select(_PAGES.c.page_id, _PAGES.c.version, _PAGES.c.content_hash).where(
                        self._mine(_PAGES), _PAGES.c.page_id.in_(ids[start : start + _CHUNK])
                    )
                )
                out.update({pid: (version, page_hash) for pid, version, page_hash in rows})
        return out

    def hashes_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """The active content hash of each of these pages that is indexed."""
        return {pid: page_hash for pid, (_v, page_hash) in self.versions_of(page_ids).items()}

    def states(self, space: str | None = None, batch: int = 1000) -> Iterator[list[PageState]]:
        """Every indexed page (of `space`, if given), `batch` at a time in page id order (keyset paging)."""
        after = ""
        while True:
            query = select(*(_PAGES.c[f] for f in PageState.__dataclass_fields__)).where(
                self._mine(_PAGES), _PAGES.c.page_id > after
            )
            if space is not None:
                query = query.where(_PAGES.c.space == space)
            with self.engine.connect() as conn:
                rows = [PageState(*r) for r in conn.execute(query.order_by(_PAGES.c.page_id).limit(batch))]
            if not rows:
                return
            yield rows
            after = rows[-1].page_id

    def count(self, space: str | None = None) -> int:
        """Number of evidences of the indexed pages (one aggregate, not every row)."""
        with self.engine.connect() as conn:
            return self._evidences(conn, *([] if space is None else [_PAGES.c.space == space]))

    def count_of_pages(self, page_ids: Iterable[str]) -> int:
        """Number of evidences of these pages, of those indexed (one aggregate per chunk of ids)."""
        ids = list(dict.fromkeys(page_ids))
        with self.engine.connect() as conn:
            return sum(
                self._evidences(conn, _PAGES.c.page_id.in_(ids[start : start + _CHUNK]))
                for start in range(0, len(ids), _CHUNK)
            )

    def _evidences(self, conn: Any, *conditions: Any) -> int:
        query = select(func.coalesce(func.sum(_PAGES.c.evidence_count), 0)).where(
            self._mine(_PAGES), *conditions
        )
        return int(conn.execute(query).scalar_one())

    def spaces(self) -> list[str]:
        query = select(_PAGES.c.space).distinct().where(self._mine(_PAGES)).order_by(_PAGES.c.space)
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    # ----- dirty marks: pages whose update is in progress, or was killed midway -----
    def mark_dirty(self, page_ids: Sequence[str]) -> None:
        with self.engine.begin() as conn:
            for start in range(0, len(page_ids), _CHUNK):
                chunk = list(dict.fromkeys(page_ids[start : start + _CHUNK]))
                have = set(
                    conn.execute(
                        select(_DIRTY.c.page_id).where(self._mine(_DIRTY), _DIRTY.c.page_id.in_(chunk))
                    ).scalars()
                )
                new = [{"collection": self.collection, "page_id": p} for p in chunk if p not in have]
                if new:
                    conn.execute(insert(_DIRTY), new)

    def clear_dirty(self, page_ids: Sequence[str]) -> None:
        with self.engine.begin() as conn:
            for start in range(0, len(page_ids), _CHUNK):
                chunk = list(page_ids[start : start + _CHUNK])
                conn.execute(delete(_DIRTY).where(self._mine(_DIRTY), _DIRTY.c.page_id.in_(chunk)))

    def dirty(self, limit: int = _CHUNK) -> list[str]:
        with self.engine.connect() as conn:
            query = select(_DIRTY.c.page_id).where(self._mine(_DIRTY)).order_by(_DIRTY.c.page_id).limit(limit)
            return list(conn.execute(query).scalars())

    # ----- switches: one transaction each, moving the generation on -----
    def put(self, state: PageState) -> int:
        """The page is now indexed as `state`. Returns the new generation."""
        row = {"collection": self.collection, **state.__dict__}
        return self._switch(
            delete(_PAGES).where(self._mine(_PAGES), _PAGES.c.page_id == state.page_id),
            insert(_PAGES).values(row),
        )

    def remove_page(self, page_id: str) -> int:
        return self._switch(delete(_PAGES).where(self._mine(_PAGES), _PAGES.c.page_id == page_id))

    def remove_space(self, space: str) -> int:
        return self._switch(delete(_PAGES).where(self._mine(_PAGES), _PAGES.c.space == space))

    def _switch(self, *statements: Any) -> int:
        mine = self._mine(_COLLECTIONS)
        with self.engine.begin() as conn:
            # the generation's row first: on PostgreSQL its row lock orders concurrent switches
            conn.execute(update(_COLLECTIONS).where(mine).values(generation=_COLLECTIONS.c.generation + 1))
            for statement in statements:
                conn.execute(statement)
            return int(conn.execute(select(_COLLECTIONS.c.generation).where(mine)).scalar_one())

    # ----- the sqlite3 file of releases before the shared database -----
    def migrate_from(self, old: Path) -> bool:
        """Read an old release's manifest file (`<collection>.manifest.sqlite`) into the tables once, in one
        transaction, then rename it `….migrated`. Returns whether it read it. Call it holding the write lock."""
        if not old.exists():
            return False
        migrating = self.embedder() is None
        if migrating:
            source = sqlite3.connect(old)
            try:
                meta = dict(source.execute("SELECT key, value FROM meta"))
                with self.engine.begin() as conn:
                    conn.execute(
                        insert(_COLLECTIONS).values(
                            collection=self.collection,
                            embedder=meta["embedder"],
                            generation=int(meta.get("generation", 0)),
                        )
                    )
                    for table, sql in (
                        (
                            _PAGES,
                            "SELECT page_id, space, version, content_hash, title, evidence_count FROM pages",
                        ),
                        (_DIRTY, "SELECT page_id FROM dirty"),
                    ):
                        rows = source.execute(sql)
                        while batch := rows.fetchmany(_CHUNK):
                            names = [d[0] for d in rows.description]
                            conn.execute(
                                insert(table),
                                [
                                    {"collection": self.collection, **dict(zip(names, r, strict=True))}
                                    for r in batch
                                ],
                            )
            finally:
                source.close()
        # migrated now, or by a process killed before this rename: the file is kept, out of the way
        for suffix in ("", "-wal", "-shm"):
            part = old.with_name(old.name + suffix)
            if part.exists():
                part.rename(old.with_name(old.name + ".migrated" + suffix))
        return migrating
