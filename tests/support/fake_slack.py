"""A small Slack Web API on 127.0.0.1, for tests and benchmarks of the Slack bot.

It answers the methods Threadwise calls with Slack's real JSON shapes, so the real `slack_sdk.WebClient`
(and Bolt on top of it) can be driven against it:

    with FakeSlack(users={"UADMIN": {"is_admin": True}}) as slack:
        client = WebClient(token=slack.token, base_url=slack.api_url)
        ...
        slack.wait_for(lambda: slack.calls_to("chat.update"))

Like real Slack it checks the bot token, keeps the messages it was sent (so `chat.update` of an unknown
message fails and `conversations.replies` returns a thread), and refuses Block Kit that breaks Slack's
limits (`invalid_blocks`, checked with slack_sdk's own models). Every call is recorded with its
parameters (form, query and JSON merged; `blocks` and `view` decoded) and the time it arrived. A slash
command's `response_url` can point here too (`slack.response_url(...)`); its posts are recorded as the
method "response_url".

Faults: `fail("chat.update", "message_not_found")` answers the next call of a method with an error;
`hold("chat.postMessage")` does the next call but keeps its reply (a client killed meanwhile never hears it).
Socket Mode: `apps.connections.open` hands out `socket_url` (a FakeSocketMode endpoint's) when set.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from threadwise.slack.settings import BOT_SCOPES

MAX_MESSAGE_BLOCKS = 50
_JSON_PARAMS = ("blocks", "view", "attachments", "metadata", "files")


@dataclass
class SlackCall:
    """One Web API call as the server saw it."""

    method: str
    params: dict[str, Any]
    token: str
    at: float  # time.monotonic() on arrival
    ok: bool = True
    error: str = ""
    response: dict[str, Any] = field(default_factory=dict)  # what the server answered


@dataclass
class FakeSlack:
    """The server. Start it with `start()` or `with FakeSlack(...) as slack:`; it binds a free port."""

    token: str = "xoxb-test-token"
    app_token: str = "xapp-test-token"  # the app-level token apps.connections.open (Socket Mode) takes
    team_id: str = "T0TEAM"
    bot_user_id: str = "UBOT"
    bot_id: str = "BBOT"
    app_id: str = "A0APP"
    enterprise_id: str = ""  # an Enterprise Grid organisation (auth.test names it); "" for a workspace
    users: dict[str, dict[str, Any]] = field(default_factory=dict)  # user id -> fields (is_admin, ...)
    scopes: frozenset[str] = BOT_SCOPES  # the bot token's scopes, sent as X-OAuth-Scopes like Slack does
    unsupported_blocks: frozenset[str] = frozenset()  # block types this "workspace" refuses (invalid_blocks)
    delay: float = 0.0  # seconds added to every call, to act like a real network
    socket_url: str = ""  # what apps.connections.open hands out (a FakeSocketMode's url); default a dead one
    host: str = "127.0.0.1"
    calls: list[SlackCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        # uploads (files.getUploadURLExternal, the bytes, files.completeUploadExternal): id -> name, content,
        # length, title, channel (set once completed)
        self.files: dict[str, dict[str, Any]] = {}
        self._lock = threading.Condition()
        self._ts = itertools.count(1)
        self._views = itertools.count(1)
        self._faults: dict[str, list[str]] = {}
        self._holds: dict[str, threading.Event] = {}
        self._messages: dict[str, dict[str, dict[str, Any]]] = {}  # channel -> ts -> message
        self._ephemerals: list[dict[str, Any]] = []  # chat.postEphemeral's messages, oldest first
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------------------

    def fail(self, method: str, error: str, *, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with `{"ok": false, "error": error}`."""
        with self._lock:
            self._faults.setdefault(method, []).extend([error] * times)

    def hold(self, method: str) -> threading.Event:
        """Do the next `method` call (the message is posted) but keep Slack's reply until the returned event is
        set: a client that dies meanwhile never hears it. Set it at the end of the test."""
        gate = threading.Event()
        with self._lock:
            self._holds[method] = gate
        return gate

    def add_message(
        self, channel: str, ts: str, *, user: str, text: str, thread_ts: str | None = None
    ) -> None:
        """A message written by a person, for `conversations.replies` to return."""
        with self._lock:
            message = {"type": "message", "user": user, "text": text, "ts": ts}
            if thread_ts:
                message["thread_ts"] = thread_ts
            self._messages.setdefault(channel, {})[ts] = message

    # -- reading what happened ---------------------------------------------------------------------------

    @property
    def root(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://{self.host}:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        """What `WebClient(base_url=...)` and SLACK_API_URL want: http://127.0.0.1:PORT/api/."""
        return self.root + "/api/"

    def response_url(self, name: str = "1") -> str:
        return f"{self.root}/respond/{name}"

    def calls_to(self, method: str) -> list[SlackCall]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """A message as it stands now (after any updates)."""
        with self._lock:
            found = self._messages.get(channel, {}).get(ts)
            return json.loads(json.dumps(found)) if found else None

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """All messages of a thread (the parent and its replies), oldest first."""
        with self._lock:
            found = [
                m
                for m in self._messages.get(channel, {}).values()
                if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts
            ]
            return json.loads(json.dumps(sorted(found, key=lambda m: float(m["ts"]))))

    def ephemerals(self, user: str | None = None, channel: str | None = None) -> list[dict[str, Any]]:
        """The ephemeral messages sent (to `user`, in `channel`), oldest first: channel, user, thread_ts,
        text, blocks, ts."""
        with self._lock:
            return [
                dict(m)
                for m in self._ephemerals
                if (user is None or m.get("user") == user)
                and (channel is None or m.get("channel") == channel)
            ]

    def bot_messages(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        return [m for m in self.thread(channel, thread_ts) if m.get("bot_id") == self.bot_id]

    def wait_for(self, condition: Callable[[], Any], timeout: float = 15.0) -> Any:
        """Wait until `condition()` is truthy (re-checked after every call) and return its value."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                value = condition()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    methods = [c.method for c in self.calls]
                    raise AssertionError(f"condition not met within {timeout} s; calls so far: {methods}")
                self._lock.wait(min(left, 0.1))

    # -- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> FakeSlack:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer((self.host, 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-slack", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the methods -------------------------------------------------------------------------------------

    def handle(self, method: str, params: dict[str, Any], token: str) -> dict[str, Any]:
        """Record the call and answer it; runs under the lock so the call log and messages stay consistent."""
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            call = SlackCall(method=method, params=params, token=token, at=time.monotonic())
            self.calls.append(call)
            reply = self._answer(method, params, token)
            call.ok, call.error, call.response = bool(reply.get("ok")), str(reply.get("error", "")), reply
            gate = self._holds.pop(method, None)
            self._lock.notify_all()
        if gate is not None:
            gate.wait(60)
        return reply

    def _answer(self, method: str, params: dict[str, Any], token: str) -> dict[str, Any]:
        if method == "response_url":
            return {"ok": True}
        if method == "apps.connections.open":
            if token != self.app_token:
                return {"ok": False, "error": "invalid_auth"}
            return {"ok": True, "url": self.socket_url or f"wss://{self.host}/link/?ticket=fake"}
        if token != self.token:
            return {"ok": False, "error": "invalid_auth"}
        faults = self._faults.get(method)
        if faults:
            return {"ok": False, "error": faults.pop(0)}  # "ratelimited" is sent as HTTP 429, like Slack
        problem = _block_problem(params, self.unsupported_blocks)
        if problem:
            return {"ok": False, "error": "invalid_blocks", "response_metadata": {"messages": [problem]}}
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return {"ok": False, "error": "unknown_method"}
        result: dict[str, Any] = handler(params)
        return result

    def _files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("filename") or not str(params.get("length", "")).isdigit():
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{len(self.files) + 1:08d}"
        self.files[file_id] = {"name": params["filename"], "length": int(params["length"]), "content": None}
        return {"ok": True, "upload_url": f"{self.root}/upload/{file_id}", "file_id": file_id}

    def upload(self, file_id: str, content: bytes) -> bool:
        """The bytes POSTed to an upload URL; False for an unknown file or the wrong length."""
        with self._lock:
            file = self.files.get(file_id)
            if file is None or file["length"] != len(content):
                return False
            file["content"] = content
            return True

    def _files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        listed = params.get("files") or []
        if not listed or any(self.files.get(f.get("id"), {}).get("content") is None for f in listed):
            return {"ok": False, "error": "file_not_found"}
        done = []
        for f in listed:
            file = self.files[f["id"]]
            file.update(title=f.get("title") or file["name"], channel=params.get("channel_id", ""))
            file["initial_comment"] = params.get("initial_comment", "")
            done.append({"id": f["id"], "name": file["name"], "title": file["title"]})
        return {"ok": True, "files": done}

    def _conversations_open(self, params: dict[str, Any]) -> dict[str, Any]:
        users = str(params.get("users", ""))
        if not users or "," in users:
            return {"ok": False, "error": "user_not_found" if not users else "invalid_arguments"}
        return {"ok": True, "channel": {"id": "D" + users.removeprefix("U")}}

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.test/",
            "team": "Fake Team",
            "user": "threadwise",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
            **({"enterprise_id": self.enterprise_id} if self.enterprise_id else {}),
        }

    def _bots_info(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("bot") != self.bot_id:
            return {"ok": False, "error": "bot_not_found"}
        return {"ok": True, "bot": {"id": self.bot_id, "app_id": self.app_id, "user_id": self.bot_user_id}}

    def _chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        ts = f"1800000000.{next(self._ts):06d}"
        message = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "text": params.get("text", ""),
            "blocks": params.get("blocks", []),
            "ts": ts,
        }
        if params.get("thread_ts"):
            message["thread_ts"] = params["thread_ts"]
        self._messages.setdefault(channel, {})[ts] = message
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = params.get("channel", ""), params.get("ts", "")
        message = self._messages.get(channel, {}).get(ts)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.get("bot_id") != self.bot_id:
            return {"ok": False, "error": "cant_update_message"}
        message.update(text=params.get("text", ""), blocks=params.get("blocks", []), edited=True)
        return {"ok": True, "channel": channel, "ts": ts, "text": message["text"], "message": message}

    def _chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        """Shown to `user` only; kept apart from the channel's messages (`ephemerals(user)` lists them)."""
        if not params.get("channel") or not params.get("user"):
            return {"ok": False, "error": "invalid_arguments"}
        if not params.get("text") and not params.get("blocks"):
            return {"ok": False, "error": "no_text"}
        ts = f"1800000000.{next(self._ts):06d}"
        self._ephemerals.append({**params, "ts": ts})
        return {"ok": True, "message_ts": ts}

    def _views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("user_id"):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "view": {"id": f"V{next(self._views)}", **params.get("view", {})}}

    def _views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        return {"ok": True, "view": {"id": f"V{next(self._views)}", **params.get("view", {})}}

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        """Like Slack: `missing_scope` without users:read, and no `profile.email` without users:read.email.
        A user's `email` field becomes `profile.email`."""
        if "users:read" not in self.scopes:
            return {"ok": False, "error": "missing_scope", "needed": "users:read"}
        user = params.get("user", "")
        if user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        fields = {"is_admin": False, "is_owner": False, "is_primary_owner": False, **self.users[user]}
        email = fields.pop("email", None)
        profile = {"real_name": user, "display_name": user.lower(), **fields.pop("profile", {})}
        if email and "users:read.email" in self.scopes:
            profile["email"] = email
        return {
            "ok": True,
            "user": {"id": user, "team_id": self.team_id, "name": user.lower(), "profile": profile, **fields},
        }

    def _conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = params.get("channel", ""), params.get("ts", "")
        if channel not in self._messages:
            return {"ok": False, "error": "channel_not_found"}
        with_ts = [m for m in self._messages[channel].values() if m["ts"] == ts or m.get("thread_ts") == ts]
        if not with_ts:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": sorted(with_ts, key=lambda m: float(m["ts"])), "has_more": False}

    def _assistant_threads_setStatus(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    # -- Agents & AI Apps (assistant.threads.*) and streamed messages (chat.*Stream), as Slack documents them
    # (tests/fixtures/slack/SOURCES.md). A streamed message is in the store from chat.startStream on, its text
    # growing with each append; `x_stream` on it says "streaming" or "stopped" and counts the appends.

    def _assistant_threads_setSuggestedPrompts(self, params: dict[str, Any]) -> dict[str, Any]:
        if not {"assistant:write", "chat:write"} & self.scopes:  # Slack takes either, for now
            return {"ok": False, "error": "missing_scope", "needed": "assistant:write"}
        prompts = params.get("prompts")
        prompts = json.loads(prompts) if isinstance(prompts, str) else prompts
        if not params.get("channel_id") or not isinstance(prompts, list) or not 1 <= len(prompts) <= 4:
            return {"ok": False, "error": "invalid_arguments"}
        if not all(isinstance(p, dict) and p.get("title") and p.get("message") for p in prompts):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True}

    def _assistant_threads_setTitle(self, params: dict[str, Any]) -> dict[str, Any]:
        if not {"assistant:write", "chat:write"} & self.scopes:
            return {"ok": False, "error": "missing_scope", "needed": "assistant:write"}
        if not params.get("channel_id") or not params.get("thread_ts") or not params.get("title"):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True}

    def _chat_startStream(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel") or "")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not params.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        if not channel.startswith("D"):  # Slack: the recipient is required when streaming to a channel
            if not params.get("recipient_team_id"):
                return {"ok": False, "error": "missing_recipient_team_id"}
            if not params.get("recipient_user_id"):
                return {"ok": False, "error": "missing_recipient_user_id"}
        ts = f"1800000000.{next(self._ts):06d}"
        message = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "text": _stream_text(params),
            "blocks": [],
            "ts": ts,
            "thread_ts": params["thread_ts"],
            "x_stream": {"state": "streaming", "appends": 0},
        }
        self._messages.setdefault(channel, {})[ts] = message
        return {"ok": True, "channel": channel, "ts": ts}

    def _streaming(self, params: dict[str, Any]) -> dict[str, Any] | str:
        """The streamed message `params` name, or the error Slack gives."""
        message = self._messages.get(str(params.get("channel") or ""), {}).get(str(params.get("ts") or ""))
        if message is None or "x_stream" not in message:
            return "message_not_found"
        if message["x_stream"]["state"] != "streaming":
            return "message_not_in_streaming_state"
        return message

    def _chat_appendStream(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(params)
        if isinstance(message, str):
            return {"ok": False, "error": message}
        text = _stream_text(params)
        if not text:
            return {"ok": False, "error": "invalid_arguments"}
        message["text"] += text
        message["x_stream"]["appends"] += 1
        return {"ok": True, "channel": params["channel"], "ts": message["ts"]}

    def _chat_stopStream(self, params: dict[str, Any]) -> dict[str, Any]:
        message = self._streaming(params)
        if isinstance(message, str):
            return {"ok": False, "error": message}
        message["text"] += _stream_text(params)
        if params.get("blocks"):
            message["blocks"] = params["blocks"]
        message["x_stream"]["state"] = "stopped"
        return {"ok": True, "channel": params["channel"], "ts": message["ts"], "message": message}


def _stream_text(params: dict[str, Any]) -> str:
    """What a chat.*Stream call adds: its `markdown_text`, then its markdown_text chunks' text."""
    chunks = params.get("chunks") or []
    chunks = json.loads(chunks) if isinstance(chunks, str) else chunks
    pieces = [str(params.get("markdown_text") or "")]
    pieces += [
        str(c.get("text", "")) for c in chunks if isinstance(c, dict) and c.get("type") == "markdown_text"
    ]
    return "".join(pieces)


def _block_problem(params: dict[str, Any], unsupported: frozenset[str]) -> str:
    """Why Slack would refuse these blocks or this view ("" when it would accept them)."""
    try:
        if "blocks" in params:
            blocks = params["blocks"] or []
            if len(blocks) > MAX_MESSAGE_BLOCKS:
                return f"a message may hold at most {MAX_MESSAGE_BLOCKS} blocks, got {len(blocks)}"
            for raw in blocks:
                if raw.get("type") in unsupported:
                    return f"unsupported block type {raw.get('type')!r}"
                block = Block.parse(raw)
                if block is None:
                    return f"unknown block type {raw.get('type')!r}"
                block.to_dict()  # validates lengths and counts, nested elements included
        if "view" in params:
            View(**params["view"]).to_dict()
    except SlackObjectFormationError as err:
        return str(err)
    return ""


class _Handler(BaseHTTPRequestHandler):
    fake: FakeSlack
    server_version = "FakeSlack/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve(b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._serve(self.rfile.read(length) if length else b"")

    def _serve(self, raw: bytes) -> None:
        url = urlsplit(self.path)
        if url.path.startswith("/upload/"):  # an upload URL: the file's bytes, as files.slack.com takes them
            stored = self.fake.upload(url.path[len("/upload/") :], raw)
            self.send_response(200 if stored else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        params: dict[str, Any] = dict(parse_qsl(url.query))
        if raw:
            if "json" in self.headers.get("Content-Type", ""):
                params.update(json.loads(raw))
            else:
                params.update(parse_qsl(raw.decode("utf-8")))
        for name in _JSON_PARAMS:
            if isinstance(params.get(name), str):
                params[name] = json.loads(params[name])
        bearer = self.headers.get("Authorization", "")
        token = bearer.removeprefix("Bearer ") if bearer else str(params.pop("token", ""))
        if url.path.startswith("/respond/"):
            method = "response_url"
        elif url.path.startswith("/api/"):
            method = url.path[len("/api/") :]
        else:
            self._send(404, {"ok": False, "error": "not_found"})
            return
        reply = self.fake.handle(method, params, token)
        self._send(429 if reply.get("error") == "ratelimited" else 200, reply)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("X-OAuth-Scopes", ",".join(sorted(self.fake.scopes)))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
