"""Logging set-up for the command line: text by default, one JSON object per line with
THREADWISE_LOG_FORMAT=json (time, level, logger, message, and where known the platform, the conversation's
key hashed and the turn id), credentials in URLs redacted either way.

The conversation service binds the platform and conversation of a question (`in_thread`) and the turn
(`bind_turn`) for the thread answering it; every line logged meanwhile carries them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TypeVar

from threadwise.redact import RedactingFilter

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_CONTEXT: ContextVar[dict[str, Any] | None] = ContextVar("threadwise_log_context", default=None)
F = TypeVar("F", bound=Callable[..., Any])


def configure(*, level: int, json_format: bool) -> None:
    """The root logger's one handler (stderr), redacting, at `level`."""
    logging.basicConfig(level=level, format=TEXT_FORMAT)
    for handler in logging.getLogger().handlers:  # bm25s sets its own logger to DEBUG when imported (late)
        handler.setLevel(level)
        handler.addFilter(RedactingFilter())  # no credentials in URLs reach a log
        if json_format:
            handler.setFormatter(JsonFormatter())


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_CONTEXT.get() or {})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def conversation_hash(platform: str, workspace: str, channel: str, thread: str) -> str:
    """A conversation's key as 12 hex digits: the same thread always the same, no channel or user shown."""
    return hashlib.sha256("\x1f".join((platform, workspace, channel, thread)).encode()).hexdigest()[:12]


def _binds(fields: Callable[[Any], dict[str, Any]]) -> Callable[[F], F]:
    """A method decorator: while the method runs, its log lines carry `fields(its first argument)`."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def bound(self: Any, first: Any, *args: Any, **kwargs: Any) -> Any:
            token = _CONTEXT.set({**(_CONTEXT.get() or {}), **fields(first)})
            try:
                return method(self, first, *args, **kwargs)
            finally:
                _CONTEXT.reset(token)

        return bound  # type: ignore[return-value]

    return decorate


# a method whose first argument is a ThreadKey: its lines name the platform and the conversation (hashed)
in_thread = _binds(
    lambda key: {
        "platform": key.platform,
        "conversation": conversation_hash(key.platform, key.workspace, key.channel, key.thread),
    }
)
# a method whose first argument is a turn id: its lines name the turn
for_turn = _binds(lambda turn_id: {"turn_id": turn_id})


def bind_turn(turn_id: int) -> None:
    """The turn being answered is now known: later lines (inside `in_thread`) name it."""
    context = _CONTEXT.get()
    if context is not None:
        context["turn_id"] = turn_id
