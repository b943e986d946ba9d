"""Help-desk channels in Teams (issue 30) end to end: Bot Framework activities POSTed to the real Teams SDK App,
the real services over SQLite, replies through the local connector fake (and once the shared fake_teams.py).

Auto answers unmentioned top-level questions only; a private channel shows nothing before Share; Share from
the personal chat accepts only the asker's own answer; Still need help mentions exactly the experts; Mark
resolved closes once; `admin experts @A @B` stores what the mention entities name.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from microsoft_teams.api.activities import ActivityTypeAdapter

from tests.support.fake_bot_connector import ConnectorCall, FakeBotConnector
from tests.support.fake_openai import FakeOpenAI
from tests.support.llm import chat_for
from tests.support.slack_world import World, build_world, replica_worlds
from tests.support.teams_activities import ADMIN, ALICE, CHANNEL, PERSONAL, TENANT
from tests.support.teams_world import RunningTeams, running_teams, serving_teams, shared_connector
from tests.test_teams_bot import connector as connector_fixture  # noqa: F401 (pytest finds it by its name)
from tests.test_teams_bot import messages, sent_id, thread_of, wait_messages
from tests.test_teams_bot import run as run_fixture  # noqa: F401
from threadwise.core.answer.llm import LLMAnswerer
from threadwise.db.channel_modes import Expert
from threadwise.db.claims import Claim
from threadwise.db.conversations import ThreadKey
from threadwise.index.store import EvidenceIndex
from threadwise.teams import help_desk
from threadwise.teams.activity import place_of
from threadwise.teams.handover import resume_payload

LAPTOP = "how do I request a new laptop?"
FRANCE = "What is the capital of France?"  # the wiki does not say
BOB = {"id": "29:bob", "name": "Bob Brown", "aadObjectId": "aad-bob"}
EXPERT_A = {"id": "29:erin", "name": "Erin Expert", "aadObjectId": "aad-erin"}
EXPERT_B = {"id": "29:frank", "name": "Frank Fixer", "aadObjectId": "aad-frank"}
HELP_TAG = {"id": "tag-helpdesk", "name": "HelpDesk", "type": "tag"}
ALICE_CHAT = f"a:personal-{ALICE['id']}"  # the personal chat the connector creates with Alice
BOB_CHAT = f"a:personal-{BOB['id']}"


@pytest.fixture
def run(world: World) -> Iterator[RunningTeams]:
    with FakeBotConnector() as connector, running_teams(world, connector) as running:
        yield running


@pytest.fixture
def fake_teams(shared_fakes: Callable[[str], ModuleType]) -> Iterator[tuple[ModuleType, str]]:
    module = shared_fakes("fake_teams")
    with shared_connector(module) as url:
        yield module, url


def channel_messages(run: RunningTeams) -> list[ConnectorCall]:
    """Everything the bot sent or updated in the channel's threads (typing too)."""
    return [c for c in run.connector.calls if c.conversation.startswith(CHANNEL) and c.method != "member"]


def set_modes(world: World, *, auto: bool = False, private: bool = False, experts: bool = False) -> None:
    channels = world.admin.channels
    channels.set_auto(CHANNEL, auto, platform="teams", by="aad-admin")
    channels.set_private(CHANNEL, private, platform="teams", by="aad-admin")
    if experts:
        chosen = [
            Expert("user", EXPERT_A["id"], EXPERT_A["name"]),
            Expert("group", HELP_TAG["id"], HELP_TAG["name"]),
        ]
        channels.set_experts(CHANNEL, chosen, platform="teams", by="aad-admin")


def post(run: RunningTeams, text: str, **kwargs: Any) -> dict[str, Any]:
    activity = run.send.message(text, **kwargs)
    assert run.send.post(activity).status_code == 200
    return activity


def actions(call: ConnectorCall) -> dict[str, dict[str, Any]]:
    """The card's Action.Execute buttons by verb."""
    found = {}
    for attachment in call.body.get("attachments") or []:
        for action in attachment["content"].get("actions", []):
            found[action["verb"]] = action
    return found


def press(
    run: RunningTeams,
    action: dict[str, Any],
    *,
    conversation: str,
    kind: str,
    message_id: str = "1",
    user: Any = ALICE,
) -> dict[str, Any]:
    invoke = run.send.card_action(
        action["verb"], action["data"], message_id=message_id, conversation=conversation, kind=kind, user=user
    )
    response = run.send.post(invoke)
    assert response.status_code == 200
    return dict(response.json())


