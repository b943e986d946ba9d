"""Helpers for tests that drive `OpenAIChat` against the local fake server."""

from __future__ import annotations

import socket
from typing import Any

from tests.support.fake_openai import FakeOpenAI
from threadwise.models.openai_chat import OpenAIChat


def chat_for(server: FakeOpenAI, **overrides: Any) -> OpenAIChat:
    """An `OpenAIChat` on the fake server with test-friendly limits (2 s timeout, 1 retry) unless overridden."""
    options: dict[str, Any] = {
        "model": "fake-model",
        "base_url": server.url,
        "api_key": server.api_key,
        "timeout": 2.0,
        "max_retries": 1,
    }
    options.update(overrides)
    return OpenAIChat(**options)


def unused_port() -> int:
    """A local port nobody listens on (bound and released at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
