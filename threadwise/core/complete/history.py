"""Offline question completion: a history-aware rewrite without an LLM (works the same for German).

Measured on the ConfQuestions dev split (README): follow-ups mostly stay on the page the conversation is about
("And what about TPM?"); what worked best was the current question followed by the conversation's recent
questions (the last two) and its opening question, which names the topic that later turns leave implicit.
Bag-of-words retrieval is indifferent to the order, so the result is written for people: the question first,
then what it follows, joined by "←".

A thread may change topic (core/complete/topic.py): the questions since the latest topic start complete a
follow-up, with that start as the opening. A question that may start a new topic by its words is completed all
the same, and marked (`Completion.alone`, `topic_pages`): the pipeline asks it as it stands when, retrieved
alone, it finds none of the topic's pages (the page each of the topic's turns was answered from first; the others
shown beside it are no topic of the thread) — so "What is the capital of France?" after questions about Alice's
action item is asked as it is, and "and when is it due?" still follows Alice's item.
"""

from __future__ import annotations

from collections.abc import Sequence

from threadwise.core.complete.topic import holding_words, may_start_topic, topic_start
from threadwise.core.types import Completion, PastTurn

SEPARATOR = " ← "


class HistoryCompleter:
    """Completes a follow-up with its topic's opening question and the most recent ones.

    `topics=False` reads the whole thread as one topic (the rewrite before topic switches, for comparison)."""

    name = "history"

    def __init__(self, *, recent: int = 2, topics: bool = True) -> None:
        self.recent = recent
        self.topics = topics

    def complete(self, question: str, history: Sequence[PastTurn]) -> Completion:
        question = question.strip()
        if not history:
            return Completion(question=question, method="first turn")
        start = topic_start(history) if self.topics else 0
        topic = [t.question for t in history[start:]]
        earlier = topic[-self.recent :][::-1]  # most recent first
        if topic[0] not in earlier:
            earlier.append(topic[0])
        since = f", topic since turn {start + 1}" if start else ""
        completion = Completion(
            question=SEPARATOR.join([question, *earlier]),
            method=f"history ({len(earlier)} earlier questions{since})",
        )
        if not (self.topics and may_start_topic(question, topic)):
            return completion
        pages = tuple(dict.fromkeys(t.page_ids[0] for t in history[start:] if t.page_ids))
        return Completion(
            question=completion.question,
            method=completion.method,
            alone=question,
            topic_pages=pages,
            shared=holding_words(question, topic),
        )
