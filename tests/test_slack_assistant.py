"""Slack's Agents & AI Apps surface and streamed answers, through the real Bolt app (`SlackBot` on its HTTP
endpoint) against the local fake Slack Web API, and once against the independent fake in ../shared/fakes.

Slack's documented payloads (tests/fixtures/slack/, sources in SOURCES.md) open the assistant view and ask in
its thread; the local OpenAI-shaped fake streams its reply word by word when asked to (`chunk_delay`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_slack import FakeSlack, SlackCall
from tests.support.llm import chat_for
from tests.support.slack_world import SIGNING_SECRET, Running, World, build_world, running_bot
from tests.test_slack_shared_fake import live_bot, wait_for
from threadwise.core.answer.llm import LLMAnswerer
from threadwise.core.protocols import ChatError
from threadwise.db.conversations import ThreadKey
from threadwise.index.store import EvidenceIndex
from threadwise.slack.assistant import STATUS, most_asked, suggested_prompts
from threadwise.slack.question import Question
from threadwise.slack.streaming import AnswerStream

FIXTURES = Path(__file__).parent / "fixtures" / "slack"
LAPTOP = "how do I request a new laptop?"
ASKER = "U2147483697"  # the documented message.im's author
DM = "D024BE91L"  # its DM channel
THREAD = "1355517520.000001"  # the assistant thread's root (fixture)
_ts = iter(range(1, 10**6))


def fixture(name: str, slack: FakeSlack, **fields: Any) -> dict[str, Any]:
    """A stored Slack example with the workspace, app and bot user mapped onto the fake's; `fields` set on
    its `event` (`assistant_thread` fields for the assistant_thread_* events)."""
    ids = {
        "T123ABC456": slack.team_id,
        "A123ABC456": slack.app_id,
        "A0PNCHHK2": slack.app_id,
        "U0LAN0Z89": slack.bot_user_id,
    }
    text = (FIXTURES / name).read_text()
    for theirs, mine in ids.items():
        text = text.replace(f'"{theirs}"', f'"{mine}"')
    body: dict[str, Any] = json.loads(text)
    event = body["event"]
    (event["assistant_thread"] if "assistant_thread" in event else event).update(fields)
    body["event_id"] = f"Ev{next(_ts):08d}"
    return body


def ask_in_assistant_thread(run: Running, text: str = LAPTOP) -> str:
    """The documented message.im, as a question in the assistant thread THREAD; its ts."""
    ts = f"1710000000.{next(_ts):06d}"
    body = fixture("events_message_im_assistant_thread.json", run.slack, text=text, ts=ts, event_ts=ts)
    assert run.send.post(json.dumps(body), content_type="application/json").status == 200
    return ts


def methods(slack: FakeSlack) -> list[str]:
    return [c.method for c in slack.calls]


def first(slack: FakeSlack, method: str) -> SlackCall:
    return slack.calls_to(method)[0]


def has_action(blocks: list[dict[str, Any]], action_id: str) -> bool:
    return any(e.get("action_id") == action_id for b in blocks for e in b.get("elements", []))


def finished_answer(run: Running) -> dict[str, Any]:
    """The bot's answer in THREAD once it carries its buttons (streamed or posted whole)."""
    found = run.slack.wait_for(
        lambda: [m for m in run.slack.bot_messages(DM, THREAD) if has_action(m.get("blocks", []), "explain")]
    )
    run.bot.wait_idle()
    return dict(found[0])


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack(users={ASKER: {}, "U123ABC456": {}}) as fake:
        yield fake


@pytest.fixture
def run(world: World, slack: FakeSlack) -> Iterator[Running]:
    with running_bot(world, slack) as running:
        yield running


@pytest.fixture
def streaming_llm() -> Iterator[FakeOpenAI]:
    """The local LLM fake, streaming its reply one word every 20 ms."""
    with FakeOpenAI(chunk_delay=0.02) as llm:
        yield llm


@pytest.fixture
def llm_run(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack, streaming_llm: FakeOpenAI
) -> Iterator[Running]:
    world = build_world(
        tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(streaming_llm), follow_ups=0)
    )
    with running_bot(world, slack) as running:
        yield running


# -- opening the assistant view -----------------------------------------------------------------------------


