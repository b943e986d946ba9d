"""The paper's LLM judge of answer relevance for `threadwise eval --answers`: 0, 0.5 or 1 against a gold answer.

Prompt: prompts/judge.j2. A reply that holds no valid score is kept as `score=None`, so the evaluation can
count it instead of guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from threadwise.core.chat import timed_chat
from threadwise.core.prompts import Prompts
from threadwise.core.protocols import ChatModel
from threadwise.core.types import LLMCall

SCORES = (0.0, 0.5, 1.0)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


@dataclass(frozen=True)
class Judgement:
    score: float | None  # 0, 0.5, 1; None when the reply held no valid score
    call: LLMCall


def parse_score(reply: str) -> float | None:
    """The first number in the reply if it is 0, 0.5 or 1 ("0,5" and "1.0" too), else None."""
    match = _NUMBER.search(reply)
    if not match:
        return None
    value = float(match.group(0).replace(",", "."))
    return value if value in SCORES else None


class LLMJudge:
    """Scores answers with a chat model. Raises `ChatError` when the model cannot be reached."""

    def __init__(self, *, chat: ChatModel, prompts: Prompts | None = None) -> None:
        self.chat = chat
        self.name = f"llm-judge:{chat.name}"
        self.prompts = prompts or Prompts()

    def judge(self, question: str, gold_answer: str, answer: str) -> Judgement:
        messages = self.prompts.messages(
            "judge.j2", question=question, gold_answer=gold_answer, answer=answer
        )
        call = timed_chat(self.chat, "judge", messages)
        return Judgement(score=parse_score(call.completion), call=call)
