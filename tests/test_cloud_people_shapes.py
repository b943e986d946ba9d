"""Confluence Cloud's documented permission and user replies (tests/fixtures/confluence_cloud/, SOURCES.md there)
served as they are over HTTP to the real client: v2 space permission assignments, a group's members by group
id and a user whose profile hides the e-mail (`email: ""`); and the admin's users export read as the mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.fixture_server import serve
from threadwise.connectors.confluence_permissions import Directory, PermissionReader
from threadwise.connectors.confluence_rest import ConfluenceSettings, RestSession
from threadwise.permissions.email_map import parse_email_map

FIXTURES = Path(__file__).parent / "fixtures" / "confluence_cloud"
GROUP = "5b4f1a6e-2c59-4e8b-a0f1-7d3c9e21b001"
DAVE = "712020:5f3c8a2e-9d41-4b77-8c10-2a6b4e9f0d11"
ALICE = "557058:0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def reply(path: str) -> tuple[int, Any]:
    path = path.removeprefix("/wiki")
    if path.startswith("/api/v2/spaces/98305/permissions"):
        return 200, fixture("space_permissions_v2.json")
    if path.startswith(f"/rest/api/group/{GROUP}/membersByGroupId"):
        return 200, fixture("group_members_by_id.json")
    if path.startswith("/rest/api/user?accountId=712020"):
        return 200, fixture("user_hidden_email.json")
    return 404, {"errors": [{"status": 404, "code": "NOT_FOUND", "title": "Not Found", "detail": None}]}


def test_space_viewers_members_and_a_hidden_e_mail_as_cloud_sends_them() -> None:
    with serve(reply) as (root, calls):
        settings = ConfluenceSettings(
            url=f"{root}/wiki", username="a@corp.example", api_token="t", cloud=True
        )
        rest = RestSession(settings)
        reader, directory = PermissionReader(rest=rest, cloud=True), Directory()
        try:
            viewers = reader.space_viewers("HR", space_id="98305", directory=directory)
            # read/space rows only: the page-create group is no viewer, and a role principal (not read
            # here) grants nobody through the bot rather than everyone
            assert (viewers.error, viewers.groups, viewers.users, viewers.anonymous) == (
                "",
                (GROUP,),
                (DAVE,),
                False,
            )
            members = reader.group_members(viewers.groups, directory=directory)
            assert members[0].members == tuple(sorted((DAVE, ALICE))) and not members[0].error
            reader.complete_emails([DAVE, ALICE], directory=directory, workers=2)
        finally:
            rest.close()
    assert directory.users[ALICE].email == "alice@corp.example"  # shown: from the member entry, no lookup
    assert directory.users[DAVE].email == ""  # hidden, even when asked for by account id: unmapped
    assert calls.count("GET /wiki/rest/api/user") == 1


def test_the_users_export_maps_the_hidden_address() -> None:
    mapping = parse_email_map((FIXTURES / "users_export.csv").read_text(), source="users_export.csv")
    assert mapping.error == "" and mapping.accounts_of("dave@corp.example") == {DAVE}
    assert mapping.emails[ALICE] == "alice@corp.example"  # compared in lower case, as chat addresses are
