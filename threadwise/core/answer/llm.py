"""`LLMAnswerer`: answers from numbered, fenced sources with a chat model (prompt: prompts/answer.j2).

It keeps every exchange as an `LLMCall` (exact messages, raw completion, milliseconds) for the trace,
parses the "[Source N]" citations and recognises the out-of-scope sentence. A `ChatError` from the answer
call propagates: the caller decides what the user sees instead. Follow-up suggestions (prompts/follow_ups.j2)
are a separate, optional call whose failure never costs the answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from threadwise.core.answer.citations import cited_sources, is_not_found
from threadwise.core.answer.question import own_and_history
from threadwise.core.answer.support import clearly_unsupported, not_found_answer
from threadwise.core.chat import timed_chat
from threadwise.core.prompts import Prompts
from threadwise.core.protocols import Answerer, ChatError, ChatModel
from threadwise.core.types import NOT_FOUND, NOT_FOUND_DE, Answer, Evidence, LLMCall

log = logging.getLogger(__name__)

_LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)]|Q\d*:)\s*")


class LLMAnswerer:
    """Implements `threadwise.core.protocols.Answerer` with a chat model. Thread-safe if the chat model is.

    `role` names the calls in the trace ("answer", or "counterfactual" when Explain uses it).
    `follow_ups` > 0 asks for that many follow-up questions after a found answer (a second call, by
    `follow_up_chat`, the answer model by default). `fallback` answers when the model cannot.
    `min_coverage`: under this share of an English question's content words in the evidences (or with a key
    term in none of them) the model is not asked (`support.clearly_unsupported`).
    """

    deterministic = False
    streams_text = True  # `answer(..., on_text=...)` streams the model's answer (`StreamsText`)

    def __init__(
        self,
        *,
        chat: ChatModel,
        prompts: Prompts | None = None,
        role: str = "answer",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        follow_ups: int = 3,
        follow_up_chat: ChatModel | None = None,
        fallback: Answerer | None = None,
        min_coverage: float = 0.5,
    ) -> None:
        self.chat = chat
        self.name = f"llm:{chat.name}"
        self.prompts = prompts or Prompts()
        self.role = role
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.follow_ups = follow_ups
        self.follow_up_chat = follow_up_chat or chat
        self.fallback = fallback
        self.min_coverage = min_coverage

    def answer(
        self,
        question: str,
        evidences: Sequence[Evidence],
        *,
        on_text: Callable[[str], None] | None = None,
    ) -> Answer:
        """The model's answer from the evidences; "not found" without asking it when they clearly cannot
        answer (a key term of the question in none of them: support.py), which saves the call.
        `on_text`: the answer call's text as the model writes it (deltas), when the chat model streams; the
        follow-up call never streams. The returned answer is what counts (the stream may be cut by a failure,
        after which the fallback answers)."""
        if clearly_unsupported(own_and_history(question)[0], evidences, min_coverage=self.min_coverage):
            return not_found_answer(question, evidences, answerer=self.name)
        messages = self.prompts.messages(
            "answer.j2",
            question=question,
            evidences=list(evidences),
            not_found=NOT_FOUND,
            not_found_de=NOT_FOUND_DE,
        )
        try:
            call = timed_chat(
                self.chat,
                self.role,
                messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                on_text=on_text,
            )
        except ChatError as err:
            if self.fallback is None:
                raise
            log.warning("answer model failed, falling back to %s: %s", self.fallback.name, err)
            answer = self.fallback.answer(question, evidences)
            return replace(
                answer, answerer=f"{answer.answerer or self.fallback.name} (LLM unavailable: {err})"
            )
        not_found = is_not_found(call.completion)
        cited = () if not_found else cited_sources(call.completion, len(evidences))
        follow_ups: tuple[str, ...] = ()
        calls = [call]
        if self.follow_ups > 0 and not not_found:
            follow_ups, follow_up_call = self.suggest_follow_ups(question, call.completion, evidences)
            if follow_up_call is not None:
                calls.append(follow_up_call)
        return Answer(
            text=call.completion,
            cited=cited,
            not_found=not_found,
            answerer=self.name,
            follow_ups=follow_ups,
            calls=tuple(calls),
        )

    def suggest_follow_ups(
        self, question: str, answer: str, evidences: Sequence[Evidence], *, source_chars: int = 400
    ) -> tuple[tuple[str, ...], LLMCall | None]:
        """Up to `self.follow_ups` suggested next questions, and the call that made them (None if it failed)."""
        count = max(self.follow_ups, 1)
        messages = self.prompts.messages(
            "follow_ups.j2",
            question=question,
            answer=answer,
            evidences=list(evidences),
            count=count,
            source_chars=source_chars,
        )
        try:
            call = timed_chat(self.follow_up_chat, "follow_ups", messages, temperature=0.3)
        except ChatError as err:
            log.warning("follow-up suggestions failed: %s", err)
            return (), None
        return parse_follow_ups(call.completion, question, count), call


def parse_follow_ups(text: str, question: str, count: int) -> tuple[str, ...]:
    """The suggested questions of a completion: one per line, list markers removed, no repeat of `question`."""
    asked = question.strip().lower()
    suggestions: dict[str, None] = {}
    for line in text.splitlines():
        suggestion = _LIST_MARKER.sub("", line).strip().strip('"').strip()
        if suggestion and suggestion.lower() != asked and not suggestion.endswith(":"):
            suggestions.setdefault(suggestion)
    return tuple(suggestions)[:count]
