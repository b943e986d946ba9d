"""Reading and writing sync state and run history (the tables of `threadwise.db.sync_tables`)."""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from threadwise.core.types import PageFailure, RestrictedPage
from threadwise.db.sync_tables import SpaceSyncStateRow, SyncedPageRow, SyncRunRow, as_utc, utcnow
from threadwise.redact import redact_credentials

INTERRUPTED = "the process stopped before this run finished (killed or crashed)"
FOLDER_TRIGGER = "index"  # a run of `threadwise index --docs`; its space is the folder's path


@dataclass(frozen=True)
class SyncState:
    space: str
    cursor: datetime | None = None  # start of the last successful run (UTC)
    last_full_sync_at: datetime | None = None
    retry_page_ids: tuple[str, ...] = ()
    permissions: str | None = None  # the policy of the last good run; None: before policies existed
    restricted: tuple[RestrictedPage, ...] = ()  # left out by the last good run


@dataclass(frozen=True)
class RunCounts:
    pages: int = 0
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0


class SyncStore:
    def __init__(self, *, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    # ----- state -----
    def state(self, space: str) -> SyncState:
        with self.sessions() as s:
            row = s.get(SpaceSyncStateRow, space)
            if row is None:
                return SyncState(space=space)
            return SyncState(
                space=space,
                cursor=as_utc(row.cursor),
                last_full_sync_at=as_utc(row.last_full_sync_at),
                retry_page_ids=tuple(row.retry_page_ids or ()),
                permissions=row.permissions,
                restricted=tuple(RestrictedPage(**r) for r in row.restricted_pages or ()),
            )

    def save_state(self, state: SyncState) -> None:
        with self.sessions() as s, s.begin():
            row = s.get(SpaceSyncStateRow, state.space) or SpaceSyncStateRow(space=state.space)
            row.cursor = state.cursor
            row.last_full_sync_at = state.last_full_sync_at
            row.retry_page_ids = list(state.retry_page_ids)
            row.permissions = state.permissions
            row.restricted_pages = [asdict(r) for r in state.restricted]
            s.add(row)

    # ----- per-page: the breadcrumb each page was indexed with (title and version: the index's manifest) -----
    def breadcrumbs(self, space: str) -> dict[str, str]:
        with self.sessions() as s:
            rows = s.execute(
                select(SyncedPageRow.page_id, SyncedPageRow.breadcrumb).where(SyncedPageRow.space == space)
            )
            return {page_id: breadcrumb for page_id, breadcrumb in rows}

    def save_breadcrumb(self, space: str, page_id: str, breadcrumb: str) -> None:
        with self.sessions() as s, s.begin():
            row = s.get(SyncedPageRow, (space, page_id)) or SyncedPageRow(space=space, page_id=page_id)
            row.breadcrumb, row.synced_at = breadcrumb, utcnow()
            s.add(row)

    def forget_pages(self, space: str, page_ids: Sequence[str]) -> None:
        if not page_ids:
            return
        with self.sessions() as s, s.begin():
            s.execute(
                delete(SyncedPageRow).where(SyncedPageRow.space == space, SyncedPageRow.page_id.in_(page_ids))
            )

    def forget_space(self, space: str) -> None:
        """Drop a space's state and breadcrumbs (its run history stays)."""
        with self.sessions() as s, s.begin():
            s.execute(delete(SyncedPageRow).where(SyncedPageRow.space == space))
            s.execute(delete(SpaceSyncStateRow).where(SpaceSyncStateRow.space == space))

    # ----- runs -----
    def start_run(self, space: str, *, full: bool, trigger: str) -> tuple[int, bool]:
        """Record a new run; returns its id and whether an earlier run of the space died midway.

        Runs of this space still marked running are dead: the caller holds the space's lock.
        """
        with self.sessions() as s, s.begin():
            stale_runs = s.scalars(
                select(SyncRunRow).where(SyncRunRow.space == space, SyncRunRow.status == "running")
            ).all()
            for stale in stale_runs:
                stale.status = "interrupted"
                stale.error = INTERRUPTED
            row = SyncRunRow(
                space=space,
                full=full,
                trigger=trigger,
                started_at=utcnow(),
                status="running",
                host=socket.gethostname()[:255],
                pid=os.getpid(),
            )
            s.add(row)
            s.flush()
            return row.id, bool(stale_runs)

    def finish_run(
        self,
        run_id: int,
        *,
        status: str,
        counts: RunCounts,
        failures: Sequence[PageFailure] = (),
        error: str | None = None,
    ) -> float:
        """Close a run; returns its duration in seconds. The error and reasons are stored with credentials in
        URLs redacted (the connector's messages are clean already; an unexpected exception's may not be)."""
        with self.sessions() as s, s.begin():
            row = s.get_one(SyncRunRow, run_id)
            row.finished_at = utcnow()
            row.duration_s = (row.finished_at - (as_utc(row.started_at) or row.finished_at)).total_seconds()
            row.status, row.error = status, redact_credentials(error) if error else error
            row.pages, row.added, row.updated = counts.pages, counts.added, counts.updated
            row.deleted, row.unchanged, row.failed = counts.deleted, counts.unchanged, counts.failed
            row.failures = [
                {"page_id": f.page_id, "title": f.title, "reason": redact_credentials(f.reason)}
                for f in failures
            ]
            return row.duration_s

    def runs(self, space: str | None = None, *, limit: int = 20) -> list[SyncRunRow]:
        """The latest runs, newest first."""
        with self.sessions() as s:
            q = select(SyncRunRow).order_by(SyncRunRow.id.desc()).limit(limit)
            if space is not None:
                q = q.where(SyncRunRow.space == space)
            return list(s.scalars(q).all())

    def last_runs_by_space(self, trigger: str, *, limit: int = 20) -> list[SyncRunRow]:
        """The latest run of each space (folder) that runs of `trigger` touched, newest first (of the last 200)."""
        with self.sessions() as s:
            q = (
                select(SyncRunRow)
                .where(SyncRunRow.trigger == trigger)
                .order_by(SyncRunRow.id.desc())
                .limit(200)
            )
            latest: dict[str, SyncRunRow] = {}
            for row in s.scalars(q):
                latest.setdefault(row.space, row)
            return list(latest.values())[:limit]

    def last_run(self, space: str, *, finished_only: bool = False) -> SyncRunRow | None:
        with self.sessions() as s:
            q = select(SyncRunRow).where(SyncRunRow.space == space)
            if finished_only:
                q = q.where(SyncRunRow.status != "running")
            return s.scalars(q.order_by(SyncRunRow.id.desc()).limit(1)).first()


def process_gone(host: str | None, pid: int | None) -> bool:
    """Whether the process that recorded a run is gone: only knowable for a process of this host (another
    replica's run stays "running" here until its own host or the next run of the space says otherwise)."""
    if pid is None or host != socket.gethostname()[:255]:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False