def mentioned_ids(call: ConnectorCall) -> list[str]:
    return [e["mentioned"]["id"] for e in call.body.get("entities") or [] if e.get("type") == "mention"]


# -- auto ---------------------------------------------------------------------------------------------------


def test_auto_answers_an_unmentioned_question_once_in_its_thread_and_ignores_the_rest(
    run: RunningTeams, world: World
) -> None:
    set_modes(world, auto=True)
    asked = run.send.message(LAPTOP, mention=False)
    run.send.post(asked)
    run.send.post(asked)  # redelivered: answered once
    answer = wait_messages(run, thread_of(asked["id"]))[0]
    assert "IT portal" in answer.body["text"]
    chatter = [
        post(run, t, mention=False) for t in ("good morning everyone", "thanks!", "The build is green again.")
    ]
    addressed = post(run, "can you review my PR?", mention=False, mention_other=BOB)
    run.bot.wait_idle()
    assert len(messages(run, thread_of(asked["id"]))) == 1
    for activity in [*chatter, addressed]:
        assert messages(run, thread_of(activity["id"])) == []
    # a follow-up in the thread is answered as today; a reply that is a question in another thread is not auto
    post(run, "and who approves it?", mention=False, root=asked["id"])
    assert len(wait_messages(run, thread_of(asked["id"]), 2)) == 2


def test_a_channel_without_auto_ignores_unmentioned_questions(run: RunningTeams) -> None:
    asked = post(run, LAPTOP, mention=False)
    run.bot.wait_idle()
    assert channel_messages(run) == [] and messages(run, thread_of(asked["id"])) == []


def test_auto_posts_nothing_public_for_what_the_wiki_lacks_but_a_mention_gets_not_found(
    run: RunningTeams, world: World
) -> None:
    set_modes(world, auto=True)
    post(run, FRANCE, mention=False)
    note = wait_messages(run, ALICE_CHAT)[0]
    assert "posted nothing in the channel" in note.body["text"]
    run.bot.wait_idle()
    assert channel_messages(run) == []
    mentioned = post(run, FRANCE)
    assert "couldn't find" in wait_messages(run, thread_of(mentioned["id"]))[0].body["text"]


# -- private first ----------------------------------------------------------------------------------------


def test_private_shows_nothing_publicly_until_share_then_posts_it_shared_by_the_asker(
    run: RunningTeams, world: World
) -> None:
    set_modes(world, auto=True, private=True)
    asked = post(run, LAPTOP, mention=False)
    private = wait_messages(run, ALICE_CHAT)[0]
    run.bot.wait_idle()
    assert channel_messages(run) == []  # no typing, no answer in the channel
    assert "IT portal" in private.body["text"]
    assert "teams.microsoft.com/l/message/" in private.body["text"] and asked["id"] in private.body["text"]
    buttons = actions(private)
    assert set(buttons) == {help_desk.SHARE_VERB, help_desk.KEEP_VERB}
    shared = press(run, buttons[help_desk.SHARE_VERB], conversation=ALICE_CHAT, kind="personal")
    assert shared["type"] == "application/vnd.microsoft.card.adaptive" and "actions" not in shared["value"]
    public = wait_messages(run, thread_of(asked["id"]))[0]
    assert public.body["text"].startswith("Shared by Alice Jones") and "IT portal" in public.body["text"]
    assert "explain" in actions(public) and public.body["channelData"]["feedbackLoop"] == {"type": "default"}
    again = press(run, buttons[help_desk.SHARE_VERB], conversation=ALICE_CHAT, kind="personal")
    assert "already" in again["value"]
    run.bot.wait_idle()
    assert len(messages(run, thread_of(asked["id"]))) == 1
    # the shared message is the answer's now: a vote on it counts
    turn_id = buttons[help_desk.SHARE_VERB]["data"]["turn_id"]
    key = ThreadKey("teams", TENANT, CHANNEL, asked["id"])
    assert run.bot.conversations.turn_for_message(key, sent_id(run, public)) == turn_id


def test_keep_removes_the_buttons_and_posts_nothing(run: RunningTeams, world: World) -> None:
    set_modes(world, private=True)
    post(run, LAPTOP)  # mentioned: still private first
    private = wait_messages(run, ALICE_CHAT)[0]
    kept = press(run, actions(private)[help_desk.KEEP_VERB], conversation=ALICE_CHAT, kind="personal")
    assert "actions" not in kept["value"] and "Kept to yourself" in json.dumps(kept["value"])
    run.bot.wait_idle()
    assert [c for c in channel_messages(run) if c.body.get("type") == "message"] == []


