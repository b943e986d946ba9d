"""Hostile and odd requests against the real Bolt app on its real HTTP server (uvicorn, 127.0.0.1): status codes,
nothing posted where nothing should be, no traceback in the log, and a good question answered afterwards.
Then a page full of Slack control sequences: every field of every message the bot posts is checked.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.support.fake_slack import FakeSlack
from tests.support.slack_events import SlackSender, event_body, find_action
from tests.support.slack_world import Running, World, build_index, build_world, running_bot
from threadwise.core.types import Page
from threadwise.index.store import EvidenceIndex
from threadwise.slack.http_server import HttpLimits

LIMITS = HttpLimits(header_timeout=0.5, body_timeout=0.5)
_ts = iter(range(1, 10**6))


def new_ts() -> str:
    return f"1710000000.{next(_ts):06d}"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> EvidenceIndex:
    return build_index(tmp_path_factory.mktemp("index"))


@pytest.fixture
def run(tmp_path: Path, index: EvidenceIndex) -> Iterator[Running]:
    with (
        FakeSlack(users={"U1": {}, "U2": {}}) as slack,
        running_bot(build_world(tmp_path, index=index), slack, limits=LIMITS) as r,
    ):
        yield r


def raw(run: Running, data: bytes, *, read_timeout: float = 10.0) -> bytes:
    """Send bytes on a fresh connection; everything the server answers until it closes (or the guard timeout)."""
    parts = urlsplit(run.send.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=read_timeout) as sock:
        sock.sendall(data)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
                if b"\r\n\r\n" in got and b"connection: close" not in got.lower():
                    head, _, body = got.partition(b"\r\n\r\n")
                    length = re.search(rb"content-length: (\d+)", head.lower())
                    if length and len(body) >= int(length.group(1)):
                        break
        except TimeoutError:
            pass
    return got


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0


def unsigned(run: Running, body: str, content_type: str) -> int:
    path = urlsplit(run.send.url).path
    data = body.encode()
    request = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\n\r\n"
    ).encode() + data
    return status_of(raw(run, request))


def mention(run: Running, text: str, *, channel: str = "C1", user: str = "U1", **fields: Any) -> str:
    ts = new_ts()
    event = {"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel, **fields}
    assert run.send.event(event).status == 200
    return ts


def answered(run: Running, channel: str, ts: str) -> dict[str, Any]:
    found = run.slack.wait_for(
        lambda: [
            m
            for m in run.slack.bot_messages(channel, ts)
            if any(
                e.get("action_id") == "explain" for b in m.get("blocks", []) for e in b.get("elements", [])
            )
        ]
    )
    run.bot.wait_idle()
    return dict(found[0])


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.INFO and (r.exc_info or "Traceback" in r.getMessage())
    ]


HOSTILE_BODIES = [
    ("[1]", "application/json"),
    ("42", "application/json"),
    ("null", "application/json"),
    ("not json at all", "application/json"),
    ("payload=[1]", "application/x-www-form-urlencoded"),
    ("payload=%7B%7D", "application/x-www-form-urlencoded"),
    ("payload=notjson", "application/x-www-form-urlencoded"),
    ("a=1&&&=", "application/x-www-form-urlencoded"),
    ("\u00ff\u00fe", "text/plain"),
    (
        json.dumps({"type": "event_callback", "team_id": "T0TEAM", "api_app_id": "A0APP", "event": None}),
        "application/json",
    ),
    (
        json.dumps({"type": "event_callback", "team_id": "T0TEAM", "api_app_id": "A0APP", "event": [1]}),
        "application/json",
    ),
    (
        urlencode(
            {"payload": json.dumps({"type": "block_actions", "team": {"id": "T0TEAM"}, "actions": []})}
        ),
        "application/x-www-form-urlencoded",
    ),
    (
        urlencode(
            {"payload": json.dumps({"type": "block_actions", "team": None, "user": 7, "actions": [None]})}
        ),
        "application/x-www-form-urlencoded",
    ),
    (
        urlencode({"payload": json.dumps({"type": "view_submission", "view": None})}),
        "application/x-www-form-urlencoded",
    ),
]


def test_unsigned_and_malformed_requests_get_clean_answers(
    run: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for body, content_type in HOSTILE_BODIES:
        assert unsigned(run, body, content_type) == 401, body
    for body, content_type in HOSTILE_BODIES:
        status = run.send.post(body, content_type=content_type).status
        assert status in (200, 400), (body, status)  # signed: dropped or refused, never 500
    path = urlsplit(run.send.url).path
    assert (
        status_of(raw(run, f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".encode())) == 400
    )
    big = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n"
    assert status_of(raw(run, big.encode() + b"{" * 1000)) == 413
    # half-sent: headers never finish, or the body never comes; answered 408 and closed, not kept open
    assert status_of(raw(run, f"POST {path} HTTP/1.1\r\nHost: x\r\nX-Slow: ".encode())) == 408
    slow = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    )
    assert status_of(raw(run, slow.encode())) == 408
    assert status_of(raw(run, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) == 200
    run.bot.wait_idle()
    assert [c.method for c in run.slack.calls if c.method != "auth.test"] == []  # nothing posted anywhere
    assert tracebacks(caplog) == []
    ts = mention(run, "<@UBOT> how do I request a new laptop?")  # and the bot still answers
    assert "IT portal" in json.dumps(answered(run, "C1", ts))


def test_other_workspaces_apps_and_organisations(run: Running) -> None:
    strangers = [
        SlackSender(url=run.send.url, signing_secret=run.send.signing_secret, team="TEVIL"),
        SlackSender(url=run.send.url, signing_secret=run.send.signing_secret, api_app_id="AEVIL"),
    ]
    for sender in strangers:  # signed with our secret (a leaked one, or a shared test app), from elsewhere
        event = {
            "type": "app_mention",
            "user": "U1",
            "text": "<@UBOT> laptop?",
            "ts": new_ts(),
            "channel": "C9",
        }
        assert sender.event(event).status == 200
    run.bot.wait_idle()
    assert run.slack.bot_messages("C9", "") == [] and not run.slack.calls_to("chat.postMessage")
    ts = new_ts()  # a Slack Connect channel: a user of another organisation asks
    event = {"type": "app_mention", "user": "U1", "text": "<@UBOT> laptop?", "ts": ts, "channel": "C8"}
    connect = event_body({**event, "user_team": "TCONNECT"}, team="TCONNECT") | {
        "authorizations": [{"team_id": "T0TEAM", "user_id": "UBOT", "is_bot": True}],
        "is_ext_shared_channel": True,
    }
    assert run.send.raw_event_body(connect).status == 200
    refusal = run.slack.wait_for(lambda: run.slack.calls_to("chat.postMessage"))[0]
    assert (
        refusal.params["thread_ts"] == ts
        and "only answer members of this workspace" in refusal.params["text"]
    )


def test_buttons_only_work_in_their_own_thread(run: Running) -> None:
    ts = mention(run, "<@UBOT> how do I request a new laptop?", channel="CPRIVATE")
    answer = answered(run, "CPRIVATE", ts)
    element, block_id = find_action(answer, "explain")
    before = len(run.slack.calls)
    for channel in ("CPUBLIC",):  # the private answer's Explain, forged as pressed elsewhere
        run.send.block_action(
            user="U2",
            channel=channel,
            message={**answer, "ts": "1.1", "thread_ts": "1.1"},
            action={
                "type": "button",
                "action_id": "explain",
                "block_id": block_id,
                "value": element["value"],
            },
        )
    for value in (str(10**30), "-5", "0", "abc", "", "99999"):  # huge, odd or missing turn ids
        run.send.block_action(
            user="U2",
            channel="CPRIVATE",
            message=answer,
            action={"type": "button", "action_id": "explain", "block_id": block_id, "value": value},
        )
        run.send.block_action(
            user="U2",
            channel="CPRIVATE",
            message=answer,
            action={"type": "button", "action_id": "feedback", "block_id": f"turn:{value}:fb", "value": "up"},
        )
    run.bot.wait_idle()
    # nothing posted, opened or voted: the forged press and the unknown id are refused privately, the rest dropped
    refusals = run.slack.calls[before:]
    assert {c.method for c in refusals} == {"chat.postEphemeral"}
    assert all(c.params["user"] == "U2" and "find that answer" in c.params["text"] for c in refusals)
    assert [c.params["channel"] for c in refusals].count("CPUBLIC") == 1
    run.send.block_action(
        user="U2",
        channel="CPRIVATE",
        message=answer,
        action={"type": "button", "action_id": "explain", "block_id": block_id, "value": element["value"]},
    )
    run.slack.wait_for(
        lambda: any("Why this answer" in json.dumps(c.params) for c in run.slack.calls_to("chat.postMessage"))
    )


def test_a_replayed_slash_command_runs_once(run: Running) -> None:
    form = {
        "team_id": "T0TEAM",
        "api_app_id": "A0APP",
        "channel_id": "C1",
        "user_id": "U1",
        "command": "/threadwise",
        "text": "status",
        "response_url": run.slack.response_url(),
        "trigger_id": "1.2.3",
    }
    body = urlencode(form)
    timestamp = int(time.time())
    for _ in range(3):  # the same signed request, captured and sent again
        assert (
            run.send.post(body, content_type="application/x-www-form-urlencoded", timestamp=timestamp).status
            == 200
        )
    run.bot.wait_idle()
    assert len(run.slack.calls_to("response_url")) == 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
EVENT_KEYS = st.sampled_from(
    [
        "type",
        "user",
        "text",
        "ts",
        "thread_ts",
        "channel",
        "channel_type",
        "subtype",
        "bot_id",
        "team",
        "user_team",
        "tab",
        "files",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    event=st.dictionaries(EVENT_KEYS, JSON, max_size=8) | JSON,
    kind=st.sampled_from(["app_mention", "message", "app_home_opened", None]),
)
# an empty user once logged a traceback (Slack refuses views.publish without a user_id)
@example(event={"user": ""}, kind="app_home_opened")
def test_generated_event_payloads_never_break_the_bot(
    run: Running, caplog: pytest.LogCaptureFixture, event: Any, kind: str | None
) -> None:
    caplog.set_level(logging.INFO)
    if isinstance(event, dict) and kind is not None:
        event = {**event, "type": kind}
    body = {
        "type": "event_callback",
        "team_id": "T0TEAM",
        "api_app_id": "A0APP",
        "event_id": f"Ev{new_ts()}",
        "event": event,
    }
    assert run.send.raw_event_body(body).status in (200, 400)
    run.bot.wait_idle()
    assert tracebacks(caplog) == []


# -- a page full of Slack control sequences ------------------------------------------------------------------

CONTROL = "<!channel> <!here> <!everyone> <@U0BOSS> <!subteam^S0ADMINS> <https://evil.example/login|Confluence login>"
HOSTILE_PAGE = Page(
    id="666",
    space="IT",
    title="Printer setup " + CONTROL + " " + "x" * 10_000,
    url="https://wiki.example/display/IT/Printers",
    body=f"<p>To set up the printer {CONTROL} open the print portal and pick floor 3. [Click](https://evil.example/x)</p>",
    last_modified="2024-05-03T10:00:00Z",
)
_LIVE = re.compile(r"<(?!https://wiki\.example/|!date\^)[^>]*>")  # markup Slack would act on, other than ours


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def test_a_page_of_control_sequences_reaches_slack_inert(tmp_path: Path) -> None:
    world: World = build_world(tmp_path, index=build_index(tmp_path / "index", (HOSTILE_PAGE,)))
    with FakeSlack(users={"U1": {}}) as slack, running_bot(world, slack) as run:
        ts = mention(run, "<@UBOT> how do I set up the printer?")
        answer = answered(run, "C1", ts)
        element, block_id = find_action(answer, "explain")
        run.send.block_action(
            user="U1",
            channel="C1",
            message=answer,
            action={
                "type": "button",
                "action_id": "explain",
                "block_id": block_id,
                "value": element["value"],
            },
        )
        slack.wait_for(
            lambda: any("Why this answer" in json.dumps(c.params) for c in slack.calls_to("chat.postMessage"))
        )
        run.bot.wait_idle()
        posted = [
            c.params
            for c in slack.calls
            if c.method in ("chat.postMessage", "chat.update", "chat.postEphemeral")
        ]
        assert "printer" in json.dumps(answer).lower() and len(posted) >= 3
        for params in posted:
            for text in strings({k: v for k, v in params.items() if k in ("text", "blocks")}):
                assert not _LIVE.search(text), text[:300]
                assert "<https://evil" not in text and "<!channel>" not in text  # escaped: shown, inert
