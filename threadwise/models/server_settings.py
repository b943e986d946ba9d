"""Which embedding and re-rank servers to call, read from the settings by the composition root.

Embeddings (any of the first two selects the server embedder for retrieval):

    THREADWISE_EMBEDDINGS_BASE_URL     OpenAI-compatible base URL, e.g. http://tei:8080/v1 or http://vllm:8000/v1;
                                       unset: OpenAI's (then the key falls back to OPENAI_API_KEY)
    THREADWISE_EMBEDDINGS_MODEL        the served model; required with a base URL (it names the index)
    THREADWISE_EMBEDDINGS_API_KEY      bearer key; a local server without one gets a placeholder
    THREADWISE_EMBEDDINGS_DIMENSIONS   shorter vectors from models that offer them (text-embedding-3-*)
    THREADWISE_EMBEDDINGS_QUERY_PREFIX, THREADWISE_EMBEDDINGS_PASSAGE_PREFIX
                                       put before questions / passages: "query: " and "passage: " for E5
    THREADWISE_EMBEDDINGS_BATCH_SIZE   texts per request, default 32 (TEI's default limit)
    THREADWISE_EMBEDDINGS_CONCURRENCY  requests in flight from one process, default 4
    THREADWISE_EMBEDDINGS_TIMEOUT, THREADWISE_EMBEDDINGS_MAX_RETRIES   per attempt (s), retries on 429/5xx

Re-ranking (a base URL selects it):

    THREADWISE_RERANK_BASE_URL, THREADWISE_RERANK_MODEL, THREADWISE_RERANK_API_KEY
    THREADWISE_RERANK_API              "cohere" (Cohere, Jina, vLLM, Infinity: documents -> results) or
                                       "tei" (Text Embeddings Inference: texts -> [{index, score}])
    THREADWISE_RERANK_BATCH_SIZE, _CONCURRENCY, _TIMEOUT, _MAX_RETRIES   as above
"""

from __future__ import annotations

from collections.abc import Mapping

from threadwise.models.model_server import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from threadwise.models.server_embedder import ServerEmbedder
from threadwise.models.server_reranker import ServerReranker

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_EMBEDDINGS_MODEL = "text-embedding-3-small"


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _number(
    env: Mapping[str, str], name: str, kind: type[int] | type[float], default: float, *, minimum: float = 1
) -> float:
    text = _get(env, name)
    if not text:
        return default
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a valid {kind.__name__}") from None
    if value < minimum:
        raise ValueError(f"{name}={text!r} must be at least {minimum:g}")
    return value


def embeddings_server_configured(env: Mapping[str, str]) -> bool:
    return bool(_get(env, "THREADWISE_EMBEDDINGS_BASE_URL") or _get(env, "THREADWISE_EMBEDDINGS_MODEL"))


def server_embedder_from_env(env: Mapping[str, str]) -> ServerEmbedder:
    """The server embedder the THREADWISE_EMBEDDINGS_* settings describe (see the module docstring)."""
    prefix = "THREADWISE_EMBEDDINGS_"
    base_url = _get(env, prefix + "BASE_URL")
    model = _get(env, prefix + "MODEL")
    if base_url and not model:
        raise ValueError(
            "THREADWISE_EMBEDDINGS_BASE_URL is set but THREADWISE_EMBEDDINGS_MODEL is not: name the model the "
            "server serves (it is sent with every request, and the index records it)"
        )
    api_key = _get(env, prefix + "API_KEY") or (None if base_url else _get(env, "OPENAI_API_KEY") or None)
    dimensions = _get(env, prefix + "DIMENSIONS")
    return ServerEmbedder(
        model=model or DEFAULT_OPENAI_EMBEDDINGS_MODEL,
        base_url=base_url or OPENAI_BASE_URL,
        api_key=api_key,
        dimensions=int(_number(env, prefix + "DIMENSIONS", int, 0)) if dimensions else None,
        query_prefix=env.get(prefix + "QUERY_PREFIX", ""),
        passage_prefix=env.get(prefix + "PASSAGE_PREFIX", ""),
        batch_size=int(_number(env, prefix + "BATCH_SIZE", int, 32)),
        concurrency=int(_number(env, prefix + "CONCURRENCY", int, 4)),
        timeout=_number(env, prefix + "TIMEOUT", float, DEFAULT_TIMEOUT, minimum=0.001),
        max_retries=int(_number(env, prefix + "MAX_RETRIES", int, DEFAULT_MAX_RETRIES, minimum=0)),
    )


def server_reranker_from_env(env: Mapping[str, str]) -> ServerReranker | None:
    """The re-rank server the THREADWISE_RERANK_* settings describe, or None without a base URL."""
    prefix = "THREADWISE_RERANK_"
    base_url = _get(env, prefix + "BASE_URL")
    if not base_url:
        return None
    return ServerReranker(
        model=_get(env, prefix + "MODEL") or "reranker",
        base_url=base_url,
        api_key=_get(env, prefix + "API_KEY") or None,
        api=_get(env, prefix + "API").lower() or "cohere",
        batch_size=int(_number(env, prefix + "BATCH_SIZE", int, 32)),
        concurrency=int(_number(env, prefix + "CONCURRENCY", int, 4)),
        timeout=_number(env, prefix + "TIMEOUT", float, DEFAULT_TIMEOUT, minimum=0.001),
        max_retries=int(_number(env, prefix + "MAX_RETRIES", int, DEFAULT_MAX_RETRIES, minimum=0)),
    )
