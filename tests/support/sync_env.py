"""The real sync stack for tests and the sync benchmark: SQLite file, evidence index folder, Confluence client.

`python -m tests.support.sync_env DATA_DIR URL SPACE KILL_AFTER` runs one incremental sync in a fresh process
that kills itself with SIGKILL (kill -9: no clean-up at all) while embedding page number KILL_AFTER + 1.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from threadwise.connectors.confluence import ConfluenceClient, ConfluenceSettings
from threadwise.connectors.scope import SpaceScope
from threadwise.core.protocols import Embedder
from threadwise.db.base import make_engine, make_sessions
from threadwise.db.schema import upgrade
from threadwise.index.store import EvidenceIndex
from threadwise.models.embedders import HashingEmbedder
from threadwise.sync.admin import AdminService
from threadwise.sync.sync import SpaceSyncer

FAST_RETRIES: dict[str, Any] = {"backoff_s": 0.01, "max_wait_s": 0.2, "max_retries": 8, "timeout": 10.0}


@dataclass
class SyncEnv:
    sessions: sessionmaker[Session]
    index: EvidenceIndex
    client: ConfluenceClient
    syncer: SpaceSyncer
    admin: AdminService


def make_env(
    data_dir: Path,
    confluence_url: str,
    *,
    embedder: Embedder | None = None,
    cloud: bool = False,
    database_url: str | None = None,
    **client: Any,
) -> SyncEnv:
    """`cloud`: sign in as on Confluence Cloud (e-mail + API token) against a cloud-flavoured fake.
    `database_url`: the state database (default: a SQLite file in `data_dir`)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(database_url or f"sqlite:///{data_dir / 'threadwise.sqlite'}")
    upgrade(engine)
    sessions = make_sessions(engine)
    index = EvidenceIndex(directory=data_dir / "index", embedder=embedder or HashingEmbedder())
    credentials: dict[str, Any] = (
        {"username": "alice@example.com", "api_token": "api-token", "cloud": True}
        if cloud
        else {"personal_token": "pat-secret"}
    )
    settings = ConfluenceSettings(url=confluence_url, **{**credentials, **FAST_RETRIES, **client})
    confluence = ConfluenceClient(settings=settings)
    syncer = SpaceSyncer(client=confluence, index=index, sessions=sessions, lock_dir=data_dir)
    admin = AdminService(sessions=sessions, index=index, client=confluence, syncer=syncer)
    return SyncEnv(sessions=sessions, index=index, client=confluence, syncer=syncer, admin=admin)


class CountingEmbedder:
    """Wraps an embedder and counts the texts it embeds; `die_after` pages ends the process mid-sync."""

    def __init__(self, inner: Embedder, *, die_after: int | None = None) -> None:
        self.inner = inner
        self.name, self.dim, self.max_tokens = inner.name, inner.dim, inner.max_tokens
        self.calls = 0
        self.texts = 0
        self.die_after = die_after

    def warm_up(self) -> None:
        self.inner.warm_up()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.die_after is not None and self.calls >= self.die_after:
            os.kill(os.getpid(), signal.SIGKILL)  # no finally blocks, no lock release but the kernel's
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def main() -> None:
    data_dir, url, space, kill_after = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    env = make_env(data_dir, url, embedder=CountingEmbedder(HashingEmbedder(), die_after=kill_after))
    env.syncer.fetch_workers = 1
    env.syncer.batch_pages = 1  # one page per call to the embedder: the kill lands between two pages
    env.syncer.sync(SpaceScope.of(space))
    sys.exit(3)  # not reached when the kill happened


if __name__ == "__main__":
    main()
