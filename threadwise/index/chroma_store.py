"""Dense half of the index: a ChromaDB collection with our own embeddings, in the data folder (the default) or
on a Chroma server (`chroma run`, or Chroma's image) when THREADWISE_CHROMA_URL is set.

Chroma gets `embedding_function=None` and explicit vectors: otherwise it would try to download its own model.
Each row is one evidence version: the row id carries the page's content hash, so a page's new evidence can be
written beside the old before the switch (see `EvidenceIndex`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from threadwise.core.types import Evidence, Scope
from threadwise.index.shared_lock import SharedLock

if TYPE_CHECKING:
    from threadwise.index.manifest import IndexManifest

# chromadb keeps one "system" per folder in a process-wide registry that it fills without a lock: clients
# created by two threads at once race there (KeyError). Every open and close goes through this lock.
_CLIENTS = threading.Lock()
# Candidates HNSW keeps while searching. Chroma's default of 100 gives an approximate top 100-200, so the same
# vectors indexed twice could rank differently past the first few (the graph depends on insertion order) and
# move a dev-split question. At 500 the dense ranking is near-exact (bench/hnsw_search.py: recall and cost).
EF_SEARCH = 500
# a query's row: id, cosine similarity, document, metadata
Row = tuple[str, float, str | None, dict[str, Any]]


def row_id(evidence: Evidence, page_hash: str) -> str:
    return f"{evidence.id}@{page_hash}"


def evidence_metadata(evidence: Evidence, page_hash: str) -> dict[str, Any]:
    """A row's metadata: the keys the index filters on (page, space, kind, page version), and the evidence's
    stored form as one JSON string. No document: Chroma indexes a document for full-text search and every metadata
    key on its own, which made a row cost about twice as much to write (bench/chroma_rows.py); the index
    searches its words with BM25, not with Chroma."""
    return {
        "page_id": evidence.page_id,
        "space": evidence.space,
        "kind": evidence.kind,
        "page_hash": page_hash,
        "evidence": json.dumps(evidence.to_dict(), ensure_ascii=False),
    }


def evidence_from_row(document: str | None, meta: dict[str, Any]) -> Evidence:
    """A row back as its evidence: today's form, or the older one (each field a metadata key, the context
    text as the row's document), which an index written before keeps until its pages change."""
    if "evidence" in meta:
        return Evidence.from_dict(json.loads(meta["evidence"]))
    return Evidence.from_dict({**meta, "context_text": document})


def scope_where(scope: Scope, row_vectors: str = "own") -> dict[str, Any] | None:
    """Chroma's `where` for a scope: its spaces, without its hidden pages, and no table rows where a row's vector
    is its table's ("table": the table stands for it)."""
    conditions: list[dict[str, Any]] = []
    if scope.spaces is not None:
        conditions.append({"space": {"$in": list(scope.spaces)}})
    if scope.hidden_pages:
        conditions.append({"page_id": {"$nin": sorted(scope.hidden_pages)}})
    if row_vectors == "table":
        conditions.append({"kind": {"$ne": "row"}})
    return conditions[0] if len(conditions) == 1 else {"$and": conditions} if conditions else None


@dataclass(frozen=True)
class ChromaServer:
    """Where a Chroma server listens (THREADWISE_CHROMA_URL, e.g. http://chroma:8000) and its optional token
    (THREADWISE_CHROMA_TOKEN), sent as `Authorization: Bearer` and `X-Chroma-Token`, Chroma's two token headers."""

    url: str
    token: str | None = field(default=None, repr=False)


