"""How sure an answer is: a number in 0..1, a level (high / medium / low) and the reason in a short phrase.

Read from what the pipeline already has, no model call:
- retrieval: whether its lexical, dense and page rankings put the final top page first, and the margin of the
  top page over the next one in the final ranking;
- the answer: whether it quotes the top page, whether that page holds the question's key terms and (same
  language) its content words (support.py), whether it says another source disagrees (conflicts.py);
- the question: a follow-up completed from the thread's history is read with less to go by.
Each signal that speaks against the answer takes a fixed share off 1.0; the largest one names the reason.
The shares and the level thresholds are calibrated on the dev split (bench/confidence_dev.py, README).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from threadwise.core.answer.question import own_and_history
from threadwise.core.answer.support import coverage, key_terms, missing_terms, page_texts
from threadwise.core.language import evidence_is_german
from threadwise.core.retrieve.retriever import Retrieval
from threadwise.core.types import Answer, Hit

Level = Literal["high", "medium", "low"]
_NOTE = re.compile(r"Another source says otherwise|Eine andere Quelle sagt dazu anderes")

# share taken off 1.0 per signal against the answer, and its phrase (bench/confidence_dev.py)
PENALTIES: dict[str, tuple[float, str]] = {
    "disagreement": (0.35, "two pages disagree"),
    "key_terms_missing": (0.3, "a key term is not on the page"),
    "not_top_page": (0.2, "quotes a lower-ranked page"),
    "low_coverage": (0.2, "few of the question's words on the page"),
    "lexical_elsewhere": (0.15, "words point to another page"),
    "dense_elsewhere": (0.15, "meaning points to another page"),
    "pages_elsewhere": (0.1, "page ranking points elsewhere"),
    "close_second": (0.15, "a second page is almost as likely"),
    "follow_up": (0.05, "follow-up, read with the thread"),
}
HIGH = 0.8
LOW = 0.5
MIN_COVERAGE = 0.6
MIN_MARGIN = 0.05


@dataclass(frozen=True)
class Signals:
    """What the confidence is read from (see the module docstring)."""

    lexical_agrees: bool | None  # None: that ranking was not run
    dense_agrees: bool | None
    pages_agree: bool | None
    margin: float | None  # (top page's score - next page's) / top page's, final ranking; None: one page
    cites_top_page: bool
    key_terms_missing: bool
    coverage: float | None  # share of the question's content words on the quoted page; None: cannot match
    disagreement: bool
    follow_up: bool


@dataclass(frozen=True)
class Confidence:
    """How sure an answer is: `score` in 0..1, its `level` and the `reason` in a short phrase."""

    score: float
    level: Level
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def label(self) -> str:
        """'high — one page, exact match'."""
        return f"{self.level} — {self.reason}"


def _page(evidence_id: str) -> str:
    return evidence_id.rpartition(":")[0]


def _top_page(hits: Sequence[Hit], *, pages: bool = False) -> str | None:
    if not hits:
        return None
    return hits[0].evidence_id if pages else _page(hits[0].evidence_id)


def _margin(final: Sequence[Hit]) -> float | None:
    best: dict[str, float] = {}
    for hit in final:
        best.setdefault(_page(hit.evidence_id), hit.score)
    scores = list(best.values())
    if len(scores) < 2 or scores[0] <= 0:
        return None
    return (scores[0] - scores[1]) / scores[0]


def signals(question: str, retrieval: Retrieval, answer: Answer, *, follow_up: bool = False) -> Signals:
    """The signals of one answer over `retrieval`'s evidences (numbered from 1 as the answer cites them)."""
    own, _ = own_and_history(question)
    evidences = retrieval.evidences
    top = evidences[0].page_id if evidences else None
    cited = [n - 1 for n in answer.cited if 0 < n <= len(evidences)]
    quoted = cited[0] if cited else 0
    texts = page_texts(evidences, quoted) if evidences else []
    german = evidence_is_german(evidences[quoted]) if evidences else None

    def agrees(hits: Sequence[Hit], *, of_pages: bool = False) -> bool | None:
        head = _top_page(hits, pages=of_pages)
        return None if head is None else head == top

    return Signals(
        lexical_agrees=agrees(retrieval.lexical),
        dense_agrees=agrees(retrieval.dense),
        pages_agree=agrees(retrieval.pages, of_pages=True),
        margin=_margin(retrieval.final),
        cites_top_page=bool(evidences) and evidences[quoted].page_id == top,
        key_terms_missing=bool(missing_terms(key_terms(own), texts)),
        coverage=coverage(own, texts, evidence_german=german),
        disagreement=bool(_NOTE.search(answer.text)),
        follow_up=follow_up,
    )


def against(s: Signals) -> list[str]:
    """The names of the signals (`PENALTIES`) that speak against the answer."""
    found = {
        "disagreement": s.disagreement,
        "key_terms_missing": s.key_terms_missing,
        "not_top_page": not s.cites_top_page,
        "low_coverage": s.coverage is not None and s.coverage < MIN_COVERAGE,
        "lexical_elsewhere": s.lexical_agrees is False,
        "dense_elsewhere": s.dense_agrees is False,
        "pages_elsewhere": s.pages_agree is False,
        "close_second": s.margin is not None and s.margin < MIN_MARGIN,
        "follow_up": s.follow_up,
    }
    return [name for name in PENALTIES if found[name]]


def assess(s: Signals) -> Confidence:
    """The number, level and reason of one answer's signals."""
    names = against(s)
    score = max(0.0, 1.0 - sum(PENALTIES[n][0] for n in names))
    level: Level = "high" if score >= HIGH else "medium" if score >= LOW else "low"
    if names:
        reason = PENALTIES[max(names, key=lambda n: PENALTIES[n][0])][1]
    elif s.coverage is not None and s.coverage >= 1.0:
        reason = "one page, exact match"
    else:
        reason = "words and meaning agree on one page"
    return Confidence(score=round(score, 2), level=level, reason=reason)


def confidence_of(
    question: str, retrieval: Retrieval, answer: Answer, *, follow_up: bool = False
) -> Confidence | None:
    """How sure `answer` is (`assess` of its `signals`); None for a not-found answer or one without sources."""
    if answer.not_found or not retrieval.evidences:
        return None
    return assess(signals(question, retrieval, answer, follow_up=follow_up))
