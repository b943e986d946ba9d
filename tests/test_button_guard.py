"""A press naming another conversation's answer, on Slack and on Teams: refused privately, and nothing of that
answer (its question, its text, its suggested follow-ups, its explanation) appears anywhere, nor is anything
stored for it. Each button is forged the one way a user can: the answer id it carries is changed, the press
comes from the user's own conversation. The real Bolt app and the real Teams SDK app over HTTP, the real
ConversationService over a SQLite file, the LLM answerer on a local OpenAI-shaped server (for follow-ups).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_bot_connector import FakeBotConnector
from tests.support.fake_openai import FakeOpenAI, echo_with_follow_ups
from tests.support.fake_slack import FakeSlack
from tests.support.llm import chat_for
from tests.support.slack_driver import mention, wait_answers
from tests.support.slack_events import find_action
from tests.support.slack_world import World, build_world, running_bot
from tests.support.teams_activities import ADMIN, CHANNEL, PERSONAL, TENANT
from tests.support.teams_world import running_teams
from tests.test_teams_bot import (
    ask_in_channel,
    card_of,
    explain_action,
    messages,
    sent_id,
    thread_of,
    wait_messages,
)
from threadwise.chat.pressed import NOT_HERE
from threadwise.core.answer.llm import LLMAnswerer
from threadwise.db.conversations import ThreadKey
from threadwise.index.store import EvidenceIndex

SECRET_QUESTION = "how many vacation days do I have?"
SECRET_ANSWER = "30 vacation days"
SECRET_FOLLOW_UP = "Can I carry vacation days over?"
SECRET = (SECRET_QUESTION, SECRET_ANSWER, SECRET_FOLLOW_UP, "Vacation policy", "wiki.example/display/HR")


def follow_ups_by_topic(request: dict[str, Any]) -> str:
    """Laptop follow-ups for the laptop question, vacation ones for the vacation question."""
    prompt = "\n".join(m["content"] for m in request["messages"])
    if "follow-up questions" in prompt and SECRET_QUESTION in prompt:
        return f"{SECRET_FOLLOW_UP}\nWho approves vacation?\nHow early must I ask?"
    return echo_with_follow_ups(request)


@pytest.fixture
def llm_world(tmp_path: Path, index: EvidenceIndex) -> Iterator[World]:
    with FakeOpenAI(respond=follow_ups_by_topic) as llm:
        yield build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=3))


def leaked(texts: list[str]) -> list[str]:
    return [s for s in SECRET if any(s.lower() in t.lower() for t in texts)]


# -- Slack ------------------------------------------------------------------------------------------------


def test_slack_presses_naming_another_threads_answer_are_refused_privately(llm_world: World) -> None:
    with FakeSlack(users={"U1": {}, "U2": {}}) as slack, running_bot(llm_world, slack) as run:
        secret_ts = mention(run, f"<@UBOT> {SECRET_QUESTION}", channel="CPRIVATE", user="U1")
        secret = wait_answers(run, "CPRIVATE", secret_ts)[0]
        assert SECRET_ANSWER in json.dumps(secret) and SECRET_FOLLOW_UP in json.dumps(secret)
        other = int(find_action(secret, "explain")[0]["value"])
        mine_ts = mention(run, user="U2")  # U2's own answer, in her own thread of C1
        mine = wait_answers(run, "C1", mine_ts)[0]
        before = len(slack.calls)

        def forge(action_id: str, **action: Any) -> None:
            reply = run.send.block_action(
                user="U2", channel="C1", message=mine, action={"action_id": action_id, **action}
            )
            assert reply.status == 200

        forge("explain", type="button", block_id=f"turn:{other}:actions:ready", value=str(other))
        forge("retry", type="button", block_id=f"turn:{other}:actions:ready", value=str(other))
        forge("full_answer", type="button", block_id=f"turn:{other}:actions:ready", value=str(other))
        forge("feedback", type="button", block_id=f"turn:{other}:feedback", value="up")
        forge("feedback", type="button", block_id=f"turn:{other}:feedback", value="down")
        forge("follow_up_1", type="button", block_id=f"turn:{other}:follow_ups", value="x")
        forge("more", type="overflow", block_id="x", selected_option={"value": f"trace:{other}"})
        metadata = json.dumps({"turn_id": other, "channel": "C1", "thread_ts": mine_ts})
        form = {"type": "modal", "callback_id": "feedback_comment", "private_metadata": metadata}
        comment = {"comment": {"text": {"type": "plain_text_input", "value": "forged"}}}
        assert run.send.view_submission(user="U2", view=form, values=comment).status == 200
        run.bot.wait_idle()

        calls = slack.calls[before:]
        assert {c.method for c in calls} == {"chat.postEphemeral"}  # nothing posted, updated or opened
        assert len(calls) == 8 and all(c.params["user"] == "U2" for c in calls)
        assert all(c.params["text"] == NOT_HERE for c in calls)
        assert leaked([json.dumps(c.params) for c in calls]) == []
        assert llm_world.store.votes(other) == {} and llm_world.store.explanation(other) is None
        assert llm_world.store.feedback_summary()["latest_down"] == []
        mine_key = ThreadKey("slack", "T0TEAM", "C1", mine_ts)
        assert len(llm_world.conversations.history(mine_key)) == 1  # nothing asked in her thread

        element, block_id = find_action(mine, "follow_up_1")  # her own buttons still work
        forge("follow_up_1", type="button", block_id=block_id, value=element["value"])
        wait_answers(run, "C1", mine_ts, 2)
        asked = [t.question for t in llm_world.conversations.history(mine_key)]
        assert asked == ["how do I request a new laptop?", "Who approves laptop requests?"]


# -- Teams ------------------------------------------------------------------------------------------------


def test_teams_presses_naming_another_conversations_answer_are_refused_privately(llm_world: World) -> None:
    with FakeBotConnector() as connector, running_teams(llm_world, connector) as run:
        run.send.post(run.send.message(SECRET_QUESTION, where="personal", mention=False, user=ADMIN))
        secret = run.connector.wait_for(lambda: messages(run, PERSONAL))[0]
        assert SECRET_ANSWER in secret.body["text"] and SECRET_FOLLOW_UP in json.dumps(secret.body)
        other = explain_action(secret)["data"]["turn_id"]
        run.bot.wait_idle()
        root, mine = ask_in_channel(run)  # Alice's own answer, in her channel thread
        conversation = thread_of(root)
        mine_id = sent_id(run, mine)
        before = len(run.connector.calls)

        def press(verb: str, data: dict[str, Any]) -> str:
            invoke = run.send.card_action(verb, data, message_id=mine_id, conversation=conversation)
            reply = run.send.post(invoke)
            assert reply.status_code == 200
            return str(reply.json()["value"])

        refusals = [
            press("explain", {"turn_id": other}),
            press("retry", {"turn_id": other}),
            press("ask", {"turn_id": other, "follow_up": 1}),
            press("explain", {"turn_id": str(other)}),
        ]
        assert refusals == [NOT_HERE] * 4
        secret_ref = sent_id(run, secret)  # a vote naming the other answer's message, from her thread
        vote = run.send.feedback(
            "dislike", message_id=secret_ref, conversation=conversation, kind="channel", comment="forged"
        )
        assert run.send.post(vote).status_code == 200
        [told] = run.connector.wait_for(lambda: messages(run, "a:personal-29:alice"))
        assert told.body["text"] == NOT_HERE
        run.bot.wait_idle()

        later = run.connector.calls[before:]
        assert [c.method for c in later if c.method in ("send", "reply", "update")] == ["send"]  # the refusal
        assert leaked([json.dumps(c.body) for c in later] + refusals) == []
        assert len(messages(run, conversation)) == 1  # her answer alone: nothing asked, explained or echoed
        assert llm_world.store.votes(other) == {} and llm_world.store.explanation(other) is None
        assert llm_world.store.feedback_summary()["latest_down"] == []

        asks = [a for a in card_of(mine)["actions"] if a["verb"] == "ask"]  # her own follow-up still works
        assert "Asking: Where do I return my old laptop?" == press("ask", asks[1]["data"])
        run.connector.wait_for(lambda: messages(run, conversation)[1:])
        asked = [t.question for t in run.bot.conversations.history(ThreadKey("teams", TENANT, CHANNEL, root))]
        assert asked == ["how do I request a new laptop?", "Where do I return my old laptop?"]
        second = run.connector.wait_for(lambda: messages(run, conversation)[1:])[0]
        run.bot.wait_idle()
        # Explain of her second answer, pressed as if from her first: explained, but only the pressed answer's
        # own message may be marked, so the first one is not overwritten with the second's card
        updates = len(run.connector.sent(conversation)) - len(messages(run, conversation))
        assert press("explain", explain_action(second)["data"]) != NOT_HERE
        assert "Why this answer?" in wait_messages(run, conversation, 3)[2].body["text"]
        run.bot.wait_idle()
        assert len(run.connector.sent(conversation)) - len(messages(run, conversation)) == updates
