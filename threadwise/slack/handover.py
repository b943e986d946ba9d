"""Slack's side of the hand-over between replicas.

A question whose replica died before answering it is answered (or told to ask again) by this replica: the
claim's payload is what `SlackBot.start_answer` stored, the question's fields and, once posted, the
placeholder's ts, so the answer replaces the "thinking" message the user already sees. A replica can die
after posting the placeholder and before recording its ts: the placeholder carries a block id made from the
claim (`placeholder_ref`), by which the thread is searched for it, so it does not stay behind.

An event is acknowledged before a listener claims its question, and Slack does not re-send what was
acknowledged: so each event that may be a question is first kept in the database as it arrived, until the
listener is done with it — in HTTP mode its body and signature (`keep_received`), in Socket Mode its payload
(`keep_socket_event`, before the acknowledgement goes back over the WebSocket). Such a record is never
renewed: if it is still there after one TTL (its replica died, or is far behind), a replica replays it through
its own Bolt app (`replay_received`; an HTTP signature still holds for five minutes, a Socket Mode payload
came over Slack's authenticated connection and carries none), whose listener claims the question as usual —
so it is answered once, by whoever claims it first.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from slack_bolt import App
from slack_bolt.request import BoltRequest

from threadwise.chat.handover import ClaimKeeper, continue_claim
from threadwise.db.claims import Claim
from threadwise.slack import blocks
from threadwise.slack.messenger import SlackMessenger
from threadwise.slack.question import Question

log = logging.getLogger(__name__)

INBOX = "inbox"  # slack:inbox:EVENT_ID, an event kept until its listener is done
_REPLAYED_HEADERS = ("content-type", "x-slack-request-timestamp", "x-slack-signature")


def inbox_key(platform: str, body: dict[str, Any]) -> str | None:
    """The key an event is kept under, or None when it cannot be a question (not a mention or message)."""
    event = body.get("event")
    if body.get("type") != "event_callback" or not isinstance(event, dict) or not body.get("event_id"):
        return None
    if event.get("type") not in ("app_mention", "message") or event.get("bot_id"):
        return None
    return f"{platform}:{INBOX}:{body['event_id']}"


def keep_received(claims: ClaimKeeper, platform: str, request: BoltRequest) -> None:
    """Keep an event that may be a question until its listener is done (a repeat is kept once)."""
    key = inbox_key(platform, request.body)
    if key is not None:
        headers = {k: v[0] for k, v in request.headers.items() if k in _REPLAYED_HEADERS and v}
        claims.receive(key, {"raw": request.raw_body, "headers": headers})


def keep_socket_event(claims: ClaimKeeper, platform: str, body: dict[str, Any]) -> None:
    """Keep an event that came over Socket Mode until its listener is done (a repeat is kept once)."""
    key = inbox_key(platform, body)
    if key is not None:
        claims.receive(key, {"socket_mode": body})


def replay_received(app: App, claim: Claim, finish: Callable[[str], None]) -> None:
    """Hand a kept event to this replica's Bolt app as if Slack had sent it here."""
    payload = claim.payload
    if "socket_mode" in payload:
        request = BoltRequest(body=payload["socket_mode"], mode="socket_mode")
    else:
        request = BoltRequest(body=payload["raw"], headers=payload["headers"])
    try:
        response = app.dispatch(request)
        if response.status != 200:
            log.warning("replaying %s was refused (%d): it is lost", claim.key, response.status)
    finally:
        finish(claim.key)


def placeholder_ref(claimed: str) -> str:
    """The block id that marks the placeholder of the question claimed as `claimed`."""
    return "placeholder-" + hashlib.sha1(claimed.encode()).hexdigest()[:20]


def resume_slack(
    claim: Claim,
    give_up: bool,
    *,
    messenger: SlackMessenger,
    answer: Callable[[Question, str | None, str], None],
    finish: Callable[[str], None],
) -> None:
    """Queue the claimed question's answer (`answer(question, placeholder_ts, claim key)`, which finishes the
    claim), or tell its thread it was interrupted and `finish` the claim."""
    payload = claim.payload
    question = Question(**{f.name: payload[f.name] for f in fields(Question) if f.name in payload})
    ts = payload.get("placeholder_ts") or messenger.find(
        question.channel, question.thread_ts, placeholder_ref(claim.key)
    )
    continue_claim(
        claim,
        give_up,
        answer=lambda: answer(question, ts, claim.key),
        tell=lambda text: messenger.deliver(
            question.channel, question.thread_ts, ts, blocks.notice_message(f":warning: {text}")
        ),
        finish=finish,
    )
