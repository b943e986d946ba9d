"""Session-wide fixtures: real servers started once for the whole run (tests/support/servers.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.support.servers import RunningServer, ServerUnavailable, chroma_server, postgres_server

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
