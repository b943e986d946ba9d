"""The permission sync: restrictions, space permissions and group members change without a new page version,
so the page sync cannot see them; this re-reads them for every page of a space and applies them without
fetching or embedding anything.

- `per-user`: the readers of every page (its restricted levels with their users and groups), who may view the
  space, the members of the groups involved and their e-mail addresses go into the database
  (`threadwise.permissions.store`); retrieval reads them there for each asker.
- `open-pages`: a page that became restricted is removed from the index at once; one that became open is
  fetched by the next page sync (it is listed but not indexed).
- `off`: nothing to do.
`threadwise sync --permissions` runs it now; the scheduler runs it every THREADWISE_PERMISSION_SYNC_MINUTES.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from threadwise import metrics
from threadwise.connectors.confluence import NOT_CONFIGURED, ConfluenceClient, ConfluenceError, PageRef
from threadwise.connectors.confluence_permissions import Directory
from threadwise.connectors.scope import SpaceScope
from threadwise.permissions.store import PermissionStore
from threadwise.sync.listing import scoped_listing
from threadwise.sync.readers import read_permissions
from threadwise.sync.sync import SpaceSyncer, SyncBusyError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PermissionReport:
    """What one permission sync of one space did. status: ok, failed, busy, skipped (policy off)."""

    space: str
    policy: str
    status: str
    pages: int = 0  # pages checked
    changed: int = 0  # pages whose readers changed (open-pages: that became restricted or open)
    dropped: int = 0  # open-pages: removed from the index as now restricted
    reopened: int = 0  # open-pages: no longer restricted, fetched by the next page sync
    unmapped: tuple[str, ...] = ()  # users whose e-mail Confluence did not show
    problems: tuple[str, ...] = ()
    error: str = ""
    duration_s: float = 0.0

    def summary(self) -> str:
        if self.status != "ok":
            return f"{self.space}: permissions {self.status}: {self.error}"
        text = (
            f"{self.space}: permissions of {self.pages} pages checked, {self.changed} changed"
            + (f", {self.dropped} removed as restricted" if self.dropped else "")
            + (f", {self.reopened} open again (fetched by the next sync)" if self.reopened else "")
            + f" ({self.duration_s:.1f}s, nothing embedded)"
        )
        if self.unmapped:
            text += f"\n  {len(self.unmapped)} Confluence users cannot be mapped (no e-mail shown): "
            text += ", ".join(self.unmapped[:10]) + (" …" if len(self.unmapped) > 10 else "")
        return text + "".join(f"\n  unreadable, treated as restricted: {p}" for p in self.problems)


class PermissionSyncer:
    """Re-reads and applies the permissions of a space, holding the space's sync lock."""

    def __init__(self, *, syncer: SpaceSyncer) -> None:
        self.syncer = syncer
        self.store = PermissionStore(sessions=syncer.store.sessions)
        self.directory = Directory()  # users and groups read so far: shared by the spaces of one run

    def sync(self, scope: SpaceScope) -> PermissionReport:
        """Never raises for Confluence trouble: a failed or busy report says why."""
        report = self._sync(scope)
        metrics.permission_sync(report.status)
        return report

    def _sync(self, scope: SpaceScope) -> PermissionReport:
        policy, space = self.syncer.permissions, scope.space
        if policy == "off":
            return PermissionReport(space, policy, "skipped", error="THREADWISE_PERMISSIONS=off reads none")
        started = time.perf_counter()
        try:
            with self.syncer.locked(space):
                report = self._sync_locked(scope, started)
        except SyncBusyError as e:
            return PermissionReport(space, policy, "busy", error=str(e))
        except ConfluenceError as e:
            return PermissionReport(space, policy, "failed", error=str(e))
        log.info("permission sync %s", report.summary())
        return report

    def _sync_locked(self, scope: SpaceScope, started: float) -> PermissionReport:
        client, space, policy = self.syncer.client, scope.space, self.syncer.permissions
        if client is None:
            raise ConfluenceError(NOT_CONFIGURED)
        listing = scoped_listing(client, scope)
        workers = self.syncer.fetch_workers
        if policy == "open-pages":
            return self._open_pages(client, space, list(listing.values()), started)
        perms = read_permissions(
            client, space, list(listing.values()), workers=workers, directory=self.directory
        )
        duration = time.perf_counter() - started
        changed = self.store.save(
            space,
            perms.readers,
            perms.viewers,
            perms.groups,
            perms.users,
            every_page=True,
            duration_s=duration,
        )
        return PermissionReport(
            space,
            policy,
            "ok",
            pages=len(listing),
            changed=changed,
            unmapped=tuple(u.display_name or u.username or u.id for u in perms.unmapped),
            problems=tuple(perms.problems),
            duration_s=time.perf_counter() - started,
        )

    def _open_pages(
        self, client: ConfluenceClient, space: str, refs: list[PageRef], started: float
    ) -> PermissionReport:
        syncer = self.syncer
        restricted = client.restricted_pages(refs, space=space, workers=syncer.fetch_workers)
        now = {r.page_id for r in restricted}
        indexed = syncer.index.page_states(space)
        drop = sorted(now & indexed.keys())
        for pid in drop:
            syncer.index.delete_page(pid)
        if drop:
            syncer.index.flush()
        syncer.store.forget_pages(space, drop)
        state = syncer.store.state(space)
        before = {r.page_id for r in state.restricted}
        syncer.store.save_state(replace(state, restricted=tuple(restricted)))
        return PermissionReport(
            space,
            "open-pages",
            "ok",
            pages=len(refs),
            changed=len(now ^ before),
            dropped=len(drop),
            reopened=len(before - now),
            duration_s=time.perf_counter() - started,
        )
