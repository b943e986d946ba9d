"""What an answerer returns, and the interface every answerer (LLM or extractive) implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from threadwise.core.page import Evidence

# The paper's out-of-scope sentence. Answerers say exactly this when the evidence does not hold the answer.
NOT_FOUND = "The desired information cannot be found in the retrieved pool of evidence."
NOT_FOUND_DE = "Die gewünschte Information ist in den gefundenen Quellen nicht enthalten."


@dataclass(frozen=True)
class LLMCall:
    """One exchange with a chat model, kept for the trace: the exact prompt sent and the raw completion."""

    role: str  # "completion", "answer", "counterfactual", "judge", "follow_ups"
    model: str
    messages: list[dict[str, str]]
    completion: str
    ms: float


@dataclass(frozen=True)
class Answer:
    """An answer to a question over numbered sources (1-based, in the order the evidences were given)."""

    text: str  # may contain "[Source N]" citations
    cited: tuple[int, ...] = ()  # source numbers cited, in order of first mention
    not_found: bool = False
    answerer: str = ""  # which answerer/model produced it
    follow_ups: tuple[str, ...] = ()  # suggested next questions (LLM mode)
    calls: tuple[LLMCall, ...] = field(default=())  # prompts and raw completions, for the trace


class Answerer(Protocol):
    """Answers a (self-contained) question from evidences. Must be safe to call from several threads at once."""

    name: str
    deterministic: bool  # True: one counterfactual run per cluster is enough

    def answer(self, question: str, evidences: Sequence[Evidence]) -> Answer: ...
