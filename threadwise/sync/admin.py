"""The one place that changes which Confluence spaces are synced; used by the CLI and by Slack admin commands.

Every method either does what it says or raises `AdminError` with a message fit to show the admin as is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from threadwise.connectors.confluence import NOT_CONFIGURED, ConfluenceClient, ConfluenceError, SpaceInfo
from threadwise.core.types import PageFailure, RestrictedPage
from threadwise.db.channel_modes import ChannelModes
from threadwise.db.permission_tables import SpaceViewersRow
from threadwise.db.sync_tables import ChannelSpacesRow, SyncedSpaceRow, SyncRunRow, as_utc
from threadwise.errors import ThreadwiseError
from threadwise.index.store import EvidenceIndex
from threadwise.sync.digest import DigestTargets
from threadwise.sync.leader import SyncBusy, SyncLock
from threadwise.sync.space_config import SpaceConfig, space_config
from threadwise.sync.store import FOLDER_TRIGGER, INTERRUPTED, SyncStore, process_gone
from threadwise.sync.sync import Progress, SpaceSyncer, SyncBusyError, SyncReport

if TYPE_CHECKING:
    from threadwise.sync.permission_sync import PermissionReport


class AdminError(ThreadwiseError, ValueError):
    """A refused or failed admin action; the message is for the admin."""


class NotConfiguredError(AdminError):
    """The action needs Confluence, which is not (or only half) configured: a configuration error."""

    exit_code = 2


@dataclass(frozen=True)
class RunSummary:
    status: str  # running ok partial failed interrupted
    full: bool
    trigger: str
    started_at: datetime | None
    finished_at: datetime | None
    duration_s: float | None
    pages: int
    added: int
    updated: int
    deleted: int
    unchanged: int
    failed: int
    failures: tuple[dict[str, str], ...]
    error: str

    @classmethod
    def of(cls, row: SyncRunRow) -> RunSummary:
        """The run as stored; one still "running" whose process is gone (kill -9, a crash) is interrupted."""
        interrupted = row.status == "running" and process_gone(row.host, row.pid)
        return cls(
            status="interrupted" if interrupted else row.status,
            full=row.full,
            trigger=row.trigger,
            started_at=as_utc(row.started_at),
            finished_at=as_utc(row.finished_at),
            duration_s=row.duration_s,
            pages=row.pages,
            added=row.added,
            updated=row.updated,
            deleted=row.deleted,
            unchanged=row.unchanged,
            failed=row.failed,
            failures=tuple(row.failures or ()),
            error=INTERRUPTED if interrupted else row.error or "",
        )


@dataclass(frozen=True)
class SpaceStatus:
    """What the bot knows about one space, for `threadwise status`, the Slack Home tab and scripts."""

    key: str
    name: str
    scope: str
    configured: bool  # False: evidence in the index that no configured space owns (e.g. indexed from files)
    enabled: bool
    pages: int
    evidences: int
    last_run: RunSummary | None
    last_success_at: datetime | None  # start of the last run that completed (the sync cursor)
    # pages the last completed sync left out as restricted (THREADWISE_PERMISSIONS=open-pages), with why
    restricted_pages: int = 0
    left_out: tuple[RestrictedPage, ...] = ()
    everyone_may_view: bool = False  # declared by the admin (per-user: open pages answer in channels)
    # per-user: why the space's view permission could not be read at the last sync (nobody views it here)
    permission_error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": "space", **_plain(asdict(self))}


def _plain(v: Any) -> Any:
    """Datetimes as ISO text, tuples as lists: JSON-ready."""
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


@dataclass(frozen=True)
class FolderStatus:
    """The last `threadwise index --docs` of one folder: what it did and which files it skipped, and why."""

    folder: str
    last_run: RunSummary

    def to_json(self) -> dict[str, Any]:
        return {"kind": "folder", "folder": self.folder, "last_run": _plain(asdict(self.last_run))}


class AdminService:
    def __init__(
        self,
        *,
        sessions: sessionmaker[Session],
        index: EvidenceIndex,
        client: ConfluenceClient | None = None,
        syncer: SpaceSyncer | None = None,
        confluence_problem: str | None = None,
        sync_lock: SyncLock | None = None,
    ) -> None:
        """`client` and `syncer` are None when Confluence is not configured: list, status and remove still work;
        the actions that need it fail, saying what is missing (`confluence_problem`: CONFLUENCE_URL is set but
        e.g. the credentials are not). `sync_lock`: the database lease that keeps syncs of all replicas (and
        the CLI) one at a time; None: only the per-space file lock."""
        self.sync_lock = sync_lock
        self.sessions = sessions
        self.index = index
        self._client = client
        self.confluence_problem = confluence_problem
        self.syncer = syncer
        self.store = SyncStore(sessions=sessions)
        self.digests = DigestTargets(sessions=sessions)  # where the weekly knowledge-gap digest goes
        self.channels = ChannelModes(sessions=sessions)  # auto answers, private first, experts, per channel

    @property
    def client(self) -> ConfluenceClient:
        if self._client is None:
            raise NotConfiguredError(self.confluence_problem or NOT_CONFIGURED)
        return self._client

    # ----- spaces -----
    def list_spaces(self) -> list[SpaceConfig]:
        """The configured spaces, by key."""
        with self.sessions() as s:
            rows = s.scalars(select(SyncedSpaceRow).order_by(SyncedSpaceRow.key)).all()
            return [space_config(r) for r in rows]

    def available_spaces(self) -> list[SpaceInfo]:
        """The spaces the Confluence credentials can see."""
        try:
            return self.client.list_spaces()
        except ConfluenceError as e:
            raise AdminError(str(e)) from e

    def add_space(
        self,
        key: str,
        *,
        parent_id: str | None = None,
        exclude_labels: Iterable[str] = (),
        added_by: str = "",
        everyone_may_view: bool | None = None,
    ) -> SpaceConfig:
        """Add a space (or change the scope of one already added), after checking it with Confluence.
        `everyone_may_view`: the admin declares that everyone with access to the bot may view the space (None:
        leave the declaration as it is)."""
        key, parent_id = key.strip(), (parent_id or "").strip() or None
        labels = sorted({lbl.strip() for lbl in exclude_labels if lbl.strip()})
        try:
            info = self.client.get_space(key) if key else None
            if info is None:
                raise AdminError(self._unknown_space_message(key))
            if parent_id is not None:
                self._check_parent(key, parent_id)
        except ConfluenceError as e:
            raise AdminError(str(e)) from e
        with self.sessions() as s, s.begin():
            row = s.get(SyncedSpaceRow, key) or SyncedSpaceRow(key=key, added_by=added_by)
            row.name, row.parent_id, row.exclude_labels, row.enabled = info.name, parent_id, labels, True
            if everyone_may_view is not None:
                row.everyone_may_view = everyone_may_view
            s.add(row)
        return self._configured(key)

    def set_everyone_may_view(self, key: str, value: bool) -> SpaceConfig:
        """Declare (or withdraw) that everyone with access to the bot may view a configured space."""
        self._configured(key)
        with self.sessions() as s, s.begin():
            s.get_one(SyncedSpaceRow, key).everyone_may_view = value
        return self._configured(key)

    def _unknown_space_message(self, key: str) -> str:
        visible = self.client.list_spaces()
        if not visible:
            return (
                f"Confluence has no space {key!r} that these credentials can see; they see no spaces at all"
            )
        close = [sp.key for sp in visible if sp.key.lower() == key.lower()]
        hint = f" Did you mean {close[0]}?" if close else ""
        listed = ", ".join(f"{sp.key} ({sp.name})" if sp.name != sp.key else sp.key for sp in visible)
        return (
            f"Confluence has no space {key!r} that these credentials can see.{hint} Visible spaces: {listed}"
        )

    def _check_parent(self, key: str, parent_id: str) -> None:
        page = self.client.get_page(parent_id, space=key)
        if isinstance(page, PageFailure):
            raise AdminError(f"parent page {parent_id} cannot be read: {page.reason}")
        if page.space != key:
            raise AdminError(f"parent page {parent_id} ({page.title}) is in space {page.space}, not {key}")

    def remove_space(self, key: str) -> int:
        """Stop syncing a space and purge its evidence; returns how many pages were removed."""
        config = self._configured(key)
        try:
            with self.sync_lock.held(wait=False) if self.sync_lock else nullcontext():  # not under a sync
                if self.syncer is not None:
                    removed = self.syncer.purge(config.key)
                else:
                    removed = self.index.delete_space(config.key)
                    self.store.forget_space(config.key)
        except (SyncBusyError, SyncBusy) as e:
            raise AdminError(f"{e}; try again when it has finished") from e
        with self.sessions() as s, s.begin():
            s.execute(delete(ChannelSpacesRow).where(ChannelSpacesRow.space == config.key))
            s.execute(delete(SyncedSpaceRow).where(SyncedSpaceRow.key == config.key))
        return removed

    def _configured(self, key: str) -> SpaceConfig:
        with self.sessions() as s:
            row = s.get(SyncedSpaceRow, key)
        if row is None:
            configured = ", ".join(c.key for c in self.list_spaces()) or "none"
            raise AdminError(f"space {key!r} is not configured (configured: {configured})")
        return space_config(row)

    # ----- syncing -----
    def sync(
        self,
        key: str | None = None,
        *,
        full: bool = False,
        trigger: str = "manual",
        progress: Callable[[str], Progress] | None = None,
        wait: bool = True,
        on_wait: Callable[[str], None] | None = None,
    ) -> list[SyncReport]:
        """Sync one configured space, or every enabled one; one space's trouble never stops the others.
        `progress(space)` makes the progress callback of one space's run. While a sync runs elsewhere (another
        replica, the CLI) this one waits for it, telling `on_wait` who runs it; with `wait` False it is refused."""
        spaces = [self._configured(key)] if key else [c for c in self.list_spaces() if c.enabled]
        _ = self.client  # raises the "not configured" AdminError
        if self.syncer is None:
            raise AdminError("no sync service was configured")
        if self.sync_lock is None:
            return self._sync(spaces, full=full, trigger=trigger, progress=progress)
        try:
            with self.sync_lock.held(wait=wait, on_wait=on_wait):
                return self._sync(spaces, full=full, trigger=trigger, progress=progress)
        except SyncBusy as err:
            raise AdminError(str(err)) from None

    def _sync(
        self,
        spaces: list[SpaceConfig],
        *,
        full: bool,
        trigger: str,
        progress: Callable[[str], Progress] | None,
    ) -> list[SyncReport]:
        assert self.syncer is not None
        return [
            self.syncer.sync(
                c.scope, full=full, trigger=trigger, progress=progress(c.key) if progress else None
            )
            for c in spaces
        ]

    def sync_permissions(self, key: str | None = None) -> list[PermissionReport]:
        """Re-read and apply the permissions of one configured space, or every enabled one (nothing embedded)."""
        from threadwise.sync.permission_sync import PermissionSyncer

        spaces = [self._configured(key)] if key else [c for c in self.list_spaces() if c.enabled]
        _ = self.client  # raises the "not configured" AdminError
        if self.syncer is None:
            raise AdminError("no sync service was configured")
        syncer = PermissionSyncer(syncer=self.syncer)
        return [syncer.sync(c.scope) for c in spaces]

    # ----- status -----
    def status(self) -> list[SpaceStatus]:
        configs = {c.key: c for c in self.list_spaces()}
        keys = sorted(set(configs) | set(self.index.spaces()))
        return [self._status(key, configs.get(key)) for key in keys]

    def folder_status(self) -> list[FolderStatus]:
        """The last `index --docs` run of each folder indexed into this data folder, newest first."""
        return [
            FolderStatus(folder=row.space, last_run=RunSummary.of(row))
            for row in self.store.last_runs_by_space(FOLDER_TRIGGER)
        ]

    def _status(self, key: str, config: SpaceConfig | None) -> SpaceStatus:
        states = self.index.page_states(key)
        last = self.store.last_run(key)
        state = self.store.state(key)
        return SpaceStatus(
            key=key,
            name=config.name if config else key,
            scope=config.scope.describe() if config else "not synced from Confluence",
            configured=config is not None,
            enabled=config.enabled if config else False,
            pages=len(states),
            evidences=sum(s.evidence_count for s in states.values()),
            last_run=RunSummary.of(last) if last else None,
            last_success_at=state.cursor,
            restricted_pages=len(state.restricted),
            left_out=state.restricted,
            everyone_may_view=bool(config and config.everyone_may_view),
            permission_error=self._permission_error(key),
        )

    def _permission_error(self, key: str) -> str:
        with self.sessions() as s:
            return s.scalar(select(SpaceViewersRow.error).where(SpaceViewersRow.space == key)) or ""

    # ----- per-channel spaces -----
    def set_channel_spaces(self, channel: str, keys: Sequence[str]) -> tuple[str, ...]:
        """Limit a channel to these spaces; no keys: the channel answers from all spaces again."""
        known = {c.key for c in self.list_spaces()} | set(self.index.spaces())
        unknown = [k for k in keys if k not in known]
        if unknown:
            raise AdminError(
                f"unknown spaces {', '.join(unknown)} (known: {', '.join(sorted(known)) or 'none'})"
            )
        with self.sessions() as s, s.begin():
            s.execute(delete(ChannelSpacesRow).where(ChannelSpacesRow.channel == channel))
            s.add_all(ChannelSpacesRow(channel=channel, space=k) for k in dict.fromkeys(keys))
        return self.channel_spaces(channel)

    def channel_spaces(self, channel: str) -> tuple[str, ...]:
        """The spaces a channel is limited to; empty: all spaces."""
        with self.sessions() as s:
            q = select(ChannelSpacesRow.space).where(ChannelSpacesRow.channel == channel)
            return tuple(sorted(s.scalars(q).all()))
