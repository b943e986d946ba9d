"""`ServerReranker`: cross-encoder scores from a re-rank server, in either of the two wire shapes in use.

- "cohere" (the default): `POST {base}/rerank` with `{"model", "query", "documents": [...]}`, answered with
  `{"results": [{"index", "relevance_score"}, ...]}`. Cohere, Jina, vLLM, Infinity and LiteLLM serve it; their
  base URLs usually end in /v1 (`https://api.jina.ai/v1`, `http://vllm:8000/v1`), Infinity's need not.
- "tei" (Hugging Face Text Embeddings Inference): `POST {base}/rerank` with `{"query", "texts": [...]}`,
  answered with `[{"index", "score"}, ...]`; the base URL is the server's root.
Either reply is read whatever was sent. Documents go in batches of `batch_size` (TEI accepts 32 by default),
at most `concurrency` requests in flight; each score is the server's, by the document's index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadwise.core.protocols import ModelServerError
from threadwise.models.model_server import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    ModelServer,
    batches,
    redact_url,
)

RERANK_APIS = ("cohere", "tei")


class ServerReranker:
    """A `Reranker` whose cross-encoder runs behind a `/rerank` endpoint."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None = None,
        api: str = "cohere",
        batch_size: int = 32,
        concurrency: int = 4,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        client: Any = None,
    ) -> None:
        if api not in RERANK_APIS:
            raise ValueError(f"unknown re-rank API {api!r}: choose {' or '.join(RERANK_APIS)}")
        if batch_size < 1:
            raise ValueError(f"the batch size must be at least 1, not {batch_size}")
        self.model = model
        self.api = api
        self.batch_size = batch_size
        self.name = f"{model}@{redact_url(base_url)}"
        self.server = ModelServer(
            what=f"re-rank server ({model})",
            setting="THREADWISE_RERANK",
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            concurrency=concurrency,
            client=client,
        )

    def warm_up(self) -> None:
        """One request now: a wrong URL, key or model shows at start-up, not in the first user's question."""
        self.score("warm up", ["warm up"])

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        parts = self.server.map(
            lambda docs: self._request(query, docs), batches(list(passages), self.batch_size)
        )
        return [score for part in parts for score in part]

    def _request(self, query: str, documents: Sequence[str]) -> list[float]:
        """One `/rerank` call: the score of each document, in the order of `documents`."""
        import httpx

        if self.api == "tei":
            body: dict[str, Any] = {"query": query, "texts": list(documents), "raw_scores": False}
        else:
            body = {"model": self.model, "query": query, "documents": list(documents)}
        response = self.server.call(lambda client: client.post("/rerank", body=body, cast_to=httpx.Response))
        try:
            reply = response.json()
        except ValueError as err:
            raise ModelServerError(f"The re-rank server at {self.server.where} sent no JSON: {err}") from err
        return _scores(reply, len(documents), where=self.server.where)


def _scores(reply: Any, count: int, *, where: str) -> list[float]:
    """Scores by document index from either reply shape; every document must be scored."""
    results: Any = reply.get("results") if isinstance(reply, dict) else reply
    scores: dict[int, float] = {}
    try:
        for item in results:
            value = item["relevance_score"] if "relevance_score" in item else item["score"]
            scores[int(item["index"])] = float(value)
    except (TypeError, KeyError, ValueError) as err:
        raise ModelServerError(
            f"The re-rank server at {where} answered in an unknown shape ({str(reply)[:200]}): expected "
            '{"results": [{"index", "relevance_score"}]} or [{"index", "score"}]'
        ) from err
    missing = [i for i in range(count) if i not in scores]
    if missing:
        raise ModelServerError(
            f"The re-rank server at {where} scored {len(scores)} of {count} documents (a top_n limit on the server?)."
        )
    return [scores[i] for i in range(count)]
