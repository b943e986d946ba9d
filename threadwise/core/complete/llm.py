"""Question completion: a follow-up like "And for TPM?" becomes a self-contained question before retrieval.

`QuestionCompleter` is the interface; `LLMCompleter` rewrites with a chat model (prompts/complete_question.j2)
and, when the model cannot be reached, falls back to an injected completer (the offline one) so that the
conversation goes on. The first question of a conversation passes through without a call. The prompt has the
offline completer's rule for topic switches: a question that stands on its own starts a new topic and is kept as
it is, and a follow-up is completed from the latest topic only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from threadwise.core.chat import timed_chat
from threadwise.core.prompts import Prompts
from threadwise.core.protocols import ChatError, ChatModel, QuestionCompleter
from threadwise.core.types import Completion, PastTurn

# What models like to put around the one line they were asked for.
_LABEL = re.compile(
    r"^(?:rewritten|completed|self-contained|intent-explicit|umformulierte|vollständige)?\s*"
    r"(?:question|frage)\s*:\s*",
    re.IGNORECASE,
)
_QUOTES = "\"'`“”„«»"


def clean_completion(text: str) -> str:
    """The rewritten question out of a model's reply: first non-empty line, without a label or quotes."""
    for line in text.strip().splitlines():
        line = _LABEL.sub("", line.strip()).strip().strip(_QUOTES).strip()
        if line:
            return line
    return ""


class LLMCompleter:
    """Completes follow-ups with a chat model; on `ChatError` uses `fallback` (or raises when there is none)."""

    def __init__(
        self,
        *,
        chat: ChatModel,
        fallback: QuestionCompleter | None = None,
        prompts: Prompts | None = None,
        max_turns: int = 8,
        max_answer_chars: int = 600,
    ) -> None:
        self.chat = chat
        self.name = f"llm:{chat.name}"
        self.fallback = fallback
        self.prompts = prompts or Prompts()
        self.max_turns = max_turns
        self.max_answer_chars = max_answer_chars

    def complete(self, question: str, history: Sequence[PastTurn]) -> Completion:
        question = question.strip()
        if not history:
            return Completion(question=question, method="first-turn")
        messages = self.prompts.messages(
            "complete_question.j2",
            question=question,
            history=list(history)[-self.max_turns :],
            max_answer_chars=self.max_answer_chars,
        )
        try:
            call = timed_chat(self.chat, "completion", messages)
        except ChatError as err:
            if self.fallback is None:
                raise
            fallback = self.fallback.complete(question, history)
            method = f"{fallback.method} (LLM unavailable: {err})"
            return replace(fallback, method=method)  # keeps what may start a new topic, for the pipeline
        rewritten = clean_completion(call.completion) or question
        method = "llm" if rewritten != question else "llm (unchanged: stands alone or a new topic)"
        return Completion(question=rewritten, method=method, calls=(call,))
