"""A small Bot Framework connector on 127.0.0.1, for tests and benchmarks of the Teams bot.

It answers what the Teams SDK calls when a bot replies, with the connector's JSON shapes, so the real
`microsoft_teams.apps.App` can be driven against it (activities carry `serviceUrl = connector.url`):

    POST /v3/conversations/{conversation}/activities               send (typing, messages) -> 201 {"id": …}
    POST /v3/conversations/{conversation}/activities/{activity}    reply to an activity    -> 201 {"id": …}
    PUT  /v3/conversations/{conversation}/activities/{activity}    update an activity      -> 200 {"id": …}
    GET  /v3/conversations/{conversation}/members/{member}         one member (e-mail, UPN) -> TeamsChannelAccount
    POST /v3/conversations                                          a personal chat -> 201 {"id", "serviceUrl"}
    GET  /v1/.well-known/openidconfiguration, /v1/.well-known/keys  the signing keys the bot checks tokens with

The statuses are the Connector API's (a new activity or conversation is "201 Created", an update "200 OK").
Like the real connector it keeps the activities it was sent (an update of an unknown activity gets 404);
`fail(status, when=…)` refuses the next matching call once; `refuse(method, status)` the next member lookup
("member") or conversation creation ("create"). Members are looked up in `members` by their Teams id or
Entra object id; creating a personal chat with a user gives the same conversation id every time, as Teams does.
Streaming as Teams does it (`streams`): a typing activity with a `streaminfo` entity starts a stream (its new
id is the stream's id) or continues the one it names, each part holding the text before it; the final message
(streamType "final") is kept under the stream's id. Every call is recorded with its body, path, Authorization
header and arrival time. `sign(...)` makes a
Bot Framework-shaped token (RS256, issuer https://api.botframework.com, audience the bot's app id,
`serviceurl` claim) with the connector's key, which its JWKS publishes; `cloud()` is the SDK's cloud
environment pointing token validation at this server.
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
from urllib.parse import unquote, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://api.botframework.com"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class ConnectorCall:
    """One request as the connector saw it."""

    method: str  # "send", "reply", "update", "member", "create", "keys", "openid"
    conversation: str
    activity_id: str  # the activity replied to or updated ("" for send)
    body: dict[str, Any]
    authorization: str
    at: float  # time.monotonic() on arrival
    status: int = 200  # what the connector answered


@dataclass
class FakeBotConnector:
    """The server. Start it with `start()` or `with FakeBotConnector() as connector:`; it binds a free port."""

    host: str = "127.0.0.1"
    key_id: str = "test-key-1"
    delay: float = 0.0  # seconds added to every send/reply/update, like a real network
    calls: list[ConnectorCall] = field(default_factory=list)
    # the tenant's users as the member lookup answers them (id, name, aadObjectId, email, userPrincipalName)
    members: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        self._ids = itertools.count(1_700_000_000_001)
        self.activities: dict[str, dict[str, dict[str, Any]]] = {}  # conversation -> id -> activity
        self.key = new_key()
        self._server: ThreadingHTTPServer | None = None
        self._faults: list[tuple[Callable[[dict[str, Any]], bool], int]] = []
        self._refusals: dict[str, list[int]] = {}  # "member" / "create" -> statuses to answer, in order
        self.streams: dict[str, list[dict[str, Any]]] = {}  # stream id -> its parts' text and streaminfo

    def fail(self, status: int, *, when: Callable[[dict[str, Any]], bool] = lambda body: True) -> None:
        """Answer the next send/reply/update whose body matches `when` with HTTP `status` (once)."""
        with self._lock:
            self._faults.append((when, status))

    def refuse(self, method: str, status: int, *, times: int = 1) -> None:
        """Answer the next `times` member lookups ("member") or personal chat creations ("create") with `status`."""
        with self._lock:
            self._refusals.setdefault(method, []).extend([status] * times)

    def _refused(self, method: str) -> int | None:
        with self._lock:
            waiting = self._refusals.get(method)
            return waiting.pop(0) if waiting else None

    def member(self, member_id: str) -> dict[str, Any] | None:
        return next((m for m in self.members if member_id in (m.get("id"), m.get("aadObjectId"))), None)

    # -- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> FakeBotConnector:
        connector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                if path == "/v1/.well-known/openidconfiguration":
                    connector._record("openid", "", "", {}, self)
                    self._json(200, {"issuer": ISSUER, "jwks_uri": f"{connector.url}/v1/.well-known/keys"})
                elif path == "/v1/.well-known/keys":
                    connector._record("keys", "", "", {}, self)
                    self._json(200, {"keys": [connector.jwk()]})
                elif path.startswith("/v3/conversations/") and "/members/" in path:
                    self._member(path)
                else:
                    self._json(404, {"error": {"code": "NotFound"}})

            def do_POST(self) -> None:
                if urlsplit(self.path).path.rstrip("/") == "/v3/conversations":
                    self._create()
                else:
                    self._activity("POST")

            def _member(self, path: str) -> None:
                parts = [unquote(p) for p in path.split("/") if p]
                conversation, member_id = parts[2], parts[-1]
                found = connector.member(member_id)
                status = connector._refused("member") or (200 if found else 404)
                connector._record("member", conversation, member_id, {}, self, status)
                if status != 200:
                    self._json(status, {"error": {"code": "MemberNotFoundInConversation"}})
                else:
                    self._json(200, {**(found or {}), "id": (found or {}).get("id", member_id)})

            def _create(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                members = body.get("members") or [{}]
                status = connector._refused("create") or 201
                conversation = f"a:personal-{members[0].get('id', '')}"
                connector._record("create", conversation, "", body, self, status)
                if status != 201:
                    self._json(status, {"error": {"code": "Forbidden", "message": "refused by the test"}})
                else:
                    self._json(status, {"id": conversation, "serviceUrl": connector.url})

            def do_PUT(self) -> None:
                self._activity("PUT")

            def _activity(self, verb: str) -> None:
                parts = [unquote(p) for p in urlsplit(self.path).path.split("/") if p]
                if (
                    len(parts) not in (4, 5)
                    or parts[:2] != ["v3", "conversations"]
                    or parts[3] != "activities"
                ):
                    self._json(404, {"error": {"code": "NotFound"}})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                conversation, target = parts[2], parts[4] if len(parts) == 5 else ""
                if connector.delay:
                    time.sleep(connector.delay)
                method = "update" if verb == "PUT" else ("reply" if target else "send")
                status, answer = connector._store(method, conversation, target, body)
                connector._record(method, conversation, target, body, self, status)
                self._json(status, answer)

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeBotConnector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the connector first"
        return f"http://{self.host}:{self._server.server_address[1]}"

    # -- state ------------------------------------------------------------------------------------------

    def _store(self, method: str, conversation: str, target: str, body: dict[str, Any]) -> tuple[int, dict]:
        with self._lock:
            for fault in self._faults:
                if fault[0](body):
                    self._faults.remove(fault)
                    return fault[1], {"error": {"code": "BadArgument", "message": "refused by the test"}}
            kept = self.activities.setdefault(conversation, {})
            streamed = self._stream_part(kept, body) if method == "send" else None
            if streamed is not None:
                return streamed
            if method == "update":
                if target not in kept:
                    return 404, {"error": {"code": "ActivityNotFoundInConversation"}}
                kept[target] = {**body, "id": target}
                return 200, {"id": target}
            new_id = str(next(self._ids))
            if body.get("type") != "typing":
                kept[new_id] = {**body, "id": new_id, "replyToId": target or body.get("replyToId")}
            return 201, {"id": new_id}

    def _stream_part(self, kept: dict[str, dict[str, Any]], body: dict[str, Any]) -> tuple[int, dict] | None:
        """Teams' streaming (called with the lock held): a part (a typing activity with a `streaminfo` entity)
        is kept in `streams`, the first one's new id being the stream's id, which later parts and the final
        message name and are answered with; a part that does not hold the text before it is refused (400), as
        Teams does; the final message is kept under the stream's id. None: not part of a stream."""
        info = next((e for e in body.get("entities") or [] if e.get("type") == "streaminfo"), None)
        if info is None:
            return None
        stream_id = info.get("streamId")
        if stream_id is None:
            stream_id = str(next(self._ids))
            self.streams[stream_id] = []
        parts = self.streams.get(stream_id)
        if parts is None or (parts and parts[-1].get("streamType") == "final"):
            return 404, {"error": {"code": "NotFound", "message": "no such stream"}}
        previous = next((p["text"] for p in reversed(parts) if p.get("text") is not None), "")
        if body.get("type") == "typing" and not str(body.get("text") or "").startswith(previous):
            return 400, {"error": {"code": "BadArgument", "message": "the stream lost its earlier content"}}
        parts.append({"text": body.get("text"), **info})
        if body.get("type") != "typing":
            kept[stream_id] = {**body, "id": stream_id}
        return 201, {"id": stream_id}

    def _record(
        self,
        method: str,
        conversation: str,
        target: str,
        body: dict[str, Any],
        handler: BaseHTTPRequestHandler,
        status: int = 200,
    ) -> None:
        authorization = handler.headers.get("Authorization", "")
        call = ConnectorCall(method, conversation, target, body, authorization, time.monotonic(), status)
        with self._lock:
            self.calls.append(call)
            self._lock.notify_all()

    def sent(self, conversation: str | None = None, *, kind: str = "message") -> list[ConnectorCall]:
        """Accepted sends, replies and updates of activities of type `kind` ("message", "typing"), oldest first."""
        with self._lock:
            return [
                c
                for c in self.calls
                if c.method in ("send", "reply", "update")
                and 200 <= c.status < 300
                and c.body.get("type", "message") == kind
                and (conversation is None or c.conversation == conversation)
            ]

    def wait_for(self, condition: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Wait until `condition()` is truthy (re-checked after every call); its value, or AssertionError."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                self._lock.release()
                try:
                    value = condition()
                finally:
                    self._lock.acquire()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the connector did not see what was expected in time")
                self._lock.wait(min(left, 0.1))

    # -- tokens -----------------------------------------------------------------------------------------

    def jwk(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {**public, "kid": self.key_id, "use": "sig", "alg": "RS256", "endorsements": ["msteams"]}

    def sign(
        self,
        app_id: str,
        *,
        service_url: str | None = None,
        key: rsa.RSAPrivateKey | None = None,
        issuer: str = ISSUER,
        lifetime: float = 3600,
    ) -> str:
        """A token as the Bot Framework sends with each activity (signed with `key`, default the connector's)."""
        now = int(time.time())
        claims = {
            "iss": issuer,
            "aud": app_id,
            "serviceurl": service_url or self.url,
            "nbf": now - 10,
            "iat": now - 10,
            "exp": now + int(lifetime),
        }
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.key_id})

    def cloud(self) -> Any:
        """The SDK's cloud environment with token validation pointed at this connector's keys."""
        from microsoft_teams.api.auth.cloud_environment import PUBLIC, with_overrides

        return with_overrides(PUBLIC, openid_metadata_url=f"{self.url}/v1/.well-known/openidconfiguration")
