"""Users, groups and space permissions of the local Confluence (Data Center and Cloud shapes).

Data Center (REST v1): users have a username and a user key; groups are known by name; no reply of
`rest/api/...` carries an e-mail address (tests/fixtures/confluence_dc/SOURCES.md says where each shape is from).
  GET {ctx}/rest/api/space/{key}/permissions          DC 9.1+: a flat list of {operation {targetType,
                                                      operationKey}, subject {type group+name | user+userKey |
                                                      anonymous}, spaceKey, spaceId}
  GET {ctx}/rest/api/group/{name}/member              the group's users, paged (no e-mail in the entries)
  GET {ctx}/rest/api/user?key=|username=              one user, without e-mail
  GET {ctx}/rest/mobile/1.0/profile/{username}        the mobile profile: where Data Center shows the e-mail
Cloud: users have account ids only; groups are known by id.
  GET {ctx}/api/v2/spaces/{id}/permissions            cursor paged; principal {type user|group|anonymous, id},
                                                      operation {key, targetType}
  GET {ctx}/rest/api/group/{groupId}/membersByGroupId the group's users, paged (`email` unless hidden)
  GET {ctx}/rest/api/user?accountId=                  one user; `email` is "" when the user hides it
A space without a grant of its own may be viewed by the group `confluence-users`, which holds every user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from tests.support.fake_confluence import FakeConfluence

EVERYONE = "confluence-users"


@dataclass
class FakeUser:
    username: str
    email: str
    hides_email: bool = False  # Cloud: the user's privacy settings hide the address

    @property
    def key(self) -> str:
        return f"key-{self.username}"

    @property
    def account_id(self) -> str:
        return f"acc-{self.username}"


@dataclass
class SpaceGrant:
    """Who may view a space (its read permission)."""

    users: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    anonymous: bool = False


@dataclass
class People:
    users: dict[str, FakeUser] = field(default_factory=dict)  # by username
    groups: dict[str, list[str]] = field(default_factory=dict)  # group name -> usernames
    grants: dict[str, SpaceGrant] = field(default_factory=dict)  # space key -> who may view it
    # "space:KEY" or "group:NAME" -> the status every read of it gets (403: the token lacks the right; 500)
    statuses: dict[str, int] = field(default_factory=dict)

    def add_user(
        self, username: str, email: str, *, groups: tuple[str, ...] = (), hides_email: bool = False
    ) -> None:
        self.users[username] = FakeUser(username, email, hides_email)
        for g in groups:
            self.groups.setdefault(g, []).append(username)

    def members(self, group: str) -> list[FakeUser]:
        names = list(self.users) if group == EVERYONE else self.groups.get(group, [])
        return [self.users[n] for n in names if n in self.users]

    def grant(self, space: str) -> SpaceGrant:
        return self.grants.get(space) or SpaceGrant(groups=[EVERYONE])

    # ----- JSON shapes -----
    def user_json(self, name: str, *, cloud: bool, with_email: bool) -> dict[str, Any]:
        user = self.users.get(name) or FakeUser(name, "")
        if cloud:
            r: dict[str, Any] = {"type": "known", "accountId": user.account_id, "displayName": name.title()}
            if with_email:
                r["email"] = "" if user.hides_email else user.email
            return r
        r = {"type": "known", "username": name, "userKey": user.key, "displayName": name.title()}
        if with_email:
            r["email"] = user.email
        return r

    def group_json(self, name: str, *, cloud: bool) -> dict[str, Any]:
        return (
            {"type": "group", "name": name, "id": f"grp-{name}"} if cloud else {"type": "group", "name": name}
        )

    def answer(self, fake: FakeConfluence, path: str, query: dict[str, str]) -> tuple[int, Any] | None:
        """The reply to a people/permission read, or None when `path` is not one of them."""
        cloud = fake.flavor == "cloud"
        if cloud and path.startswith("/api/v2/spaces/") and path.endswith("/permissions"):
            key = {fake.space_id(k): k for k in fake.spaces()}.get(path.split("/")[4])
            if key is None:
                return 404, {"message": "Space not found"}
            return self._failing(f"space:{key}") or (200, fake.cursor_paged(path, query, self._v2_grant(key)))
        if not cloud and path.startswith("/rest/api/space/") and path.endswith("/permissions"):
            key = unquote(path.split("/")[4])
            if key not in fake.spaces():
                return 404, {"message": f"No space with key : {key}"}
            return self._failing(f"space:{key}") or (200, self._dc_grant(key))
        if not cloud and path.startswith("/rest/mobile/1.0/profile/"):
            user = self.users.get(unquote(path.rsplit("/", 1)[1]))
            if user is None:
                return 404, {"message": "No user found"}
            return 200, self._mobile_profile(user)
        if path.startswith("/rest/api/group/") and path.endswith("/membersByGroupId" if cloud else "/member"):
            ident = unquote(path.split("/")[4])
            name = ident.removeprefix("grp-") if cloud else ident
            if name != EVERYONE and name not in self.groups:
                return 404, {"message": f"No group {ident}"}
            users = [self.user_json(u.username, cloud=cloud, with_email=cloud) for u in self.members(name)]
            return self._failing(f"group:{name}") or (200, fake.paged(path, query, users))
        if path == "/rest/api/user":
            wanted = query.get("accountId" if cloud else "key", "")
            for u in self.users.values():
                if wanted in (u.account_id if cloud else u.key,) or (
                    not cloud and query.get("username") == u.username
                ):
                    return 200, self.user_json(u.username, cloud=cloud, with_email=cloud)
            return 404, {"message": f"No user {wanted}"}
        return None

    def _failing(self, what: str) -> tuple[int, Any] | None:
        status = self.statuses.get(what)
        return (status, {"statusCode": status, "message": "Not permitted"}) if status else None

    def _dc_grant(self, space: str) -> list[dict[str, Any]]:
        """DC 9.1+'s flat list: one row per subject and operation; users by userKey only (CONFSERVER-100505)."""
        g = self.grant(space)
        subjects: list[dict[str, Any]] = [{"type": "group", "name": n} for n in g.groups]
        subjects += [{"type": "user", "userKey": FakeUser(u, "").key} for u in g.users]
        subjects += [{"type": "anonymous"}] if g.anonymous else []
        sid = sum(map(ord, space))
        row = {"spaceKey": space, "spaceId": sid}
        rows = [
            {"operation": {"targetType": "space", "operationKey": "read"}, "subject": s, **row}
            for s in subjects
        ]
        # who may create pages is not who may view: a grant the reader must skip
        rows.append(
            {
                "operation": {"targetType": "page", "operationKey": "create"},
                "subject": {"type": "group", "name": EVERYONE},
                **row,
            }
        )
        return rows

    def _mobile_profile(self, user: FakeUser) -> dict[str, Any]:
        return {
            "userName": user.username,
            "fullName": user.username.title(),
            "email": user.email,
            "url": f"/display/~{user.username}",
            "avatarUrl": "/images/icons/profilepics/default.svg",
            "anonymous": False,
            "unknownUser": False,
        }

    def _v2_grant(self, space: str) -> list[dict[str, Any]]:
        g = self.grant(space)
        op = {"key": "read", "targetType": "space"}
        rows: list[dict[str, Any]] = [
            {"id": f"u-{u}", "principal": {"type": "user", "id": f"acc-{u}"}, "operation": op}
            for u in g.users
        ]
        rows += [
            {"id": f"g-{n}", "principal": {"type": "group", "id": f"grp-{n}"}, "operation": op}
            for n in g.groups
        ]
        if g.anonymous:
            rows.append({"id": "anon", "principal": {"type": "anonymous", "id": None}, "operation": op})
        rows.append(
            {
                "id": "x",
                "principal": {"type": "group", "id": f"grp-{EVERYONE}"},
                "operation": {"key": "create", "targetType": "page"},
            }
        )
        return rows
