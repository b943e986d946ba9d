"""Dense half of the index: a persistent ChromaDB collection with our own embeddings.

Chroma gets `embedding_function=None` and explicit vectors: otherwise it would try to download its own model.
Each row is one evidence version: the row id carries the page's content hash, so a page's new evidence can be
written beside the old before the switch (see `EvidenceIndex`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from threadwise.core.types import Evidence


def row_id(evidence: Evidence, page_hash: str) -> str:
    return f"{evidence.id}@{page_hash}"


def evidence_metadata(evidence: Evidence, page_hash: str) -> dict[str, Any]:
    """A row's metadata: the evidence's stored form, its context text kept once, as the row's document."""
    meta: dict[str, Any] = evidence.to_dict()
    del meta["context_text"]
    meta["page_hash"] = page_hash
    return meta


def evidence_from_row(document: str, meta: dict[str, Any]) -> Evidence:
    return Evidence.from_dict({**meta, "context_text": document})


class ChromaStore:
    """A thin adapter over one persistent Chroma collection (cosine space)."""

    def __init__(self, *, directory: Path, collection: str) -> None:
        import chromadb
        from chromadb.config import Settings

        directory.mkdir(parents=True, exist_ok=True)
        self._client = chromadb.PersistentClient(
            path=str(directory), settings=Settings(anonymized_telemetry=False, allow_reset=False)
        )
        self._collection = self._client.get_or_create_collection(
            name=collection, embedding_function=None, metadata={"hnsw:space": "cosine"}
        )

    def add(self, evidences: Sequence[Evidence], vectors: np.ndarray, page_hash: str) -> None:
        if not evidences:
            return
        batch = 2000
        for start in range(0, len(evidences), batch):
            part = evidences[start : start + batch]
            self._collection.upsert(
                ids=[row_id(e, page_hash) for e in part],
                embeddings=vectors[start : start + batch].tolist(),
                documents=[e.context_text for e in part],
                metadatas=[evidence_metadata(e, page_hash) for e in part],
            )

    def delete_where(self, where: dict[str, Any]) -> None:
        self._collection.delete(where=where)

    def delete_ids(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), 2000):
            self._collection.delete(ids=list(ids[start : start + 2000]))

    def query(
        self, vector: np.ndarray, k: int, where: dict[str, Any] | None
    ) -> list[tuple[str, float, str, dict]]:
        """Nearest rows as (row id, cosine similarity, document, metadata), best first."""
        total = self._collection.count()
        if total == 0:
            return []
        res = self._collection.query(
            query_embeddings=[vector.tolist()],
            n_results=min(k, total),
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
    ) -> list[tuple[str, str, dict]]:
        """Rows as (row id, document, metadata)."""
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
