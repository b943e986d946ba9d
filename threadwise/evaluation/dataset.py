"""Reading ConfQuestions: conversations of turns with gold page URLs, and retrieval metrics over them."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_PAGE_ID = re.compile(r"/pages/(\d+)")


def page_id_of(url: str) -> str:
    """The Confluence page id inside a URL. Gold URLs in ConfQuestions drop characters like ':' '(' '&' from
    titles, so pages are matched by id, never by the URL string. Falls back to the URL itself."""
    m = _PAGE_ID.search(url)
    return m.group(1) if m else url


@dataclass(frozen=True)
class QATurn:
    conversation: str
    turn: int
    question: str  # as asked in the conversation
    completed: str  # the human-written self-contained question
    gold_pages: frozenset[str]
    source: str  # passage | list | table
    qtype: str  # simple | complex
    answer: str
    # what an unanswerable question is ("near-miss": about the wiki, which does not hold it; "out-of-domain");
    # "" for a question with gold pages
    kind: str = ""

    @property
    def answerable(self) -> bool:
        """Whether the set names pages that answer it (an unanswerable question has `a_url: []`)."""
        return bool(self.gold_pages)


def load_conversations(path: Path, lang: str) -> list[list[QATurn]]:
    if lang not in ("en", "de"):
        raise ValueError(f"--lang must be en or de, not {lang!r}")
    conversations = []
    for conv in json.loads(Path(path).read_text(encoding="utf-8")):
        turns = []
        for t in conv["turns"]:
            turns.append(
                QATurn(
                    conversation=str(conv["conv_id"]),
                    turn=int(t["turn_id"]),
                    question=t[f"q_{lang}"],
                    completed=t[f"completed_q_{lang}"],
                    gold_pages=frozenset(page_id_of(u) for u in t["a_url"]),
                    source=t.get("a_source", ""),
                    qtype=t.get("q_type", ""),
                    answer=t.get("a", ""),
                    kind=t.get("kind", ""),
                )
            )
        conversations.append(turns)
    return conversations


def rank_of_gold(ranked_pages: Sequence[str], gold: frozenset[str], depth: int = 10) -> int | None:
    """1-based rank of the first evidence whose page is gold, within `depth`; None when absent."""
    for i, pid in enumerate(ranked_pages[:depth], start=1):
        if pid in gold:
            return i
    return None


@dataclass(frozen=True)
class RetrievalScores:
    questions: int
    p_at_1: float
    hit_at_10: float
    mrr_at_10: float


def retrieval_scores(ranks: Sequence[int | None]) -> RetrievalScores:
    n = len(ranks)
    if n == 0:
        return RetrievalScores(0, 0.0, 0.0, 0.0)
    return RetrievalScores(
        questions=n,
        p_at_1=sum(1 for r in ranks if r == 1) / n,
        hit_at_10=sum(1 for r in ranks if r is not None) / n,
        mrr_at_10=sum(1.0 / r for r in ranks if r is not None) / n,
    )
