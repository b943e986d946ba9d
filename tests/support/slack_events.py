"""Requests as Slack sends them to an app: Events API callbacks, block actions, modal submissions, slash
commands, each signed with the signing secret (v0 HMAC-SHA256 of "v0:timestamp:body") and POSTed to
the app's `/slack/events` over real HTTP.
"""

from __future__ import annotations

import itertools
import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

_event_ids = itertools.count(1)
_triggers = itertools.count(1)


def new_trigger_id() -> str:
    """Slack gives every command and interaction its own trigger id (so no two bodies are the same)."""
    return f"{next(_triggers)}.4242.trigger"


def event_body(
    event: dict[str, Any], *, team: str, event_id: str | None = None, bot_user: str = "UBOT"
) -> dict[str, Any]:
    """An Events API callback holding `event`, as Slack sends it over HTTP or inside a Socket Mode envelope: the
    installation it is delivered for in `authorizations`, `is_ext_shared_channel` false (an ordinary workspace;
    tests/fixtures/slack/ holds Slack's documented examples)."""
    return {
        "token": "legacy-verification-token",
        "team_id": team,
        "context_team_id": team,
        "context_enterprise_id": None,
        "api_app_id": "A0APP",
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_event_ids):08d}",
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team,
                "user_id": bot_user,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-{next(_event_ids):012d}",
    }


@dataclass
class Reply:
    status: int
    body: str


@dataclass
class SlackSender:
    """Posts signed requests to `url` (the app's /slack/events) as team `team`."""

    url: str
    signing_secret: str
    team: str = "T0TEAM"
    api_app_id: str = "A0APP"

    def post(
        self,
        body: str,
        *,
        content_type: str,
        retry_num: int | None = None,
        timestamp: int | None = None,
        secret: str | None = None,
    ) -> Reply:
        ts = str(timestamp if timestamp is not None else int(time.time()))
        signature = SignatureVerifier(
            secret if secret is not None else self.signing_secret
        ).generate_signature(timestamp=ts, body=body)
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": str(signature),
        }
        if retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        request = urllib.request.Request(self.url, data=body.encode("utf-8"), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return Reply(response.status, response.read().decode("utf-8"))
        except urllib.error.HTTPError as err:
            return Reply(err.code, err.read().decode("utf-8"))

    # -- Events API ------------------------------------------------------------------------------------

    def event(self, event: dict[str, Any], *, event_id: str | None = None, **options: Any) -> Reply:
        body = event_body(event, team=self.team, event_id=event_id) | {"api_app_id": self.api_app_id}
        return self.post(json.dumps(body), content_type="application/json", **options)

    def raw_event_body(self, body: dict[str, Any], **options: Any) -> Reply:
        return self.post(json.dumps(body), content_type="application/json", **options)

    # -- interactivity ---------------------------------------------------------------------------------

    def interaction(self, payload: dict[str, Any], **options: Any) -> Reply:
        body = urlencode({"payload": json.dumps(payload)})
        return self.post(body, content_type="application/x-www-form-urlencoded", **options)

    def block_action(
        self,
        *,
        user: str,
        channel: str,
        message: dict[str, Any],
        action: dict[str, Any],
        trigger_id: str | None = None,
    ) -> Reply:
        payload: dict[str, Any] = {
            "type": "block_actions",
            "team": {"id": self.team, "domain": "fake"},
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": self.team},
            "api_app_id": self.api_app_id,
            "token": "legacy-verification-token",
            "trigger_id": trigger_id or new_trigger_id(),
            "enterprise": None,  # what Slack sends for an ordinary (not Enterprise Grid) workspace
            "is_enterprise_install": False,
            "container": {
                "type": "message",
                "message_ts": message.get("ts"),
                "channel_id": channel,
                "is_ephemeral": False,
                "thread_ts": message.get("thread_ts"),
            },
            "channel": {"id": channel, "name": "general"},
            "message": message,
            "state": {"values": {}},
            "response_url": f"https://hooks.slack.com/actions/{self.team}/1/fake",
            "actions": [{"action_ts": str(time.time()), **action}],
        }
        return self.interaction(payload)

    def view_submission(self, *, user: str, view: dict[str, Any], values: dict[str, Any]) -> Reply:
        payload = {
            "type": "view_submission",
            "team": {"id": self.team, "domain": "fake"},
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": self.team},
            "api_app_id": self.api_app_id,
            "token": "legacy-verification-token",
            "trigger_id": new_trigger_id(),
            "view": {**view, "id": "V1", "team_id": self.team, "state": {"values": values}},
            "response_urls": [],
            "is_enterprise_install": False,
            "enterprise": None,
        }
        return self.interaction(payload)

    # -- slash commands --------------------------------------------------------------------------------

    def command(
        self, text: str, *, user: str, channel: str, response_url: str, name: str = "/threadwise"
    ) -> Reply:
        form = {
            "token": "legacy-verification-token",
            "team_id": self.team,
            "team_domain": "fake",
            "channel_id": channel,
            "channel_name": "general",
            "user_id": user,
            "user_name": user.lower(),
            "command": name,
            "text": text,
            "api_app_id": self.api_app_id,
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": new_trigger_id(),
        }
        return self.post(urlencode(form), content_type="application/x-www-form-urlencoded")


def find_action(message: dict[str, Any], action_id: str) -> tuple[dict[str, Any], str]:
    """The element with `action_id` in a message's blocks, and its block's id."""
    for block in message.get("blocks", []):
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return element, block.get("block_id", "")
    raise AssertionError(f"no element {action_id!r} in {json.dumps(message.get('blocks'))[:2000]}")
