"""Slack's Socket Mode endpoint on 127.0.0.1, for tests: a WebSocket server that the real slack_sdk client
(the one Bolt's SocketModeHandler runs) connects to.

FakeSlack's `apps.connections.open` hands out `url` (set `slack.socket_url = endpoint.url`); slack_sdk's built-in
client speaks plain ws:// to a port other than 443. Each connection gets Slack's `hello`; `push(body)` sends an
Events API envelope (the body an HTTP request would carry, as Slack wraps it) to the newest connection and
returns its envelope id; every acknowledgement is recorded in `acks`, and `on_ack(envelope_id)` runs as it
arrives (before the client hears anything back), so a test can look at the world at that very moment.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve


class FakeSocketMode:
    def __init__(self, *, on_ack: Callable[[str], None] | None = None) -> None:
        self.on_ack = on_ack
        self.acks: list[str] = []
        self._connections: list[ServerConnection] = []
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._server: Server | None = None

    def start(self) -> FakeSocketMode:
        self._server = serve(self._serve, "127.0.0.1", 0)
        threading.Thread(target=self._server.serve_forever, name="fake-socket-mode", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()

    def __enter__(self) -> FakeSocketMode:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the endpoint first"
        return f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}/link/?ticket=fake"

    def _serve(self, connection: ServerConnection) -> None:
        hello = {"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0APP"}}
        connection.send(json.dumps(hello))
        with self._lock:
            self._connections.append(connection)
            self._lock.notify_all()
        try:
            for message in connection:
                self._acknowledged(json.loads(message).get("envelope_id"))
        except ConnectionClosed:  # the client went away without a closing handshake
            pass

    def _acknowledged(self, envelope_id: str | None) -> None:
        if envelope_id:
            if self.on_ack is not None:
                self.on_ack(envelope_id)
            with self._lock:
                self.acks.append(envelope_id)
                self._lock.notify_all()

    def push(self, body: dict[str, Any], *, retry_attempt: int = 0, timeout: float = 15.0) -> str:
        """Send an events_api envelope holding `body` to the connected client; its envelope id."""
        envelope_id = f"envelope-{next(self._ids)}"
        envelope = {
            "type": "events_api",
            "envelope_id": envelope_id,
            "payload": body,
            "accepts_response_payload": False,
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        self.wait_for(lambda: self._connections, timeout)[-1].send(json.dumps(envelope))
        return envelope_id

    def wait_for(self, condition: Callable[[], Any], timeout: float = 15.0) -> Any:
        """Wait until `condition()` is truthy (re-checked as connections and acks arrive); its value."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not (value := condition()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("the Socket Mode endpoint did not see what was expected in time")
                self._lock.wait(min(left, 0.1))
            return value
