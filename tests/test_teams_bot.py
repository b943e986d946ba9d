"""The Teams bot end to end: Bot Framework activities POSTed over HTTP to the real Teams SDK App (served by
uvicorn on 127.0.0.1), the real ConversationService over a SQLite file and an index in tmp_path, and replies
through a fake Bot Framework connector on 127.0.0.1 that records every call.

Every test waits for what the connector receives (`connector.wait_for`, `bot.wait_idle`), never for a time.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_bot_connector import ConnectorCall, FakeBotConnector, new_key
from tests.support.fake_openai import FakeOpenAI, echo_first_source, echo_with_follow_ups
from tests.support.llm import chat_for
from tests.support.slack_world import World, build_index, build_world
from tests.support.teams_activities import (
    ADMIN,
    ALICE,
    CHANNEL,
    GROUP_CHAT,
    PERSONAL,
    TENANT,
)
from tests.support.teams_world import APP_ID, OUTGOING_TOKEN, RunningTeams, running_teams
from tests.support.views import source_view, turn_citing
from threadwise.chat.turn_views import cluster_line
from threadwise.core.answer.llm import LLMAnswerer
from threadwise.core.attribute.explanation import ClusterAttribution, SourceRef
from threadwise.db.conversations import ThreadKey
from threadwise.index.store import EvidenceIndex
from threadwise.teams import cards
from threadwise.teams.admin import TEAMS
from threadwise.teams.settings import TeamsSettings

LAPTOP = "how do I request a new laptop?"


@pytest.fixture
def connector() -> Iterator[FakeBotConnector]:
    with FakeBotConnector() as fake:
        yield fake


@pytest.fixture
def run(world: World, connector: FakeBotConnector) -> Iterator[RunningTeams]:
    with running_teams(world, connector) as running:
        yield running


# -- helpers ---------------------------------------------------------------------------------------------


def thread_of(root: str) -> str:
    return f"{CHANNEL};messageid={root}"


def messages(run: RunningTeams, conversation: str) -> list[ConnectorCall]:
    """New messages the bot sent into `conversation` (not updates, not typing)."""
    return [c for c in run.connector.sent(conversation) if c.method == "send"]


def wait_messages(run: RunningTeams, conversation: str, n: int = 1) -> list[ConnectorCall]:
    return run.connector.wait_for(
        lambda: len(messages(run, conversation)) >= n and messages(run, conversation)
    )


def card_of(call: ConnectorCall) -> dict[str, Any]:
    attachments = call.body.get("attachments") or []
    assert attachments and attachments[0]["contentType"] == "application/vnd.microsoft.card.adaptive"
    return attachments[0]["content"]


def explain_action(call: ConnectorCall) -> dict[str, Any]:
    return next(a for a in card_of(call)["actions"] if a.get("verb") == "explain")


def sent_id(run: RunningTeams, call: ConnectorCall) -> str:
    """The id the connector gave the message `call` sent."""
    conversation = run.connector.activities[call.conversation]
    return next(i for i, a in conversation.items() if a.get("text") == call.body.get("text"))


def _key(root: str) -> ThreadKey:
    return ThreadKey("teams", TENANT, CHANNEL, root)


def ask_in_channel(run: RunningTeams, text: str = LAPTOP) -> tuple[str, ConnectorCall]:
    post = run.send.message(text)
    assert run.send.post(post).status_code == 200
    answer = wait_messages(run, thread_of(post["id"]))[0]
    run.bot.wait_idle()  # the answer's message id is stored (a person presses a button seconds later)
    return post["id"], answer


# -- asking ---------------------------------------------------------------------------------------------


def test_a_mention_in_a_channel_is_answered_in_its_thread_with_sources_and_actions(run: RunningTeams) -> None:
    root, answer = ask_in_channel(run)
    conversation = thread_of(root)
    calls = run.connector.sent(conversation, kind="typing")
    assert calls and calls[0].at <= answer.at  # progress at once, then the answer
    body = answer.body
    assert "open a ticket in the IT portal" in body["text"] and "[1]" in body["text"]
    assert "<at>" not in body["text"]
    message_entity = body["entities"][0]
    assert message_entity["additionalType"] == ["AIGeneratedContent"]
    citation = message_entity["citation"][0]
    assert citation["position"] == 1
    assert citation["appearance"]["name"] == "Requesting a new laptop"
    assert citation["appearance"]["url"] == "https://wiki.example/display/IT/Laptops"
    assert body["channelData"]["feedbackLoop"] == {"type": "default"}
    card = card_of(answer)
    lines = [b["text"] for b in card["body"]]
    # the page was last modified 2024-05-03: more than THREADWISE_STALE_AFTER_DAYS (730) ago
    assert any(
        "[Requesting a new laptop](https://wiki.example/display/IT/Laptops) · IT · updated 2024-05-03"
        " · ⚠ possibly outdated" in line
        for line in lines
    )
    assert citation["appearance"]["keywords"] == ["IT", "updated 2024-05-03", "possibly outdated"]
    action = explain_action(answer)
    assert action["type"] == "Action.Execute" and action["data"]["turn_id"] >= 1
    # the question was stored without the mention markup, in the thread of the post
    turns = run.bot.conversations.history(_key(root))
    assert [(t.turn_id, t.question) for t in turns] == [(action["data"]["turn_id"], LAPTOP)]


def test_a_personal_chat_needs_no_mention_and_a_group_chat_needs_one(run: RunningTeams) -> None:
    run.send.post(run.send.message(LAPTOP, where="personal", mention=False))
    assert "IT portal" in wait_messages(run, PERSONAL)[0].body["text"]
    run.send.post(run.send.message("how many vacation days do I have?", where="group", mention=False))
    run.bot.wait_idle()
    assert messages(run, GROUP_CHAT) == []
    run.send.post(run.send.message("how many vacation days do I have?", where="group"))
    assert "30 vacation days" in wait_messages(run, GROUP_CHAT)[0].body["text"]


def test_follow_ups_in_an_answered_thread_need_no_mention(run: RunningTeams) -> None:
    root, _ = ask_in_channel(run)
    run.send.post(run.send.message("and who approves it?", mention=False, root=root))
    second = wait_messages(run, thread_of(root), 2)[1]
    assert second.body["attachments"]  # a second answer, with its own sources card
    turns = run.bot.conversations.history(_key(root))
    assert [t.question for t in turns] == [LAPTOP, "and who approves it?"]
    assert "laptop" in turns[1].completed_question.lower()  # completed from the thread's first question
    # people talking to each other in the thread, and threads the bot never answered in, are left alone
    run.send.post(run.send.message("can you check?", mention=False, root=root, mention_other=ALICE))
    other = run.send.message("a new post", mention=False)
    run.send.post(run.send.message("what about this?", mention=False, root=other["id"]))
    run.bot.wait_idle()
    assert len(messages(run, thread_of(root))) == 2
    assert messages(run, thread_of(other["id"])) == []


def test_a_redelivered_activity_is_answered_once(run: RunningTeams) -> None:
    post = run.send.message(LAPTOP)
    assert run.send.post(post).status_code == 200
    assert run.send.post(post).status_code == 200
    wait_messages(run, thread_of(post["id"]))
    run.bot.wait_idle()
    assert len(messages(run, thread_of(post["id"]))) == 1
    assert len(run.connector.sent(thread_of(post["id"]), kind="typing")) == 1


def test_malformed_and_unknown_activities_are_ignored_and_logged(
    run: RunningTeams, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="threadwise.teams.app")
    caplog.set_level("INFO", logger="threadwise.teams.activity")
    assert run.send.post("this is not json").status_code == 400
    assert run.send.post("[1, 2]").status_code == 400
    assert run.send.post({"type": "no-such-type", "id": "1"}).status_code == 400
    reaction = run.send.message("x", where="personal", mention=False)
    reaction.update(type="messageReaction", reactionsAdded=[{"type": "like"}])
    assert run.send.post(reaction).status_code == 200
    unknown_invoke = run.send.explain(1, message_id="1", conversation=PERSONAL, kind="personal")
    unknown_invoke["name"] = "composeExtension/unknownThing"
    assert run.send.post(unknown_invoke).status_code == 400  # an invoke the SDK does not know
    assert httpx.get(run.server.url.replace("/api/messages", "/healthz")).status_code == 200
    run.bot.wait_idle()
    assert run.connector.sent() == []
    assert "not a Bot Framework activity" in caplog.text and "ignored a Teams activity" in caplog.text
    run.send.post(run.send.message(LAPTOP, where="personal", mention=False))  # and it still answers
    assert wait_messages(run, PERSONAL)


def test_the_bot_says_hello_once_when_added(run: RunningTeams) -> None:
    added = run.send.bot_added()
    run.send.post(added)
    run.send.post(added)
    assert "I answer questions" in wait_messages(run, PERSONAL)[0].body["text"]
    run.bot.wait_idle()
    assert len(messages(run, PERSONAL)) == 1


def test_an_empty_mention_gets_a_hint_not_silence(run: RunningTeams) -> None:
    post = run.send.message("")
    run.send.post(post)
    assert "Ask me a question" in wait_messages(run, thread_of(post["id"]))[0].body["text"]


# -- Explain and feedback --------------------------------------------------------------------------------


def test_explain_posts_the_attribution_in_the_thread_and_a_second_press_shows_it(run: RunningTeams) -> None:
    root, answer = ask_in_channel(run)
    conversation = thread_of(root)
    message_id = sent_id(run, answer)
    turn_id = explain_action(answer)["data"]["turn_id"]
    press = run.send.explain(turn_id, message_id=message_id, conversation=conversation, kind="channel")
    first = run.send.post(press).json()
    assert first["type"] == "application/vnd.microsoft.card.adaptive"
    assert first["value"]["actions"][0]["title"] == "⏳ Explaining…"
    explanation = wait_messages(run, conversation, 2)[1]
    assert "Why this answer?" in explanation.body["text"] and "%" in explanation.body["text"]
    assert "wiki.example" in explanation.body["text"]
    update = run.connector.wait_for(
        lambda: [
            c
            for c in run.connector.sent(conversation)
            if c.method == "update" and c.activity_id == message_id
        ]
    )[0]
    assert explain_action(update)["title"] == "🔍 Show the explanation"
    again = run.send.post(
        run.send.explain(turn_id, message_id=message_id, conversation=conversation, kind="channel")
    )
    shown = json.dumps(again.json()["value"])
    assert "Why this answer?" in shown and "computed earlier" in shown
    run.bot.wait_idle()
    assert len(messages(run, conversation)) == 2  # the second press posted nothing


def test_votes_are_stored_per_user_changeable_with_the_feedback_form_comment(run: RunningTeams) -> None:
    root, answer = ask_in_channel(run)
    conversation = thread_of(root)
    message_id = sent_id(run, answer)
    turn_id = explain_action(answer)["data"]["turn_id"]
    like = run.send.feedback("like", message_id=message_id, conversation=conversation, kind="channel")
    assert run.send.post(like).status_code == 200
    assert run.bot.conversations.store.votes(turn_id) == {"aad-alice": "up"}
    dislike = run.send.feedback(
        "dislike", message_id=message_id, conversation=conversation, kind="channel", comment="wrong portal"
    )
    run.send.post(dislike)
    admins_view = run.send.feedback(
        "like", message_id=message_id, conversation=conversation, kind="channel", user=ADMIN
    )
    run.send.post(admins_view)
    assert run.bot.conversations.store.votes(turn_id) == {"aad-alice": "down", "aad-admin": "up"}
    summary = run.bot.conversations.feedback_summary()
    assert (summary["up"], summary["down"]) == (1, 1)
    assert summary["latest_down"][0]["comment"] == "wrong portal"
    # admins see the same summary as on Slack's Home tab; others are refused
    run.send.post(run.send.message("admin feedback", where="personal", mention=False))
    assert "only Threadwise admins" in wait_messages(run, PERSONAL)[0].body["text"]
    run.send.post(run.send.message("admin feedback", where="personal", mention=False, user=ADMIN))
    shown = wait_messages(run, PERSONAL, 2)[1].body["text"]
    assert "👍 1 · 👎 1" in shown and "wrong portal" in shown and LAPTOP in shown


# -- admins ---------------------------------------------------------------------------------------------


def test_admin_commands_go_through_the_admin_service_and_refuse_non_admins(run: RunningTeams) -> None:
    run.send.post(run.send.message("admin status", where="personal", mention=False))
    status = wait_messages(run, PERSONAL)[0].body["text"]
    assert "**What I know**" in status and "**IT**" in status and "**HR**" in status
    run.send.post(run.send.message("admin remove IT", where="personal", mention=False))
    refusal = wait_messages(run, PERSONAL, 2)[1].body["text"]
    assert "only Threadwise admins" in refusal and "THREADWISE_TEAMS_ADMINS" in refusal
    assert {s.key for s in run.bot.admin.status()} == {"IT", "HR"}
    post = run.send.message("admin help", user=ADMIN)
    run.send.post(post)
    assert "`admin add KEY" in wait_messages(run, thread_of(post["id"]))[0].body["text"]
    run.send.post(run.send.message("admin channel HR", where="personal", mention=False))
    assert "only Threadwise admins" in wait_messages(run, PERSONAL, 3)[2].body["text"]
    run.send.post(run.send.message("admin channel HR", where="personal", mention=False, user=ADMIN))
    assert "I answer only from **HR**" in wait_messages(run, PERSONAL, 4)[3].body["text"]
    assert tuple(run.bot.admin.channel_spaces(PERSONAL)) == ("HR",)
    run.send.post(run.send.message("admin remove DOCS", where="personal", mention=False, user=ADMIN))
    assert "⚠️" in wait_messages(run, PERSONAL, 5)[4].body["text"]  # the service's own refusal, passed on


# -- failures: never silence ----------------------------------------------------------------------------


def test_an_answer_the_connector_refuses_is_sent_again_as_plain_text(run: RunningTeams) -> None:
    run.connector.fail(400, when=lambda body: bool(body.get("attachments")))  # e.g. a card it will not take
    run.send.post(run.send.message(LAPTOP, where="personal", mention=False))
    sent = wait_messages(run, PERSONAL)
    assert "IT portal" in sent[0].body["text"] and "attachments" not in sent[0].body
    refused = [c for c in run.connector.calls if c.status == 400]
    assert (
        len(refused) == 1 and refused[0].body["attachments"]
    )  # the card was tried once, then the text alone


def test_nothing_indexed_gets_a_clear_reply(tmp_path: Path, connector: FakeBotConnector) -> None:
    world = build_world(tmp_path, index=build_index(tmp_path / "empty", pages=()))
    with running_teams(world, connector) as run:
        run.send.post(run.send.message(LAPTOP, where="personal", mention=False))
        assert "no Confluence space has been synced" in wait_messages(run, PERSONAL)[0].body["text"]


def test_the_llm_down_gets_a_clear_reply_and_try_again_asks_again(
    tmp_path: Path, index: EvidenceIndex, connector: FakeBotConnector
) -> None:
    with FakeOpenAI(respond=echo_first_source) as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=0))
        llm.fail(500, times=2)  # the call and its one retry
        with running_teams(world, connector) as run:
            root, failed = ask_in_channel(run)
            conversation = thread_of(root)
            assert "couldn't reach the language model" in failed.body["text"]
            assert "channelData" not in failed.body and "entities" not in failed.body  # no AI label, no 👍/👎
            [retry] = card_of(failed)["actions"]
            assert retry["verb"] == "retry"
            message_id = sent_id(run, failed)
            press = run.send.card_action(
                "retry", retry["data"], message_id=message_id, conversation=conversation
            )
            assert "Asking" in run.send.post(press).json()["value"]
            answer = wait_messages(run, conversation, 2)[1]
            assert "IT portal" in answer.body["text"] and card_of(answer)["actions"][0]["verb"] == "explain"
            again = run.send.card_action(
                "retry", retry["data"], message_id=message_id, conversation=conversation
            )
            assert "already" in run.send.post(again).json()["value"]
            run.bot.wait_idle()
            assert len(messages(run, conversation)) == 2


def test_suggested_follow_ups_are_buttons_that_ask_in_the_thread(
    tmp_path: Path, index: EvidenceIndex, connector: FakeBotConnector
) -> None:
    with FakeOpenAI(respond=echo_with_follow_ups) as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=3))
        with running_teams(world, connector) as run:
            root, answer = ask_in_channel(run)
            conversation = thread_of(root)
            asks = [a for a in card_of(answer)["actions"] if a["verb"] == "ask"]
            assert asks[1]["title"] == "💬 Where do I return my old laptop?"
            assert asks[1]["data"] == {"turn_id": explain_action(answer)["data"]["turn_id"], "follow_up": 2}
            message_id = sent_id(run, answer)
            press = run.send.card_action(
                "ask", asks[1]["data"], message_id=message_id, conversation=conversation
            )
            run.send.post(press)
            wait_messages(run, conversation, 2)
            turns = run.bot.conversations.history(_key(root))
            assert [t.question for t in turns] == [LAPTOP, "Where do I return my old laptop?"]
            again = run.send.card_action(
                "ask", asks[1]["data"], message_id=message_id, conversation=conversation
            )
            assert "already" in run.send.post(again).json()["value"]  # pressed again: not asked twice
            run.bot.wait_idle()
            assert len(messages(run, conversation)) == 2


# -- authentication ---------------------------------------------------------------------------------------


def test_with_a_client_id_requests_without_a_valid_token_get_401_and_no_reply(
    world: World, connector: FakeBotConnector
) -> None:
    with running_teams(world, connector, authenticated=True) as run:
        post = run.send.message(LAPTOP, where="personal", mention=False)
        assert run.send.post(post).status_code == 401
        forged = connector.sign(APP_ID, key=new_key())
        assert (
            run.send.post(run.send.message(LAPTOP, where="personal", mention=False), token=forged).status_code
            == 401
        )
        other_bot = connector.sign("some-other-app")
        assert (
            run.send.post(
                run.send.message(LAPTOP, where="personal", mention=False), token=other_bot
            ).status_code
            == 401
        )
        run.bot.wait_idle()
        assert connector.sent() == []
        # a token signed with the connector's published key, for this bot and this service URL, is accepted
        signed = connector.sign(APP_ID)
        assert (
            run.send.post(run.send.message(LAPTOP, where="personal", mention=False), token=signed).status_code
            == 200
        )
        answer = wait_messages(run, PERSONAL)[0]
        assert answer.authorization == f"Bearer {OUTGOING_TOKEN}"


def test_settings_refuse_to_start_without_a_client_id_or_the_local_trial_flag() -> None:
    assert "TEAMS_CLIENT_ID" in (TeamsSettings.from_env({}).problem() or "")
    assert TeamsSettings.from_env({"THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED": "1"}).problem() is None
    both = TeamsSettings.from_env({"TEAMS_CLIENT_ID": "x", "THREADWISE_TEAMS_ALLOW_UNAUTHENTICATED": "1"})
    assert "refused" in (both.problem() or "")
    no_secret = TeamsSettings.from_env({"TEAMS_CLIENT_ID": "x"})
    assert "TEAMS_CLIENT_SECRET" in (no_secret.problem() or "")
    full = TeamsSettings.from_env(
        {"TEAMS_CLIENT_ID": "x", "TEAMS_CLIENT_SECRET": "s", "THREADWISE_TEAMS_ADMINS": "a, b,"}
    )
    assert full.problem() is None and full.admin_ids == ("a", "b") and full.configured


# -- rendering, from the neutral views ---------------------------------------------------------------------


def test_teams_writes_its_source_lines_in_markdown_with_the_date_and_the_outdated_mark() -> None:
    turn = turn_citing(
        source_view(1, "old", title="Laptops [v2] | IT", space="IT", outdated=True),
        source_view(2, "new", title="Printers", space="IT", modified="2026-10-01T08:00:00Z"),
        source_view(3, "none", title="Undated", space="IT", modified=""),
    )
    assert cards.source_lines(turn.cited_sources) == [
        "[1] [Laptops (v2) | IT](https://wiki.example/old) · IT · updated 2024-05-03 · ⚠ possibly outdated",
        "[2] [Printers](https://wiki.example/new) · IT · updated 2026-10-01",
        "[3] [Undated](https://wiki.example/none) · IT",
    ]
    entity = cards.answer_activity(turn).model_dump(by_alias=True, exclude_none=True)["entities"][0]
    keywords = [c["appearance"]["keywords"] for c in entity["citation"]]
    assert keywords == [
        ["IT", "updated 2024-05-03", "possibly outdated"],
        ["IT", "updated 2026-10-01"],
        ["IT"],
    ]


def test_teams_writes_the_explanation_in_markdown() -> None:
    refs = tuple(
        SourceRef(n, f"e{n}", f"p{n}", "Laptops", f"https://wiki.example/{n}", f"Laptops [row {n}]", "row")
        for n in (1, 2)
    )
    cluster = ClusterAttribution(1, refs, 0.75, 0.5, (0.5,), ("x",))
    failed = ClusterAttribution(2, refs[1:], 0.0, None, (), (), scored=False, error="timeout <5 s>")
    assert cluster_line(cluster, TEAMS) == (
        "`███████▌  ` **75%**  [Laptops (row 1)](https://wiki.example/1) [1], "
        "[Laptops (row 2)](https://wiki.example/2) [2]"
    )
    assert cluster_line(failed, TEAMS).startswith("*not scored: timeout &lt;5 s&gt;*  [Laptops (row 2)]")


def test_teams_cards_borrow_nothing_from_slack() -> None:
    """Teams renders from the neutral views: no Slack library, nor Slack's Block Kit or mrkdwn modules."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(Path(cards.__file__).read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    assert "threadwise.chat.turn_views.page_lines" in names
    assert [n for n in names if "slack" in n or ".blocks" in n or ".mrkdwn" in n] == []
