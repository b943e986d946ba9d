"""Who asks: Slack's users.info e-mail and Teams' member lookup, over real HTTP to the local fakes (FakeSlack,
FakeBotConnector) with the real clients, kept for a TTL; whether a conversation is private; doctor's scope check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from microsoft_teams.api import ApiClient
from microsoft_teams.api.activities import ActivityTypeAdapter
from slack_sdk import WebClient

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.fake_slack import FakeSlack
from tests.support.teams_activities import ALICE, TeamsSender
from threadwise.chat.doctor import all_ok, render
from threadwise.chat.identity import EmailDirectory, identity_ttl_seconds
from threadwise.slack.doctor import slack_checks
from threadwise.slack.identity import is_direct_message, slack_directory, slack_email
from threadwise.slack.settings import BOT_SCOPES, SlackSettings
from threadwise.teams.activity import place_of
from threadwise.teams.identity import is_personal, member_email, personal_chat

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # the Teams SDK, on ApiClient()

USERS: dict[str, dict[str, Any]] = {
    "UALICE": {"email": "Alice@Example.com"},
    "UNOMAIL": {},
    "UBOTUSER": {"email": "bot@example.com", "is_bot": True},
}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={u: dict(f) for u, f in USERS.items()}) as fake:
        yield fake


def client_for(slack: FakeSlack) -> WebClient:
    return WebClient(token=slack.token, base_url=slack.api_url)


def test_slack_users_info_gives_the_email_in_lower_case_and_none_for_who_has_none(slack: FakeSlack) -> None:
    directory = slack_directory(client_for(slack), ttl=900)
    assert directory.email("UALICE") == "alice@example.com"
    assert directory.email("UNOMAIL") is None
    assert directory.email("UBOTUSER") is None  # a bot is nobody's Confluence account
    assert directory.email("UNKNOWN") is None  # user_not_found: a person without Confluence
    assert directory.email("") is None


def test_the_mapping_is_kept_for_the_ttl_then_asked_again(slack: FakeSlack) -> None:
    clock = Clock()
    client = client_for(slack)
    directory = EmailDirectory(lookup=lambda user: slack_email(client, user), ttl=900, clock=clock)
    for _ in range(3):
        assert directory.email("UALICE") == "alice@example.com"
    assert len(slack.calls_to("users.info")) == 1
    slack.users["UALICE"] = {"email": "alice.new@example.com"}
    clock.now += 899
    assert directory.email("UALICE") == "alice@example.com"
    clock.now += 2
    assert directory.email("UALICE") == "alice.new@example.com"
    assert len(slack.calls_to("users.info")) == 2


def test_a_failed_lookup_is_nobody_and_is_retried_soon(slack: FakeSlack) -> None:
    clock = Clock()
    client = client_for(slack)
    directory = EmailDirectory(lookup=lambda user: slack_email(client, user), ttl=900, clock=clock)
    slack.fail("users.info", "internal_error")
    assert directory.email("UALICE") is None  # never "everyone", never an admin: nobody
    assert directory.email("UALICE") is None  # kept a short while: a flood of questions is one lookup
    assert len(slack.calls_to("users.info")) == 1
    clock.now += 61
    assert directory.email("UALICE") == "alice@example.com"


def test_a_token_without_the_email_scope_maps_nobody() -> None:
    without_email = BOT_SCOPES - {"users:read.email"}
    with FakeSlack(users=USERS, scopes=without_email) as slack:
        assert slack_directory(client_for(slack), ttl=900).email("UALICE") is None
    with FakeSlack(users=USERS, scopes=without_email - {"users:read"}) as slack:
        assert slack_directory(client_for(slack), ttl=900).email("UALICE") is None
        assert [c.error for c in slack.calls_to("users.info")] == ["missing_scope"]


def test_doctor_says_what_a_missing_email_scope_means() -> None:
    with FakeSlack(scopes=BOT_SCOPES - {"users:read.email"}) as slack:
        settings = SlackSettings(bot_token=slack.token, app_token=slack.app_token, api_url=slack.api_url)
        per_user = slack_checks(settings, http=False, per_user=True)
        other_policies = slack_checks(settings, http=False)
    report = render(per_user)
    assert "✔ Slack bot token: signed in" in report
    assert "✘ Slack e-mail scope: the bot token lacks users:read.email" in report
    assert "nobody can be matched to a Confluence account" in report and "reinstall" in report
    assert not all_ok(per_user) and all_ok(other_policies)  # needed under per-user only: a warning else
    assert "! Slack e-mail scope: the bot token lacks users:read.email" in render(other_policies)


def test_the_ttl_setting() -> None:
    assert identity_ttl_seconds({}) == 900
    assert identity_ttl_seconds({"THREADWISE_IDENTITY_CACHE_MINUTES": "0.5"}) == 30
    assert SlackSettings.from_env({"THREADWISE_IDENTITY_CACHE_MINUTES": "2"}).identity_ttl == 120
    for bad in ("soon", "-1"):
        with pytest.raises(ValueError, match="THREADWISE_IDENTITY_CACHE_MINUTES"):
            identity_ttl_seconds({"THREADWISE_IDENTITY_CACHE_MINUTES": bad})


def test_only_a_direct_message_is_private_in_slack() -> None:
    assert is_direct_message("D0123", "im")
    for kind in ("channel", "group", "mpim"):  # public and private channels, group DMs (shared ones too)
        assert not is_direct_message("C0123", kind)
    assert is_direct_message("D0123") and not is_direct_message("C0123") and not is_direct_message("G0123")


# -- Teams ----------------------------------------------------------------------------------------------


MEMBERS = [
    {**ALICE, "email": "Alice.Jones@Example.com", "userPrincipalName": "alice@example.onmicrosoft.com"},
    {"id": "29:upn-only", "name": "Una", "aadObjectId": "aad-una", "userPrincipalName": "una@example.com"},
]


@pytest.fixture
def connector() -> Iterator[FakeBotConnector]:
    with FakeBotConnector(members=MEMBERS) as fake:
        yield fake


def activity(connector: FakeBotConnector, where: str, user: dict[str, str] = ALICE) -> object:
    sender = TeamsSender(url="http://127.0.0.1:1/api/messages", service_url=connector.url)
    return ActivityTypeAdapter.validate_python(sender.message("hello", where=where, user=user))


def test_teams_member_lookup_gives_email_else_upn(connector: FakeBotConnector) -> None:
    api = ApiClient(connector.url)
    alice = place_of(activity(connector, "channel"))
    una = place_of(
        activity(connector, "group", {"id": "29:upn-only", "name": "Una", "aadObjectId": "aad-una"})
    )
    assert asyncio.run(member_email(api, alice)) == "Alice.Jones@Example.com"
    assert asyncio.run(member_email(api, una)) == "una@example.com"
    [first, second] = [c for c in connector.calls if c.method == "member"]
    assert first.conversation == "19:general0001@thread.tacv2" and first.activity_id == "aad-alice"


def test_a_teams_member_that_cannot_be_looked_up_is_nobody(connector: FakeBotConnector) -> None:
    api = ApiClient(connector.url)
    directory = EmailDirectory(ttl=900)
    stranger = place_of(activity(connector, "personal", {"id": "29:x", "name": "X", "aadObjectId": "aad-x"}))
    alice = place_of(activity(connector, "personal"))
    assert directory.email(stranger.user, lambda: asyncio.run(member_email(api, stranger))) is None
    connector.refuse("member", 403)
    assert directory.email(alice.user, lambda: asyncio.run(member_email(api, alice))) is None
    assert [c.status for c in connector.calls if c.method == "member"] == [404, 403]


def test_teams_privacy_and_the_personal_chat(connector: FakeBotConnector) -> None:
    assert is_personal(place_of(activity(connector, "personal")))
    assert not is_personal(place_of(activity(connector, "group")))
    assert not is_personal(place_of(activity(connector, "channel")))
    channel = place_of(activity(connector, "channel"))
    chat = asyncio.run(personal_chat(ApiClient(connector.url), channel))
    assert chat == "a:personal-29:alice"
    [create] = [c for c in connector.calls if c.method == "create"]
    assert create.body["members"] == [{"id": "29:alice"}] and create.body["tenantId"] == "tenant-0001"