def test_opening_the_assistant_greets_and_suggests_the_synced_spaces(run: Running) -> None:
    body = fixture("events_assistant_thread_started.json", run.slack, channel_id="D123ABC456")
    assert run.send.post(json.dumps(body), content_type="application/json").status == 200
    call = run.slack.wait_for(lambda: run.slack.calls_to("assistant.threads.setSuggestedPrompts"))[0]
    run.bot.wait_idle()
    greeting = first(run.slack, "chat.postMessage").params
    assert greeting["channel"] == "D123ABC456" and greeting["thread_ts"] == "1729999327.187299"
    assert "Confluence" in greeting["text"]
    assert call.ok and call.params["channel_id"] == "D123ABC456"
    assert call.params["thread_ts"] == "1729999327.187299"
    prompts = call.params["prompts"]
    assert [p["message"] for p in prompts] == ["What can I find in HR?", "What can I find in IT?"]


def test_the_most_asked_questions_come_first_once_two_people_asked_them(run: Running, world: World) -> None:
    key = ThreadKey("slack", run.slack.team_id, "C1", "1.0")
    world.conversations.ask(key, "How do I request a new laptop?", user="U1")
    world.conversations.ask(ThreadKey("slack", run.slack.team_id, "C1", "2.0"), LAPTOP, user="U2")
    world.conversations.ask(ThreadKey("slack", run.slack.team_id, "C1", "3.0"), "Vacation days?", user="U1")
    body = fixture("events_assistant_thread_started.json", run.slack, channel_id="D123ABC456")
    assert run.send.post(json.dumps(body), content_type="application/json").status == 200
    call = run.slack.wait_for(lambda: run.slack.calls_to("assistant.threads.setSuggestedPrompts"))[0]
    messages = [p["message"].lower() for p in call.params["prompts"]]
    assert (
        messages[0] == LAPTOP.lower() and len(messages) == 3
    )  # one person's question is nobody's suggestion
    assert "vacation days?" not in messages


def test_most_asked_counts_people_not_questions_in_each_database(
    database_url: str, tmp_path: Path, index: EvidenceIndex
) -> None:
    world = build_world(tmp_path, index=index, database_url=database_url)
    for thread, user, question in [
        ("1.0", "U1", "How do I request a new laptop?"),
        ("2.0", "U1", "how do I request a new laptop? "),  # the same person again: still one asker
        ("3.0", "U2", "Who is on call in week 2?"),
        ("4.0", "U3", "who is on call in week 2?"),
    ]:
        world.conversations.ask(ThreadKey("slack", "T1", "C1", thread), question, user=user)
    assert [q.lower().strip() for q in most_asked(world.admin.sessions)] == ["who is on call in week 2?"]


def test_suggestions_are_at_most_four_and_never_repeat() -> None:
    questions = ["Where is the VPN guide?", "where is the  VPN guide?", "Who approves laptops?"]
    assert [p["message"] for p in suggested_prompts(questions, [])] == [questions[0], questions[2]]
    assert len(suggested_prompts([f"question {i}?" for i in range(9)], [])) == 4


def test_a_context_change_is_acknowledged_without_calling_slack(run: Running) -> None:
    body = fixture("events_assistant_thread_context_changed.json", run.slack)
    assert run.send.post(json.dumps(body), content_type="application/json").status == 200
    run.bot.wait_idle()
    assert set(methods(run.slack)) <= {"auth.test"}  # Bolt's check of its token on the first request


# -- a question in the assistant thread ---------------------------------------------------------------------


def test_a_question_sets_the_status_before_the_answer_then_the_title_and_answers_offline_whole(
    run: Running,
) -> None:
    ask_in_assistant_thread(run)
    answer = finished_answer(run)
    order = methods(run.slack)
    assert order.index("assistant.threads.setStatus") < order.index("chat.postMessage")
    status = first(run.slack, "assistant.threads.setStatus").params
    assert (status["channel_id"], status["thread_ts"], status["status"]) == (DM, THREAD, STATUS)
    assert first(run.slack, "assistant.threads.setTitle").params["title"] == LAPTOP
    assert "IT portal" in json.dumps(answer["blocks"])
    assert has_action(answer["blocks"], "explain") and has_action(answer["blocks"], "feedback")
    assert not [m for m in order if m.startswith("chat.") and m.endswith("Stream")]  # offline: posted whole
    assert "chat.update" not in order  # no placeholder to replace


