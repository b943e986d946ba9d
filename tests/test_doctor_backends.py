"""`threadwise doctor` through the real CLI, checking a real PostgreSQL, a `chroma run` server and the local
embeddings / re-rank server, then the same servers failing."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.fake_model_server import FakeModelServer
from threadwise.cli import main


def doctor_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    main(["--data-dir", str(tmp_path), "doctor"])
    out = capsys.readouterr().out
    return {name: line for line in out.splitlines() for name in _NAMES if name in line}


_NAMES = ("Database", "Chroma server", "Embeddings server", "Re-rank server")


def test_doctor_checks_the_backends(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    postgres_url: str,
    chroma_url: str,
) -> None:
    with FakeModelServer() as server:
        for name, value in {
            "THREADWISE_DATABASE_URL": postgres_url.replace("postgres@", "postgres:pw@"),
            "THREADWISE_CHROMA_URL": chroma_url,
            "THREADWISE_CHROMA_COLLECTION": f"doctor-{uuid.uuid4().hex[:8]}",
            "THREADWISE_EMBEDDINGS_BASE_URL": server.url,
            "THREADWISE_EMBEDDINGS_MODEL": "hashing-256",
            "THREADWISE_EMBEDDINGS_MAX_RETRIES": "0",
            "THREADWISE_RERANK_BASE_URL": server.root,
            "THREADWISE_RERANK_API": "tei",
            "THREADWISE_RERANK_MAX_RETRIES": "0",
        }.items():
            monkeypatch.setenv(name, value)
        lines = doctor_lines(tmp_path / "up", capsys)
        assert set(lines) == set(_NAMES)
        assert "postgresql at postgresql+psycopg://postgres:***@127.0.0.1" in lines["Database"]
        assert "pw@" not in lines["Database"]
        assert f"{chroma_url}: 0 rows" in lines["Chroma server"]
        assert f"hashing-256 at {server.url}: 256-d vectors" in lines["Embeddings server"]
        assert "tei API" in lines["Re-rank server"]
        assert all("✘" not in line for line in lines.values())

        server.fail(503, times=None)
        lines = doctor_lines(tmp_path / "down", capsys)
        for name in ("Embeddings server", "Re-rank server"):
            assert (
                "✘" in lines[name]
                and "HTTP 503" in lines[name]
                and server.url.rsplit("/", 1)[0] in lines[name]
            )
