"""THREADWISE_PERMISSIONS=per-user in chat: each asker gets what Confluence lets them read, a channel only what
everyone there may read, and what only the asker may read is mentioned to them alone.

Threadwise is the real one from the composition root (wiring.py) over a data folder in tmp_path: the space is
added and synced from the local Confluence (restrictions, space permissions, users and groups served as
Confluence does; no test reads them any other way). Questions go in as signed Slack events to the real Bolt
app (FakeSlack's users.info gives the e-mails) and as Bot Framework activities to the real Teams app (the
FakeBotConnector's member lookup gives them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.fake_confluence import FakeConfluence, FakePage, tree_wiki
from tests.support.fake_confluence_people import SpaceGrant
from tests.support.fake_slack import FakeSlack
from tests.support.slack_driver import command, mention, message, press, text_of, wait_answers
from tests.support.slack_events import find_action
from tests.support.slack_world import ADMIN, Running, World, running_bot
from tests.support.teams_activities import ALICE, PERSONAL
from tests.support.teams_world import RunningTeams, running_teams
from tests.test_teams_bot import explain_action, messages, sent_id, thread_of, wait_messages
from threadwise.chat.identity import NOT_YOURS
from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

ON_CALL = "Within how many minutes does the on-call engineer answer pages?"
MEETING = "When do we meet every Monday?"
RESTRICTED_FACT = "15 minutes"  # only on page 113 (On-call), restricted to the group hr

SLACK_USERS: dict[str, dict[str, Any]] = {
    "UALICE": {"email": "Alice@Example.com"},  # in hr: may read the On-call page
    "UBOB": {"email": "bob@example.com"},  # not in hr
    "UNOMAIL": {},  # Slack gives no address: a person without Confluence
    ADMIN: {"email": "admin@example.com"},
}
TEAMS_MEMBERS = [
    {**ALICE, "email": "alice@example.com"},
    {"id": "29:bob", "name": "Bob", "aadObjectId": "aad-bob", "userPrincipalName": "BOB@example.com"},
]
BOB = {"id": "29:bob", "name": "Bob", "aadObjectId": "aad-bob"}
STRANGER = {"id": "29:stranger", "name": "Stranger", "aadObjectId": "aad-stranger"}


@dataclass
class Wiki:
    fake: FakeConfluence
    tw: Threadwise
    world: World


def restrict_on_call(fake: FakeConfluence) -> list[str]:
    """The default: the On-call page restricted to hr (alice's group, not bob's); only DOCS is synced."""
    fake.restrict("113", groups=["hr"])
    return []


@contextmanager
def synced_wiki(tmp_path: Path, setup: Callable[[FakeConfluence], list[str]]) -> Iterator[Wiki]:
    """DOCS (declared "everyone may view") and the spaces `setup` returns, synced through the real wiring
    after `setup` changed the local Confluence."""
    budget = FakePage(id="900", space="FIN", title="Budget", body="<p>The travel budget is 42000 euros.</p>")
    with FakeConfluence(pages=[*tree_wiki(), budget], context_path="/confluence") as fake:
        fake.people.add_user("alice", "alice@example.com", groups=("hr",))
        fake.people.add_user("bob", "bob@example.com", groups=("eng",))
        fake.people.add_user("admin", "admin@example.com")
        spaces = setup(fake)
        env = {
            "THREADWISE_DATA_DIR": str(tmp_path / "data"),
            "CONFLUENCE_URL": fake.url,
            "CONFLUENCE_PERSONAL_TOKEN": "pat-secret",
            "THREADWISE_PERMISSIONS": "per-user",
            "THREADWISE_EMBEDDER": "hashing",
            "THREADWISE_LLM": "off",
        }
        tw = Threadwise(settings=load_settings(env=env))
        tw.admin.add_space("DOCS", everyone_may_view=True)
        for key in spaces:
            tw.admin.add_space(key)
        for report in tw.admin.sync():
            assert report.status == "ok", report.summary()
        yield Wiki(fake, tw, World(tw.conversations, tw.admin, tw.index, tw.store))


@pytest.fixture
def wiki(tmp_path: Path) -> Iterator[Wiki]:
    with synced_wiki(tmp_path, restrict_on_call) as synced:
        yield synced


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={u: dict(f) for u, f in SLACK_USERS.items()}) as fake:
        yield fake


@pytest.fixture
def run(wiki: Wiki, slack: FakeSlack) -> Iterator[Running]:
    with running_bot(wiki.world, slack) as running:
        yield running


def dm(run: Running, user: str, text: str) -> dict[str, Any]:
    """A direct message from `user` to the bot, and the bot's answer."""
    channel = "D" + user
    ts = message(run, text, channel=channel, channel_type="im", user=user)
    return wait_answers(run, channel, ts)[0]


