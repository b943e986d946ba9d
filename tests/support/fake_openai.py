"""A small OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

It answers `POST /v1/chat/completions` (and Azure's `/openai/deployments/<d>/chat/completions`) with the
real JSON shape, so the real `openai` client can be driven against it. Tests script it:

    with FakeOpenAI(replies=["Paris [Source 1]"]) as server:
        client = OpenAI(base_url=server.url, api_key=server.api_key)
        ...
        assert len(server.requests) == 1

Behaviour, in the order a request sees it:
1. a wrong key (when `api_key` is set) gets 401 `invalid_api_key`;
2. a queued fault (`fail(...)`, `stall(...)`) is consumed: an error status, or a sleep before replying;
3. the fixed `delay` is slept;
4. the next queued reply, else `respond(request_json)`, else `default_reply` is sent.

Every request is recorded with its body, headers and start/end times, so tests assert on how many
requests came and how many overlapped (concurrency), never on wall-clock time.

By hand, for benchmarks: `python -m tests.support.fake_openai --port 8001 --delay 0.5`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest

Responder = Callable[[dict[str, Any]], str]

_CHAT_PATH = re.compile(
    r"^/v1/chat/completions$|^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$"
)
_SOURCE = re.compile(r'<source id="(\d+)"[^>]*>\s*(.*?)\s*</source>', re.DOTALL)
_QUESTION = re.compile(r"<question>\s*(.*?)\s*</question>", re.DOTALL)


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    started: float  # time.monotonic() when the body had been read
    ended: float = 0.0  # time.monotonic() when the response had been written (or the client had gone)
    status: int = 0

    @property
    def messages(self) -> list[dict[str, str]]:
        return list(self.body.get("messages", []))

    @property
    def user_text(self) -> str:
        """The concatenated content of the user messages: what a test usually wants to look into."""
        return "\n".join(m.get("content", "") for m in self.messages if m.get("role") == "user")


@dataclass
class Fault:
    """An injected failure for the next request(s): an HTTP error, or a stall before the normal reply."""

    status: int = 0  # 0: no error, just the stall
    stall: float = 0.0
    retry_after: float | None = None  # seconds, sent as Retry-After
    message: str = ""
    code: str | None = None
    times: int | None = 1  # None: every request from now on


def echo_first_source(request: dict[str, Any]) -> str:
    """A sensible default reply: quote the first fenced source of the prompt and cite it.

    With no fenced source (a completion prompt) it repeats the fenced question, so completion passes it through;
    otherwise the last line of the user messages.
    """
    user = "\n".join(m.get("content", "") for m in request.get("messages", []) if m.get("role") == "user")
    match = _SOURCE.search(user)
    if match:
        number, text = match.group(1), " ".join(match.group(2).split())
        return f"{text[:200]} [Source {number}]"
    question = _QUESTION.search(user)
    if question:
        return " ".join(question.group(1).split())
    lines = [line.strip() for line in user.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "OK"


@dataclass
class FakeOpenAI:
    """The server. Start it with `start()` or `with FakeOpenAI(...) as server:`; it binds a free port."""

    replies: Iterable[str] = ()
    respond: Responder | None = None
    default_reply: Responder = echo_first_source
    delay: float = 0.0  # fixed latency added to every request
    chunk_delay: float = 0.0  # a streamed reply (`stream: true`): seconds between its pieces (one word each)
    stream_error_after: int | None = (
        None  # a streamed reply breaks off after this many words with an error event
    )
    api_key: str = "sk-test"  # "" accepts any key
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._replies: deque[str] = deque(self.replies)
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------------------

    def push(self, *replies: str) -> None:
        """Queue replies, sent in order before `respond`/`default_reply` take over."""
        with self._lock:
            self._replies.extend(replies)

    def fail(
        self,
        status: int,
        *,
        times: int | None = 1,
        retry_after: float | None = None,
        message: str = "",
        code: str | None = None,
    ) -> None:
        """Answer the next `times` requests (None: all) with an HTTP error instead of a reply."""
        with self._lock:
            self._faults.append(
                Fault(status=status, times=times, retry_after=retry_after, message=message, code=code)
            )

    def stall(self, seconds: float, *, times: int | None = 1) -> None:
        """Sleep `seconds` before replying to the next `times` requests: longer than a client timeout, it times out."""
        with self._lock:
            self._faults.append(Fault(stall=seconds, times=times))

    # -- reading what happened -------------------------------------------------------------------------------

    @property
    def root(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://{self.host}:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        """The base URL an OpenAI client wants: http://127.0.0.1:PORT/v1."""
        return self.root + "/v1"

    def max_overlap(self) -> int:
        """The largest number of requests that were being served at the same moment."""
        with self._lock:
            spans = [(r.started, r.ended or time.monotonic()) for r in self.requests]
        events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
        current = best = 0
        for (
            _,
            step,
        ) in events:  # at equal times, an end (-1) sorts before a start (+1): touching is not overlap
            current += step
            best = max(best, current)
        return best

    # -- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> Self:
        handler = type("Handler", (self._handler_class(),), {"fake": self})
        self._server = _Server((self.host, self.port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def _handler_class(self) -> type[_Handler]:
        """The request handler: a server that speaks more of the API (tests/support/fake_model_server) extends it."""
        return _Handler

    def stop(self) -> None:
        self._stopping.set()  # wakes stalled handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def serve_until_interrupted(self) -> None:
        """Block until Ctrl-C (SIGINT), then stop: for running the server by hand."""
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            self.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what the handler asks -------------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_fault(self) -> Fault | None:
        with self._lock:
            if not self._faults:
                return None
            fault = self._faults[0]
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.popleft()
            return fault

    def _next_reply(self, body: dict[str, Any]) -> str:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return (self.respond or self.default_reply)(body)

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _completion(self, body: dict[str, Any], reply: str) -> dict[str, Any]:
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        reply_words = len(reply.split())
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "system_fingerprint": "fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_words,
                "completion_tokens": reply_words,
                "total_tokens": prompt_words + reply_words,
            },
        }