def test_a_share_naming_another_users_or_conversations_answer_is_refused(
    run: RunningTeams, world: World
) -> None:
    set_modes(world, private=True)
    post(run, LAPTOP)
    share = actions(wait_messages(run, ALICE_CHAT)[0])[help_desk.SHARE_VERB]
    refused = press(run, share, conversation=BOB_CHAT, kind="personal", user=BOB)  # Bob forges Alice's id
    assert refused["value"] == help_desk.NOT_HERE
    # an answer Alice got in her personal chat is no channel thread's: nothing to share
    run.send.post(run.send.message("how many vacation days do I have?", where="personal", mention=False))
    run.bot.wait_idle()
    personal_turn = max(t.id for t in _all_turns(run))
    forged = {**share, "data": {"turn_id": personal_turn}}
    assert press(run, forged, conversation=ALICE_CHAT, kind="personal")["value"] == help_desk.NOT_HERE
    # pressed in a channel thread instead of the personal chat: not this thread's answer
    other = post(run, "a new post", mention=False)
    assert (
        press(run, share, conversation=thread_of(other["id"]), kind="channel")["value"] == help_desk.NOT_HERE
    )
    for nonsense in ("x", 10**30, None):
        press(run, {**share, "data": {"turn_id": nonsense}}, conversation=ALICE_CHAT, kind="personal")
    run.bot.wait_idle()
    assert [c for c in channel_messages(run) if c.body.get("type") == "message"] == []


def _all_turns(run: RunningTeams) -> list[Any]:
    store = run.bot.conversations.store
    return [t for cid, _, _ in store.conversations() for t in store.turns(cid)]


# -- experts ----------------------------------------------------------------------------------------------


def test_admin_experts_with_mention_entities_stores_each_mentioned(run: RunningTeams, world: World) -> None:
    command = run.send.message("admin experts", user=ADMIN)
    for who in (EXPERT_A, HELP_TAG):
        command["text"] += f" <at>{who['name']}</at>"
        command["entities"].append({"type": "mention", "text": f"<at>{who['name']}</at>", "mentioned": who})
    run.send.post(command)
    reply = wait_messages(run, thread_of(command["id"]))[0]
    assert "Erin Expert" in reply.body["text"] and "HelpDesk" in reply.body["text"]
    assert world.admin.channels.get(CHANNEL).experts == (
        Expert("user", EXPERT_A["id"], EXPERT_A["name"]),
        Expert("group", HELP_TAG["id"], HELP_TAG["name"]),
    )


def test_still_need_help_mentions_exactly_the_experts_and_mark_resolved_closes_once(
    run: RunningTeams, world: World
) -> None:
    set_modes(world, experts=True)
    asked = post(run, FRANCE)
    not_found = wait_messages(run, thread_of(asked["id"]))[0]
    escalate = actions(not_found)[help_desk.ESCALATE]
    thread = thread_of(asked["id"])
    said = press(run, escalate, conversation=thread, kind="channel")
    assert "called the experts in" in said["value"]
    call = wait_messages(run, thread, 2)[1]
    assert mentioned_ids(call) == [EXPERT_A["id"], HELP_TAG["id"], ALICE["id"]]
    tag = next(
        e
        for e in call.body["entities"]
        if e.get("type") == "mention" and e["mentioned"]["id"] == HELP_TAG["id"]
    )
    assert tag["mentioned"]["type"] == "tag"
    for entity in call.body["entities"]:
        if entity.get("type") == "mention":
            assert entity["text"] in call.body["text"]
    assert FRANCE in call.body["text"] and "couldn't find it" in call.body["text"]
    assert "already" in press(run, escalate, conversation=thread, kind="channel")["value"]
    resolve = actions(call)[help_desk.RESOLVE]
    elsewhere = press(run, resolve, conversation=thread_of("999"), kind="channel", user=EXPERT_A)
    assert elsewhere["value"] == help_desk.NOT_HERE
    done = press(run, resolve, conversation=thread, kind="channel", user=EXPERT_A)
    assert "Resolved by Erin Expert" in json.dumps(done["value"])
    assert "resolved already" in press(run, resolve, conversation=thread, kind="channel")["value"]
    counts = world.admin.channels.counts()
    assert (counts.opened, counts.resolved) == (1, 1)
    run.bot.wait_idle()
    assert len(messages(run, thread)) == 2
    post(run, "admin feedback", user=ADMIN)
    run.connector.wait_for(
        lambda: any("Still need help" in c.body.get("text", "") for c in run.connector.sent())
    )


