"""Keeping stored conversations no longer than needed: purge what is older than the retention period, and
forget one person on request.

What is stored per question: the question, the answer, the sources shown, the trace (completed question,
rankings, prompts), votes and comments, explanations; plus the ids of events already handled. The purge
removes all of it past `THREADWISE_RETENTION_DAYS` (default 90; 0 keeps everything); `threadwise forget-user`
removes what one user asked, voted and wrote, and the conversations they started.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Delete, delete, select
from sqlalchemy.orm import Session, sessionmaker

from threadwise.db.channel_tables import EscalationRow
from threadwise.db.conversations import (
    ConversationRow,
    ExplanationRow,
    FeedbackRow,
    ProcessedEventRow,
    TurnRow,
)

DEFAULT_RETENTION_DAYS = 90


def retention_days(env: Mapping[str, str]) -> int:
    """THREADWISE_RETENTION_DAYS (default 90); 0 keeps everything."""
    value = env.get("THREADWISE_RETENTION_DAYS", "").strip()
    days = int(value) if value else DEFAULT_RETENTION_DAYS
    if days < 0:
        raise ValueError(f"THREADWISE_RETENTION_DAYS={value} must be 0 (keep everything) or more days")
    return days


@dataclass(frozen=True)
class Removed:
    conversations: int = 0
    turns: int = 0
    feedback: int = 0
    explanations: int = 0
    events: int = 0
    escalations: int = 0  # questions handed to a channel's experts

    def __str__(self) -> str:
        said = (
            f"{self.conversations} conversations, {self.turns} answers, {self.feedback} votes/comments, "
            f"{self.explanations} explanations, {self.events} handled-event ids"
        )
        return said + (f", {self.escalations} escalations" if self.escalations else "")


def _deleted(s: Session, statement: Delete) -> int:
    """Rows a DELETE removed."""
    return int(getattr(s.execute(statement), "rowcount", 0) or 0)


def _drop_turns(s: Session, turn_ids: list[int]) -> tuple[int, int, int]:
    """Delete turns with their feedback and explanations; (turns, feedback, explanations) removed."""
    feedback = explanations = turns = 0
    for start in range(0, len(turn_ids), 500):
        part = turn_ids[start : start + 500]
        feedback += _deleted(s, delete(FeedbackRow).where(FeedbackRow.turn_id.in_(part)))
        explanations += _deleted(s, delete(ExplanationRow).where(ExplanationRow.turn_id.in_(part)))
        turns += _deleted(s, delete(TurnRow).where(TurnRow.id.in_(part)))
    return turns, feedback, explanations


def _drop_empty_conversations(s: Session, conversation_ids: list[int]) -> int:
    still_used = set(
        s.scalars(select(TurnRow.conversation_id).where(TurnRow.conversation_id.in_(conversation_ids)))
    )
    empty = [c for c in conversation_ids if c not in still_used]
    for start in range(0, len(empty), 500):
        s.execute(delete(ConversationRow).where(ConversationRow.id.in_(empty[start : start + 500])))
    return len(empty)


def purge_older_than(sessions: sessionmaker[Session], days: int, *, now: datetime | None = None) -> Removed:
    """Remove answers, traces, votes and explanations older than `days`, conversations left without answers,
    and old handled-event ids. `days` 0: nothing is removed."""
    if days <= 0:
        return Removed()
    cutoff = (now or datetime.now(UTC)) - timedelta(days=days)
    with sessions() as s, s.begin():
        old = list(s.execute(select(TurnRow.id, TurnRow.conversation_id).where(TurnRow.created_at < cutoff)))
        turns, feedback, explanations = _drop_turns(s, [t for t, _c in old])
        idle = list(s.scalars(select(ConversationRow.id).where(ConversationRow.created_at < cutoff)))
        conversations = _drop_empty_conversations(s, sorted({c for _t, c in old} | set(idle)))
        events = _deleted(s, delete(ProcessedEventRow).where(ProcessedEventRow.created_at < cutoff))
        escalations = _deleted(s, delete(EscalationRow).where(EscalationRow.opened_at < cutoff))
    return Removed(conversations, turns, feedback, explanations, events, escalations)


def forget_user(sessions: sessionmaker[Session], user: str) -> Removed:
    """Remove what `user` asked (answers, traces, explanations), their votes and comments on any answer, and
    the conversations they started (with everything in them)."""
    with sessions() as s, s.begin():
        started = list(s.scalars(select(ConversationRow.id).where(ConversationRow.started_by == user)))
        asked = set(s.scalars(select(TurnRow.id).where(TurnRow.asked_by == user)))
        if started:
            asked |= set(s.scalars(select(TurnRow.id).where(TurnRow.conversation_id.in_(started))))
        touched = (
            set(s.scalars(select(TurnRow.conversation_id).where(TurnRow.id.in_(sorted(asked)))))
            if asked
            else set()
        )
        votes = _deleted(s, delete(FeedbackRow).where(FeedbackRow.user == user))
        turns, feedback, explanations = _drop_turns(s, sorted(asked))
        conversations = _drop_empty_conversations(s, sorted(set(started) | touched))
        escalations = _deleted(s, delete(EscalationRow).where(EscalationRow.asker == user))
    return Removed(conversations, turns, votes + feedback, explanations, 0, escalations)