def in_channel(run: Running, user: str, text: str) -> tuple[str, dict[str, Any]]:
    ts = mention(run, f"<@UBOT> {text}", user=user)
    return ts, wait_answers(run, "C1", ts)[0]


def hints(slack: FakeSlack, user: str | None = None) -> list[dict[str, Any]]:
    return [m for m in slack.ephemerals(user) if "direct message" in text_of(m)]


# -- Slack ------------------------------------------------------------------------------------------------


def test_in_a_dm_each_asker_gets_what_they_may_read(run: Running) -> None:
    assert RESTRICTED_FACT in text_of(dm(run, "UALICE", ON_CALL))
    assert RESTRICTED_FACT not in text_of(dm(run, "UBOB", ON_CALL))
    assert hints(run.slack) == []  # nothing to hint at in a private conversation
    # one users.info per person (then the TTL cache)
    assert sorted(c.params["user"] for c in run.slack.calls_to("users.info")) == ["UALICE", "UBOB"]


def test_in_a_channel_nobody_gets_a_restricted_page_and_only_who_could_is_told_privately(
    run: Running,
) -> None:
    ts, answer = in_channel(run, "UALICE", ON_CALL)
    assert RESTRICTED_FACT not in text_of(answer)
    [hint] = run.slack.wait_for(lambda: hints(run.slack))
    assert hint["user"] == "UALICE" and hint["channel"] == "C1" and hint["thread_ts"] == ts
    assert "ask me in a direct message" in text_of(hint)
    assert all(RESTRICTED_FACT not in text_of(m) for m in run.slack.thread("C1", ts))

    _, answer = in_channel(run, "UBOB", ON_CALL)
    assert RESTRICTED_FACT not in text_of(answer)
    assert hints(run.slack, "UBOB") == []  # bob may read no more than the channel: nothing to hint at
    # open pages of the space everyone may view still answer in the channel
    _, meeting = in_channel(run, "UBOB", MEETING)
    assert "Monday at 10:00" in text_of(meeting)


def restrict_team(fake: FakeConfluence) -> list[str]:
    fake.restrict("110", users=["alice"])  # Team, above Policies and On-call
    return []


def alice_in_two_groups(fake: FakeConfluence) -> list[str]:
    fake.people.groups["eng"].append("alice")  # hr and eng; bob: eng only
    fake.restrict("112", groups=["eng"])  # Policies, above On-call
    fake.restrict("113", groups=["hr"])
    return []


def fin_for_finance(fake: FakeConfluence) -> list[str]:
    fake.people.groups["finance"] = ["bob"]
    fake.people.grants["FIN"] = SpaceGrant(groups=["finance"])  # a space alice may not view
    return ["FIN"]


def unreadable_restriction(fake: FakeConfluence) -> list[str]:
    fake.faults.restriction_statuses["112"] = 403  # the token may not read Policies' restrictions
    return []


BUDGET = "What is the travel budget?"


@pytest.mark.parametrize(
    ("setup", "question", "fact", "reader", "other", "hinted"),
    [
        (restrict_team, ON_CALL, RESTRICTED_FACT, "UALICE", "UBOB", ["UALICE"]),
        # bob may read Policies (eng), which the channel may not: he is told too, and still gets no On-call
        (alice_in_two_groups, ON_CALL, RESTRICTED_FACT, "UALICE", "UBOB", ["UALICE", "UBOB"]),
        (fin_for_finance, BUDGET, "42000", "UBOB", "UALICE", ["UBOB"]),
        (unreadable_restriction, ON_CALL, RESTRICTED_FACT, None, "UALICE", []),  # a 403: nobody reads it
    ],
    ids=["ancestor restricted", "a user in two groups", "a space some may not view", "403 on a restriction"],
)
def test_permitted_and_not_permitted_askers_in_a_dm_and_in_a_channel(
    tmp_path: Path,
    slack: FakeSlack,
    setup: Callable[[FakeConfluence], list[str]],
    question: str,
    fact: str,
    reader: str | None,
    other: str,
    hinted: list[str],
) -> None:
    with synced_wiki(tmp_path, setup) as synced, running_bot(synced.world, slack) as run:
        if reader is not None:
            assert fact in text_of(dm(run, reader, question))
        assert fact not in text_of(dm(run, other, question))
        for user in filter(None, (reader, other)):
            _, answer = in_channel(run, user, question)
            assert fact not in text_of(answer)
        run.bot.wait_idle()
        assert [m["user"] for m in hints(slack)] == hinted