def test_with_a_language_model_the_answer_streams_before_the_model_has_finished(
    llm_run: Running, streaming_llm: FakeOpenAI
) -> None:
    ask_in_assistant_thread(llm_run)
    answer = finished_answer(llm_run)
    slack = llm_run.slack
    order = methods(slack)
    assert order.index("assistant.threads.setStatus") < order.index("chat.startStream")
    start, stop = first(slack, "chat.startStream"), first(slack, "chat.stopStream")
    assert start.params["recipient_user_id"] == ASKER and start.params["recipient_team_id"] == slack.team_id
    assert start.params["thread_ts"] == THREAD and start.params["markdown_text"]
    answered = streaming_llm.requests[0]
    assert answered.body["stream"] is True
    assert start.at < answered.ended  # text appeared before the model had finished
    assert slack.calls_to("chat.appendStream"), "the rest of the text is appended as it comes"
    assert start.at < min(c.at for c in slack.calls_to("chat.appendStream")) < stop.at
    assert "chat.postMessage" not in order and "chat.update" not in order
    assert answer["ts"] == start.response["ts"] and answer["x_stream"]["state"] == "stopped"
    assert "IT portal" in answer["text"]  # the streamed text stays ...
    assert has_action(stop.params["blocks"], "explain") and has_action(stop.params["blocks"], "feedback")
    assert not any(b["type"] == "section" for b in stop.params["blocks"])  # ... the blocks go under it
    turn = llm_run.bot.conversations.turn_for_message(
        ThreadKey("slack", slack.team_id, DM, THREAD), answer["ts"]
    )
    assert turn is not None  # the buttons find their turn by the streamed message


@pytest.mark.parametrize("refused", ["chat.startStream", "chat.stopStream"])
def test_a_refused_stream_falls_back_to_the_whole_answer(llm_run: Running, refused: str) -> None:
    llm_run.slack.fail(refused, "channel_type_not_supported")
    ask_in_assistant_thread(llm_run)
    answer = finished_answer(llm_run)
    assert "IT portal" in json.dumps(answer["blocks"]) and has_action(answer["blocks"], "feedback")
    answers = [m for m in llm_run.slack.bot_messages(DM, THREAD) if "IT portal" in json.dumps(m)]
    assert len(answers) == 1  # whole, once: posted (no stream) or the streamed message replaced
    fallback = "chat.postMessage" if refused == "chat.startStream" else "chat.update"
    assert llm_run.slack.calls_to(fallback)


def test_a_language_model_that_is_down_gets_the_friendly_failure_and_no_stream(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack
) -> None:
    with FakeOpenAI(chunk_delay=0.02) as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=0))
        llm.fail(500, times=2)  # the answer call and its one retry
        with running_bot(world, slack) as run:
            ask_in_assistant_thread(run)
            reply = run.slack.wait_for(
                lambda: [
                    m for m in run.slack.bot_messages(DM, THREAD) if has_action(m.get("blocks", []), "retry")
                ]
            )[0]
            run.bot.wait_idle()
            assert "couldn't reach the language model" in json.dumps(reply["blocks"])
            assert not run.slack.calls_to("chat.startStream")  # nothing was written: nothing streamed


def test_a_model_failing_mid_answer_has_its_streamed_text_replaced_by_the_failure(
    tmp_path: Path, index: EvidenceIndex, slack: FakeSlack
) -> None:
    with FakeOpenAI(chunk_delay=0.02, stream_error_after=6) as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=0))
        with running_bot(world, slack) as run:
            ask_in_assistant_thread(run)
            replies = run.slack.wait_for(
                lambda: [
                    m for m in run.slack.bot_messages(DM, THREAD) if has_action(m.get("blocks", []), "retry")
                ]
            )
            run.bot.wait_idle()
    start = first(slack, "chat.startStream")
    assert start.ok and len(replies) == 1 and replies[0]["ts"] == start.response["ts"]  # in its place
    assert "couldn't reach the language model" in json.dumps(replies[0]["blocks"])
    assert slack.calls_to("chat.update")[-1].params["ts"] == start.response["ts"]
    assert len(run.slack.bot_messages(DM, THREAD)) == 1  # no half answer left behind


# -- the stream itself ------------------------------------------------------------------------------------


def test_streaming_into_a_channel_names_the_recipient_as_slack_requires(slack: FakeSlack) -> None:
    client = WebClient(token=slack.token, base_url=slack.api_url)
    with pytest.raises(SlackApiError) as refused:
        client.chat_startStream(channel="C1", thread_ts="1.0", markdown_text="Hi")
    assert refused.value.response["error"] == "missing_recipient_team_id"
    ticks = iter(float(i) for i in range(100))
    question = Question(team=slack.team_id, channel="C1", thread_ts="1.0", user="U1", text=LAPTOP)
    stream = AnswerStream(client, question, interval=2.0, chars=10, clock=lambda: next(ticks))
    for piece in ("Open ", "a ", "ticket ", "in ", "the ", "IT ", "portal."):
        stream.add(piece)
    assert stream.stop(blocks_=[{"type": "divider"}])
    start = [c for c in slack.calls_to("chat.startStream") if c.ok][0].params
    assert (start["recipient_team_id"], start["recipient_user_id"], start["markdown_text"]) == (
        slack.team_id,
        "U1",
        "Open ",
    )
    appended = [c.params["markdown_text"] for c in slack.calls_to("chat.appendStream")]
    assert appended == ["a ticket ", "in the ", "IT portal."]  # when due (2 ticks) or 10 characters wait
    message = slack.message("C1", stream.ts or "")
    assert message is not None and message["text"] == "Open a ticket in the IT portal."
    assert message["blocks"] == [{"type": "divider"}]


