"""A vendor's documented replies (tests/fixtures/...) served as they are on 127.0.0.1, so the real client reads
them over HTTP: `serve(get, post)` routes each request to a function of the path (and JSON body)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, Any]


@contextmanager
def serve(
    get: Callable[[str], Reply], post: Callable[[str, Any], Reply] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """Yields (the server's root URL, the requests seen as "GET /path" / "POST /path")."""
    calls: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            calls.append(f"GET {self.path.split('?')[0]}")
            self._send(*get(self.path))

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(f"POST {self.path}")
            self._send(*(post(self.path, body) if post else (405, {"message": "no POST here"})))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", calls
    finally:
        server.shutdown()
