"""One exchange with a chat model, timed and kept as an `LLMCall` for the trace (completion, answers, judge)."""

from __future__ import annotations

import time

from threadwise.core.protocols import ChatModel
from threadwise.core.types import LLMCall


def timed_chat(
    chat: ChatModel,
    role: str,
    messages: list[dict[str, str]],
    *,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> LLMCall:
    """Send `messages` and keep the exchange as an `LLMCall`. Raises `ChatError` like the model does."""
    started = time.perf_counter()
    completion = chat.chat(messages, temperature=temperature, max_tokens=max_tokens)
    ms = (time.perf_counter() - started) * 1000
    return LLMCall(role=role, model=chat.name, messages=messages, completion=completion, ms=ms)
