"""One exchange with a chat model, timed and kept as an `LLMCall` for the trace (completion, answers, judge)."""

from __future__ import annotations

import time
from collections.abc import Callable

from threadwise.core.protocols import ChatModel, StreamingChat
from threadwise.core.types import LLMCall


def timed_chat(
    chat: ChatModel,
    role: str,
    messages: list[dict[str, str]],
    *,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    on_text: Callable[[str], None] | None = None,
) -> LLMCall:
    """Send `messages` and keep the exchange as an `LLMCall`. Raises `ChatError` like the model does.
    `on_text`: the completion's text as it arrives (deltas), when the model can stream (`StreamingChat`);
    a model that cannot answers whole and `on_text` is not called."""
    started = time.perf_counter()
    if on_text is not None and isinstance(chat, StreamingChat) and chat.streams:
        completion = chat.chat(messages, temperature=temperature, max_tokens=max_tokens, on_text=on_text)
    else:
        completion = chat.chat(messages, temperature=temperature, max_tokens=max_tokens)
    ms = (time.perf_counter() - started) * 1000
    return LLMCall(role=role, model=chat.name, messages=messages, completion=completion, ms=ms)