def test_an_unmapped_asker_and_a_failed_lookup_count_as_nobody(run: Running) -> None:
    assert RESTRICTED_FACT not in text_of(dm(run, "UNOMAIL", ON_CALL))
    run.slack.fail("users.info", "internal_error")
    assert RESTRICTED_FACT not in text_of(dm(run, "UALICE", ON_CALL))  # alice, but Slack would not say so
    assert [c.error for c in run.slack.calls_to("users.info")] == ["", "internal_error"]
    _, answer = in_channel(run, "UNOMAIL", ON_CALL)
    assert RESTRICTED_FACT not in text_of(answer) and hints(run.slack) == []


def test_explain_and_votes_are_refused_to_who_may_no_longer_read_the_sources(
    run: Running, wiki: Wiki
) -> None:
    answer = dm(run, "UALICE", ON_CALL)
    assert RESTRICTED_FACT in text_of(answer)
    wiki.fake.people.groups["hr"].remove("alice")  # no new page version: the permission sync sees it
    wiki.tw.admin.sync_permissions()
    posts = len(run.slack.calls_to("chat.postMessage"))
    press(run, answer, "explain", user="UALICE", channel="DUALICE")
    press(run, answer, "feedback", user="UALICE", channel="DUALICE", value="up")
    run.bot.wait_idle()
    refusals = [text_of(m) for m in run.slack.ephemerals("UALICE", "DUALICE")]
    assert len(refusals) == 2 and all(NOT_YOURS in r for r in refusals)
    assert len(run.slack.calls_to("chat.postMessage")) == posts  # no explanation was posted
    assert wiki.tw.store.feedback_summary()["up"] == 0  # nor the vote recorded


def test_a_channel_answer_whose_page_became_restricted_shows_nothing_more(run: Running, wiki: Wiki) -> None:
    ts, answer = in_channel(run, "UBOB", MEETING)
    assert "Monday at 10:00" in text_of(answer)
    wiki.fake.restrict("111", groups=["hr"])
    wiki.tw.admin.sync_permissions()
    for user in ("UBOB", "UALICE"):  # alice may read it, but not in front of the channel
        press(run, answer, "explain", user=user)
        press(run, answer, "more", user=user, selected_option=trace_option(answer))
    run.bot.wait_idle()
    refusals = [text_of(m) for m in run.slack.ephemerals(channel="C1")]
    assert len(refusals) == 4 and all(NOT_YOURS in r for r in refusals)
    assert run.slack.calls_to("views.open") == []  # Behind the scenes did not open
    assert all("Why this answer" not in text_of(m) for m in run.slack.thread("C1", ts))


def trace_option(answer: dict[str, Any]) -> dict[str, Any]:
    """The overflow menu's "Behind the scenes" option."""
    element, _ = find_action(answer, "more")
    return next(o for o in element["options"] if o["value"].startswith("trace:"))


def test_the_home_tab_hides_feedback_on_answers_the_admin_may_not_read(run: Running) -> None:
    press(run, dm(run, "UALICE", ON_CALL), "feedback", user="UALICE", channel="DUALICE", value="down")
    press(run, dm(run, "UBOB", MEETING), "feedback", user="UBOB", channel="DUBOB", value="down")
    run.bot.wait_idle()
    run.bot.publish_home(ADMIN)  # the admin is in no Confluence group: may not read the On-call page
    [published] = run.slack.calls_to("views.publish")
    home = json.dumps(published.params["view"], ensure_ascii=False)
    assert MEETING in home and ON_CALL not in home
    assert "1 👎 on answers from pages you cannot read" in home and "👎 2" in home


def test_admins_declare_which_spaces_everyone_may_view(run: Running) -> None:
    assert "may view *DOCS*" in command(run, "everyone")
    refused = command(run, "everyone DOCS off", user="UBOB")
    assert "only Threadwise admins" in refused
    assert "Done" in command(run, "everyone DOCS off", user=ADMIN)
    assert "No space is declared" in command(run, "everyone")
    _, answer = in_channel(run, "UBOB", MEETING)  # the channel now reads no space at all
    assert "Monday at 10:00" not in text_of(answer)
    assert "Monday at 10:00" in text_of(dm(run, "UBOB", MEETING))  # bob may view DOCS in Confluence


# -- Teams ------------------------------------------------------------------------------------------------


@pytest.fixture
def teams(wiki: Wiki) -> Iterator[RunningTeams]:
    with (
        FakeBotConnector(members=[dict(m) for m in TEAMS_MEMBERS]) as connector,
        running_teams(wiki.world, connector) as running,
    ):
        yield running