_ERROR_TEXT = {
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    429: ("Rate limit reached for requests.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The engine is currently overloaded.", "server_error", None),
}


class _Server(ThreadingHTTPServer):
    # The standard backlog of 5 drops connections when Explain opens 30 at once: the client's SYN is
    # retried a second later, which measures the kernel, not the code. Real LLM servers listen with more.
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read `requests`, not logs
        pass

    def do_GET(self) -> None:
        if self.path.split("?")[0] in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        else:
            self._send_json(404, _error_body("Not found: " + self.path, "invalid_request_error", None))

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        record = RecordedRequest(
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            started=time.monotonic(),
        )
        fake._record(record)
        self._current = record
        try:
            record.status = self._serve(body)
        except (BrokenPipeError, ConnectionResetError):
            record.status = 499  # the client gave up (timeout) before we answered
        finally:
            record.ended = record.ended or time.monotonic()

    def _serve(self, body: dict[str, Any]) -> int:
        fake = self.fake
        if not _CHAT_PATH.match(self.path.split("?")[0]):
            return self._send_json(
                404, _error_body("Unknown path " + self.path, "invalid_request_error", None)
            )
        refused = self._refused()
        if refused:
            return refused
        if body.get("stream"):
            return self._send_stream(body, fake._next_reply(body))
        return self._send_json(200, fake._completion(body, fake._next_reply(body)))

    def _send_stream(self, body: dict[str, Any], reply: str) -> int:
        """The reply as OpenAI streams it: server-sent `chat.completion.chunk` events, one word each
        (`chunk_delay` apart), then a chunk with `finish_reason` and `data: [DONE]`."""
        fake = self.fake
        ident, created = f"chatcmpl-fake-{next(fake._ids)}", int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.get("model", "fake-model"),
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            return f"data: {json.dumps(data)}\n\n".encode()

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(chunk({"role": "assistant", "content": ""}))
        for i, word in enumerate(re.findall(r"\S+\s*|\s+", reply)):
            if i:
                fake._sleep(fake.chunk_delay)
            if fake.stream_error_after is not None and i >= fake.stream_error_after:
                # as OpenAI reports a failure mid-stream: an event holding `error` (the client raises APIError)
                error = {
                    "error": {"message": "The server had an error.", "type": "server_error", "code": None}
                }
                self.wfile.write(f"data: {json.dumps(error)}\n\n".encode())
                self.wfile.flush()
                return 200
            self.wfile.write(chunk({"content": word}))
            self.wfile.flush()
        self.wfile.write(chunk({}, "stop") + b"data: [DONE]\n\n")
        self.wfile.flush()
        current = getattr(self, "_current", None)
        if current is not None:
            current.status, current.ended = 200, time.monotonic()
        return 200

    def _refused(self) -> int:
        """Steps 1-3 of every request: a wrong key or a queued fault is answered here (its status returned);
        otherwise the fixed delay is slept and 0 returned."""
        fake = self.fake
        if fake.api_key and self._presented_key() != fake.api_key:
            return self._send_error(401, None, "", None)
        fault = fake._next_fault()
        if fault is not None:
            fake._sleep(fault.stall)
            if fault.status:
                return self._send_error(fault.status, fault.retry_after, fault.message, fault.code)
        fake._sleep(fake.delay)
        return 0

    def _presented_key(self) -> str:
        bearer = self.headers.get("Authorization", "")
        if bearer.startswith("Bearer "):
            return bearer[len("Bearer ") :]
        return self.headers.get("api-key", "")  # Azure

    def _send_error(self, status: int, retry_after: float | None, message: str, code: str | None) -> int:
        default_message, kind, default_code = _ERROR_TEXT.get(
            status, (f"HTTP {status}", "server_error", None)
        )
        headers: dict[str, str] = {}
        if retry_after is not None:
            headers["Retry-After"] = f"{retry_after:g}"
        return self._send_json(
            status, _error_body(message or default_message, kind, code or default_code), headers
        )

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> int:
        current = getattr(self, "_current", None)
        if current is not None:  # recorded before the reply leaves: a client that got it finds it recorded
            current.status = status
            current.ended = time.monotonic()  # and done: its next request must not count as overlapping
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        return status


LAPTOP_FOLLOW_UPS = (
    "Who approves laptop requests?",
    "Where do I return my old laptop?",
    "How long does approval take?",
)


def echo_with_follow_ups(request: dict[str, Any]) -> str:
    """`echo_first_source`, and three laptop questions when the prompt asks for follow-up questions."""
    prompt = "\n".join(m["content"] for m in request["messages"])
    if "follow-up questions" in prompt:
        return "\n".join(LAPTOP_FOLLOW_UPS)
    return echo_first_source(request)


def _error_body(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started server, stopped after the test. Use via `pytest_plugins = ["tests.support.fake_openai"]`."""
    with FakeOpenAI() as server:
        yield server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A local OpenAI-compatible chat server for benchmarks.")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before every reply")
    parser.add_argument("--api-key", default="", help="the only key accepted (default: any)")
    args = parser.parse_args(argv)
    server = FakeOpenAI(port=args.port, delay=args.delay, api_key=args.api_key).start()
    print(f"fake OpenAI server on {server.url} (delay {args.delay:g} s); Ctrl-C stops it", flush=True)
    server.serve_until_interrupted()


if __name__ == "__main__":
    main()
