"""Reliability under load, faults and hostile input: `threadwise serve --http` in its own process, driven like
Slack would (signed events over HTTP to uvicorn; a FakeSlack Web API on 127.0.0.1), four measurements:

1. cold burst: N mentions from N people sent at once the moment the server listens (still warming up);
   answered / errors / p95 from the mention to its answer;
2. answers during a full index run in another process (`threadwise index --docs` over ConfQuestions pages,
   copied to a temporary folder; the same write road as `sync`): one question every `--interval` s
   while it runs and a few after; errors, p95, and whether the new pages are found afterwards;
3. fairness: one user sends a burst of long mentions, then another user asks; that user's wait (p95 over rounds);
4. hostile inputs: a table of what was sent and the status each got; the server's stderr is checked for
   tracebacks at the end.

Everything is bounded in count and time and goes to 127.0.0.1 only.

    .venv/bin/python bench/reliability.py                       # the offline default (E5 + USE)
    .venv/bin/python bench/reliability.py --embedder hashing    # no model: the plumbing alone
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from slack_bench import summary  # noqa: E402  (beside this script)

from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.slack_events import SlackSender  # noqa: E402
from threadwise.connectors.files import SAMPLE_WIKI_DIR  # noqa: E402

SECRET = "0123456789abcdef0123456789abcdef"
CONFQUESTIONS = ROOT.parent / "shared" / "confquestions" / "documents"
QUESTIONS = (
    "Who is on call for a severity 1 incident?",
    "How do I set up my development machine?",
    "What failed in the release 4.2 test report?",
    "What is Alice's action item from the October 14 meeting?",
)
_n = iter(range(1, 10**7))


class Bot:
    """The serving process and what it has posted (through FakeSlack)."""

    def __init__(self, slack: FakeSlack, data_dir: Path, embedder: str) -> None:
        self.slack = slack
        self.env = {
            **os.environ,
            "THREADWISE_DATA_DIR": str(data_dir),
            "THREADWISE_EMBEDDER": embedder,
            "THREADWISE_LLM": "off",
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.api_url,
        }
        self.proc: subprocess.Popen[str] | None = None
        self.sender: SlackSender | None = None

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "threadwise", *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )

    def start(self) -> SlackSender:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "threadwise", "serve", "--http", "0", "--host", "127.0.0.1", "--no-sync"],
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.sender = SlackSender(url=line.split("listens on ")[1].split()[0], signing_secret=SECRET)
        return self.sender

    def stop(self) -> str:
        assert self.proc is not None
        self.proc.terminate()
        _out, err = self.proc.communicate(timeout=120)
        return err


def ask(sender: SlackSender, user: str, text: str) -> tuple[str, float, int]:
    ts = f"1700000000.{next(_n):06d}"
    event = {"type": "app_mention", "user": user, "text": f"<@UBOT> {text}", "ts": ts, "channel": f"C{user}"}
    started = time.monotonic()
    return ts, started, sender.event(event).status


def answer_of(slack: FakeSlack, ts: str) -> tuple[float, str] | None:
    """When the placeholder in thread `ts` became a finished message, and its text (None: not yet)."""
    placeholders = {
        c.response.get("ts") for c in slack.calls_to("chat.postMessage") if c.params.get("thread_ts") == ts
    }
    for c in slack.calls_to("chat.update"):
        if c.params.get("ts") in placeholders:
            return c.at, json.dumps(c.params.get("blocks")) + str(c.params.get("text"))
    for c in slack.calls_to("chat.postMessage"):  # a polite refusal is its own message
        if c.params.get("thread_ts") == ts and "hourglass" not in str(c.params.get("text")):
            return c.at, str(c.params.get("text"))
    return None


def wait_answers(
    slack: FakeSlack, sent: list[tuple[str, float, int]], timeout: float = 600
) -> list[tuple[float, str] | None]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = [answer_of(slack, ts) for ts, _s, _st in sent]
        if all(got):
            return got
        time.sleep(0.2)
    return [answer_of(slack, ts) for ts, _s, _st in sent]


def at_once(sender: SlackSender, asks: list[tuple[str, str]]) -> list[tuple[str, float, int]]:
    out: list[Any] = [None] * len(asks)
    gate = threading.Barrier(len(asks))

    def go(i: int, user: str, text: str) -> None:
        gate.wait()
        out[i] = ask(sender, user, text)

    threads = [threading.Thread(target=go, args=(i, u, t)) for i, (u, t) in enumerate(asks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def outcome(sent: list[tuple[str, float, int]], got: list[tuple[float, str] | None]) -> dict[str, Any]:
    answered = [g for g in got if g is not None]
    errors = sum(1 for g in answered if "went wrong" in g[1] or "couldn't reach" in g[1])
    waits = [g[0] - s[1] for s, g in zip(sent, got, strict=True) if g is not None]
    return {
        "sent": len(sent),
        "answered": len(answered),
        "errors": errors,
        "lost": len(sent) - len(answered),
        "wait": _summary(waits),
    }


def _summary(values: list[float]) -> dict[str, float]:
    return summary(values) if values else {"n": 0}


def cold_burst(bot: Bot, n: int) -> dict[str, Any]:
    sender = bot.start()  # the server listens while it warms up: the burst lands in the warm-up
    sent = at_once(sender, [(f"U{i}", QUESTIONS[i % len(QUESTIONS)]) for i in range(n)])
    return outcome(sent, wait_answers(bot.slack, sent))


def during_index(bot: Bot, sender: SlackSender, pages: int, interval: float) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="tw-rel-docs-"))
    for f in sorted(CONFQUESTIONS.glob("*.json"))[:pages]:
        shutil.copy(f, folder / f.name)
    indexer = subprocess.Popen(
        [sys.executable, "-m", "threadwise", "index", "--docs", str(folder)],
        env=bot.env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    sent: list[tuple[str, float, int]] = []
    while indexer.poll() is None:
        sent.append(ask(sender, f"UD{len(sent)}", QUESTIONS[len(sent) % len(QUESTIONS)]))
        time.sleep(interval)
    index_s = time.monotonic() - started
    after = [ask(sender, f"UAFTER{i}", "What is OpenXT?") for i in range(3)]
    got = wait_answers(bot.slack, sent + after)
    shutil.rmtree(folder, ignore_errors=True)
    result = outcome(sent + after, got)
    last = got[-1][1] if got[-1] else ""
    return {
        **result,
        "index_exit": indexer.returncode,
        "index_s": round(index_s, 1),
        "pages": pages,
        "new_pages_seen_after": "OpenXT" in last,
    }


def fairness(bot: Bot, sender: SlackSender, burst: int, rounds: int) -> dict[str, Any]:
    waits, refused = [], 0
    long_question = (
        "Please explain in detail " + "how the on-call rota and the paging of engineers work " * 25
    )
    for r in range(rounds):
        flood = at_once(sender, [(f"UFLOOD{r}", long_question)] * burst)
        mine = ask(sender, f"UOTHER{r}", "How do I set up my development machine?")
        got = wait_answers(bot.slack, [*flood, mine])
        refused += sum(1 for g in got[:-1] if g and "questions waiting" in g[1])
        if got[-1] is not None:
            waits.append(got[-1][0] - mine[1])
    return {
        "burst": burst,
        "rounds": rounds,
        "question_chars": len(long_question),
        "burst_refused_politely": refused,
        "other_user_wait": _summary(waits),
    }


def hostile(bot: Bot, sender: SlackSender) -> list[dict[str, Any]]:
    parts = urlsplit(sender.url)

    def raw(data: bytes) -> str:
        started = time.monotonic()
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(data)
            got = b""
            try:
                while chunk := sock.recv(65536):
                    got += chunk
                    if b"\r\n\r\n" in got:
                        break
            except TimeoutError:
                return "no answer in 30 s"
        status = got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/1.1") else "closed"
        return f"{status} ({time.monotonic() - started:.2f} s)"

    def unsigned(body: str, ctype: str) -> str:
        data = body.encode()
        head = f"POST {parts.path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n\r\n"
        return raw(head.encode() + data)

    def signed(body: str, ctype: str) -> str:
        return str(sender.post(body, content_type=ctype).status)

    ev = {"type": "event_callback", "team_id": "T0TEAM", "api_app_id": "A0APP"}
    form = "application/x-www-form-urlencoded"
    rows = [
        ("unsigned JSON array [1]", lambda: unsigned("[1]", "application/json")),
        ("unsigned 42", lambda: unsigned("42", "application/json")),
        ("unsigned payload=[1]", lambda: unsigned("payload=[1]", form)),
        ("signed JSON array [1]", lambda: signed("[1]", "application/json")),
        ("signed event: null", lambda: signed(json.dumps({**ev, "event": None}), "application/json")),
        (
            "signed event with user: false",
            lambda: signed(
                json.dumps({**ev, "event": {"type": "message", "user": False}}), "application/json"
            ),
        ),
        (
            "signed block_actions, empty actions",
            lambda: signed(
                urlencode({"payload": json.dumps({"type": "block_actions", "actions": []})}), form
            ),
        ),
        (
            "Content-Length: abc",
            lambda: raw(f"POST {parts.path} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".encode()),
        ),
        (
            "Content-Length: 5,000,000",
            lambda: raw(
                f"POST {parts.path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n{{".encode()
            ),
        ),
        ("headers never finished", lambda: raw(f"POST {parts.path} HTTP/1.1\r\nHost: x\r\n".encode())),
        (
            "body never finished",
            lambda: raw(
                f"POST {parts.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{".encode()
            ),
        ),
        (
            "Explain with turn id 10^30",
            lambda: signed(
                urlencode(
                    {
                        "payload": json.dumps(
                            {
                                "type": "block_actions",
                                "team": {"id": "T0TEAM"},
                                "user": {"id": "U1"},
                                "channel": {"id": "C1"},
                                "container": {"message_ts": "1.1", "channel_id": "C1"},
                                "message": {"ts": "1.1"},
                                "trigger_id": "9.9",
                                "actions": [
                                    {
                                        "action_id": "explain",
                                        "block_id": "turn:1:act",
                                        "value": str(10**30),
                                        "type": "button",
                                    }
                                ],
                            }
                        )
                    }
                ),
                form,
            ),
        ),
        (
            "signed event of another team",
            lambda: str(
                SlackSender(url=sender.url, signing_secret=SECRET, team="TEVIL")
                .event(
                    {"type": "app_mention", "user": "U1", "text": "<@UBOT> hi", "ts": "5.5", "channel": "C1"}
                )
                .status
            ),
        ),
        ("a 200 KB question", lambda: str(ask(sender, "UBIG", "why " * 50_000)[2])),
    ]
    half_open = []  # 100 half-sent requests held open at once: the server must close them, not keep them
    for _ in range(100):
        s = socket.create_connection((parts.hostname, parts.port), timeout=30)
        s.sendall(f"POST {parts.path} HTTP/1.1\r\nHost: x\r\n".encode())
        half_open.append(s)
    table = [{"input": name, "got": run()} for name, run in rows]
    closed = 0
    for s in half_open:
        try:
            closed += s.recv(1024).startswith(b"HTTP/1.1 408")
        except TimeoutError:
            pass
        s.close()
    table.append({"input": "100 half-sent requests held open", "got": f"{closed} answered 408 and closed"})
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedder", default="e5")
    ap.add_argument("--burst", type=int, default=50)
    ap.add_argument("--pages", type=int, default=30, help="ConfQuestions pages indexed while the bot answers")
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("--flood", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tw-rel-") as tmp, FakeSlack() as slack:
        bot = Bot(slack, Path(tmp) / "data", args.embedder)
        assert bot.cli("index", "--docs", str(SAMPLE_WIKI_DIR)).returncode == 0
        report: dict[str, Any] = {"embedder": args.embedder}
        report["cold_burst"] = cold_burst(bot, args.burst)
        assert bot.sender is not None
        report["during_index"] = during_index(bot, bot.sender, args.pages, args.interval)
        report["fairness"] = fairness(bot, bot.sender, args.flood, args.rounds)
        report["hostile"] = hostile(bot, bot.sender)
        err = bot.stop()
        report["server_tracebacks"] = err.count("Traceback")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
