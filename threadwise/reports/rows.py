"""The report's plain rows, and the one adapter that reads them from the database (read-only).

A turn becomes a `TurnFacts`: what was asked, when, in which thread, which pages it was shown and cited,
its votes and comments, and (where Explain ran) how much each page caused the answer. Only what the report
uses is kept, so 10,000 turns fit in a few megabytes however large their traces are.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Text, select, type_coerce
from sqlalchemy.orm import Session, sessionmaker

from threadwise.db.conversations import ConversationRow, ExplanationRow, FeedbackRow, TurnRow


@dataclass(frozen=True)
class PageRef:
    """A wiki page as a stored source names it."""

    page_id: str
    title: str
    url: str
    space: str
    last_modified: str  # ISO 8601, "" when unknown
    last_editor: str = ""  # who saved that version, "" when Confluence did not say


@dataclass(frozen=True)
class ThreadRef:
    """Where a question was asked: a Slack thread, a Teams conversation, a terminal session."""

    platform: str
    workspace: str
    channel: str
    thread: str


@dataclass(frozen=True)
class Vote:
    user: str
    vote: str  # "up" | "down"
    comment: str  # "" when none


@dataclass(frozen=True)
class TurnFacts:
    turn_id: int
    asked_at: datetime  # aware, UTC
    asked_by: str
    question: str
    completed_question: str
    answer: str
    not_found: bool
    sources: tuple[tuple[int, PageRef], ...]  # (source number, page), in rank order
    cited: tuple[int, ...]  # source numbers, in citation order
    thread: ThreadRef
    votes: tuple[Vote, ...] = ()
    page_shares: tuple[tuple[str, float], ...] = ()  # (page id, share) from Explain; () where it never ran

    @property
    def down_votes(self) -> int:
        return sum(1 for v in self.votes if v.vote == "down")

    @property
    def up_votes(self) -> int:
        return sum(1 for v in self.votes if v.vote == "up")

    def page_of(self, number: int) -> PageRef | None:
        return next((page for n, page in self.sources if n == number), None)


def utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes (stored as UTC): every time in the report is aware."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _loads(value: Any) -> Any:
    """A JSON column read as text (the driver may have decoded it already): orjson where it is installed
    (chromadb brings it), about a quarter faster than json on 10,000 turns' sources."""
    if not isinstance(value, str | bytes):
        return value
    return _decode(value)


try:
    import orjson

    _decode: Callable[[str | bytes], Any] = orjson.loads
except ImportError:  # pragma: no cover - chromadb depends on orjson
    _decode = json.loads


class _Pages:
    """One PageRef per page and version seen: 10,000 turns name the same few hundred pages 100,000 times."""

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], PageRef] = {}

    def __call__(self, source: dict[str, Any]) -> PageRef:
        page_id, modified, title = (
            source.get("page_id", ""),
            source.get("last_modified", ""),
            source.get("title", ""),
        )
        # two versions saved within one timestamp's resolution differ by version or editor, not by date
        key = (page_id, modified, title, source.get("version", ""), source.get("last_editor", ""))
        ref = self._known.get(key)
        if ref is None:
            ref = PageRef(
                page_id=str(page_id),
                title=str(title),
                url=str(source.get("url", "")),
                space=str(source.get("space", "")),
                last_modified=str(modified),
                last_editor=str(source.get("last_editor", "")),
            )
            self._known[key] = ref
        return ref


def read_turns(
    sessions: sessionmaker[Session], *, since: datetime, until: datetime | None = None, batch: int = 1000
) -> list[TurnFacts]:
    """The answered turns asked in [since, until) with their votes and explanations: failed answers (the
    model was down) say nothing about the wiki and are left out, and so are conversations their people
    deleted. Plain SELECTs only, so it runs beside `serve`."""
    votes = _votes(sessions, since=since, until=until)
    shares = _shares(sessions, since=since, until=until, turn_ids=set(votes))
    return list(_turns(sessions, since=since, until=until, batch=batch, votes=votes, shares=shares))


def _window(query: Any, since: datetime, until: datetime | None) -> Any:
    query = query.where(TurnRow.created_at >= since)
    return query if until is None else query.where(TurnRow.created_at < until)


def _turns(
    sessions: sessionmaker[Session],
    *,
    since: datetime,
    until: datetime | None,
    batch: int,
    votes: dict[int, list[Vote]],
    shares: dict[int, tuple[tuple[str, float], ...]],
) -> Iterator[TurnFacts]:
    query = _window(
        select(
            TurnRow.id,
            TurnRow.created_at,
            TurnRow.asked_by,
            TurnRow.question,
            TurnRow.completed_question,
            TurnRow.answer,
            TurnRow.not_found,
            type_coerce(TurnRow.sources, Text).label("sources"),
            TurnRow.cited,
            ConversationRow.platform,
            ConversationRow.workspace,
            ConversationRow.channel,
            ConversationRow.thread,
        )
        .join(ConversationRow, ConversationRow.id == TurnRow.conversation_id)
        .where(TurnRow.error.is_(None), ConversationRow.deleted.is_(False))
        .order_by(TurnRow.id),
        since,
        until,
    )
    page = _Pages()
    with sessions() as s:
        for row in s.execute(query.execution_options(yield_per=batch)):
            yield TurnFacts(
                turn_id=row.id,
                asked_at=utc(row.created_at),
                asked_by=row.asked_by or "",
                question=row.question,
                completed_question=row.completed_question or row.question,
                answer=row.answer or "",
                not_found=bool(row.not_found),
                sources=tuple(
                    (int(src.get("number", n)), page(src))
                    for n, src in enumerate(_loads(row.sources) or (), 1)
                ),
                cited=tuple(int(n) for n in row.cited or ()),
                thread=ThreadRef(row.platform, row.workspace, row.channel, row.thread),
                votes=tuple(votes.get(row.id, ())),
                page_shares=shares.get(row.id, ()),
            )


def _votes(
    sessions: sessionmaker[Session], *, since: datetime, until: datetime | None
) -> dict[int, list[Vote]]:
    query = _window(
        select(FeedbackRow.turn_id, FeedbackRow.user, FeedbackRow.vote, FeedbackRow.comment)
        .join(TurnRow, TurnRow.id == FeedbackRow.turn_id)
        .order_by(FeedbackRow.id),
        since,
        until,
    )
    out: dict[int, list[Vote]] = {}
    with sessions() as s:
        for turn_id, user, vote, comment in s.execute(query):
            out.setdefault(turn_id, []).append(Vote(user or "", vote, comment or ""))
    return out


def _shares(
    sessions: sessionmaker[Session], *, since: datetime, until: datetime | None, turn_ids: set[int]
) -> dict[int, tuple[tuple[str, float], ...]]:
    """Each voted turn's attribution per page, where Explain ran (the report weighs 👎 by it)."""
    if not turn_ids:
        return {}
    query = _window(
        select(ExplanationRow.turn_id, ExplanationRow.result).join(
            TurnRow, TurnRow.id == ExplanationRow.turn_id
        ),
        since,
        until,
    )
    out: dict[int, tuple[tuple[str, float], ...]] = {}
    with sessions() as s:
        for turn_id, result in s.execute(query):
            if turn_id not in turn_ids or not isinstance(result, dict) or result.get("degenerate"):
                continue
            pages = [(str(p["page_id"]), float(p["share"])) for p in result.get("pages", ())]
            if pages:
                out[turn_id] = tuple(pages)
    return out
