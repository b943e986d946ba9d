"""What the embedding and re-rank server adapters share: the HTTP client, a bound on requests in flight,
batches sent in parallel, and failures turned into a `ModelServerError` that names the URL (never a secret).

Requests go through the `openai` client (a dependency already): it keeps connections alive, is thread-safe,
and retries refused connections, timeouts, 408/409/429 and 5xx with exponential back-off (0.5 s doubling,
jittered, capped at 8 s), honouring `Retry-After` / `retry-after-ms`. The re-rank endpoint is not part of the
OpenAI API; it is sent as a custom request through the same client (`client.post`), so it gets the same retries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from threadwise.core.protocols import ModelServerError

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_TIMEOUT = 60.0  # seconds per attempt
DEFAULT_MAX_RETRIES = 4
LOCAL_PLACEHOLDER_KEY = "no-key"  # TEI, Infinity, vLLM without --api-key accept any key; the client wants one


def redact_url(url: str) -> str:
    """The URL without credentials: user:password@ and the query string (where some proxies put keys) go."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if parts.username or parts.password:
        host = "***@" + host
    query = "***" if parts.query else ""
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), query, ""))


class ModelServer:
    """One server endpoint as the adapters use it: its client, at most `concurrency` requests in flight from this
    process across all threads (the indexer, the bot's workers and Explain may share one embedder), and every
    client failure turned into a `ModelServerError` that names the URL and the setting to check."""

    def __init__(
        self,
        *,
        what: str,
        setting: str,
        base_url: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        concurrency: int,
        client: Any = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"{setting}_CONCURRENCY must be at least 1, not {concurrency}")
        self.what = what
        self.setting = setting
        self.base_url = base_url
        self.where = redact_url(base_url)
        self.max_retries = max_retries
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._client = client or _make_client(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    def call(self, request: Callable[[Any], R]) -> R:
        """`request(client)` in one of the slots (the client retries inside it)."""
        import openai

        with self._slots:
            try:
                return request(self._client)
            except openai.OpenAIError as err:
                raise self._explain(err) from err

    def map(self, request: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """`request` over `items` (each makes one `call`), up to `concurrency` at once; results in order."""
        if len(items) <= 1 or self.concurrency == 1:
            return [request(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items))) as pool:
            return list(pool.map(request, items))

    def _explain(self, err: Exception) -> ModelServerError:
        """A message an operator can act on: which server, what went wrong, which setting to check."""
        import openai

        where, setting = f"the {self.what} at {self.where}", self.setting
        attempts = f"after {self.max_retries + 1} attempts" if self.max_retries else "(no retries configured)"
        if isinstance(err, openai.APITimeoutError):
            message = f"No answer from {where} in time, {attempts}."
        elif isinstance(err, openai.APIConnectionError):
            cause = f" ({err.__cause__})" if err.__cause__ else ""
            message = f"Cannot reach {where}{cause}, {attempts}. Is the server running, and is {setting}_BASE_URL right?"
        elif isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
            message = f"{where} refused the API key (HTTP {err.status_code}). Check {setting}_API_KEY."
        elif isinstance(err, openai.NotFoundError):
            message = (
                f"Not found: {where} (HTTP 404: {err.message}). Check {setting}_BASE_URL (OpenAI-compatible "
                f"servers usually want it to end in /v1) and {setting}_MODEL."
            )
        elif isinstance(err, openai.RateLimitError):
            message = f"{where} is rate limiting (HTTP 429), still {attempts}. Lower {setting}_CONCURRENCY."
        elif isinstance(err, openai.APIStatusError):
            message = f"{where} failed with HTTP {err.status_code} ({attempts} for 5xx): {err.message}"
        else:
            message = f"{where} failed: {err}"
        return ModelServerError(message[:1].upper() + message[1:])


def _make_client(*, base_url: str, api_key: str | None, timeout: float, max_retries: int) -> Any:
    """An `openai.OpenAI` client (imported here: a CLI command that calls no server stays light)."""
    import openai

    return openai.OpenAI(
        base_url=base_url, api_key=api_key or LOCAL_PLACEHOLDER_KEY, timeout=timeout, max_retries=max_retries
    )


def batches(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
