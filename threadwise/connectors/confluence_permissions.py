"""Who may read what, as Confluence says: read restrictions (with their users and groups), space view
permissions, group members and users' e-mail addresses. Data Center (REST v1) and Cloud alike.

- A page's own read restriction: `rest/api/content/{id}/restriction/byOperation/read` (v1 on both; Cloud still
  serves it). Empty user and group lists mean "no restriction of its own: it inherits", never "nobody".
- Space view permissions: Data Center `rest/api/space/{key}/permissions` (9.1+; a flat list of operation and
  subject rows), else JSON-RPC `getSpacePermissionSets` (see confluence_dc_people.py); Cloud
  `api/v2/spaces/{id}/permissions` (cursor paged; a principal of type user, group or anonymous, and an
  operation key `read`, target `space`).
- Group members: Data Center `rest/api/group/{name}/member` (groups are known by name); Cloud
  `rest/api/group/{groupId}/membersByGroupId` (groups are known by id, users by account id, no usernames).
- A user's e-mail: from the member or restriction entries when they carry `email`; else on Data Center the
  mobile profile or JSON-RPC `getUserByKey` (its `rest/api/user` never shows one), on Cloud
  `rest/api/user?accountId=`. Cloud hides e-mail addresses by users' privacy settings: such a user is
  reported, and can be mapped only by the admin's file (threadwise/permissions/email_map.py).
Any read that fails (403 for a token that lacks the right, 500, a reply that cannot be read) is a value with
its reason: the caller treats the page or space as restricted/not viewable, never as open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from threadwise.connectors.confluence_dc_people import DataCenterPeople
from threadwise.connectors.confluence_rest import ConfluenceError, RestSession
from threadwise.core.types import PageRef

V1_PAGE_SIZE = 100


@dataclass(frozen=True)
class ReadLevel:
    """One page's own read restriction: the users and groups it names (ids), or why it could not be read."""

    page_id: str
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    error: str = ""  # not empty: the restriction could not be read, so nobody passes this level

    @property
    def restricted(self) -> bool:
        return bool(self.users or self.groups or self.error)


@dataclass(frozen=True)
class PageReaders:
    """Who may read a page beyond its space's viewers: everyone who passes each of its restricted levels (its
    own and its ancestors'). No levels: every viewer of the space."""

    page_id: str
    title: str
    levels: tuple[ReadLevel, ...] = ()

    @property
    def error(self) -> str:
        return next((lv.error for lv in self.levels if lv.error), "")


@dataclass(frozen=True)
class SpaceViewers:
    space: str
    anonymous: bool = False
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    error: str = ""  # not empty: the permissions could not be read, so nobody may view the space here


@dataclass(frozen=True)
class ConfluenceUser:
    id: str  # Data Center: the user key; Cloud: the account id
    username: str = ""  # Data Center only
    display_name: str = ""
    email: str = ""  # empty: hidden (Cloud privacy) or unknown: this user cannot be mapped


@dataclass(frozen=True)
class GroupMembers:
    id: str  # Data Center: the group name; Cloud: the group id
    name: str
    members: tuple[str, ...] = ()  # user ids
    error: str = ""


@dataclass
class Directory:
    """Users and groups seen while reading permissions (filled as reads go). One permission sync shares it
    across its spaces, so each group's members and each user's e-mail are read once per run."""

    users: dict[str, ConfluenceUser] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)  # group id -> name
    members: dict[str, GroupMembers] = field(default_factory=dict)  # group id -> its members, once read
    looked_up: set[str] = field(default_factory=set)  # user ids whose e-mail was asked for

    def user(self, entry: dict[str, Any]) -> str:
        """Remember a user entry of any reply; returns its id."""
        uid = str(entry.get("userKey") or entry.get("accountId") or entry.get("username") or "")
        if not uid:
            return ""
        old = self.users.get(uid)
        self.users[uid] = ConfluenceUser(
            id=uid,
            username=str(entry.get("username") or (old.username if old else "")),
            display_name=str(
                entry.get("displayName") or entry.get("publicName") or (old.display_name if old else "")
            ),
            email=str(entry.get("email") or (old.email if old else "")).strip().lower(),
        )
        return uid

    def group(self, entry: dict[str, Any], *, cloud: bool) -> str:
        name = str(entry.get("name") or "")
        gid = str(entry.get("id") or name) if cloud else name
        if gid:
            self.groups.setdefault(gid, name or gid)
        return gid


