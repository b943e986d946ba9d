"""One read of who may read a space's pages: restrictions, space viewers, groups and users (page sync under
per-user, and the permission sync, both use it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from threadwise.connectors.confluence import ConfluenceClient, ConfluenceError, PageRef
from threadwise.connectors.confluence_permissions import (
    ConfluenceUser,
    Directory,
    GroupMembers,
    PageReaders,
    SpaceViewers,
)


@dataclass(frozen=True)
class SpacePermissions:
    """Everything Confluence said about who may read a space's pages, as one read."""

    readers: list[PageReaders]
    viewers: SpaceViewers
    groups: list[GroupMembers]
    users: list[ConfluenceUser]

    @property
    def problems(self) -> list[str]:
        """What could not be read (each then counts as restricted / not viewable), and unmapped users."""
        out = [f"space {self.viewers.space}: {self.viewers.error}"] if self.viewers.error else []
        out += [f"group {g.name}: {g.error}" for g in self.groups if g.error]
        out += [f"page {r.title or r.page_id}: {r.error}" for r in self.readers if r.error]
        return out

    @property
    def unmapped(self) -> list[ConfluenceUser]:
        return [u for u in self.users if not u.email]


def read_permissions(
    client: ConfluenceClient,
    space: str,
    refs: Sequence[PageRef],
    *,
    workers: int = 4,
    directory: Directory | None = None,
) -> SpacePermissions:
    """Read the readers of `refs`, the space's viewers, the groups they name and those groups' users.
    `directory`: users and groups already read in this run (shared across its spaces)."""
    reader, directory = client.permissions, directory if directory is not None else Directory()
    readers = reader.page_readers(refs, space=space, directory=directory, workers=workers)
    try:
        space_id = client.space_id(space)
    except ConfluenceError as e:
        viewers = SpaceViewers(space, error=f"the space could not be read ({e})")
    else:
        viewers = reader.space_viewers(space, space_id=space_id, directory=directory)
    group_ids = set(viewers.groups) | {g for r in readers for lv in r.levels for g in lv.groups}
    groups = reader.group_members(group_ids, directory=directory)
    named = set(viewers.users) | {u for r in readers for lv in r.levels for u in lv.users}
    named |= {u for g in groups for u in g.members}
    reader.complete_emails(named, directory=directory)
    users = [directory.users[u] for u in sorted(named) if u in directory.users]
    return SpacePermissions(readers, viewers, groups, users)
