"""Conversations, their turns, feedback and explanations, as SQLAlchemy tables and one small repository.

A conversation is keyed by (platform, workspace, channel, thread): a Slack thread, a terminal session, a Teams
reply chain. Deleting a conversation only hides it; nothing is ever dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from threadwise.db.base import Base


def _now() -> datetime:
    return datetime.now(UTC)


class ConversationRow(Base):
    """One thread. Platform ids get 255 characters: PostgreSQL enforces lengths (SQLite does not), and Teams
    conversation and user ids run past 64."""

    __tablename__ = "conversations"
    __table_args__ = (UniqueConstraint("platform", "workspace", "channel", "thread"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String(32))
    workspace: Mapped[str] = mapped_column(String(255))
    channel: Mapped[str] = mapped_column(String(255))
    thread: Mapped[str] = mapped_column(String(255))
    started_by: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


class TurnRow(Base):
    __tablename__ = "turns"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id"), index=True)
    asked_by: Mapped[str] = mapped_column(String(255), default="")
    question: Mapped[str] = mapped_column(Text)
    completed_question: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)
    not_found: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    sources: Mapped[list[Any]] = mapped_column(JSON)  # evidence shown, with ranks and scores
    cited: Mapped[list[Any]] = mapped_column(JSON)
    follow_ups: Mapped[list[Any]] = mapped_column(JSON, default=list)
    trace: Mapped[dict[str, Any]] = mapped_column(JSON)
    timings: Mapped[dict[str, Any]] = mapped_column(JSON)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)  # which models and settings answered
    # how sure the answer is: {"score", "level", "reason"} (core/answer/confidence.py); None when not found
    confidence: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    message_ref: Mapped[str | None] = mapped_column(
        String(255), nullable=True
    )  # e.g. the Slack ts of the answer
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class FeedbackRow(Base):
    __tablename__ = "feedback"
    __table_args__ = (UniqueConstraint("turn_id", "user"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    turn_id: Mapped[int] = mapped_column(ForeignKey("turns.id"), index=True)
    user: Mapped[str] = mapped_column(String(255))
    vote: Mapped[str] = mapped_column(String(8))  # "up" | "down"
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now, onupdate=_now)


class ExplanationRow(Base):
    __tablename__ = "explanations"
    turn_id: Mapped[int] = mapped_column(ForeignKey("turns.id"), primary_key=True)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


class ProcessedEventRow(Base):
    """Ids of platform events already handled: Slack re-sends events, we answer once.

    A question being answered also records who answers it (`holder`, a replica) and until when that replica
    vouches for it (`lease_until`, renewed while it works; NULL once answered), and what another replica needs
    to answer it in its place (`payload`): db/claims.py, threadwise/chat/handover.py.
    """

    __tablename__ = "processed_events"
    event_key: Mapped[str] = mapped_column(String(128), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    holder: Mapped[str | None] = mapped_column(String(255), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True, index=True)
    attempts: Mapped[int | None] = mapped_column(Integer, nullable=True)
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


@dataclass(frozen=True)
class ThreadKey:
    platform: str
    workspace: str
    channel: str
    thread: str


@dataclass(frozen=True)
class StoredTurn:
    id: int
    conversation_id: int
    asked_by: str
    question: str
    completed_question: str
    answer: str
    not_found: bool
    error: str | None
    sources: list[dict[str, Any]]
    cited: list[int]
    follow_ups: list[str]
    trace: dict[str, Any]
    timings: dict[str, Any]
    config: dict[str, Any]
    message_ref: str | None
    created_at: datetime
    confidence: dict[str, Any] | None = None


def _stored(row: TurnRow) -> StoredTurn:
    return StoredTurn(
        id=row.id,
        conversation_id=row.conversation_id,
        asked_by=row.asked_by,
        question=row.question,
        completed_question=row.completed_question,
        answer=row.answer,
        not_found=row.not_found,
        error=row.error,
        sources=list(row.sources or []),
        cited=list(row.cited or []),
        follow_ups=list(row.follow_ups or []),
        trace=dict(row.trace or {}),
        timings=dict(row.timings or {}),
        config=dict(row.config or {}),
        message_ref=row.message_ref,
        created_at=row.created_at,
        confidence=dict(row.confidence) if row.confidence else None,
    )


class ConversationStore:
    """All reads and writes of conversation state go through here."""

    def __init__(self, *, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def conversation_id(self, key: ThreadKey, *, create: bool = True, started_by: str = "") -> int | None:
        with self._sessions() as s, s.begin():
            row = s.scalars(
                select(ConversationRow).where(
                    ConversationRow.platform == key.platform,
                    ConversationRow.workspace == key.workspace,
                    ConversationRow.channel == key.channel,
                    ConversationRow.thread == key.thread,
                )
            ).first()
            if row is not None:
                return None if row.deleted and not create else row.id
            if not create:
                return None
            row = ConversationRow(
                platform=key.platform,
                workspace=key.workspace,
                channel=key.channel,
                thread=key.thread,
                started_by=started_by,
            )
            s.add(row)
            s.flush()
            return row.id

    def add_turn(self, conversation_id: int, **fields: Any) -> int:
        with self._sessions() as s, s.begin():
            row = TurnRow(conversation_id=conversation_id, **json.loads(json.dumps(fields, default=str)))
            s.add(row)
            s.flush()
            return row.id

    def set_message_ref(self, turn_id: int, ref: str) -> None:
        with self._sessions() as s, s.begin():
            row = s.get(TurnRow, turn_id)
            if row is not None:
                row.message_ref = ref

    def turn_for_message(self, platform: str, channel: str, ref: str) -> int | None:
        """The turn whose answer is the message `ref` in `channel` (feedback on a message names only it)."""
        with self._sessions() as s:
            return s.scalars(
                select(TurnRow.id)
                .join(ConversationRow, ConversationRow.id == TurnRow.conversation_id)
                .where(
                    ConversationRow.platform == platform,
                    ConversationRow.channel == channel,
                    TurnRow.message_ref == ref,
                )
                .order_by(TurnRow.id.desc())
            ).first()

    def turns(self, conversation_id: int) -> list[StoredTurn]:
        with self._sessions() as s:
            rows = s.scalars(
                select(TurnRow).where(TurnRow.conversation_id == conversation_id).order_by(TurnRow.id)
            )
            return [_stored(r) for r in rows]

    def turn(self, turn_id: int) -> StoredTurn | None:
        with self._sessions() as s:
            row = s.get(TurnRow, turn_id)
            return _stored(row) if row is not None else None

    def conversation_key(self, conversation_id: int) -> ThreadKey | None:
        with self._sessions() as s:
            row = s.get(ConversationRow, conversation_id)
            return ThreadKey(row.platform, row.workspace, row.channel, row.thread) if row else None

    def delete_conversation(self, conversation_id: int) -> None:
        """Hide a conversation; its turns stay stored (listed among deleted conversations)."""
        with self._sessions() as s, s.begin():
            row = s.get(ConversationRow, conversation_id)
            if row is not None:
                row.deleted = True

    def conversations(self, *, include_deleted: bool = False) -> list[tuple[int, ThreadKey, bool]]:
        with self._sessions() as s:
            q = select(ConversationRow).order_by(ConversationRow.id)
            if not include_deleted:
                q = q.where(ConversationRow.deleted.is_(False))
            return [
                (r.id, ThreadKey(r.platform, r.workspace, r.channel, r.thread), r.deleted)
                for r in s.scalars(q)
            ]

    # ----- feedback -----
    def vote(self, turn_id: int, user: str, vote: str, comment: str | None = None) -> None:
        """Store or change a user's vote on a turn (one vote per user and turn)."""
        if vote not in ("up", "down"):
            raise ValueError(f"vote must be 'up' or 'down', not {vote!r}")
        with self._sessions() as s, s.begin():
            row = s.scalars(
                select(FeedbackRow).where(FeedbackRow.turn_id == turn_id, FeedbackRow.user == user)
            ).first()
            if row is None:
                s.add(FeedbackRow(turn_id=turn_id, user=user, vote=vote, comment=comment))
            else:
                row.vote = vote
                if comment is not None or vote == "up":
                    row.comment = comment

    def add_comment(self, turn_id: int, user: str, comment: str) -> None:
        with self._sessions() as s, s.begin():
            row = s.scalars(
                select(FeedbackRow).where(FeedbackRow.turn_id == turn_id, FeedbackRow.user == user)
            ).first()
            if row is None:
                s.add(FeedbackRow(turn_id=turn_id, user=user, vote="down", comment=comment))
            else:
                row.comment = comment

    def votes(self, turn_id: int) -> dict[str, str]:
        with self._sessions() as s:
            return {
                r.user: r.vote for r in s.scalars(select(FeedbackRow).where(FeedbackRow.turn_id == turn_id))
            }

    def feedback_summary(self, latest: int = 5) -> dict[str, Any]:
        """Counts of 👍/👎 and the latest 👎 with their questions, for admins."""
        with self._sessions() as s:
            rows = list(s.scalars(select(FeedbackRow)))
            downs = s.execute(
                select(FeedbackRow, TurnRow)
                .join(TurnRow, TurnRow.id == FeedbackRow.turn_id)
                .where(FeedbackRow.vote == "down")
                .order_by(FeedbackRow.updated_at.desc())
                .limit(latest)
            ).all()
            return {
                "up": sum(1 for r in rows if r.vote == "up"),
                "down": sum(1 for r in rows if r.vote == "down"),
                "latest_down": [
                    {
                        "turn_id": t.id,
                        "user": f.user,
                        "question": t.question,
                        "comment": f.comment,
                        "when": f.updated_at.isoformat() if f.updated_at else "",
                    }
                    for f, t in downs
                ],
            }

    # ----- explanations -----
    def explanation(self, turn_id: int) -> dict[str, Any] | None:
        with self._sessions() as s:
            row = s.get(ExplanationRow, turn_id)
            return dict(row.result) if row is not None else None

    def save_explanation(self, turn_id: int, result: dict[str, Any]) -> None:
        with self._sessions() as s, s.begin():
            row = s.get(ExplanationRow, turn_id)
            payload = json.loads(json.dumps(result, default=str))
            if row is None:
                s.add(ExplanationRow(turn_id=turn_id, result=payload))
            else:
                row.result = payload

    # ----- event de-duplication -----
    def claim_event(self, event_key: str) -> bool:
        """True the first time a key is claimed, False for every repeat (safe across threads and processes)."""
        from sqlalchemy.exc import IntegrityError

        try:
            with self._sessions() as s, s.begin():
                s.add(ProcessedEventRow(event_key=event_key[:128]))
            return True
        except IntegrityError:
            return False