def test_a_down_vote_offers_still_need_help_under_the_answer(run: RunningTeams, world: World) -> None:
    set_modes(world, experts=True)
    asked = post(run, LAPTOP)
    thread = thread_of(asked["id"])
    answer = wait_messages(run, thread)[0]
    assert help_desk.ESCALATE not in actions(answer)
    run.bot.wait_idle()
    vote = run.send.feedback("dislike", message_id=sent_id(run, answer), conversation=thread, kind="channel")
    assert run.send.post(vote).status_code == 200
    updated = run.connector.wait_for(lambda: [c for c in run.connector.sent(thread) if c.method == "update"])[
        0
    ]
    assert help_desk.ESCALATE in actions(updated)


# -- against the independent connector fake --------------------------------------------------------------


def test_auto_private_and_share_against_the_shared_fake(
    world: World, fake_teams: tuple[ModuleType, str]
) -> None:
    teams, base = fake_teams
    channel = "19:test-channel@thread.tacv2"
    world.admin.channels.set_auto(channel, True, platform="teams", by="admin")
    world.admin.channels.set_private(channel, True, platform="teams", by="admin")

    def sent(where: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        return [a for a in httpx.get(f"{base}/__activities").json()["activities"] if where(a)]

    def wait(where: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        deadline = time.monotonic() + 20
        while not (found := sent(where)):
            assert time.monotonic() < deadline, "the shared connector did not get it"
            time.sleep(0.05)
        return found

    with serving_teams(world) as (bot, server):
        thread = f"{channel};messageid=1700000000001"
        ask = teams.message_activity(
            LAPTOP, service_url=base, activity_id="1700000000001", conversation_id=thread, mention=False
        )
        assert teams.post_activity(server.url, ask)[0] == 200
        [private] = wait(lambda a: a["_conversation"].startswith("a:") and a.get("type") == "message")
        [created] = httpx.get(f"{base}/__conversations").json()["conversations"]
        assert created["members"][0]["id"] == teams.DEFAULT_MEMBERS[0]["id"]
        bot.wait_idle()
        assert sent(lambda a: a["_conversation"].startswith(channel)) == []
        [share] = [a for a in teams.find_actions(private) if a.get("verb") == help_desk.SHARE_VERB]
        invoke = teams.invoke_activity(
            "adaptiveCard/action",
            {
                "action": {"type": "Action.Execute", "verb": share["verb"], "data": share["data"]},
                "trigger": "manual",
            },
            service_url=base,
            activity_id="inv-1",
            conversation_id=private["_conversation"],
            conversation_type="personal",
            reply_to_id=private["id"],
        )
        assert teams.post_activity(server.url, invoke)[0] == 200
        [public] = wait(lambda a: a["_conversation"] == thread and a.get("type") == "message")
        assert public["text"].startswith("Shared by Test User") and "IT portal" in public["text"]


# -- two replicas -----------------------------------------------------------------------------------------


def test_two_replicas_answer_and_call_the_experts_once(tmp_path: Path, index: EvidenceIndex) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    first, second = replica_worlds(tmp_path, index, url, "one", "two")
    set_modes(first, auto=True, experts=True)
    with (
        FakeBotConnector() as connector,
        running_teams(first, connector) as one,
        running_teams(second, connector) as two,
    ):
        asked, lacking = one.send.message(LAPTOP, mention=False), one.send.message(FRANCE, mention=False)
        for activity in (asked, lacking):  # Teams delivers each to both (a retry reaching the other replica)
            one.send.post(activity)
            two.send.post(activity)
        note = connector.wait_for(lambda: messages(one, ALICE_CHAT))[0]
        escalate = actions(note)[help_desk.ESCALATE]
        said = [press(r, escalate, conversation=ALICE_CHAT, kind="personal") for r in (one, two)]
        assert sorted("already" in s["value"] for s in said) == [False, True]
        one.bot.wait_idle()
        two.bot.wait_idle()
        assert len(messages(one, thread_of(asked["id"]))) == 1
        assert len(messages(one, ALICE_CHAT)) == 1
        [call] = messages(one, thread_of(lacking["id"]))  # from the personal chat, into the question's thread
        assert mentioned_ids(call) == [EXPERT_A["id"], HELP_TAG["id"], ALICE["id"]]


# -- streaming (personal chats, with a language model) ---------------------------------------------------


@pytest.fixture
def streaming_world(tmp_path: Path, index: EvidenceIndex) -> Iterator[World]:
    with FakeOpenAI(chunk_delay=0.02) as llm:  # one word every 20 ms
        yield build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=0))


