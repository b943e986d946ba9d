"""Who may view a Data Center space and what a Data Center user's e-mail is, in the shapes Data Center sends.

- Space view permission, Data Center 9.1+: `GET rest/api/space/{key}/permissions`, a flat list of
  `{"operation": {"targetType": "space", "operationKey": "read"}, "subject": {...}, "spaceKey", "spaceId"}`
  whose subject is `{"type": "group", "name"}`, `{"type": "user", "userKey"}` (by key only, CONFSERVER-100505)
  or `{"type": "anonymous"}`. It needs a space or Confluence admin: without, Data Center answers 500
  (CONFSERVER-99908) or 403, which is stored as the space's error, never as "nobody may view it".
- Before 9.1 that resource is missing (404), and JSON-RPC's `getSpacePermissionSets(key)` says the same:
  `[{"type": "VIEWSPACE", "spacePermissions": [{"type", "userName", "groupName"}]}]`, anonymous with both null;
  users by username, turned into user keys with `rest/api/user?username=`.
- E-mail: Data Center's `rest/api/user` never carries it. Its mobile profile
  `GET rest/mobile/1.0/profile/{username}` does (`email`), and JSON-RPC `getUserByKey(key)` (a RemoteUser:
  name, fullname, email, url, key); the profile is asked first, JSON-RPC when it gives none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from threadwise.connectors.confluence_rest import (
    ConfluenceAccessError,
    ConfluenceError,
    ConfluenceNotFound,
    ConfluenceUnavailableError,
    RestSession,
)

JSON_RPC = "rpc/json-rpc/confluenceservice-v2"
NO_ADMIN_HINT = (
    "reading space permissions needs a space or Confluence admin: Data Center answers 500 or 403 to other "
    "accounts (CONFSERVER-99908)"
)


@dataclass(frozen=True)
class SpaceGrants:
    """The subjects of a space's view (read) permission, as one reply named them."""

    anonymous: bool = False
    user_keys: tuple[str, ...] = ()
    usernames: tuple[str, ...] = ()  # JSON-RPC names users by username
    groups: tuple[str, ...] = ()


def parse_space_permissions(rows: Any) -> SpaceGrants:
    """DC 9.1+ `rest/api/space/{key}/permissions`: the read-space rows' subjects (other operations ignored;
    a subject of an unknown kind is left out, so it views nothing here)."""
    if not isinstance(rows, list):
        raise ValueError(f"space permissions are a list, got {type(rows).__name__}")
    anonymous, keys, groups = False, [], []
    for row in rows:
        op = row.get("operation") or {}
        if op.get("operationKey") != "read" or op.get("targetType") != "space":
            continue
        subject = row.get("subject") or {}
        kind = str(subject.get("type") or "").lower()
        if kind == "anonymous":
            anonymous = True
        elif kind == "group" and subject.get("name"):
            groups.append(str(subject["name"]))
        elif kind == "user" and subject.get("userKey"):
            keys.append(str(subject["userKey"]))
    return SpaceGrants(anonymous, _unique(keys), (), _unique(groups))


def parse_permission_sets(sets: Any) -> SpaceGrants:
    """JSON-RPC `getSpacePermissionSets`: the VIEWSPACE set's users (by username), groups and anonymous."""
    if not isinstance(sets, list):
        raise ValueError(f"permission sets are a list, got {type(sets).__name__}")
    anonymous, names, groups = False, [], []
    for s in sets:
        if s.get("type") != "VIEWSPACE":
            continue
        for p in s.get("spacePermissions") or []:
            user, group = p.get("userName"), p.get("groupName")
            if user:
                names.append(str(user))
            elif group:
                groups.append(str(group))
            else:
                anonymous = True
    return SpaceGrants(anonymous, (), _unique(names), _unique(groups))


