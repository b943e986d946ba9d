"""Per-channel modes an admin sets (auto answers, private first, the experts to call) and the escalations
to those experts. In the app's database, so they survive restarts and every replica sees the same."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from threadwise.db.base import Base
from threadwise.db.sync_tables import utcnow


class ChannelModeRow(Base):
    """One channel's modes; no row: the defaults (answer when mentioned, in public, nobody to call)."""

    __tablename__ = "channel_modes"
    channel: Mapped[str] = mapped_column(String(255), primary_key=True)
    platform: Mapped[str] = mapped_column(String(32), default="")
    auto: Mapped[bool] = mapped_column(Boolean, default=False)
    private: Mapped[bool] = mapped_column(Boolean, default=False)
    # [{"kind": "user" | "group", "id": "U…" | "S…", "name": "…"}], in the platform's own ids
    experts: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    set_by: Mapped[str] = mapped_column(String(255), default="")
    set_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class EscalationRow(Base):
    """A question handed to a channel's experts ("Still need help?"), and when it was marked resolved."""

    __tablename__ = "escalations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    platform: Mapped[str] = mapped_column(String(32))
    channel: Mapped[str] = mapped_column(String(255), index=True)
    thread: Mapped[str] = mapped_column(String(255), default="")
    turn_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    asker: Mapped[str] = mapped_column(String(255), default="")
    question: Mapped[str] = mapped_column(Text, default="")
    message_ref: Mapped[str] = mapped_column(
        String(255), default=""
    )  # the ping's message, where ✅ resolves it
    opened_by: Mapped[str] = mapped_column(String(255), default="")
    opened_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    resolved_by: Mapped[str | None] = mapped_column(String(255), nullable=True)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
