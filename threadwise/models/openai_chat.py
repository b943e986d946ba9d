"""`OpenAIChat`: the `ChatModel` adapter over the `openai` client (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp).

Retries are the client's own: it retries 408/409/429/5xx, timeouts and refused connections with exponential
backoff (0.5 s doubling, jittered, capped at 8 s) and honours `Retry-After` / `retry-after-ms` up to two
minutes. What is left after the retries becomes a `ChatError` whose message a Slack user can read:
unreachable endpoint, rejected key, rate limit, timeout, unknown model.

The sync `openai` client is thread-safe, so one `OpenAIChat` serves the Explain step's thread pool.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionChunk

from threadwise import metrics
from threadwise.core.protocols import ChatError
from threadwise.models.llm_defaults import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT

log = logging.getLogger(__name__)


class OpenAIChat:
    """A chat model behind an OpenAI-compatible endpoint. Implements `threadwise.core.protocols.ChatModel`.

    `base_url` / `api_key` left as None fall back to the client's own `OPENAI_BASE_URL` / `OPENAI_API_KEY`.
    With `azure_api_version`, `base_url` is the Azure endpoint and `model` (or `azure_deployment`) the deployment.
    An already-built `client` (an `openai.OpenAI` or `openai.AzureOpenAI`) can be injected instead.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        azure_api_version: str | None = None,
        azure_deployment: str | None = None,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.model = model
        self.name = model
        self.streams = True  # `chat(..., on_text=...)` streams the completion (StreamingChat)
        self.timeout = timeout
        self.max_retries = max_retries
        self._client = client or _make_client(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            azure_api_version=azure_api_version,
            azure_deployment=azure_deployment,
        )
        self.endpoint = str(self._client.base_url).rstrip("/")
        # Some models (OpenAI's reasoning models) refuse `max_tokens` or a temperature; learnt on first refusal.
        self._unsupported: set[str] = set()
        self._lock = threading.Lock()

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> str:
        """Send `messages`, return the completion text (stripped). Raises `ChatError` on any failure.

        `on_text`: the completion is streamed (`stream=True`) and each piece of text is handed to it as it
        arrives (deltas, in order; their concatenation is the completion before stripping)."""
        request: dict[str, Any] = {"temperature": temperature}
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        for _ in range(3):  # at most two parameter adaptations, then the real answer or error
            try:
                if on_text is not None:
                    return self._streamed(messages, self._adapted(request), on_text)
                response = self._client.chat.completions.create(
                    model=self.model,
                    messages=messages,  # type: ignore[arg-type]
                    **self._adapted(request),
                )
            except openai.BadRequestError as err:
                if self._learn_unsupported(err):
                    continue
                metrics.llm_call(self.model, ok=False)
                raise ChatError(self._explain(err)) from err
            except openai.OpenAIError as err:
                metrics.llm_call(self.model, ok=False)
                raise ChatError(self._explain(err)) from err
            metrics.llm_call(self.model, ok=True, usage=getattr(response, "usage", None))
            return self._content(response)
        raise ChatError(
            f"The language model {self.model} at {self.endpoint} rejected every parameter variant."
        )

    def _streamed(
        self, messages: list[dict[str, str]], request: dict[str, Any], on_text: Callable[[str], None]
    ) -> str:
        """One streamed completion: its deltas go to `on_text` as they arrive; the whole text is returned.
        An `openai.OpenAIError` (at the start or mid-stream) propagates to `chat`'s handling."""
        stream = cast(
            "openai.Stream[ChatCompletionChunk]",
            self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                stream=True,
                **request,
            ),
        )
        pieces: list[str] = []
        with stream:
            for chunk in stream:
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta:
                    pieces.append(delta)
                    on_text(delta)
        text = "".join(pieces).strip()
        metrics.llm_call(self.model, ok=True, usage=None)
        if not text:
            raise ChatError(
                f"The language model {self.model} at {self.endpoint} gave no answer (the reply was empty)."
            )
        return text

    # -- helpers -----------------------------------------------------------------------------------------

    def _adapted(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            unsupported = set(self._unsupported)
        adapted = dict(request)
        if "temperature" in unsupported:
            adapted.pop("temperature", None)
        if "max_tokens" in unsupported and "max_tokens" in adapted:
            adapted["max_completion_tokens"] = adapted.pop("max_tokens")
        return adapted

    def _learn_unsupported(self, err: openai.BadRequestError) -> bool:
        """True when the 400 was about a parameter this model does not take, and it is now avoided."""
        text = f"{err.param or ''} {err.message}".lower()
        if "support" not in text:  # "Unsupported parameter", "is not supported with this model"
            return False
        with self._lock:
            for parameter in ("max_tokens", "temperature"):
                if parameter in text and parameter not in self._unsupported:
                    log.info("model %s does not take %s; adapting", self.model, parameter)
                    self._unsupported.add(parameter)
                    return True
        return False

    def _content(self, response: Any) -> str:
        choice = response.choices[0] if response.choices else None
        content = choice.message.content if choice is not None else None
        if not content or not content.strip():
            refusal = getattr(choice.message, "refusal", None) if choice is not None else None
            reason = f"it refused: {refusal}" if refusal else "the reply was empty"
            raise ChatError(f"The language model {self.model} at {self.endpoint} gave no answer ({reason}).")
        return str(content).strip()

    def _explain(self, err: openai.OpenAIError) -> str:
        """A message a user can act on; never includes the key."""
        where = f"the language model {self.model} at {self.endpoint}"
        attempts = f"after {self.max_retries + 1} attempts" if self.max_retries else "(no retries configured)"
        if isinstance(err, openai.APITimeoutError):
            return f"No answer from {where} within {self.timeout:g} s, {attempts}."
        if isinstance(err, openai.APIConnectionError):
            cause = f": {err.__cause__}" if err.__cause__ else ""
            return f"Cannot reach {where}{cause}. Is the server running and the base URL right?"
        if isinstance(err, openai.AuthenticationError):
            return f"The API key was rejected by {where} (HTTP 401). Check THREADWISE_LLM_API_KEY or OPENAI_API_KEY."
        if isinstance(err, openai.PermissionDeniedError):
            return f"The API key may not use {where} (HTTP 403): {err.message}"
        if isinstance(err, openai.NotFoundError):
            return (
                f"Not found: {where} (HTTP 404). Check the model name and the base URL "
                f"(an OpenAI-compatible base URL usually ends in /v1)."
            )
        if isinstance(err, openai.RateLimitError):
            return f"Rate limited by {where} (HTTP 429), still {attempts}. Please try again in a minute."
        if isinstance(err, openai.APIStatusError):
            if err.status_code >= 500:
                return f"{_capitalized(where)} failed with HTTP {err.status_code} {attempts}: {err.message}"
            return f"{_capitalized(where)} rejected the request (HTTP {err.status_code}): {err.message}"
        return f"{_capitalized(where)} failed: {err}"


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def _make_client(
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    azure_api_version: str | None,
    azure_deployment: str | None,
) -> openai.OpenAI:
    try:
        if azure_api_version:
            if not base_url:
                raise ChatError(
                    "Azure OpenAI needs its endpoint as the base URL (e.g. https://NAME.openai.azure.com)."
                )
            return openai.AzureOpenAI(
                azure_endpoint=base_url,
                azure_deployment=azure_deployment,
                api_key=api_key,
                api_version=azure_api_version,
                timeout=timeout,
                max_retries=max_retries,
            )
        return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
    except openai.OpenAIError as err:  # e.g. no key anywhere
        raise ChatError(f"The language model client could not be set up: {err}") from err
