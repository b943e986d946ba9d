"""The Slack bot end to end: signed HTTP requests into the real Bolt app (on a real HTTP server), the real
ConversationService over a SQLite file and an index in tmp_path, and a fake Slack Web API on 127.0.0.1.

Every test waits for what Slack would show (`slack.wait_for`, `bot.wait_idle`), never for a time.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, echo_with_follow_ups
from tests.support.fake_slack import FakeSlack
from tests.support.llm import chat_for
from tests.support.slack_driver import (
    LAPTOP,
    WORKSPACE_ADMIN,
    answers,
    command,
    has_action,
    mention,
    message,
    new_ts,
    press,
    text_of,
    turn_id_of,
    vote,
    wait_answers,
)
from tests.support.slack_events import find_action
from tests.support.slack_world import ADMIN, Running, World, build_index, build_world, running_bot
from threadwise.core.answer.llm import LLMAnswerer
from threadwise.index.store import EvidenceIndex


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={"U1": {}, "U2": {}, WORKSPACE_ADMIN: {"is_admin": True}, ADMIN: {}}) as fake:
        yield fake


@pytest.fixture
def run(world: World, slack: FakeSlack) -> Iterator[Running]:
    with running_bot(world, slack) as running:
        yield running


# -- asking --------------------------------------------------------------------------------------------------


def test_mention_shows_a_placeholder_then_the_answer_in_the_thread(run: Running, world: World) -> None:
    slack = run.slack
    ts = mention(run)
    answer = wait_answers(run, "C1", ts)[0]

    placeholder = slack.calls_to("chat.postMessage")[0].params
    assert placeholder["thread_ts"] == ts and "Looking through Confluence" in placeholder["text"]
    [update] = slack.calls_to("chat.update")
    assert (
        update.params["ts"] == answer["ts"]
    )  # the placeholder became the answer: one message, no second post
    assert len(slack.calls_to("chat.postMessage")) == 1

    body = text_of(answer)
    assert "IT portal" in body
    assert "<https://wiki.example/display/IT/Laptops|[1]>" in body  # the citation is a link to the page
    assert "Requesting a new laptop" in body and "updated" in body  # the compact sources section
    explain, _ = find_action(answer, "explain")
    feedback, block_id = find_action(answer, "feedback")
    assert feedback["positive_button"]["value"] == "up" and feedback["negative_button"]["value"] == "down"
    assert has_action(answer, "more")
    turn = world.conversations.get_turn(int(explain["value"]))
    assert turn is not None and world.store.turn(turn.turn_id).message_ref == answer["ts"]  # type: ignore[union-attr]
    assert "[Source 1]" not in answer["text"]  # the notification text has no raw citations


def test_mention_inside_a_thread_is_answered_in_that_thread(run: Running) -> None:
    parent = new_ts()
    ts = mention(run, thread_ts=parent)
    assert wait_answers(run, "C1", parent)
    assert all(m.get("thread_ts") == parent for m in run.slack.bot_messages("C1", parent))
    assert run.slack.thread("C1", ts) == []  # nothing started a thread of its own


def test_follow_up_without_mention_only_in_threads_the_bot_answered(run: Running, world: World) -> None:
    thread = mention(run)
    first = wait_answers(run, "C1", thread)[0]

    message(run, "who approves it?", thread_ts=thread)
    second = wait_answers(run, "C1", thread, count=2)[1]
    turns = world.conversations.history(world.store.conversation_key(1) or _no_key())
    assert [t.question for t in turns] == ["how do I request a new laptop?", "who approves it?"]
    assert "laptop" in turns[1].completed_question  # the thread's earlier turn completed the question
    assert turn_id_of(second) != turn_id_of(first)

    calls = len(run.slack.calls)
    message(run, "<@U2> can you check this?", thread_ts=thread)  # people talking to each other
    message(run, "how many vacation days do I get?", thread_ts=new_ts())  # a thread the bot is not in
    message(run, "how many vacation days do I get?")  # a channel message without a mention
    message(run, "", thread_ts=thread, subtype="file_share")  # a file shared without a word
    run.bot.wait_idle()
    assert len(run.slack.calls) == calls


def _no_key() -> Any:
    raise AssertionError("no conversation stored")


def test_follow_ups_without_mention_can_be_switched_off(world: World, slack: FakeSlack) -> None:
    with running_bot(world, slack, follow_ups_without_mention=False) as run:
        thread = mention(run)
        wait_answers(run, "C1", thread)
        calls = len(slack.calls)
        message(run, "who approves it?", thread_ts=thread)
        run.bot.wait_idle()
        assert len(slack.calls) == calls


def test_direct_message_is_a_conversation(run: Running) -> None:
    ts = message(run, "how many vacation days do I get?", channel="D1", channel_type="im")
    answer = wait_answers(run, "D1", ts)[0]
    assert "30 vacation days" in text_of(answer)
    message(run, "and who approves them?", channel="D1", channel_type="im", thread_ts=ts)
    assert len(wait_answers(run, "D1", ts, count=2)) == 2


def test_an_empty_mention_gets_a_hint(run: Running) -> None:
    ts = mention(run, "<@UBOT>")
    note = run.slack.wait_for(lambda: run.slack.bot_messages("C1", ts))
    assert "Ask me a question" in note[0]["text"]


# -- answering once --------------------------------------------------------------------------------------------


def test_retries_and_duplicate_events_are_answered_once(run: Running) -> None:
    ts = new_ts()
    event = {"type": "app_mention", "user": "U1", "text": LAPTOP, "ts": ts, "channel": "C1", "event_ts": ts}
    assert run.send.event(event, event_id="EvSAME").status == 200
    assert run.send.event(event, event_id="EvSAME", retry_num=1).status == 200
    assert run.send.event(event, event_id="EvSAME", retry_num=2).status == 200
    wait_answers(run, "C1", ts)

    # An app subscribed to channel messages gets a mention twice: as app_mention and as message.
    follow = new_ts()
    mention(run, "<@UBOT> and who approves it?", ts=follow, thread_ts=ts)
    message(run, "<@UBOT> and who approves it?", ts=follow, thread_ts=ts)
    # The same in a DM, where both may arrive too.
    dm = new_ts()
    message(run, "<@UBOT> how many vacation days do I get?", channel="D1", channel_type="im", ts=dm)
    mention(run, "<@UBOT> how many vacation days do I get?", channel="D1", ts=dm)
    run.bot.wait_idle()

    assert len(answers(run.slack, "C1", ts)) == 2
    assert len(answers(run.slack, "D1", dm)) == 1
    assert len(run.slack.calls_to("chat.postMessage")) == 3  # one placeholder per question


def test_bad_or_stale_signatures_are_refused(run: Running) -> None:
    event = {"type": "app_mention", "user": "U1", "text": LAPTOP, "ts": new_ts(), "channel": "C1"}
    assert run.send.event(event, secret="not-the-secret").status == 401
    assert run.send.event(event, timestamp=int(time.time()) - 600).status == 401  # a replayed old request
    reply = run.send.post("payload=%7B%7D", content_type="application/x-www-form-urlencoded", secret="nope")
    assert reply.status == 401
    run.bot.wait_idle()
    assert run.slack.calls == []


def test_malformed_payloads_and_unexpected_events_are_ignored(run: Running, world: World) -> None:
    send = run.send
    assert (
        send.event({"type": "app_mention", "user": "U1", "text": LAPTOP}).status == 200
    )  # no channel, no ts
    assert send.event({"type": "app_mention", "channel": "C1", "ts": new_ts()}).status == 200  # no user
    assert send.event({"type": "reaction_added", "user": "U1", "reaction": "+1"}).status == 200
    assert (
        send.event({"type": "message", "subtype": "message_changed", "channel": "C1", "ts": new_ts()}).status
        == 200
    )
    assert (
        send.event({"type": "message", "channel": "C1", "bot_id": "B2", "text": "hi", "ts": new_ts()}).status
        == 200
    )
    assert send.raw_event_body({"type": "event_callback", "team_id": "T0TEAM"}).status in (200, 400, 404)
    assert send.post("{not json", content_type="application/json").status in (400, 404)
    msg = {"ts": "1.1", "blocks": []}
    assert (
        send.block_action(
            user="U1", channel="C1", message=msg, action={"action_id": "explain", "value": "x"}
        ).status
        == 200
    )
    assert (
        send.block_action(
            user="U1", channel="C1", message=msg, action={"action_id": "feedback", "value": "up"}
        ).status
        == 200
    )
    assert (
        send.block_action(user="U1", channel="C1", message=msg, action={"action_id": "no_such_button"}).status
        == 200
    )
    junk = {"type": "modal", "callback_id": "feedback_comment", "private_metadata": "junk"}
    assert send.view_submission(user="U1", view=junk, values={}).status == 200
    assert (
        send.view_submission(user="U1", view={"callback_id": "x"}, values={}).status == 500
    )  # trips Bolt; served on
    run.bot.wait_idle()
    assert not [c for c in run.slack.calls if c.method.startswith(("chat.", "views."))]
    assert world.conversations.feedback_summary()["up"] == 0

    ts = mention(run)  # and the bot still works
    assert wait_answers(run, "C1", ts)


# -- failures ---------------------------------------------------------------------------------------------------


def test_llm_down_gives_a_friendly_reply_and_try_again_works(
    tmp_path: Path, slack: FakeSlack, index: EvidenceIndex
) -> None:
    with FakeOpenAI() as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=0))
        llm.fail(500, times=2)  # the call and its one retry
        with running_bot(world, slack) as run:
            ts = mention(run)
            failed = wait_answers(run, "C1", ts)[0]
            assert "couldn't reach the language model" in text_of(failed)
            assert has_action(failed, "retry") and not has_action(failed, "feedback")

            press(run, failed, "retry")
            fixed = run.slack.wait_for(
                lambda: (m := run.slack.message("C1", failed["ts"])) and has_action(m, "explain") and m
            )
            assert "IT portal" in text_of(fixed)
            assert len(answers(slack, "C1", ts)) == 1  # the failure was replaced, not added to


def test_empty_index_says_so(tmp_path: Path, slack: FakeSlack, index: EvidenceIndex) -> None:
    with running_bot(build_world(tmp_path, index=build_index(tmp_path / "empty", pages=())), slack) as run:
        ts = mention(run)
        reply = wait_answers(run, "C1", ts)[0]
        assert "no Confluence space has been synced" in text_of(reply)


def test_a_vanished_placeholder_still_gets_the_answer(run: Running) -> None:
    run.slack.fail("chat.update", "message_not_found")
    ts = mention(run)
    answer = wait_answers(run, "C1", ts)[0]
    assert "IT portal" in text_of(answer)


def test_a_workspace_that_refuses_feedback_buttons_still_gets_answers(world: World) -> None:
    with (
        FakeSlack(unsupported_blocks=frozenset({"context_actions"})) as slack,
        running_bot(world, slack) as run,
    ):
        ts = mention(run)
        answer = wait_answers(run, "C1", ts)[0]
        assert "IT portal" in text_of(answer) and not has_action(answer, "feedback")
        press(run, answer, "explain")
        run.slack.wait_for(lambda: any("Why this answer" in text_of(m) for m in slack.bot_messages("C1", ts)))
        run.bot.wait_idle()
        assert "Explained" in text_of(slack.message("C1", answer["ts"]) or {})
        assert len(answers(slack, "C1", ts)) == 1


def test_rate_limits_are_waited_out(run: Running) -> None:
    run.slack.fail("chat.update", "ratelimited", times=2)  # HTTP 429 with Retry-After, twice
    ts = mention(run)
    answer = wait_answers(run, "C1", ts)[0]
    assert [c.ok for c in run.slack.calls_to("chat.update")] == [False, False, True]
    assert len(run.slack.calls_to("chat.postMessage")) == 1 and "IT portal" in text_of(answer)


def test_not_found_is_said_plainly(run: Running) -> None:
    ts = mention(run, "<@UBOT> what is the airspeed velocity of an unladen swallow?")
    reply = wait_answers(run, "C1", ts)[0]
    assert "couldn't find this in the synced pages" in text_of(reply)


# -- buttons -----------------------------------------------------------------------------------------------


def test_explain_posts_the_attribution_and_marks_the_button(run: Running, world: World) -> None:
    ts = mention(run)
    answer = wait_answers(run, "C1", ts)[0]
    press(run, answer, "explain")
    run.slack.wait_for(lambda: any("Why this answer" in text_of(m) for m in run.slack.bot_messages("C1", ts)))
    run.bot.wait_idle()

    labels = [text_of(c.params) for c in run.slack.calls_to("chat.update") if c.params["ts"] == answer["ts"]]
    assert any("Explaining" in label for label in labels)
    marked = run.slack.message("C1", answer["ts"])
    assert marked is not None and "Explained" in text_of(marked)
    explanation = next(m for m in run.slack.bot_messages("C1", ts) if "Why this answer" in text_of(m))
    assert "%" in text_of(explanation) and "https://wiki.example/display/IT/Laptops" in text_of(explanation)
    assert world.store.explanation(turn_id_of(answer)) is not None

    posts = len(run.slack.calls_to("chat.postMessage"))
    press(run, marked, "explain", user="U2")  # a second press: the stored result, privately, at once
    run.bot.wait_idle()
    [again] = run.slack.calls_to("chat.postEphemeral")
    assert again.params["user"] == "U2" and "computed earlier" in text_of(again.params)
    assert len(run.slack.calls_to("chat.postMessage")) == posts


def test_votes_are_stored_per_user_and_can_change(run: Running, world: World) -> None:
    ts = mention(run)
    answer = wait_answers(run, "C1", ts)[0]
    turn = turn_id_of(answer)

    vote(run, answer, "up")
    assert world.store.votes(turn) == {"U1": "up"}
    vote(run, answer, "down")  # changed
    assert world.store.votes(turn) == {"U1": "down"}
    [opened] = run.slack.calls_to("views.open")
    modal = opened.params["view"]
    assert modal["callback_id"] == "feedback_comment"

    reply = run.send.view_submission(
        user="U1",
        view=modal,
        values={"comment": {"text": {"type": "plain_text_input", "value": "The page is outdated"}}},
    )
    assert reply.status == 200
    run.bot.wait_idle()
    vote(run, answer, "up", user="U2")
    summary = world.conversations.feedback_summary()
    assert (summary["up"], summary["down"]) == (1, 1)
    assert summary["latest_down"][0]["comment"] == "The page is outdated"
    assert summary["latest_down"][0]["question"] == "how do I request a new laptop?"


def test_behind_the_scenes_opens_the_trace_privately(run: Running) -> None:
    ts = mention(run)
    answer = wait_answers(run, "C1", ts)[0]
    turn = turn_id_of(answer)
    press(
        run,
        answer,
        "more",
        selected_option={"value": f"trace:{turn}", "text": {"type": "plain_text", "text": "x"}},
    )
    run.bot.wait_idle()
    [opened] = run.slack.calls_to("views.open")
    trace = text_of(opened.params["view"])
    assert "completed question" in trace and "fused" in trace and "timings" in trace


def test_suggested_follow_ups_are_buttons_that_ask_in_the_thread(
    tmp_path: Path, slack: FakeSlack, index: EvidenceIndex
) -> None:
    with FakeOpenAI(respond=echo_with_follow_ups) as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=3))
        with running_bot(world, slack) as run:
            ts = mention(run)
            answer = wait_answers(run, "C1", ts)[0]
            button, _ = find_action(answer, "follow_up_2")
            assert button["value"] == "Where do I return my old laptop?"

            press(run, answer, "follow_up_2")
            wait_answers(run, "C1", ts, count=2)
            assert any(
                "asked: Where do I return my old laptop?" in m["text"] for m in slack.bot_messages("C1", ts)
            )
            press(run, answer, "follow_up_2")  # pressed again: not asked twice
            run.bot.wait_idle()
            assert len(answers(slack, "C1", ts)) == 2
            assert "asked already" in text_of(slack.calls_to("chat.postEphemeral")[-1].params)


def test_a_very_long_answer_is_cut_with_a_way_to_read_it_all(
    tmp_path: Path, slack: FakeSlack, index: EvidenceIndex
) -> None:
    long_answer = "\n\n".join(
        f"Step {i}: open the **IT portal** and fill in field {i} of the form. [Source 1]" for i in range(400)
    )
    with FakeOpenAI(replies=[long_answer]) as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=0))
        with running_bot(world, slack) as run:
            ts = mention(run)
            answer = wait_answers(run, "C1", ts)[0]  # FakeSlack refuses blocks beyond Slack's limits
            assert all(c.ok for c in slack.calls)
            assert len(answer["blocks"]) <= 50 and has_action(answer, "full_answer")
            press(run, answer, "full_answer")
            run.bot.wait_idle()
            [opened] = slack.calls_to("views.open")
            assert opened.ok and "Step 399" in text_of(opened.params["view"])


# -- admins ----------------------------------------------------------------------------------------------


def test_admin_commands_for_admins_and_polite_refusals_for_others(run: Running, world: World) -> None:
    assert "Threadwise commands" in command(run, "help")
    assert "IT" in command(run, "status") and "pages" in command(run, "status")  # everyone may look

    refused = command(run, "channel HR", user="U1")
    assert "only Threadwise admins" in refused and world.admin.channel_spaces("C1") == ()
    assert "only Threadwise admins" in command(run, "add DOCS", user="U1")
    assert "only Threadwise admins" in command(run, "sync", user="U1")
    assert [c.params["user"] for c in run.slack.calls_to("users.info")] == ["U1"]  # asked Slack once, cached

    assert "Done" in command(run, "channel HR", user=ADMIN)  # a configured admin
    assert world.admin.channel_spaces("C1") == ("HR",)
    assert "Done" in command(run, "channel HR IT", channel="C3", user=WORKSPACE_ADMIN)  # a workspace admin
    assert "Confluence is not configured" in command(run, "add DOCS", user=ADMIN)  # the service's own words

    ts = mention(run)  # C1 now answers from HR only: the laptop page is out of reach
    limited = text_of(wait_answers(run, "C1", ts)[0])
    assert "IT portal" not in limited and "display/IT/" not in limited
    ts = mention(run, channel="C2")
    assert "IT portal" in text_of(wait_answers(run, "C2", ts)[0])
    assert "all synced spaces" in command(run, "channel all", user=ADMIN)


def test_app_home_shows_what_the_bot_knows_and_feedback_to_admins(run: Running) -> None:
    ts = mention(run)
    answer = wait_answers(run, "C1", ts)[0]
    vote(run, answer, "down")
    for user in ("U1", ADMIN):
        assert (
            run.send.event({"type": "app_home_opened", "user": user, "channel": "D9", "tab": "home"}).status
            == 200
        )
    run.bot.wait_idle()
    views = {c.params["user_id"]: text_of(c.params["view"]) for c in run.slack.calls_to("views.publish")}
    for view in views.values():
        assert "What I know" in view and "*IT*" in view and "How to ask" in view
    assert "Feedback" not in views["U1"]
    assert "👎 1" in views[ADMIN] and "how do I request a new laptop?" in views[ADMIN]


def test_a_mention_under_someone_elses_message_is_completed_with_it(run: Running, world: World) -> None:
    """ "@Threadwise any idea?" in reply to a person's problem: the thread's human messages complete the question."""
    parent = new_ts()
    run.slack.add_message("C1", parent, user="U7", text="My laptop died, I need a new laptop for Monday")
    run.slack.add_message("C1", new_ts(), user="U8", text="<@U1> did you ask IT?", thread_ts=parent)
    ts = mention(run, "<@UBOT> what is the process?", thread_ts=parent)
    (answer,) = wait_answers(run, "C1", parent)
    assert run.slack.calls_to("conversations.replies")  # the thread was read
    turn = world.conversations.get_turn(turn_id_of(answer))
    assert turn is not None
    assert turn.question == "what is the process?"
    assert "new laptop for Monday" in turn.completed_question and "did you ask IT?" in turn.completed_question
    assert "<@" not in turn.completed_question
    trace = world.conversations.trace(turn.turn_id)
    assert trace["thread_messages"] == ["My laptop died, I need a new laptop for Monday", "did you ask IT?"]
    assert ts != parent


def test_a_thread_that_cannot_be_read_still_gets_an_answer(run: Running, world: World) -> None:
    parent = new_ts()  # Slack knows no such thread: conversations.replies fails
    mention(run, "<@UBOT> how do I request a new laptop?", thread_ts=parent)
    assert wait_answers(run, "C1", parent)
