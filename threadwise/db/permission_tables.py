"""Who may read each synced page, as the last sync or permission sync read it from Confluence.

Kept apart from the evidence index, so a change of restrictions, space permissions or group members is a few
row updates here and never a rewrite of Chroma metadata or a re-embedding.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from threadwise.db.base import Base
from threadwise.db.sync_tables import utcnow


class PageReadersRow(Base):
    """A page's restricted levels (its own and its ancestors'): [{page_id, users, groups, error}]. An empty
    list: every viewer of the space may read it. A level with an error: nobody may read it through the bot."""

    __tablename__ = "page_readers"
    page_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    space: Mapped[str] = mapped_column(String(255), index=True)
    title: Mapped[str] = mapped_column(Text, default="")
    levels: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)
    restricted: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SpaceViewersRow(Base):
    """Who may view a space (its read permission), and the last permission sync of the space."""

    __tablename__ = "space_viewers"
    space: Mapped[str] = mapped_column(String(255), primary_key=True)
    anonymous: Mapped[bool] = mapped_column(Boolean, default=False)
    users: Mapped[list[str]] = mapped_column(JSON, default=list)
    groups: Mapped[list[str]] = mapped_column(JSON, default=list)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)  # set: could not be read, nobody views it
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_changed: Mapped[int | None] = mapped_column(Integer, nullable=True)  # pages whose readers changed
    last_duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)


class ConfluenceGroupRow(Base):
    """A group named by a restriction or a space permission, and its members (user ids)."""

    __tablename__ = "confluence_groups"
    # Data Center: the name; Cloud: the id
    group_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    name: Mapped[str] = mapped_column(String(255), default="")
    members: Mapped[list[str]] = mapped_column(JSON, default=list)
    # set: the members are unknown, so nobody counts in the group
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ConfluenceUserRow(Base):
    """A Confluence user met in permissions, with the e-mail a chat user is matched by (None: hidden)."""

    __tablename__ = "confluence_users"
    # Data Center: the user key; Cloud: the account id
    user_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    username: Mapped[str] = mapped_column(String(255), default="")
    display_name: Mapped[str] = mapped_column(String(255), default="")
    email: Mapped[str | None] = mapped_column(String(320), nullable=True, index=True)  # lower case
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
