"""How the bot behaves in each channel, as its admins set it, and the questions handed to people.

- auto: top-level questions are answered without a mention (statements and chit-chat get nothing, and an
  answer the wiki does not hold stays unposted);
- private: answers go to the asker alone first, with Share to channel / Keep to myself;
- experts: the people or user groups "Still need help?" calls in, when the bot could not help.

Kept in the database (`channel_modes`, `escalations`), so every replica and every restart sees the same; the
admin service holds the store (`AdminService.channels`), and the admin commands and front ends read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from threadwise.db.channel_tables import ChannelModeRow, EscalationRow
from threadwise.db.sync_tables import utcnow

MAX_EXPERTS = 20


@dataclass(frozen=True)
class Expert:
    """Someone to call in: a person or a user group, in the platform's own ids (Slack U…/S…, Teams ids)."""

    kind: Literal["user", "group"]
    id: str
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "name": self.name}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Expert:
        kind: Literal["user", "group"] = "group" if data.get("kind") == "group" else "user"
        return cls(kind=kind, id=str(data.get("id", "")), name=str(data.get("name", "")))


@dataclass(frozen=True)
class ChannelMode:
    channel: str
    auto: bool = False
    private: bool = False
    experts: tuple[Expert, ...] = ()

    @property
    def is_default(self) -> bool:
        return not (self.auto or self.private or self.experts)


@dataclass(frozen=True)
class Escalation:
    id: int
    platform: str
    channel: str
    thread: str
    turn_id: int | None
    asker: str
    question: str
    message_ref: str
    resolved: bool


@dataclass(frozen=True)
class EscalationCounts:
    opened: int
    resolved: int


class ChannelModes:
    """Per-channel modes and escalations over the app's database."""

    def __init__(self, *, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    # -- modes ----------------------------------------------------------------------------------------

    def get(self, channel: str) -> ChannelMode:
        with self.sessions() as s:
            row = s.get(ChannelModeRow, channel)
            return _mode(row) if row is not None else ChannelMode(channel)

    def all(self, platform: str | None = None) -> list[ChannelMode]:
        """Every channel with a mode other than the defaults (of one platform, or all)."""
        with self.sessions() as s:
            q = select(ChannelModeRow).order_by(ChannelModeRow.channel)
            if platform is not None:
                q = q.where(ChannelModeRow.platform == platform)
            modes = [_mode(row) for row in s.scalars(q)]
        return [m for m in modes if not m.is_default]

    def set_auto(self, channel: str, on: bool, *, platform: str, by: str) -> ChannelMode:
        return self._update(channel, platform=platform, by=by, auto=on)

    def set_private(self, channel: str, on: bool, *, platform: str, by: str) -> ChannelMode:
        return self._update(channel, platform=platform, by=by, private=on)

    def set_experts(self, channel: str, experts: list[Expert], *, platform: str, by: str) -> ChannelMode:
        unique = list({(e.kind, e.id): e for e in experts}.values())[:MAX_EXPERTS]
        return self._update(channel, platform=platform, by=by, experts=[e.to_dict() for e in unique])

    def _update(self, channel: str, *, platform: str, by: str, **values: Any) -> ChannelMode:
        with self.sessions() as s, s.begin():
            row = s.get(ChannelModeRow, channel) or ChannelModeRow(
                channel=channel, auto=False, private=False, experts=[]
            )
            for name, value in values.items():
                setattr(row, name, value)
            row.platform, row.set_by, row.set_at = platform, by, utcnow()
            s.add(row)
            s.flush()
            return _mode(row)

    # -- escalations ----------------------------------------------------------------------------------

    def escalate(
        self,
        *,
        platform: str,
        channel: str,
        thread: str,
        turn_id: int | None,
        asker: str,
        question: str,
        opened_by: str,
    ) -> int:
        """Record a question handed to the channel's experts; its id."""
        with self.sessions() as s, s.begin():
            row = EscalationRow(
                platform=platform,
                channel=channel,
                thread=thread,
                turn_id=turn_id,
                asker=asker,
                question=question,
                opened_by=opened_by,
            )
            s.add(row)
            s.flush()
            return int(row.id)

    def open_escalation(self, *, channel: str, thread: str) -> Escalation | None:
        """The thread's unresolved escalation, if any (a second "Still need help?" does not ping again)."""
        with self.sessions() as s:
            q = select(EscalationRow).where(
                EscalationRow.channel == channel,
                EscalationRow.thread == thread,
                EscalationRow.resolved_at.is_(None),
            )
            row = s.scalars(q.order_by(EscalationRow.id.desc())).first()
            return _escalation(row) if row is not None else None

    def get_escalation(self, escalation_id: int) -> Escalation | None:
        with self.sessions() as s:
            row = s.get(EscalationRow, escalation_id)
            return _escalation(row) if row is not None else None

    def note_message(self, escalation_id: int, message_ref: str) -> None:
        """Remember the ping's message (a ✅ reaction on it resolves the escalation)."""
        with self.sessions() as s, s.begin():
            row = s.get(EscalationRow, escalation_id)
            if row is not None:
                row.message_ref = message_ref

    def by_message(self, channel: str, message_ref: str) -> Escalation | None:
        with self.sessions() as s:
            q = select(EscalationRow).where(
                EscalationRow.channel == channel, EscalationRow.message_ref == message_ref
            )
            row = s.scalars(q).first()
            return _escalation(row) if row is not None else None

    def resolve(self, escalation_id: int, *, by: str) -> bool:
        """Mark it resolved; False when it was resolved already (or is unknown)."""
        with self.sessions() as s, s.begin():
            row = s.get(EscalationRow, escalation_id)
            if row is None or row.resolved_at is not None:
                return False
            row.resolved_by, row.resolved_at = by, utcnow()
            return True

    def counts(self) -> EscalationCounts:
        with self.sessions() as s:
            opened = s.scalar(select(func.count()).select_from(EscalationRow)) or 0
            resolved = s.scalar(
                select(func.count()).select_from(EscalationRow).where(EscalationRow.resolved_at.is_not(None))
            )
            return EscalationCounts(opened=int(opened), resolved=int(resolved or 0))


def _mode(row: ChannelModeRow) -> ChannelMode:
    experts = tuple(Expert.from_dict(e) for e in (row.experts or []) if isinstance(e, dict))
    return ChannelMode(channel=row.channel, auto=bool(row.auto), private=bool(row.private), experts=experts)


def _escalation(row: EscalationRow) -> Escalation:
    return Escalation(
        id=int(row.id),
        platform=row.platform,
        channel=row.channel,
        thread=row.thread,
        turn_id=row.turn_id,
        asker=row.asker,
        question=row.question,
        message_ref=row.message_ref,
        resolved=row.resolved_at is not None,
    )
