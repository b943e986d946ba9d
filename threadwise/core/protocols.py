"""Every interface the pipeline depends on, in one place. Adapters outside `core/` (the index, the models, the
connectors) implement them; the stages only ever see these."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from threadwise.core.types import (
    Answer,
    Completion,
    Evidence,
    Page,
    PageFailure,
    PageRef,
    PastTurn,
    Scope,
    ScoredEvidence,
)


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


class EvidenceSearch(Protocol):
    """The index as retrieval sees it: three ranked lookups, each inside a `Scope` (the spaces allowed, the
    pages hidden from the asker): what is out of scope is left out inside the search, never filtered after."""

    def search_lexical(self, query: str, k: int, scope: Scope | None = None) -> list[ScoredEvidence]:
        """BM25 over the contextualized evidence texts."""
        ...

    def search_dense(self, vector: np.ndarray, k: int, scope: Scope | None = None) -> list[ScoredEvidence]:
        """Nearest evidences to a query vector (made by the index's own embedder)."""
        ...

    def search_pages(self, query: str, k: int, scope: Scope | None = None) -> list[tuple[str, float]]:
        """BM25 over whole pages: (page id, score), best first."""
        ...

    def word_share(self, word: str) -> float:
        """The share of the indexed pages whose text holds `word` (0 when none does): a word on many pages
        names no topic of its own."""
        ...


class ChatModel(Protocol):
    """An OpenAI-style chat completion endpoint. Raises `ChatError` with a user-readable message on failure."""

    name: str

    def chat(
        self, messages: list[dict[str, str]], *, temperature: float = 0.0, max_tokens: int | None = None
    ) -> str: ...


@runtime_checkable
class StreamingChat(Protocol):
    """A chat model that can also stream: `on_text` gets the completion's text as it arrives (deltas, in
    order), and the whole completion is returned as by `ChatModel.chat`. `streams` says it can."""

    name: str
    streams: bool

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> str: ...


class ChatError(RuntimeError):
    """The LLM endpoint could not answer (unreachable, wrong key, rate-limited beyond retries, timeout)."""


class ModelServerError(RuntimeError):
    """An embedding or re-rank server could not answer (unreachable, wrong key, rate-limited beyond retries,
    a reply of the wrong shape). The message names the URL, never a credential."""


class QuestionCompleter(Protocol):
    """Turns the latest question of a conversation into a self-contained one. History is oldest first."""

    def complete(self, question: str, history: Sequence[PastTurn]) -> Completion: ...


class Answerer(Protocol):
    """Answers a (self-contained) question from evidences. Must be safe to call from several threads at once."""

    name: str
    deterministic: bool  # True: one counterfactual run per cluster is enough

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer: ...


@runtime_checkable
class StreamsText(Protocol):
    """An answerer that can hand over its answer's text as it is written (`streams_text`); the pipeline
    passes `on_text` to it when the front end wants the text early. Any other answerer answers whole."""

    streams_text: bool

    def answer(
        self,
        question: str,
        evidences: Sequence[Evidence],
        *,
        on_text: Callable[[str], None] | None = None,
    ) -> Answer: ...


class PageSource(Protocol):
    """Where pages come from: a folder of page files, a Confluence site, next other wikis. A listing without
    bodies first (enough to decide scope and what changed), then one page at a time, a failure as a value."""

    def list_pages(self, space: str) -> list[PageRef]: ...

    def get_page(
        self, page_id: str, *, space: str = "", ancestors: Sequence[str] | None = None
    ) -> Page | PageFailure: ...