def rpc_body(method: str, *params: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": list(params), "id": 1}


def rpc_result(reply: Any, *, what: str) -> Any:
    """A JSON-RPC 2.0 reply's result; its error (sent with HTTP 200) as a ConfluenceError."""
    if not isinstance(reply, dict):
        raise ValueError(f"a JSON-RPC reply is an object, got {type(reply).__name__}")
    if reply.get("error"):
        err = reply["error"]
        message = err.get("message") if isinstance(err, dict) else str(err)
        raise ConfluenceError(f"Confluence refused {what} (JSON-RPC: {message})")
    return reply.get("result")


def remote_user_entry(user: Any) -> dict[str, str]:
    """A JSON-RPC RemoteUser as the user entry the directory keeps (REST names)."""
    if not isinstance(user, dict):
        raise ValueError(f"a user is an object, got {type(user).__name__}")
    return {
        "userKey": str(user.get("key") or ""),
        "username": str(user.get("name") or ""),
        "displayName": str(user.get("fullname") or ""),
        "email": str(user.get("email") or ""),
    }


class DataCenterPeople:
    """The reads above against one Data Center; `missing` remembers a route the site refused as a whole
    (JSON-RPC off), so a run does not ask it once per user."""

    def __init__(self, *, rest: RestSession) -> None:
        self.rest = rest
        self.missing: set[str] = set()

    def space_grants(self, space: str) -> SpaceGrants:
        """Who may view `space`; raises ConfluenceError (with the admin hint) when neither way answers."""
        what = f"the permissions of space {space}"
        try:
            rows = self.rest.get_json(
                f"rest/api/space/{quote(space)}/permissions", {}, what=what, space=space
            )
            return parse_space_permissions(rows)
        except ConfluenceNotFound:
            pass  # before Data Center 9.1 (or no such space): JSON-RPC says it, or says why not
        except (ConfluenceAccessError, ConfluenceUnavailableError) as e:
            raise ConfluenceError(f"{e}; {NO_ADMIN_HINT}") from None
        try:
            reply = self.rest.post_json(JSON_RPC, rpc_body("getSpacePermissionSets", space), what=what)
            sets = rpc_result(reply, what=what)
        except ConfluenceError as e:
            raise ConfluenceError(
                f"no REST space permissions (Data Center before 9.1), and JSON-RPC failed ({e}); {NO_ADMIN_HINT}"
            ) from None
        return parse_permission_sets(sets)

    def user_by_name(self, username: str) -> dict[str, Any]:
        """`rest/api/user?username=`: the user entry (with its key)."""
        entry = self.rest.get_json("rest/api/user", {"username": username}, what=f"user {username}")
        if not isinstance(entry, dict) or not entry.get("userKey"):
            raise ValueError(f"user {username} came back without a user key")
        return entry

    def users_by_name(self, usernames: tuple[str, ...]) -> list[dict[str, Any]]:
        """The entries of users JSON-RPC named; one Confluence no longer knows (404) views nothing and stops
        nobody else; any other failure raises (the space is then unreadable, never open)."""
        entries = []
        for name in usernames:
            try:
                entries.append(self.user_by_name(name))
            except ConfluenceNotFound:
                continue
        return entries

    def user_by_key(self, key: str) -> dict[str, Any]:
        entry = self.rest.get_json("rest/api/user", {"key": key}, what=f"user {key}")
        if not isinstance(entry, dict):
            raise ValueError(f"user {key} came back as {type(entry).__name__}")
        return {**entry, "userKey": key}

    def email(self, key: str, username: str) -> str:
        """The user's address: the mobile profile's, else JSON-RPC getUserByKey's; "" when neither shows one."""
        no_profile = False
        if username and "mobile" not in self.missing:
            try:
                profile = self.rest.get_json(
                    f"rest/mobile/1.0/profile/{quote(username, safe='')}",
                    {},
                    what=f"the profile of {username}",
                )
                found = str(profile.get("email") or "") if isinstance(profile, dict) else ""
                if found:
                    return found
            except ConfluenceAccessError:
                self.missing.add("mobile")
            except ConfluenceNotFound:
                no_profile = True  # no such user, or no mobile plugin: JSON-RPC may still say
            except ConfluenceError:
                pass
        if "jsonrpc" in self.missing:
            return ""
        try:
            reply = self.rest.post_json(JSON_RPC, rpc_body("getUserByKey", key), what=f"user {key}")
            user = remote_user_entry(rpc_result(reply, what=f"user {key}"))
            if no_profile:  # the user exists, so the site has no mobile profiles: ask JSON-RPC alone from now
                self.missing.add("mobile")
            return user["email"]
        except (ConfluenceAccessError, ConfluenceNotFound):
            self.missing.add("jsonrpc")  # the remote API is off (401) or absent
        except (ConfluenceError, ValueError, AttributeError):
            pass
        return ""


def _unique(values: list[str]) -> tuple[str, ...]:
    return tuple(sorted(set(values)))
