"""The knowledge-gap report as plain data: what every renderer (Markdown, HTML, JSON) and front end reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Page:
    page_id: str  # the Confluence page id
    title: str
    url: str
    space: str
    last_modified: str  # ISO date (YYYY-MM-DD), "" when Confluence did not say
    last_editor: str = ""  # who saved that version, "" when Confluence did not say


@dataclass(frozen=True)
class Question:
    question: str  # as asked
    asked_at: str  # ISO 8601, UTC
    space: str  # the space of the page it cited first (or was shown first)
    not_found: bool
    down_votes: int
    comments: tuple[str, ...]  # 👎 comments, word for word
    thread: str  # a link to where it was asked (Slack, Teams); "" when there is none (the terminal)
    turn_id: int
    asked_by: str | None = None  # only where the data policy allows (THREADWISE_REPORT_SHOWS_ASKERS)


@dataclass(frozen=True)
class TopicGroup:
    topic: str  # the group's most typical question
    words: tuple[str, ...]  # its most telling words
    count: int  # questions asked in the group, repeats included
    not_found: int
    down_votes: int
    questions: tuple[Question, ...]  # examples, most typical first
    closest_pages: tuple[Page, ...]  # what retrieval found nearest, most often first
    spaces: tuple[str, ...]


@dataclass(frozen=True)
class Comment:
    comment: str  # word for word
    question: str
    thread: str
    by: str | None = None  # only where the data policy allows


@dataclass(frozen=True)
class MisleadingPage:
    page: Page
    weight: float  # 👎 votes weighted by how much the page caused each answer (Explain, else citation order)
    down_votes: int  # on answers that cited it
    answers: int  # answers that got 👎 and cited it
    explained: int  # of those, answers Explain attributed
    comments: tuple[Comment, ...]


@dataclass(frozen=True)
class StalePage:
    page: Page
    citations: int  # answers in the window that cited it
    days_since_modified: int


@dataclass(frozen=True)
class Conflict:
    first: Page  # the page quoted first
    other: Page  # the page that "says otherwise"
    newer: str  # the page id of the newer one; "" when their dates do not tell
    count: int  # answers that showed the disagreement
    last_seen: str  # ISO 8601
    question: str  # the latest question that showed it
    thread: str

    @property
    def newer_page(self) -> Page | None:
        return {self.first.page_id: self.first, self.other.page_id: self.other}.get(self.newer)


@dataclass(frozen=True)
class UsedPage:
    page: Page
    citations: int
    up_votes: int
    down_votes: int


@dataclass(frozen=True)
class SpaceCount:
    space: str  # "" for questions no page answered
    questions: int
    answered: int
    not_found: int
    down_votes: int  # answers that got at least one 👎


@dataclass(frozen=True)
class DayCount:
    date: str  # YYYY-MM-DD, UTC
    answered: int  # answered, no 👎
    not_found: int
    down_votes: int  # answered, then voted 👎


@dataclass(frozen=True)
class Totals:
    questions: int
    answered: int
    not_found: int
    down_votes: int  # answers that got at least one 👎
    unanswered: int  # not found or 👎: what the Unanswered section groups


@dataclass(frozen=True)
class Report:
    since: str  # ISO 8601
    until: str
    generated_at: str
    stale_after_days: int
    shows_askers: bool
    totals: Totals
    unanswered: tuple[TopicGroup, ...]  # largest first
    not_grouped: int  # unanswered questions past the clustering bound (topics.MAX_CLUSTERED distinct ones)
    misleading_pages: tuple[MisleadingPage, ...]
    stale_pages: tuple[StalePage, ...]
    conflicts: tuple[Conflict, ...]  # newest first
    most_used_pages: tuple[UsedPage, ...]
    questions_per_space: tuple[SpaceCount, ...]
    questions_per_day: tuple[DayCount, ...]

    @property
    def days(self) -> int:
        """The window's length in days (its first and last calendar days are both charted)."""
        span = datetime.fromisoformat(self.until) - datetime.fromisoformat(self.since)
        return max(1, round(span.total_seconds() / 86400))
