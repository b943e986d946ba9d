"""`ServerEmbedder`: embeddings from an OpenAI-compatible `/v1/embeddings` endpoint.

OpenAI, Azure OpenAI's v1 API, vLLM, Ollama, Text Embeddings Inference, Infinity and LiteLLM all speak it, so a
company can embed on its GPUs (or buy embeddings) instead of on the bot's CPU. Texts go in batches of
`batch_size`, at most `concurrency` requests in flight from this process; see `model_server` for retries.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from threadwise.core.protocols import ModelServerError
from threadwise.models.embedders import _normalize, server_embedder_name
from threadwise.models.model_server import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, ModelServer, batches


class ServerEmbedder:
    """An `Embedder` whose model runs behind an OpenAI-compatible embeddings endpoint.

    Asymmetric retrieval models (E5: "query: " / "passage: "; BGE: an instruction before queries) want a prefix
    the server does not add: `query_prefix` and `passage_prefix` are put before the texts here. With a prefix,
    the embedder says it is not symmetric, and Explain compares texts with USE instead.
    `dimensions` is sent to models that can shorten their vectors (OpenAI's text-embedding-3); unset, the
    vector size is learnt from the first reply.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None = None,
        dimensions: int | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = 32,
        concurrency: int = 4,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_tokens: int = 512,
        client: Any = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"the batch size must be at least 1, not {batch_size}")
        self.model = model
        self.dimensions = dimensions
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.batch_size = batch_size
        self.max_tokens = max_tokens  # what the server's model reads; the index puts the important part first
        self.symmetric = query_prefix == passage_prefix
        self.name = server_embedder_name(
            model=model,
            base_url=base_url,
            dimensions=dimensions,
            query_prefix=query_prefix,
            passage_prefix=passage_prefix,
        )
        self.server = ModelServer(
            what=f"embeddings server ({model})",
            setting="THREADWISE_EMBEDDINGS",
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            concurrency=concurrency,
            client=client,
        )
        self._dim = dimensions
        self._dim_lock = threading.Lock()

    @property
    def dim(self) -> int:
        """The vector size: the configured `dimensions`, else asked of the server once."""
        if self._dim is None:
            with self._dim_lock:
                if self._dim is None:
                    self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        self._dim = value

    def warm_up(self) -> None:
        """One request now: a wrong URL, key or model shows at start-up, not in the first user's question."""
        _ = self.dim
        if self.dimensions is not None:
            self._request(["warm up"])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:  # a page without evidence: no request (not even to learn the size)
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        prefixed = [self.passage_prefix + t for t in texts]
        parts = self.server.map(self._request, batches(prefixed, self.batch_size))
        return np.vstack(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._request([self.query_prefix + text])[0]

    def _request(self, texts: Sequence[str]) -> np.ndarray:
        """One `/embeddings` call: (len(texts), dim) unit vectors, in the order of `texts`."""
        extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}
        reply = self.server.call(
            lambda client: client.embeddings.create(
                model=self.model,
                input=[t if t.strip() else " " for t in texts],  # OpenAI rejects empty strings
                encoding_format="float",  # base64 (the client's default) is not served everywhere
                **extra,
            )
        )
        rows = sorted(reply.data, key=lambda item: item.index)
        if len(rows) != len(texts):
            raise ModelServerError(
                f"The embeddings server at {self.server.where} returned {len(rows)} vectors "
                f"for {len(texts)} texts."
            )
        vectors = _normalize(np.asarray([row.embedding for row in rows], dtype=np.float32))
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise ModelServerError(
                f"The embeddings server at {self.server.where} returned {vectors.shape[1]}-d vectors, "
                f"expected {self._dim} (THREADWISE_EMBEDDINGS_DIMENSIONS or an earlier reply)."
            )
        return vectors
