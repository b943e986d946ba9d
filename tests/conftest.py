"""Fixtures several test modules share: real servers started once for the whole run (tests/support/servers.py),
the bots' wiki index and world (Slack and Teams tests alike), and the offline hashing embedder."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.servers import RunningServer, ServerUnavailable, chroma_server, postgres_server
from tests.support.shared_fakes import SHARED_FAKES_MISSING
from tests.support.shared_fakes import load as load_shared_fake
from tests.support.slack_world import World, build_index, build_world
from threadwise.index.store import EvidenceIndex

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def chroma_url() -> Iterator[str]:
    """The URL of a `chroma run` server on 127.0.0.1 (tests keep apart by collection name)."""
    try:
        with chroma_server() as server:
            yield server.url
    except ServerUnavailable as err:
        pytest.skip(f"no Chroma server: {err}")


@pytest.fixture(scope="session")
def postgres() -> Iterator[RunningServer]:
    try:
        with postgres_server() as server:
            yield server
    except ServerUnavailable as err:
        pytest.skip(f"no PostgreSQL server: {err}")


@pytest.fixture
def postgres_url(postgres: RunningServer) -> Iterator[str]:
    """A SQLAlchemy URL of a fresh, empty PostgreSQL database, dropped after the test."""
    import psycopg

    name = f"threadwise_test_{next(_databases)}"
    admin = postgres.url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres.url.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """One database that replicas share: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    return f"sqlite:///{tmp_path / 'shared.sqlite'}"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> EvidenceIndex:
    """The bots' wiki pages, indexed once per test module: every test only reads them."""
    return build_index(tmp_path_factory.mktemp("index"))


@pytest.fixture
def world(tmp_path: Path, index: EvidenceIndex) -> World:
    """A fresh database and services over the shared `index` (Slack and Teams tests)."""
    return build_world(tmp_path, index=index)


@pytest.fixture
def hashing_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands built from the environment embed with the hashing embedder (no model to load)."""
    monkeypatch.setenv("THREADWISE_EMBEDDER", "hashing")


@pytest.fixture(scope="session")
def shared_fakes() -> Callable[[str], ModuleType]:
    """`shared_fakes("fake_slack")`: one of the independent vendor fakes in ../shared/fakes (skipped, with the
    reason, in a clone that lacks them)."""
    if SHARED_FAKES_MISSING:
        pytest.skip(SHARED_FAKES_MISSING)
    return load_shared_fake
