"""The answering pipeline, as in the paper: complete the question, retrieve, answer, and on request explain.

Conversation in, cited answer out; every step is kept in a trace a user can open.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from threadwise.core.answer.confidence import Confidence, confidence_of
from threadwise.core.answer.support import ReadsRankings, rankings_agree
from threadwise.core.complete.conversation import past_turn
from threadwise.core.complete.topic import hold, settle
from threadwise.core.protocols import Answerer, QuestionCompleter, StreamsText
from threadwise.core.retrieve.retriever import Retrieval, Retriever
from threadwise.core.types import Answer, Completion, Evidence, PastTurn, Scope


@dataclass(frozen=True)
class TurnResult:
    """One answered question with everything that led to it."""

    question: str
    completion: Completion
    retrieval: Retrieval
    answer: Answer
    timings_ms: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    # pages the asker alone may read (outside the conversation's scope) would have been among the evidence
    withheld: bool = False
    confidence: Confidence | None = None  # how sure the answer is; None when not found (confidence.py)
    # whether the lexical and dense rankings found the same page (support.py); Explain answers with it too
    rankings_agree: bool = True

    @property
    def sources(self) -> list[Evidence]:
        """The evidences the answerer saw, numbered 1..k in this order."""
        return self.retrieval.evidences

    def as_past_turn(self) -> PastTurn:
        """This turn as a later question's completion sees it."""
        return past_turn(
            question=self.question,
            completed_question=self.completion.question,
            answer=self.answer.text,
            source_page_ids=(e.page_id for e in self.sources),
        )

    def trace(self) -> dict[str, Any]:
        """Everything a user may inspect: completed question, each ranked list, prompts and raw completions."""
        return {
            "question": self.question,
            "completed_question": self.completion.question,
            "completion_method": self.completion.method,
            "retrieval": {
                "query": self.retrieval.query,
                "lexical": [asdict(h) for h in self.retrieval.lexical[:20]],
                "dense": [asdict(h) for h in self.retrieval.dense[:20]],
                "fused": [asdict(h) for h in self.retrieval.fused[:20]],
                "reranked": [asdict(h) for h in self.retrieval.reranked[:20]],
            },
            "llm_calls": [asdict(c) for c in (*self.completion.calls, *self.answer.calls)],
            "answerer": self.answer.answerer,
            "confidence": self.confidence.as_dict() if self.confidence else None,
            "rankings_agree": self.rankings_agree,
            "timings_ms": self.timings_ms,
            "config": self.config,
        }


class Pipeline:
    """Completion → retrieval → answer. Thread-safe as long as its parts are."""

    def __init__(
        self,
        *,
        completer: QuestionCompleter,
        retriever: Retriever,
        answerer: Answerer,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.completer = completer
        self.retriever = retriever
        self.answerer = answerer
        self.config = config or {}

    def ask(
        self,
        question: str,
        history: Sequence[PastTurn] = (),
        scope: Scope | None = None,
        *,
        wider: Scope | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> TurnResult:
        """Answer from the evidence `scope` allows (None: everything). `wider`: what the asker alone may read;
        when its evidence would have held pages outside `scope`, the result says `withheld` (nothing of them
        is used or kept: the answer comes from a second retrieval inside `scope`). `on_text`: the answer's
        text as it is written (deltas), when the answerer streams (`StreamsText`); others answer whole."""
        timings: dict[str, float] = {}
        t = time.perf_counter()
        completion = self.completer.complete(question, history)
        alone = None
        completion = hold(completion, self.retriever.word_share)  # a rare word shared with the topic holds it
        if completion.alone:  # it may start a new topic: its own retrieval decides (complete/topic.py)
            alone = self.retriever.retrieve(completion.alone, scope)
            completion = settle(completion, alone)
        timings["completion"] = (time.perf_counter() - t) * 1000

        withheld = False
        if wider is not None and scope is not None:
            t = time.perf_counter()
            wide = self.retriever.retrieve(completion.question, wider)
            withheld = any(not scope.allows(e.space, e.page_id) for e in wide.evidences)
            timings["withheld_check"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        if alone is not None and alone.query == completion.question:
            retrieval = alone
        else:
            retrieval = self.retriever.retrieve(completion.question, scope)
        timings["retrieval"] = (time.perf_counter() - t) * 1000
        timings.update({f"retrieval.{k}": v for k, v in retrieval.timings_ms.items()})

        t = time.perf_counter()
        hybrid = self.retriever.options.mode == "hybrid"  # one ranking alone cannot disagree
        agree = not hybrid or rankings_agree(retrieval.lexical, retrieval.dense)
        if on_text is not None and isinstance(self.answerer, StreamsText) and self.answerer.streams_text:
            answer = self.answerer.answer(completion.question, retrieval.evidences, on_text=on_text)
        elif isinstance(self.answerer, ReadsRankings):  # whether the question is covered at all (support.py)
            answer = self.answerer.answer(completion.question, retrieval.evidences, rankings_agree=agree)
        else:
            answer = self.answerer.answer(completion.question, retrieval.evidences)
        timings["answer"] = (time.perf_counter() - t) * 1000
        followed = completion.question.strip() != question.strip()  # completed from the thread
        confidence = confidence_of(completion.question, retrieval, answer, follow_up=followed)
        timings["total"] = sum(v for k, v in timings.items() if "." not in k)
        return TurnResult(
            question=question,
            completion=completion,
            retrieval=retrieval,
            answer=answer,
            timings_ms=timings,
            config=self.config,
            withheld=withheld,
            confidence=confidence,
            rankings_agree=agree,
        )