def teams_ask(run: RunningTeams, text: str, *, where: str, user: dict[str, str] = ALICE) -> tuple[str, Any]:
    post = run.send.message(text, where=where, mention=where != "personal", user=user)
    assert run.send.post(post).status_code == 200
    conversation = thread_of(post["id"]) if where == "channel" else PERSONAL
    before = len(messages(run, conversation))
    answer = wait_messages(run, conversation, before + 1)[before]
    run.bot.wait_idle()
    return conversation, answer


def test_teams_personal_chat_and_channel_follow_the_policy(teams: RunningTeams) -> None:
    _, mine = teams_ask(teams, ON_CALL, where="personal")
    assert RESTRICTED_FACT in mine.body["text"]
    _, bobs = teams_ask(teams, ON_CALL, where="personal", user=BOB)  # mapped by UPN, not in hr
    assert RESTRICTED_FACT not in bobs.body["text"]
    assert [c for c in teams.connector.calls if c.method == "create"] == []

    _, in_channel = teams_ask(teams, ON_CALL, where="channel")
    assert RESTRICTED_FACT not in in_channel.body["text"]
    [create] = teams.connector.wait_for(lambda: [c for c in teams.connector.calls if c.method == "create"])
    assert create.body["members"] == [{"id": "29:alice"}]
    [hint] = teams.connector.wait_for(lambda: messages(teams, "a:personal-29:alice"))
    assert "ask me here, in our personal chat" in hint.body["text"]

    _, stranger = teams_ask(teams, ON_CALL, where="personal", user=STRANGER)  # the lookup answers 404
    assert RESTRICTED_FACT not in stranger.body["text"]
    teams.connector.refuse("member", 500)
    _, refused = teams_ask(teams, ON_CALL, where="channel", user=BOB)
    assert RESTRICTED_FACT not in refused.body["text"]
    assert len([c for c in teams.connector.calls if c.method == "create"]) == 1  # nobody else was hinted at


def test_teams_explain_and_votes_are_refused_to_who_may_no_longer_read_the_sources(
    teams: RunningTeams, wiki: Wiki
) -> None:
    conversation, answer = teams_ask(teams, ON_CALL, where="personal")
    assert RESTRICTED_FACT in answer.body["text"]
    wiki.fake.people.groups["hr"].remove("alice")
    wiki.tw.admin.sync_permissions()
    turn_id = explain_action(answer)["data"]["turn_id"]
    press = teams.send.explain(
        turn_id, message_id=sent_id(teams, answer), conversation=conversation, kind="personal"
    )
    reply = teams.send.post(press).json()
    assert reply["value"] == NOT_YOURS
    vote = teams.send.feedback(
        "like", message_id=sent_id(teams, answer), conversation=conversation, kind="personal"
    )
    assert teams.send.post(vote).status_code == 200
    [refused] = teams.connector.wait_for(lambda: messages(teams, "a:personal-29:alice"))
    assert refused.body["text"] == NOT_YOURS  # the vote's refusal, in the personal chat
    teams.bot.wait_idle()
    assert len(messages(teams, conversation)) == 1  # no explanation was posted
    assert wiki.tw.store.feedback_summary()["up"] == 0  # nor the vote recorded


def test_teams_admin_everyone_command(teams: RunningTeams) -> None:
    post = teams.send.message("admin everyone", where="personal", mention=False)
    assert teams.send.post(post).status_code == 200
    [reply] = wait_messages(teams, PERSONAL)
    assert "may view **DOCS**" in reply.body["text"]


def test_an_unmapped_asker_who_gets_nothing_is_told_why(run: Running) -> None:
    """Slack gives UNOMAIL no address: the not-found reply in the DM says no Confluence account matched and
    what was searched instead; bob, matched by his address, gets the plain reply."""
    budget = "What is the travel budget in euros?"  # FIN is not synced here: nobody finds it
    unmapped = text_of(dm(run, "UNOMAIL", budget))
    assert "couldn't match you to a Confluence account" in unmapped and "e-mail address" in unmapped
    assert "couldn't match" not in text_of(dm(run, "UBOB", budget))


def test_teams_an_unmapped_asker_who_gets_nothing_is_told_why(teams: RunningTeams) -> None:
    budget = "What is the travel budget in euros?"  # FIN is not synced here: nobody finds it
    # the member lookup gives the stranger no address
    _, stranger = teams_ask(teams, budget, where="personal", user=STRANGER)
    assert "couldn't match you to a Confluence account" in stranger.body["text"]
    _, bobs = teams_ask(teams, budget, where="personal", user=BOB)  # mapped by his UPN
    assert "couldn't match" not in bobs.body["text"]
