"""The Teams bot against what Microsoft documents, not what we wrote: the documented example activities in
tests/fixtures/bot_framework/ (SOURCES.md) POSTed to the real endpoint, and the whole path (mention → answer,
Explain, 👍 with its comment, a forged answer id from another conversation) against the independent Bot
Framework connector in ../shared/fakes/fake_teams.py, written from the documentation by another hand.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.slack_world import World
from tests.support.teams_activities import ALICE
from tests.support.teams_world import RunningTeams, running_teams, serving_teams
from tests.test_teams_bot import LAPTOP, explain_action, messages, sent_id, wait_messages
from threadwise.chat.pressed import NOT_HERE
from threadwise.db.conversations import ThreadKey

FIXTURES = Path(__file__).parent / "fixtures" / "bot_framework"
MESSAGE_JSON = "application/vnd.microsoft.activity.message"
CARD_JSON = "application/vnd.microsoft.card.adaptive"


def documented(name: str, **fields: Any) -> dict[str, Any]:
    """A documented example activity, with `fields` the test must set (serviceUrl, what an excerpt omits)."""
    return {**json.loads((FIXTURES / name).read_text()), **fields}


@pytest.fixture
def run(world: World) -> Iterator[RunningTeams]:
    with FakeBotConnector() as connector, running_teams(world, connector) as running:
        yield running


def envelope(run: RunningTeams, answered: dict[str, Any], reply_to: str) -> dict[str, Any]:
    """What an invoke excerpt leaves out, as Teams sends it for a press on the message `reply_to`, answered
    in the conversation of the activity `answered`."""
    keep = ("channelId", "serviceUrl", "from", "recipient", "conversation", "channelData")
    return {**{k: answered[k] for k in keep}, "id": run.send.next_id(), "replyToId": reply_to}


# -- the documented examples, through the real endpoint ------------------------------------------------------


def test_the_documented_channel_mention_is_answered_in_its_reply_chain(run: RunningTeams) -> None:
    mention = documented("message_channel_mention.json", serviceUrl=run.connector.url)
    assert run.send.post(mention).status_code == 200
    thread = mention["conversation"]["id"]
    [answer] = wait_messages(run, thread)
    assert answer.body["text"]  # an answer (here: nothing found for "Hello Jingjing Xia"), not silence
    run.bot.wait_idle()
    channel, root = thread.split(";messageid=")
    key = ThreadKey("teams", mention["channelData"]["tenant"]["id"], channel, root)
    assert [t.question for t in run.bot.conversations.history(key)] == ["Hello Jingjing Xia"]


def test_the_documented_bot_added_event_gets_one_welcome(run: RunningTeams) -> None:
    added = documented("conversation_update_personal.json", serviceUrl=run.connector.url)
    added["recipient"] = {
        **added["recipient"],
        "id": added["membersAdded"][0]["id"],
    }  # the "<BOT ID>" placeholder
    assert run.send.post(added).status_code == 200
    assert run.send.post(added).status_code == 200  # redelivered
    [welcome] = wait_messages(run, added["conversation"]["id"])
    assert "I answer questions" in welcome.body["text"]
    run.bot.wait_idle()
    assert len(messages(run, added["conversation"]["id"])) == 1


def test_the_documented_card_action_and_feedback_invokes(run: RunningTeams) -> None:
    group = "19:144de878089f94d7db699d10a4672bc040@thread.v2"  # the feedback example's conversation
    asked = run.send.message(LAPTOP, where="group")
    asked["conversation"]["id"] = group
    assert run.send.post(asked).status_code == 200
    [answer] = wait_messages(run, group)
    run.bot.wait_idle()
    answer_id = sent_id(run, answer)

    press = documented("invoke_adaptive_card_action.json", **envelope(run, asked, answer_id))
    reply = run.send.post(press).json()  # as documented: verb "def", which no button of ours has
    assert reply == {"statusCode": 200, "type": MESSAGE_JSON, "value": "This button does nothing any more."}
    explain = explain_action(answer)  # Teams sends a copy of the pressed action
    press["value"]["action"].update(verb=explain["verb"], data=explain["data"])
    reply = run.send.post(press).json()
    assert reply["statusCode"] == 200 and reply["type"] == CARD_JSON
    assert "Why this answer?" in wait_messages(run, group, 2)[1].body["text"]

    feedback = documented("invoke_feedback.json", type="invoke", **envelope(run, asked, answer_id))
    feedback["conversation"] = {**asked["conversation"], **feedback["conversation"]}
    voted = run.send.post(feedback)
    assert (voted.status_code, voted.content) == (200, b"")  # "a status:200 with no body", as documented
    turn_id = explain["data"]["turn_id"]
    assert run.bot.conversations.store.votes(turn_id) == {ALICE["aadObjectId"]: "up"}
    summary = run.bot.conversations.store.feedback_summary()
    assert summary["up"] == 1


# -- end to end against the independent connector --------------------------------------------------------


@pytest.fixture
def fake_teams(shared_fakes: Callable[[str], ModuleType]) -> Iterator[tuple[ModuleType, str]]:
    module = shared_fakes("fake_teams")
    server = ThreadingHTTPServer(("127.0.0.1", 0), module.make_handler(module.State(module.DEFAULT_MEMBERS)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield module, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def sent_to(base: str, conversation: str) -> list[dict[str, Any]]:
    """The messages the bot sent into `conversation`, as the independent connector kept them."""
    activities = httpx.get(f"{base}/__activities").json()["activities"]
    return [a for a in activities if a["_conversation"] == conversation and a.get("type") == "message"]


def wait_sent(base: str, conversation: str, n: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 20
    while len(found := sent_to(base, conversation)) < n:
        assert time.monotonic() < deadline, f"the connector did not get {n} messages in {conversation}"
        time.sleep(0.05)
    return found


def test_end_to_end_against_the_independent_connector(
    world: World, fake_teams: tuple[ModuleType, str]
) -> None:
    teams, base = fake_teams
    with serving_teams(world) as (bot, server):

        def post(activity: dict[str, Any]) -> tuple[int, str]:
            status, body, _ = teams.post_activity(server.url, activity)
            return status, body

        channel = "19:test-channel@thread.tacv2"
        thread = f"{channel};messageid=1700000000001"
        ask = teams.message_activity(
            LAPTOP, service_url=base, activity_id="1700000000001", conversation_id=thread
        )
        assert post(ask)[0] == 200
        [answer] = wait_sent(base, thread, 1)
        assert "IT portal" in answer["text"]
        bot.wait_idle()

        def press(data: dict[str, Any], verb: str = "explain") -> dict[str, Any]:
            action = {"type": "Action.Execute", "verb": verb, "data": data}
            invoke = teams.invoke_activity(
                "adaptiveCard/action",
                {"action": action, "trigger": "manual"},
                service_url=base,
                activity_id=f"inv-{time.monotonic_ns()}",
                conversation_id=thread,
                reply_to_id=answer["id"],
            )
            status, body = post(invoke)
            assert status == 200
            return dict(json.loads(body))

        [explain] = [a for a in teams.find_actions(answer) if a.get("verb") == "explain"]
        assert press(explain["data"])["type"] == CARD_JSON
        assert "Why this answer?" in wait_sent(base, thread, 2)[1]["text"]

        like = {"reaction": "like", "feedback": json.dumps({"feedbackText": "spot on"})}
        vote = teams.invoke_activity(
            "message/submitAction",
            {"actionName": "feedback", "actionValue": like},
            service_url=base,
            activity_id="vote-1",
            conversation_id=thread,
            reply_to_id=answer["id"],
        )
        assert post(vote)[0] == 200
        turn_id = explain["data"]["turn_id"]
        voter = teams.DEFAULT_MEMBERS[0]["aadObjectId"]
        assert bot.conversations.store.votes(turn_id) == {voter: "up"}
        assert bot.conversations.feedback_summary()["up"] == 1

        # someone else's answer, in a personal chat: its id forged into a press in the channel thread
        private = teams.message_activity(
            "how many vacation days do I have?",
            service_url=base,
            activity_id="1700000000002",
            conversation_id="a:private-chat",
            conversation_type="personal",
            mention=False,
        )
        assert post(private)[0] == 200
        [secret] = wait_sent(base, "a:private-chat", 1)
        assert "30 vacation days" in secret["text"]
        bot.wait_idle()
        other = next(a for a in teams.find_actions(secret) if a.get("verb") == "explain")["data"]["turn_id"]
        before = len(httpx.get(f"{base}/__activities").json()["activities"])
        for verb, data in (("explain", {"turn_id": other}), ("retry", {"turn_id": other})):
            assert press(data, verb) == {"statusCode": 200, "type": MESSAGE_JSON, "value": NOT_HERE}
        bot.wait_idle()
        assert httpx.get(f"{base}/__activities").json()["activities"][before:] == []  # nothing sent anywhere
        assert bot.conversations.store.explanation(other) is None
