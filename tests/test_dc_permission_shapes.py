"""Data Center's documented permission and user replies (tests/fixtures/confluence_dc/, SOURCES.md there) read by
the real parser, first as values, then served as they are over HTTP to the real client (`PermissionReader`,
atlassian-python-api underneath), JSON-RPC's POSTs included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fixture_server import serve
from threadwise.connectors.confluence_dc_people import (
    parse_permission_sets,
    parse_space_permissions,
    remote_user_entry,
    rpc_result,
)
from threadwise.connectors.confluence_permissions import Directory, PermissionReader
from threadwise.connectors.confluence_rest import ConfluenceError, ConfluenceSettings, RestSession

FIXTURES = Path(__file__).parent / "fixtures" / "confluence_dc"
KEY = "4028800d98315ec60198315f45c00000"  # the user of CONFSERVER-100505's example


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def test_the_rest_space_permissions_of_data_center_9_1() -> None:
    grants = parse_space_permissions(fixture("space_permissions.json"))
    # read/space rows only: the page-create group and the space administrator are not viewers by that row
    assert grants.groups == ("confluence-users",) and grants.user_keys == (KEY,) and grants.anonymous


def test_the_json_rpc_permission_sets_and_user() -> None:
    grants = parse_permission_sets(rpc_result(fixture("jsonrpc_getSpacePermissionSets.json"), what="x"))
    assert grants.groups == ("confluence-users",) and grants.usernames == ("jsmith",) and grants.anonymous
    user = remote_user_entry(rpc_result(fixture("jsonrpc_getUserByKey.json"), what="x"))
    assert user == {
        "userKey": KEY,
        "username": "jsmith",
        "displayName": "Joe Smith",
        "email": "jsmith@example.com",
    }
    with pytest.raises(ConfluenceError, match="NotPermittedException"):
        rpc_result(fixture("jsonrpc_error.json"), what="the permissions of space PROJ")


def test_a_reply_of_another_shape_is_refused() -> None:
    """Cloud v1's `space?expand=permissions` shape (what the reader once expected) is not a DC 9.1 reply."""
    with pytest.raises(ValueError):
        parse_space_permissions({"results": [{"operation": {"operation": "read", "targetType": "space"}}]})


class Replies:
    """The fixtures as a Data Center answering on 127.0.0.1: REST (9.1 or not), mobile profile, JSON-RPC."""

    def __init__(self) -> None:
        self.rest_permissions = True  # False: before 9.1 (404)
        self.mobile = True
        self.ghost = False  # JSON-RPC also names a user Confluence no longer knows
        self.calls: list[str] = []

    def get(self, path: str) -> tuple[int, Any]:
        path = path.removeprefix("/confluence")
        if path == "/rest/api/space/PROJ/permissions" and self.rest_permissions:
            return 200, fixture("space_permissions.json")
        if path.startswith("/rest/api/user?") and ("key=" in path or "username=jsmith" in path):
            return 200, fixture("user_by_key.json")
        if path == "/rest/mobile/1.0/profile/jsmith" and self.mobile:
            return 200, fixture("mobile_profile.json")
        return 404, {"statusCode": 404, "message": f"null for uri: {path}"}

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        assert path == "/confluence/rpc/json-rpc/confluenceservice-v2" and body["jsonrpc"] == "2.0"
        self.calls.append(f"POST {body['method']}")
        known = {
            ("getSpacePermissionSets", "PROJ"): "jsonrpc_getSpacePermissionSets.json",
            ("getUserByKey", KEY): "jsonrpc_getUserByKey.json",
        }
        reply = fixture(known.get((body["method"], *body["params"]), "jsonrpc_error.json"))
        if body["method"] == "getSpacePermissionSets" and self.ghost:  # a user rest/api/user no longer knows
            view = next(s for s in reply["result"] if s["type"] == "VIEWSPACE")
            view["spacePermissions"].append({"type": "VIEWSPACE", "userName": "ghost", "groupName": None})
        return 200, reply


@pytest.fixture
def dc() -> Iterator[tuple[Replies, PermissionReader]]:
    replies = Replies()
    with serve(replies.get, replies.post) as (root, calls):
        replies.calls = calls
        rest = RestSession(ConfluenceSettings(url=f"{root}/confluence", personal_token="pat", max_retries=0))
        try:
            yield replies, PermissionReader(rest=rest, cloud=False)
        finally:
            rest.close()


def test_space_viewers_and_e_mails_through_rest(dc: tuple[Replies, PermissionReader]) -> None:
    replies, reader = dc
    directory = Directory()
    viewers = reader.space_viewers("PROJ", space_id="", directory=directory)
    assert (viewers.error, viewers.anonymous, viewers.groups, viewers.users) == (
        "",
        True,
        ("confluence-users",),
        (KEY,),
    )
    reader.complete_emails([KEY], directory=directory)
    assert directory.users[KEY].email == "jsmith@example.com" and directory.users[KEY].username == "jsmith"
    # the key gave the username, the mobile profile the address; JSON-RPC was not needed
    assert replies.calls[-2:] == [
        "GET /confluence/rest/api/user",
        "GET /confluence/rest/mobile/1.0/profile/jsmith",
    ]


def test_before_9_1_and_without_the_mobile_profile_json_rpc_answers(
    dc: tuple[Replies, PermissionReader],
) -> None:
    replies, reader = dc
    replies.rest_permissions, replies.mobile, replies.ghost = False, False, True
    directory = Directory()
    viewers = reader.space_viewers("PROJ", space_id="", directory=directory)
    # JSON-RPC names jsmith by username: his key comes from rest/api/user?username= (ghost's 404: left out)
    assert viewers.error == "" and viewers.users == (KEY,) and viewers.groups == ("confluence-users",)
    assert "POST getSpacePermissionSets" in replies.calls
    reader.complete_emails([KEY], directory=directory)
    assert directory.users[KEY].email == "jsmith@example.com" and replies.calls[-1] == "POST getUserByKey"
    assert reader.dc.missing == {"mobile"}  # jsmith exists but has no profile: the rest go to JSON-RPC alone


def test_a_space_neither_way_answers_for_is_an_error_not_empty(dc: tuple[Replies, PermissionReader]) -> None:
    _, reader = dc
    viewers = reader.space_viewers("OTHER", space_id="", directory=Directory())
    assert not (viewers.users or viewers.groups or viewers.anonymous)
    assert "NotPermittedException" in viewers.error and "admin" in viewers.error
