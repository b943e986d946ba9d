"""A local embeddings and re-rank server on 127.0.0.1 that computes real vectors with an offline model.

It speaks the wire formats Threadwise's server adapters call, on top of `FakeOpenAI` (same key check, queued
faults, stalls, recorded requests and `max_overlap()`):
- `POST /v1/embeddings` (and `/embeddings`): OpenAI's request (`input` string or list, `model`, `dimensions`,
  `encoding_format` float or base64) and reply (`data[i].embedding`, `usage`);
- `POST /rerank` and `/v1/rerank`: with `documents`, the Cohere/Jina/vLLM shape (`results[].relevance_score`,
  best first, `top_n`); with `texts`, Text Embeddings Inference's (a list of `{index, score}`, best first).
Vectors come from the wrapped embedder (the hashing one in tests, E5 or USE in benchmarks); a re-rank score is
the cosine of the query's and the document's vectors. One lock around the model: it is one model, as on a GPU.

By hand, for benchmarks: `python -m tests.support.fake_model_server --port 8002 --embedder e5`.
"""

from __future__ import annotations

import argparse
import base64
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.support.fake_openai import FakeOpenAI, _Handler
from threadwise.core.protocols import Embedder
from threadwise.models.embedders import HashingEmbedder, make_embedder

EMBEDDING_PATHS = ("/v1/embeddings", "/embeddings")
RERANK_PATHS = ("/v1/rerank", "/rerank")


@dataclass
class FakeModelServer(FakeOpenAI):
    """The server; `embedder` computes every vector. Start it like `FakeOpenAI` (`with FakeModelServer() as s:`)."""

    embedder: Embedder = field(default_factory=HashingEmbedder)
    api_key: str = ""  # "" accepts any key, as TEI and Infinity do without one configured

    def __post_init__(self) -> None:
        super().__post_init__()
        self._model_lock = threading.Lock()
        self.texts_embedded = 0

    def _handler_class(self) -> type[_Handler]:
        return _ModelHandler

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def vectors(self, texts: list[str]) -> np.ndarray:
        with self._model_lock:
            self.texts_embedded += len(texts)
            return self.embedder.embed(texts)

    def embeddings_reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            return 400, _error("'input' must be a non-empty string or a list of non-empty strings")
        vectors = self.vectors(texts)
        dimensions = body.get("dimensions")
        if dimensions:  # shortened like a Matryoshka model: the first dimensions, normalized again
            vectors = vectors[:, : int(dimensions)]
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        as_base64 = body.get("encoding_format") == "base64"
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                if as_base64
                else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return 200, {
            "object": "list",
            "data": data,
            "model": body.get("model", "fake-embedder"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def rerank_reply(self, body: dict[str, Any]) -> tuple[int, Any]:
        tei = "texts" in body
        documents = body.get("texts" if tei else "documents")
        query = body.get("query")
        if not isinstance(query, str) or not isinstance(documents, list) or not documents:
            return 422, _error("'query' and a non-empty 'documents' (or 'texts') list are required")
        texts = [d if isinstance(d, str) else str(d.get("text", "")) for d in documents]
        vectors = self.vectors([query, *texts])
        scores = (vectors[1:] @ vectors[0]).tolist()
        order = sorted(range(len(texts)), key=lambda i: -scores[i])
        if tei:
            return 200, [{"index": i, "score": scores[i]} for i in order]
        top_n = body.get("top_n")
        results = [{"index": i, "relevance_score": scores[i]} for i in order[: top_n or len(order)]]
        return 200, {
            "id": f"rerank-{time.monotonic_ns()}",
            "model": body.get("model", ""),
            "results": results,
        }


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


class _ModelHandler(_Handler):
    fake: FakeModelServer

    def _serve(self, body: dict[str, Any]) -> int:
        path = self.path.split("?")[0]
        if path not in EMBEDDING_PATHS + RERANK_PATHS:
            return super()._serve(body)
        fake = self.fake
        refused = self._refused()
        if refused:
            return refused
        reply: tuple[int, Any] = (
            fake.embeddings_reply(body) if path in EMBEDDING_PATHS else fake.rerank_reply(body)
        )
        return self._send_json(*reply)  # TEI's re-rank reply is a bare list: json.dumps writes it as it is


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A local OpenAI-compatible embeddings and re-rank server.")
    parser.add_argument("--port", type=int, default=8002)
    parser.add_argument("--embedder", default="hashing", help="e5, use, minilm or hashing")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before every reply")
    args = parser.parse_args(argv)
    embedder = make_embedder(args.embedder)
    embedder.warm_up()
    server = FakeModelServer(port=args.port, delay=args.delay, embedder=embedder).start()
    print(f"model server ({embedder.name}) on {server.url}; Ctrl-C stops it", flush=True)
    server.serve_until_interrupted()


if __name__ == "__main__":
    main()
