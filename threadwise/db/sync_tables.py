"""Which Confluence spaces are synced, how far each got, and what every sync run did.

Times are stored in UTC; SQLite hands them back without a zone, so read them through `as_utc`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from threadwise.db.base import Base


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime | None) -> datetime | None:
    """A stored time with its zone back (SQLite drops it)."""
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class SyncedSpaceRow(Base):
    """A space an admin chose to sync, and its scope."""

    __tablename__ = "synced_spaces"
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(String(64), nullable=True)  # None: the whole space
    exclude_labels: Mapped[list[str]] = mapped_column(JSON, default=list)
    name: Mapped[str] = mapped_column(String(255), default="")
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    added_by: Mapped[str] = mapped_column(String(255), default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # the admin declares that everyone with access to the bot may view this space: under per-user, its pages
    # that are not restricted beyond the space may answer in channels (nullable: added by an upgrade)
    everyone_may_view: Mapped[bool | None] = mapped_column(Boolean, nullable=True, default=False)


class SpaceSyncStateRow(Base):
    """Per space: the cursor of the last successful run, and pages to retry because they failed."""

    __tablename__ = "space_sync_state"
    space: Mapped[str] = mapped_column(String(255), primary_key=True)
    cursor: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )  # start of last good run
    last_full_sync_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    retry_page_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    # THREADWISE_PERMISSIONS of the last good run (a change re-checks every page's restrictions), and the
    # pages that run left out as restricted: [{page_id, title, reason}]
    permissions: Mapped[str | None] = mapped_column(String(32), nullable=True)
    restricted_pages: Mapped[list[dict[str, str]] | None] = mapped_column(JSON, nullable=True, default=list)


class SyncedPageRow(Base):
    """Per synced page, the breadcrumb it was indexed with: a move upstream shows in the next listing.

    Title and version live in the index's manifest, the one record of what is indexed; older releases kept
    copies here (`RETIRED_COLUMNS` in db/schema.py drops them).
    """

    __tablename__ = "synced_pages"
    space: Mapped[str] = mapped_column(String(255), primary_key=True)
    page_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    breadcrumb: Mapped[str] = mapped_column(Text, default="")  # ancestor titles joined by " / "
    synced_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SyncRunRow(Base):
    """One sync of one space (or one `index --docs` of a folder: trigger "index", space the folder's path):
    what it did, how long it took, why pages failed or files were skipped."""

    __tablename__ = "sync_runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    space: Mapped[str] = mapped_column(String(255), index=True)
    full: Mapped[bool] = mapped_column(Boolean, default=False)
    trigger: Mapped[str] = mapped_column(String(32), default="manual")  # manual, schedule, slack, cli, index
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    status: Mapped[str] = mapped_column(
        String(16), default="running"
    )  # running ok partial failed interrupted
    pages: Mapped[int] = mapped_column(Integer, default=0)  # pages in scope
    added: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    deleted: Mapped[int] = mapped_column(Integer, default=0)
    unchanged: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)  # [{page_id, title, reason}]
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    # the process running it: a run still "running" whose process is gone was killed (status says interrupted)
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)


class ChannelSpacesRow(Base):
    """A channel limited to some spaces (the paper's domain). No rows for a channel: all synced spaces."""

    __tablename__ = "channel_spaces"
    channel: Mapped[str] = mapped_column(String(255), primary_key=True)
    space: Mapped[str] = mapped_column(String(255), primary_key=True)


class DigestTargetRow(Base):
    """Where the weekly knowledge-gap digest goes, per platform (a Slack channel, a Teams conversation's
    reference as JSON); no row: no digest (the default)."""

    __tablename__ = "digest_targets"
    platform: Mapped[str] = mapped_column(String(32), primary_key=True)
    target: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    set_by: Mapped[str] = mapped_column(String(255), default="")
    set_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