class PermissionReader:
    """The permission reads of one Confluence (a `RestSession`'s authenticated GETs)."""

    def __init__(self, *, rest: RestSession, cloud: bool) -> None:
        self.rest = rest
        self.cloud = cloud
        self.dc = DataCenterPeople(rest=rest)

    # ----- restrictions -----
    def read_levels(
        self, page_ids: Iterable[str], *, space: str, directory: Directory, workers: int = 4
    ) -> dict[str, ReadLevel]:
        """Each page's own read restriction, asked once per page by `workers` threads."""
        ids = list(dict.fromkeys(page_ids))
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            levels = pool.map(lambda pid: self.read_level(pid, space=space, directory=directory), ids)
            return dict(zip(ids, levels, strict=True))

    def read_level(self, page_id: str, *, space: str, directory: Directory) -> ReadLevel:
        path = f"rest/api/content/{page_id}/restriction/byOperation/read"
        params = {"expand": "restrictions.user,restrictions.group"}
        try:
            r = self.rest.get_json(path, params, what=f"the read restrictions of page {page_id}", space=space)
            restrictions = r.get("restrictions") or {}
            users = _results(restrictions.get("user"))
            groups = _results(restrictions.get("group"))
            user_ids = tuple(u for u in (directory.user(e) for e in users) if u)
            group_ids = tuple(g for g in (directory.group(e, cloud=self.cloud) for e in groups) if g)
        except ConfluenceError as e:
            return ReadLevel(
                page_id, error=f"read restrictions could not be read, so treated as restricted ({e})"
            )
        except (AttributeError, TypeError, ValueError) as e:
            return ReadLevel(
                page_id, error=f"read restrictions came back unreadable, so treated as restricted ({e!r})"
            )
        if (users or groups) and not (user_ids or group_ids):  # named someone we cannot identify
            return ReadLevel(page_id, error="read restriction names users or groups without ids")
        return ReadLevel(page_id, users=user_ids, groups=group_ids)

    def page_readers(
        self, refs: Sequence[PageRef], *, space: str, directory: Directory, workers: int = 4
    ) -> list[PageReaders]:
        """Each page's restricted levels: its ancestors' (root first) and its own; each level read once."""
        own = self.read_levels(
            (pid for ref in refs for pid in (*ref.ancestor_ids, ref.id)),
            space=space,
            directory=directory,
            workers=workers,
        )
        return [
            PageReaders(
                ref.id,
                ref.title,
                tuple(own[pid] for pid in (*ref.ancestor_ids, ref.id) if own[pid].restricted),
            )
            for ref in refs
        ]

    # ----- the space -----
    def space_viewers(self, space: str, *, space_id: str, directory: Directory) -> SpaceViewers:
        """Who may view the space; a failed read is a value with its reason (nobody views it here)."""
        try:
            if self.cloud:
                return self._cloud_viewers(space, space_id, directory)
            return self._dc_viewers(space, directory)
        except ConfluenceError as e:
            return SpaceViewers(space, error=f"space permissions could not be read ({e})")
        except (AttributeError, TypeError, ValueError, KeyError) as e:
            return SpaceViewers(space, error=f"space permissions came back unreadable ({e!r})")

    def _dc_viewers(self, space: str, directory: Directory) -> SpaceViewers:
        grants = self.dc.space_grants(space)
        users = [directory.user({"userKey": key}) for key in grants.user_keys]
        users += [directory.user(entry) for entry in self.dc.users_by_name(grants.usernames)]
        groups = [directory.group({"name": name}, cloud=False) for name in grants.groups]
        return SpaceViewers(space, grants.anonymous, _ids(users), _ids(groups))

    def _cloud_viewers(self, space: str, space_id: str, directory: Directory) -> SpaceViewers:
        rows = self.rest.paged(
            f"api/v2/spaces/{space_id}/permissions",
            {"limit": 250},
            what=f"the permissions of space {space}",
            space=space,
        )
        anonymous, users, groups = False, [], []
        for p in rows:
            op = p.get("operation") or {}
            if op.get("key") != "read" or op.get("targetType") != "space":
                continue
            principal = p.get("principal") or {}
            kind, pid = str(principal.get("type", "")).lower(), str(principal.get("id") or "")
            if kind == "anonymous":
                anonymous = True
            elif kind == "user" and pid:
                users.append(directory.user({"accountId": pid}))
            elif kind == "group" and pid:
                groups.append(directory.group({"id": pid, "name": directory.groups.get(pid, "")}, cloud=True))
        return SpaceViewers(space, anonymous, _ids(users), _ids(groups))

    # ----- groups and users -----
    def group_members(self, group_ids: Iterable[str], *, directory: Directory) -> list[GroupMembers]:
        for gid in sorted(set(group_ids) - directory.members.keys()):
            directory.members[gid] = self._members(gid, directory)
        return [directory.members[gid] for gid in sorted(set(group_ids))]

    def _members(self, gid: str, directory: Directory) -> GroupMembers:
        name = directory.groups.get(gid, gid)
        path = (
            f"rest/api/group/{quote(gid, safe='')}/membersByGroupId"
            if self.cloud
            else f"rest/api/group/{quote(gid, safe='')}/member"
        )
        try:
            rows = self.rest.paged(path, {"limit": V1_PAGE_SIZE}, what=f"the members of group {name}")
            members = _ids(directory.user(u) for u in rows)
        except ConfluenceError as e:
            return GroupMembers(gid, name, error=f"members could not be read ({e})")
        except (AttributeError, TypeError, ValueError) as e:
            return GroupMembers(gid, name, error=f"members came back unreadable ({e!r})")
        return GroupMembers(gid, name, members)

    def complete_emails(self, user_ids: Iterable[str], *, directory: Directory, workers: int = 8) -> None:
        """Look up the e-mail of each user whose entries did not carry one (Cloud may still hide it), by
        `workers` threads: a Data Center's `confluence-users` may hold thousands."""
        todo = [
            uid
            for uid in sorted(set(user_ids))
            if uid not in directory.looked_up and not (uid in directory.users and directory.users[uid].email)
        ]
        directory.looked_up.update(todo)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            found = pool.map(lambda uid: self._user_entries(uid, directory.users.get(uid)), todo)
            for entries in found:
                for entry in entries:
                    directory.user(entry)

    def _user_entries(self, uid: str, known: ConfluenceUser | None) -> list[dict[str, Any]]:
        """What Confluence says of one user (with the e-mail where it shows one); none when it fails, so the
        user stays without e-mail: unmapped, and reported as such."""
        try:
            if self.cloud:
                entry = self.rest.get_json("rest/api/user", {"accountId": uid}, what=f"user {uid}")
                return [{**entry, "accountId": uid}] if isinstance(entry, dict) else []
            entries = [] if known is not None and known.username else [self.dc.user_by_key(uid)]
            username = known.username if known is not None and known.username else entries[0].get("username")
            return [*entries, {"userKey": uid, "email": self.dc.email(uid, str(username or ""))}]
        except (ConfluenceError, ValueError, AttributeError):
            return []


def _results(block: Any) -> list[dict[str, Any]]:
    if not isinstance(block, dict):
        return []
    return [r for r in block.get("results") or [] if isinstance(r, dict)]


def _ids(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({v for v in values if v}))
