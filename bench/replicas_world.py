"""The world of bench/replicas_bench.py: PostgreSQL, `chroma run`, the fake Confluence and Slack, and two
`threadwise serve --http` replica processes over them (see that script's docstring); the shared database
read over a connection of its own."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from procstat import cpu_of  # bench/, the folder of the script that imports this module

from tests.support.fake_confluence import FakeConfluence
from tests.support.fake_confluence_pages import FakePage
from tests.support.fake_slack import FakeSlack
from tests.support.servers import chroma_server, free_port, postgres_server

ROOT = Path(__file__).resolve().parents[1]

SECRET = "0123456789abcdef0123456789abcdef"
SPACE = "OPS"
SERVICES = ("billing", "search", "payments", "login", "mail", "storage", "reports", "chat", "maps", "video")
NEW_PHONE = "5550199"


def pages(count: int) -> list[FakePage]:
    """One page per service (repeated with a number past the ten names): who owns it, its on-call phone."""
    out = []
    for n in range(count):
        name = SERVICES[n % len(SERVICES)] + (f"-{n // len(SERVICES)}" if n >= len(SERVICES) else "")
        body = (
            f"<h1>The {name} service</h1><p>The {name} service is owned by team {chr(65 + n % 26)}{n}. "
            f"Its on-call phone is 555{n:04d}. Incidents go to the #{name}-ops channel.</p>"
        )
        out.append(FakePage(id=str(1000 + n), space=SPACE, title=f"The {name} service", body=body))
    return out


@dataclass
class Replica:
    name: str
    port: int
    folder: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    def start(self) -> None:
        log = (self.folder / f"{self.name}.log").open("ab")
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "threadwise", "serve", "--http", str(self.port), "--host", "127.0.0.1"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 180.0) -> float:
        """Seconds from the start of the process until its /healthz says ok (models and index loaded)."""
        started = self.started_at
        while time.monotonic() - started < timeout:
            assert self.process is not None and self.process.poll() is None, f"{self.name} exited"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - started
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"{self.name} not ready within {timeout} s")

    def cpu_s(self) -> float:
        """User + system CPU seconds of the replica process so far (from /proc)."""
        assert self.process is not None
        try:
            return cpu_of(self.process.pid)
        except OSError:
            return float("nan")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Database:
    """Reads the shared state the replicas write (leases, claims) over its own connection."""

    def __init__(self, url: str) -> None:
        from sqlalchemy import create_engine

        self.engine = create_engine(url)

    def rows(self, sql: str, **params: Any) -> list[tuple[Any, ...]]:
        from sqlalchemy import text

        with self.engine.connect() as c:
            return [tuple(r) for r in c.execute(text(sql), params)]

    def leader(self) -> str | None:
        rows = self.rows("SELECT holder, expires_at > now() FROM leases WHERE name = 'sync-leader'")
        return rows[0][0] if rows and rows[0][1] else None

    def open_claims(self, holder: str) -> list[str]:
        sql = "SELECT event_key FROM processed_events WHERE holder = :h AND lease_until IS NOT NULL"
        return [r[0] for r in self.rows(sql, h=holder)]

    def replayed(self) -> int:
        """Events acknowledged by a replica that died before its listener was done with them, replayed
        elsewhere (those it had claimed already are then answered through the claim's hand-over, once)."""
        sql = "SELECT count(*) FROM processed_events WHERE event_key LIKE 'slack:inbox:%' AND attempts > 1"
        return int(self.rows(sql)[0][0])

    def placeholder_noted(self, keys: list[str]) -> dict[str, bool]:
        """Of the claims `keys`, whether each has its placeholder's ts recorded (what a replica that dies
        between posting the placeholder and recording it leaves unrecorded)."""
        rows = self.rows("SELECT event_key, payload FROM processed_events")
        wanted = set(keys)
        payloads = {k: json.loads(p) if isinstance(p, str) else (p or {}) for k, p in rows if k in wanted}
        return {k: bool(p.get("placeholder_ts")) for k, p in payloads.items()}

    def claims(self, keys: list[str]) -> dict[str, tuple[str, int]]:
        rows = self.rows("SELECT event_key, holder, attempts FROM processed_events")
        wanted = set(keys)
        return {k: (h, a or 1) for k, h, a in rows if k in wanted}


@contextmanager
def world(
    args: argparse.Namespace,
) -> Iterator[tuple[list[Replica], FakeSlack, FakeConfluence, Database, Path]]:
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="replicas-bench-")))
        pg = stack.enter_context(postgres_server())
        chroma = stack.enter_context(chroma_server())
        slack = stack.enter_context(FakeSlack(delay=args.slack_delay))
        confluence = stack.enter_context(FakeConfluence(pages=pages(args.pages)))
        env = {
            **os.environ,
            "THREADWISE_DATABASE_URL": pg.url,
            "THREADWISE_CHROMA_URL": chroma.url,
            "THREADWISE_EMBEDDER": "hashing",
            "THREADWISE_LLM": "off",
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.api_url,
            "CONFLUENCE_URL": confluence.url,
            "CONFLUENCE_PERSONAL_TOKEN": "pat-secret",
            "THREADWISE_SYNC_INTERVAL_MINUTES": str(args.interval_minutes),
            "THREADWISE_LEASE_TTL_SECONDS": str(args.lease_ttl),
            "ANONYMIZED_TELEMETRY": "False",
        }
        admin_env = {**env, "THREADWISE_DATA_DIR": str(folder / "admin")}
        for command in (["spaces", "add", SPACE], ["sync"]):
            subprocess.run(
                [sys.executable, "-m", "threadwise", *command], env=admin_env, cwd=ROOT, check=True
            )
        replicas = []
        for n in (1, 2):
            data = folder / f"replica-{n}"
            data.mkdir()
            replica_env = {**env, "THREADWISE_DATA_DIR": str(data), "THREADWISE_REPLICA_ID": f"replica-{n}"}
            replicas.append(Replica(f"replica-{n}", free_port(), folder, replica_env))
        for r in replicas:
            stack.callback(r.stop)
        yield replicas, slack, confluence, Database(pg.url), folder
