"""Streamed answers in Slack, measured: when the asker sees the first text, and when the whole answer is there.

The real SlackBot (Bolt on its HTTP endpoint) answers over the sample wiki (hashing embedder) with an LLM
answerer whose model is a local OpenAI-shaped server that streams its reply one word every `--token-ms`. This
process plays Slack: it signs and POSTs events and serves the Web API calls the bot makes, timestamping each on
one clock. Self-contained (standard library, slack_sdk's signer and the product): bench/ imports no tests.

Per question, from the event's POST:
  assistant thread (streamed):  first text = chat.startStream arrives; whole = chat.stopStream (text + blocks)
  channel mention (whole):      placeholder = chat.postMessage; whole = chat.update with the answer

    .venv/bin/python bench/slack_stream_bench.py                   # 25 ms a word, 5 questions each way
    .venv/bin/python bench/slack_stream_bench.py --token-ms 50 --questions 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from slack_sdk.signature import SignatureVerifier

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from threadwise.chat.conversations import ConversationService  # noqa: E402
from threadwise.connectors.files import SAMPLE_WIKI_DIR, load_pages  # noqa: E402
from threadwise.core.answer.llm import LLMAnswerer  # noqa: E402
from threadwise.core.complete.history import HistoryCompleter  # noqa: E402
from threadwise.core.pipeline import Pipeline  # noqa: E402
from threadwise.core.retrieve.retriever import Retriever  # noqa: E402
from threadwise.db.base import make_engine, make_sessions  # noqa: E402
from threadwise.db.conversations import ConversationStore  # noqa: E402
from threadwise.db.schema import upgrade  # noqa: E402
from threadwise.index.indexer import index_pages  # noqa: E402
from threadwise.index.store import EvidenceIndex  # noqa: E402
from threadwise.models.embedders import HashingEmbedder  # noqa: E402
from threadwise.models.openai_chat import OpenAIChat  # noqa: E402
from threadwise.slack.app import SlackBot  # noqa: E402
from threadwise.slack.http_server import HttpServer  # noqa: E402
from threadwise.slack.settings import SlackSettings  # noqa: E402
from threadwise.sync.admin import AdminService  # noqa: E402

SECRET = "0123456789abcdef0123456789abcdef"
TOKEN = "xoxb-bench"
TEAM, APP, BOT_USER, BOT_ID = "T0BENCH", "A0BENCH", "UBOT", "BBOT"
QUESTIONS = (
    "When does the primary on-call engineer change?",
    "How fast must we respond to a SEV1 incident?",
    "How do I set up my development machine?",
    "What failed in the release 4.2 test report?",
    "What was decided in the weekly sync on October 14?",
)
_SOURCE = re.compile(r'<source id="1"[^>]*>\s*(.*?)\s*</source>', re.DOTALL)
_ts = itertools.count(1)


def new_ts() -> str:
    return f"1800000000.{next(_ts):06d}"


# -- the model: OpenAI's chat completions, streamed one word at a time ------------------------------------------


def model_server(words: int, token_s: float) -> ThreadingHTTPServer:
    """Answers every chat completion from its prompt's source 1 (its first `words` words, then [Source 1]),
    generated at one word per `token_s`: `stream: true` sends each word as a server-sent event when it is
    generated; otherwise the whole reply goes when the last word is."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            found = _SOURCE.search(prompt)
            reply = " ".join((found.group(1) if found else "OK").split()[:words]) + " [Source 1]"
            pieces = re.findall(r"\S+\s*", reply)
            if not body.get("stream"):  # the same generation time, the reply sent whole at its end
                time.sleep(token_s * (len(pieces) - 1))
                self._json(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "bench",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": reply},
                            }
                        ],
                    }
                )
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for i, word in enumerate(pieces):
                time.sleep(token_s if i else 0.0)
                self._event({"content": word})
            self._event({}, finish="stop")
            self.wfile.write(b"data: [DONE]\n\n")

        def _event(self, delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()

        def _json(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# -- Slack: the Web API calls the bot makes, timestamped ----------------------------------------------------------


class Slack:
    """The Web API calls the bot makes, each with its arrival time; just enough answers for the bot to go on."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str, dict[str, Any]]] = []
        self.lock = threading.Condition()
        slack = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                json_body = "json" in self.headers.get("Content-Type", "")
                params = json.loads(raw or "{}") if json_body else dict(parse_qsl(raw))
                reply = slack.answer(self.path.rsplit("/", 1)[-1], params)
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.api_url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.calls.append((time.perf_counter(), method, params))
            self.lock.notify_all()
        if method == "auth.test":
            return {"ok": True, "team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID, "team": "Bench"}
        if method == "bots.info":
            return {"ok": True, "bot": {"id": BOT_ID, "app_id": APP, "user_id": BOT_USER}}
        if method == "users.info":
            user = params.get("user", "")
            return {"ok": True, "user": {"id": user, "team_id": TEAM, "name": user, "profile": {}}}
        if method == "conversations.replies":
            return {"ok": True, "messages": [], "has_more": False}
        if method in ("chat.postMessage", "chat.startStream"):
            return {"ok": True, "channel": params.get("channel"), "ts": new_ts()}
        return {"ok": True, "channel": params.get("channel"), "ts": params.get("ts")}

    def wait(self, found: Callable[[], float | None], timeout: float = 60.0) -> float:
        """The time `found()` gives once it gives one."""
        deadline = time.perf_counter() + timeout
        with self.lock:
            while (at := found()) is None:
                if not self.lock.wait(max(0.0, deadline - time.perf_counter())):
                    raise TimeoutError("the bot never answered")
            return at

    def first(self, method: str, since: float, **where: str) -> float | None:
        return next(
            (
                t
                for t, m, p in self.calls
                if t >= since and m == method and all(p.get(k) == v for k, v in where.items())
            ),
            None,
        )


def post_event(url: str, event: dict[str, Any]) -> float:
    body = json.dumps(
        {
            "token": "x",
            "team_id": TEAM,
            "api_app_id": APP,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(_ts):08d}",
            "event_time": int(time.time()),
            "authorizations": [
                {"team_id": TEAM, "user_id": BOT_USER, "is_bot": True, "is_enterprise_install": False}
            ],
        }
    )
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": str(SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)),
    }
    sent = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url, body.encode(), headers), timeout=10) as reply:
        assert reply.status == 200
    return sent


# -- the run ------------------------------------------------------------------------------------------------------


def build_bot(folder: Path, model_url: str, slack: Slack) -> SlackBot:
    engine = make_engine(f"sqlite:///{folder / 'bench.sqlite'}")
    upgrade(engine)
    sessions = make_sessions(engine)
    index = EvidenceIndex(directory=folder / "index", embedder=HashingEmbedder())
    index_pages(index, load_pages(SAMPLE_WIKI_DIR)[0])
    chat = OpenAIChat(model="bench", base_url=model_url, api_key="bench", max_retries=0)
    pipeline = Pipeline(
        completer=HistoryCompleter(),
        retriever=Retriever(index=index, embedder=index.embedder),
        answerer=LLMAnswerer(chat=chat, follow_ups=0, min_coverage=0.0),
    )
    conversations = ConversationService(
        pipeline=pipeline, store=ConversationStore(sessions=sessions), index=index
    )
    settings = SlackSettings(bot_token=TOKEN, signing_secret=SECRET, api_url=slack.api_url)
    bot = SlackBot(
        conversations=conversations, admin=AdminService(sessions=sessions, index=index), settings=settings
    )
    bot.learn_installation()
    return bot


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--token-ms", type=float, default=25.0, help="the model's time per word (default 25)")
    parser.add_argument("--words", type=int, default=120, help="words in each answer (default 120)")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    args = parser.parse_args()
    model = model_server(args.words, args.token_ms / 1000)
    slack = Slack()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        bot = build_bot(Path(folder), f"http://127.0.0.1:{model.server_address[1]}/v1", slack)
        http = HttpServer(bot, host="127.0.0.1", port=0)
        http.start()
        try:
            for i, question in enumerate((QUESTIONS[0], *QUESTIONS[: args.questions])):
                # the assistant view: a reply in an assistant thread (a DM), streamed
                root, ts = new_ts(), new_ts()
                sent = post_event(
                    http.url,
                    {
                        "type": "message",
                        "channel": f"D{i}",
                        "channel_type": "im",
                        "user": "U1",
                        "text": question,
                        "ts": ts,
                        "event_ts": ts,
                        "thread_ts": root,
                        "parent_user_id": BOT_USER,
                    },
                )
                first = slack.wait(partial(slack.first, "chat.startStream", sent))
                whole = slack.wait(partial(slack.first, "chat.stopStream", sent))
                bot.wait_idle()
                appends = sum(1 for t, m, _p in slack.calls if t >= sent and m == "chat.appendStream")
                # a channel mention: a placeholder at once, the whole answer when the model has finished
                ts = new_ts()
                sent2 = post_event(
                    http.url,
                    {
                        "type": "app_mention",
                        "channel": "C1",
                        "user": "U1",
                        "text": f"<@{BOT_USER}> {question}",
                        "ts": ts,
                        "event_ts": ts,
                    },
                )
                placeholder = slack.wait(partial(slack.first, "chat.postMessage", sent2, channel="C1"))
                answered = slack.wait(partial(slack.first, "chat.update", sent2, channel="C1"))
                bot.wait_idle()
                if i == 0:
                    continue  # the warm-up: Bolt's first auth.test, the first model connection
                rows.append(
                    {
                        "question": question,
                        "streamed_first_text_ms": ms(first - sent),
                        "streamed_whole_ms": ms(whole - sent),
                        "appends": appends,
                        "mention_placeholder_ms": ms(placeholder - sent2),
                        "mention_whole_ms": ms(answered - sent2),
                    }
                )
        finally:
            http.stop()
            bot.wait_idle(timeout=10)
            bot.close()
            slack.server.shutdown()
            model.shutdown()
    median = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "question"}
    print(
        json.dumps({"token_ms": args.token_ms, "words": args.words, "median": median, "runs": rows}, indent=2)
    )


if __name__ == "__main__":
    main()