def chroma_client(directory: Path, server: ChromaServer | None) -> Any:
    """A persistent client over `directory`, or an HTTP client of `server`; fails naming the URL."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False, allow_reset=False)
    if server is None:
        directory.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(directory), settings=settings)
    parts = urlsplit(server.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"THREADWISE_CHROMA_URL={server.url!r} is not an http(s)://host:port URL")
    headers = (
        {"Authorization": f"Bearer {server.token}", "X-Chroma-Token": server.token} if server.token else {}
    )
    ssl = parts.scheme == "https"
    try:
        return chromadb.HttpClient(
            host=parts.hostname,
            port=parts.port or (443 if ssl else 8000),
            ssl=ssl,
            headers=headers,
            settings=settings,
        )
    except Exception as err:  # chromadb raises ValueError, httpx errors or its own, depending on the failure
        where = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        raise ConnectionError(
            f"Cannot use the Chroma server at {where} (THREADWISE_CHROMA_URL): {err}. Is `chroma run` up, "
            "and THREADWISE_CHROMA_TOKEN right?"
        ) from err


class ChromaStore:
    """A thin adapter over one Chroma collection (cosine space), local or on a server."""

    def __init__(self, *, directory: Path, collection: str, server: ChromaServer | None = None) -> None:
        self._directory = directory
        self._name = collection
        self._server = server
        self._open()

    def _open(self) -> None:
        with _CLIENTS:
            self._client = chroma_client(self._directory, self._server)
            self._collection = self._client.get_or_create_collection(
                name=self._name,
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}},
            )
            # a collection made before keeps its settings; set before its first query, or the vector segment
            # this process loads keeps the old value
            hnsw = self._collection.configuration.get("hnsw") or {}
            if hnsw and hnsw.get("ef_search", 0) < EF_SEARCH:
                self._collection.modify(configuration={"hnsw": {"ef_search": EF_SEARCH}})

    def reopen(self) -> None:
        """Close the client and open it again: it then sees what other processes wrote since it was opened.

        The caller makes sure nothing else uses this store meanwhile (EvidenceIndex holds it exclusively).
        A Chroma server is shared by every process already: nothing to reopen.
        """
        if self._server is not None:
            return
        with _CLIENTS:
            self._client.close()
        self._open()

    def add(self, evidences: Sequence[Evidence], vectors: np.ndarray, page_hash: str) -> None:
        self.add_pages([(evidences, page_hash)], vectors)

    def add_pages(self, pages: Sequence[tuple[Sequence[Evidence], str]], vectors: np.ndarray) -> None:
        """The rows of several pages (evidences, content hash), with their vectors in order, in as few calls
        as Chroma takes: each call costs far more than a row."""
        rows = [(e, page_hash) for evidences, page_hash in pages for e in evidences]
        batch = 2000
        for start in range(0, len(rows), batch):
            part = rows[start : start + batch]
            self._collection.upsert(
                ids=[row_id(e, page_hash) for e, page_hash in part],
                embeddings=vectors[start : start + batch].tolist(),
                metadatas=[evidence_metadata(e, page_hash) for e, page_hash in part],
            )

    def delete_where(self, where: dict[str, Any]) -> None:
        self._collection.delete(where=where)

    def query(self, vector: np.ndarray, k: int, where: dict[str, Any] | None) -> list[Row]:
        """The `k` nearest rows (fewer if there are not so many) as (row id, cosine similarity, document,
        metadata), best first (the document is None for rows written since rows keep their evidence in the
        metadata)."""
        res = self._collection.query(
            query_embeddings=[vector.tolist()],
            n_results=k,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        ids = res["ids"][0]
        docs = (res["documents"] or [[]])[0]
        metas = (res["metadatas"] or [[]])[0]
        dists = (res["distances"] or [[]])[0]
        return [
            (i, 1.0 - float(d), doc, dict(m)) for i, d, doc, m in zip(ids, dists, docs, metas, strict=True)
        ]

    def get(
        self, ids: Sequence[str] | None = None, where: dict[str, Any] | None = None
    ) -> list[tuple[str, str | None, dict]]:
        """Rows as (row id, document or None, metadata)."""
        res = self._collection.get(
            ids=list(ids) if ids is not None else None, where=where, include=["documents", "metadatas"]
        )
        docs = res["documents"] or []
        metas = res["metadatas"] or []
        return [(i, d, dict(m)) for i, d, m in zip(res["ids"], docs, metas, strict=True)]

    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        res = self._collection.get(ids=list(ids), include=["embeddings"])
        embs = res["embeddings"] if res["embeddings"] is not None else []
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(res["ids"], embs, strict=True)}

    def count(self) -> int:
        return int(self._collection.count())


def nearest_in_scope(
    chroma: ChromaStore,
    vector: np.ndarray,
    n: int,
    scope: Scope,
    manifest: IndexManifest,
    *,
    row_vectors: str = "own",
) -> list[Row]:
    """The `n` rows nearest `vector` that `scope` allows.

    Chroma's metadata filter costs many times the search itself (bench/hnsw_search.py), and a `per-user` scope
    lists every space its asker may read, often all of them. So unless the scope leaves an indexed space out,
    the search runs unfiltered, deeper by the rows of the pages it hides (the manifest counts them), and the
    scope is applied here. Chroma filters when the hidden pages hold many rows, or when fewer than `n` rows
    are left (a hidden page being rewritten has two versions' rows). Either way every row is checked against
    the scope, so a space indexed meanwhile cannot slip in."""

    def allowed(row: Row) -> bool:
        return scope.allows(row[3]["space"], row[3]["page_id"])

    filtered = scope
    if scope.spaces is None or set(scope.spaces).issuperset(manifest.spaces()):
        hidden_rows = manifest.count_of_pages(scope.hidden_pages) if scope.hidden_pages else 0
        if row_vectors == "own" and hidden_rows <= 3 * n:
            depth = n + hidden_rows
            rows = chroma.query(vector, depth, None)
            kept = [row for row in rows if allowed(row)]
            if len(kept) >= n or len(rows) < depth:  # the n best allowed, or every row there is
                return kept[:n]
        filtered = Scope.of(None, scope.hidden_pages)  # listing every space filters nothing, at a cost
    return [row for row in chroma.query(vector, n, scope_where(filtered, row_vectors)) if allowed(row)]


class CurrentChroma:
    """One Chroma collection, kept current with the index generation (`generation`, read from the manifest).

    The client is opened once (first use or warm-up), by one thread; every use holds `_use` shared, and a
    reopen holds it exclusively. `_seen` is the generation the open client is known to have seen: another
    process (a CLI sync beside `serve`) moving it on makes the next use reopen the client, whose in-memory vector
    index would otherwise stay as it was when it was opened.
    """

    def __init__(
        self, *, directory: Path, collection: str, server: ChromaServer | None, generation: Callable[[], int]
    ) -> None:
        self._directory, self._collection, self._server = directory, collection, server
        self._generation = generation
        self._opening = threading.Lock()
        self._use = SharedLock()
        self._store: ChromaStore | None = None
        self._seen = -1

    @property
    def store(self) -> ChromaStore:
        """The collection, opened on first use by exactly one thread."""
        if self._store is None:
            with self._opening:
                if self._store is None:
                    generation = self._generation()
                    self._store = ChromaStore(
                        directory=self._directory, collection=self._collection, server=self._server
                    )
                    self._seen = generation
        return self._store

    @contextmanager
    def using(self) -> Iterator[ChromaStore]:
        """The collection, reopened first if another process moved the generation on since it was opened."""
        store = self.store
        if self._generation() != self._seen:
            with self._use.exclusive():
                generation = self._generation()
                if generation != self._seen:
                    store.reopen()
                    self._seen = generation
        with self._use.shared():
            yield store

    def saw(self, generation: int) -> None:
        """This process made the change that moved the generation to `generation` (holding `using()`): its
        client has seen it."""
        self._seen = generation