def stream_parts(calls: list[ConnectorCall]) -> list[dict[str, Any]]:
    return [
        {**e, "text": c.body.get("text"), "kind": c.body.get("type")}
        for c in calls
        for e in c.body.get("entities") or []
        if e.get("type") == "streaminfo"
    ]


def test_a_personal_chat_answer_streams_then_ends_with_the_final_message(streaming_world: World) -> None:
    with FakeBotConnector() as connector, running_teams(streaming_world, connector) as run:
        run.bot.stream_interval = 0.05
        run.send.post(run.send.message(LAPTOP, where="personal", mention=False))
        [final] = wait_messages(run, PERSONAL)
        run.bot.wait_idle()
        parts = stream_parts(connector.sent(PERSONAL, kind="typing"))
        assert len(parts) >= 2 and [p["streamSequence"] for p in parts] == list(range(1, len(parts) + 1))
        assert all(p["streamType"] == "streaming" for p in parts)
        [stream_id] = connector.streams  # one stream
        assert "streamId" not in parts[0] and all(p["streamId"] == stream_id for p in parts[1:])
        for before, after in itertools.pairwise(parts):
            assert after["text"].startswith(before["text"]) and len(after["text"]) > len(before["text"])
        [end] = stream_parts([final])
        assert (end["streamType"], end["streamId"], final.body["type"]) == ("final", stream_id, "message")
        assert "streamSequence" not in end
        assert "IT portal" in final.body["text"] and final.body["channelData"]["feedbackLoop"] == {
            "type": "default"
        }
        assert run.bot.conversations.turn_for_message(ThreadKey("teams", TENANT, PERSONAL, ""), stream_id)


def test_channels_do_not_stream(streaming_world: World) -> None:
    with FakeBotConnector() as connector, running_teams(streaming_world, connector) as run:
        run.bot.stream_interval = 0.05
        asked = post(run, LAPTOP)
        assert "IT portal" in wait_messages(run, thread_of(asked["id"]))[0].body["text"]
        run.bot.wait_idle()
        assert stream_parts(connector.calls) == []


def test_streaming_against_the_shared_fake(
    streaming_world: World, fake_teams: tuple[ModuleType, str]
) -> None:
    teams, base = fake_teams
    with serving_teams(streaming_world) as (bot, server):
        bot.stream_interval = 0.05
        ask = teams.message_activity(
            LAPTOP,
            service_url=base,
            activity_id="1700000000009",
            conversation_id="a:personal-chat",
            conversation_type="personal",
            mention=False,
        )
        assert teams.post_activity(server.url, ask)[0] == 200
        bot.wait_idle()
        kept = [a for a in httpx.get(f"{base}/__activities").json()["activities"] if "_stream" in a]
        kinds = [a["_stream"]["type"] for a in kept]
        assert kinds[-1] == "final" and set(kinds[:-1]) == {"streaming"} and len(kinds) >= 3
        assert len({a["_stream"]["id"] for a in kept}) == 1  # one stream, answered with its id throughout
        assert "IT portal" in kept[-1]["text"] and kept[-1]["type"] == "message"


def test_a_taken_over_auto_question_stays_quiet_in_the_channel(run: RunningTeams, world: World) -> None:
    """Another replica adopting an auto-mode question keeps its quiet: 'not found' and 'interrupted' go to the
    asker alone."""
    set_modes(world, auto=True)
    activity = run.send.message(FRANCE, mention=False)
    place = place_of(ActivityTypeAdapter.validate_python(activity))
    payload = resume_payload(place, FRANCE, activity["id"], quiet=True)
    assert payload["quiet"] is True and resume_payload(place, FRANCE, "1")["quiet"] is False
    born = datetime.now(UTC)
    run.bot._resume(Claim("teams:k1", "dead", 1, payload, born), False)
    assert "posted nothing in the channel" in wait_messages(run, ALICE_CHAT)[0].body["text"]
    run.bot._resume(Claim("teams:k2", "dead", 3, payload, born), True)
    wait_messages(run, ALICE_CHAT, 2)
    run.bot.wait_idle()
    assert channel_messages(run) == []


def test_a_private_answer_that_cannot_reach_the_asker_says_so_without_the_answer(
    run: RunningTeams, world: World
) -> None:
    set_modes(world, private=True)
    run.connector.refuse("create", 403)  # no personal chat with Alice
    asked = post(run, LAPTOP)
    [notice] = wait_messages(run, thread_of(asked["id"]))
    assert "personal chat" in notice.body["text"] and "IT portal" not in notice.body["text"]
    assert not notice.body.get("attachments")