# -- the text on its way: the model adapter and the conversation service --------------------------------------


def test_the_model_hands_over_its_text_in_order_and_returns_it_whole(streaming_llm: FakeOpenAI) -> None:
    pieces: list[str] = []
    text = chat_for(streaming_llm).chat(
        [{"role": "user", "content": "Say hello there"}], on_text=pieces.append
    )
    assert text == "Say hello there" and pieces == ["Say ", "hello ", "there"]
    assert streaming_llm.requests[0].body["stream"] is True


def test_a_stream_the_model_breaks_off_is_a_chat_error() -> None:
    with FakeOpenAI(stream_error_after=1) as llm:
        pieces: list[str] = []
        with pytest.raises(ChatError):
            chat_for(llm).chat([{"role": "user", "content": "Say hello there"}], on_text=pieces.append)
    assert pieces == ["Say "]


def test_offline_answers_are_never_handed_over_in_pieces(world: World) -> None:
    pieces: list[str] = []
    turn = world.conversations.ask(
        ThreadKey("slack", "T1", "D1", "1.0"), LAPTOP, user="U1", on_text=pieces.append
    )
    assert "IT portal" in turn.answer and pieces == []


def test_the_documented_stream_calls_are_answered_alike_by_both_fakes(
    slack: FakeSlack, shared_fakes: Callable[[str], ModuleType]
) -> None:
    documented = json.loads((FIXTURES / "chat_startStream.json").read_text())
    server, shared_url = shared_fakes("fake_slack").start(tokens=[slack.token])
    try:
        for api_url in (slack.api_url, shared_url):
            client = WebClient(token=slack.token, base_url=api_url)
            started = client.chat_startStream(**documented["arguments"])
            assert set(documented["response"]) <= set(started.data)  # type: ignore[arg-type]
            client.chat_appendStream(
                channel=started["channel"], ts=started["ts"], chunks=[documented["markdown_text_chunk"]]
            )
            stopped = client.chat_stopStream(
                channel=started["channel"], ts=started["ts"], markdown_text=" Done."
            )
            assert stopped["message"]["text"] == "**This is bold text**We love Sandra Done."
            without = {k: v for k, v in documented["arguments"].items() if not k.startswith("recipient_")}
            with pytest.raises(SlackApiError) as refused:
                client.chat_startStream(**without)
            assert refused.value.response["error"] in documented["errors_without_recipient"]
    finally:
        server.shutdown()


# -- the independent fake -----------------------------------------------------------------------------------


def test_the_assistant_flow_against_the_shared_fake(
    shared_fakes: Callable[[str], ModuleType], tmp_path: Path, index: EvidenceIndex
) -> None:
    fake = shared_fakes("fake_slack")
    with FakeOpenAI(chunk_delay=0.02) as llm:
        world = build_world(tmp_path, index=index, answerer=LLMAnswerer(chat=chat_for(llm), follow_ups=0))
        with live_bot(fake, world) as live:
            root = live.slack.start_assistant_thread("D0ASSISTANT")
            started = fake.event_envelope(fake.assistant_thread_started_event(thread_ts=root))
            assert fake.post_event(live.url, started, SIGNING_SECRET).status == 200
            asked = fake.event_envelope(fake.assistant_message_event(LAPTOP, thread_ts=root))
            assert fake.post_event(live.url, asked, SIGNING_SECRET).status == 200
            answer = wait_for(
                lambda: [
                    m
                    for m in live.slack.messages("D0ASSISTANT", root)
                    if m.get("x_stream", {}).get("state") == "stopped"
                ]
            )[0]
            live.bot.wait_idle()
            thread = next(t for t in live.slack.assistant_threads() if t["thread_ts"] == root)
            assert thread["prompts"] and thread["title"] == LAPTOP
            assert thread["statuses"][0]["status"] == STATUS
            assert thread["statuses"][0]["time"] < answer["x_stream"]["started"]  # the status came first
            assert "IT portal" in fake.message_text(answer) and answer["x_stream"]["appends"] >= 1
            assert {b["action_id"] for b in fake.find_buttons(answer["blocks"])} >= {"explain", "feedback"}
