"""The small interfaces the pipeline depends on. Adapters (Chroma, bm25s, OpenAI, models) implement them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized vectors. Loads its model lazily in `warm_up` (or on first use)."""

    name: str
    dim: int
    # texts longer than this are truncated by the model: the caller keeps the important part first
    max_tokens: int

    def warm_up(self) -> None: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return a (len(texts), dim) float32 array of unit vectors (passages, or any texts to compare)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Return the (dim,) unit vector of a search query. Retrieval-trained models (E5) mark queries
        apart from passages; symmetric ones embed a query like any other text."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant."""

    name: str

    def warm_up(self) -> None: ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


class ChatModel(Protocol):
    """An OpenAI-style chat completion endpoint. Raises `ChatError` with a user-readable message on failure."""

    name: str

    def chat(
        self, messages: list[dict[str, str]], *, temperature: float = 0.0, max_tokens: int | None = None
    ) -> str: ...


class ChatError(RuntimeError):
    """The LLM endpoint could not answer (unreachable, wrong key, rate-limited beyond retries, timeout)."""
