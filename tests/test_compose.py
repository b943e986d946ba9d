"""compose.yaml (PostgreSQL, Chroma, two replicas, optional TEI) cannot be run here (no container runtime): its
settings are checked against what Threadwise reads, and read through the real settings and composition root."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from threadwise.settings import load_settings
from threadwise.wiring import Threadwise

ROOT = Path(__file__).resolve().parent.parent
SOURCES = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "threadwise").rglob("*.py"))
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}")


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    return data


def _resolved(env: dict[str, Any], dotenv: dict[str, str]) -> dict[str, str]:
    """The environment compose would hand the container, with `.env`'s values substituted."""
    return {
        k: _VARIABLE.sub(lambda m: dotenv.get(m.group(1), m.group(2) or ""), str(v)) for k, v in env.items()
    }


def test_every_setting_in_compose_is_one_threadwise_reads() -> None:
    services = _compose()["services"]
    replicas = {name: s for name, s in services.items() if name.startswith("threadwise")}
    assert len(replicas) == 2
    for name, service in replicas.items():
        for variable in service["environment"]:
            assert variable in SOURCES, f"{name} sets {variable}, which no Threadwise module reads"
    ids = {s["environment"]["THREADWISE_REPLICA_ID"] for s in replicas.values()}
    ports = {s["ports"][0] for s in replicas.values()}
    assert len(ids) == 2 and len(ports) == 2  # two names in leases and claims, two host ports
    databases = {s["environment"]["THREADWISE_DATABASE_URL"] for s in replicas.values()}
    assert len(databases) == 1  # one database holds what they share
    assert services["tei"]["profiles"] == ["tei"]  # optional


def test_a_replica_reads_its_compose_settings(tmp_path: Path) -> None:
    dotenv = {"POSTGRES_PASSWORD": "pw", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"}
    dotenv |= {"CONFLUENCE_URL": "https://wiki.example.com"}
    env = _resolved(_compose()["services"]["threadwise-2"]["environment"], dotenv)
    env["THREADWISE_DATA_DIR"] = str(tmp_path)  # /data in the container
    app = Threadwise(settings=load_settings(env=env))
    assert app.settings.database_url == "postgresql://threadwise:pw@postgres:5432/threadwise"
    assert (app.replica_id, app.lease_ttl_s) == ("threadwise-2", 30.0)
    assert app.settings.get("THREADWISE_CHROMA_URL") == "http://chroma:8000"
    assert not app.settings.get(
        "THREADWISE_EMBEDDINGS_BASE_URL"
    )  # empty without the TEI profile's .env lines
